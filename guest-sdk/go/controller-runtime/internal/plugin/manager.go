package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	config "sigs.k8s.io/controller-runtime/pkg/client/config"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"wasmop.dev/guest/transport"
)

var _ manager.Manager = (*Manager)(nil)

// Manager is the manager a guest's setup wires its controller to.
type Manager struct {
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	client client.HostClient
	// controllers are those the setup completed, in order: built by the builder (*Controller)
	// or made by controller.New (hosted).
	controllers []any
	webhooks    []*Webhook
	server      webhook.Refusing
	elected     chan struct{}
}

// NewManager is a manager of the kinds in scheme.
func NewManager(scheme *runtime.Scheme) *Manager {
	mapper := restMapper(scheme)
	elected := make(chan struct{})
	close(elected)
	return &Manager{scheme: scheme, mapper: mapper, client: client.NewHostClient(scheme, mapper), elected: elected}
}

// hosted is a controller controller.New made: its name, options and the sources it watches.
type hosted interface {
	Spec() (string, controller.Options, []source.Watch)
}

// Controllers are the controllers the setup completed (with the builder or controller.New), in
// the order it completed them.
func (m *Manager) Controllers() []*Controller {
	out := make([]*Controller, 0, len(m.controllers))
	for _, c := range m.controllers {
		switch c := c.(type) {
		case *Controller:
			out = append(out, c)
		case hosted:
			name, options, watches := c.Spec()
			out = append(out, &Controller{Name: name, Raw: watches, Options: options, Reconciler: options.Reconciler})
		}
	}
	return out
}

// Add takes the controllers builders completed and the webhooks webhook builders completed;
// any other runnable is refused.
func (m *Manager) Add(r manager.Runnable) error {
	if w, ok := r.(*Webhook); ok {
		return m.addWebhook(w)
	}
	_, built := r.(*Controller)
	_, made := r.(hosted)
	if !built && !made {
		return fmt.Errorf("runnable %T: a wasmop guest runs no runnables of its own; the host runs its controllers", r)
	}
	m.controllers = append(m.controllers, r)
	return nil
}

// Elected is closed: the host reconciles only while it leads.
func (m *Manager) Elected() <-chan struct{} { return m.elected }

// Start refuses: the host runs the manager's parts.
func (m *Manager) Start(context.Context) error {
	return errors.New("a wasmop guest's manager is run by the host")
}

// GetClient is the client reading the host's cache and writing through the host.
func (m *Manager) GetClient() client.Client { return m.client }

// GetScheme is the scheme of the plugin's kinds.
func (m *Manager) GetScheme() *runtime.Scheme { return m.scheme }

// GetFieldIndexer declares indexes that List with MatchingFields uses.
func (m *Manager) GetFieldIndexer() client.FieldIndexer { return m.client }

// GetRESTMapper maps the scheme's kinds to resources.
func (m *Manager) GetRESTMapper() meta.RESTMapper { return m.mapper }

// GetCache reads the host's informer cache through the plugin's client.
func (m *Manager) GetCache() cache.Cache { return cache.Host{Reader: m.client, FieldIndexer: m.client} }

// GetControllerOptions is the zero configuration: the host's settings decide.
func (m *Manager) GetControllerOptions() crconfig.Controller { return crconfig.Controller{} }

// GetWebhookServer is the server whose registered paths fail the load (see Build).
func (m *Manager) GetWebhookServer() webhook.Server { return &m.server }

// GetConfig is the rest.Config of the plugin's own clients, whose transport is the host.
func (m *Manager) GetConfig() *rest.Config { return config.GetConfigOrDie() }

// GetHTTPClient is an HTTP client whose requests go to the apiserver through the host.
func (m *Manager) GetHTTPClient() *http.Client {
	return &http.Client{Transport: transport.RoundTripper{}}
}

// GetAPIReader reads from the apiserver itself through the host.
func (m *Manager) GetAPIReader() client.Reader { return client.NewAPIReader(m.scheme, m.mapper) }

// GetLogger is the root logger.
func (m *Manager) GetLogger() logr.Logger { return log.Log }

// GetEventRecorderFor records core/v1 Events through the host (the source is the plugin's).
func (m *Manager) GetEventRecorderFor(string) record.EventRecorder {
	return coreRecorder{recording{m.scheme}}
}

// GetEventRecorder records Events through the host (the source is the plugin's).
func (m *Manager) GetEventRecorder(string) recorder.EventRecorder {
	return eventsRecorder{recording{m.scheme}}
}

// restMapper maps every kind of scheme to its guessed resource, as namespaced unless it is a
// built-in cluster-scoped kind.
func restMapper(scheme *runtime.Scheme) meta.RESTMapper {
	mapper := meta.NewDefaultRESTMapper(scheme.PrioritizedVersionsAllGroups())
	for gvk := range scheme.AllKnownTypes() {
		scope := meta.RESTScopeNamespace
		if clusterScoped[gvk.GroupKind().String()] {
			scope = meta.RESTScopeRoot
		}
		mapper.Add(gvk, scope)
	}
	return mapper
}

// clusterScoped are the built-in cluster-scoped kinds, by Kind.group.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true,
	"ClusterRole.rbac.authorization.k8s.io": true, "ClusterRoleBinding.rbac.authorization.k8s.io": true,
	"CustomResourceDefinition.apiextensions.k8s.io": true, "StorageClass.storage.k8s.io": true,
	"CSIDriver.storage.k8s.io": true, "CSINode.storage.k8s.io": true, "VolumeAttachment.storage.k8s.io": true,
	"PriorityClass.scheduling.k8s.io": true, "IngressClass.networking.k8s.io": true,
	"RuntimeClass.node.k8s.io": true, "APIService.apiregistration.k8s.io": true,
	"ValidatingWebhookConfiguration.admissionregistration.k8s.io": true,
	"MutatingWebhookConfiguration.admissionregistration.k8s.io":   true,
	"CertificateSigningRequest.certificates.k8s.io":               true,
}
