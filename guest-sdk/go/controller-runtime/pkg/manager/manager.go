// Package manager is controller-runtime's Manager for wasmop guests. The host owns what the
// manager owns upstream — caches, client, leader election, metrics, the controller's queue and
// workers — so the guest's manager is what a setup function wires a reconciler to: its client,
// scheme, field indexer, event recorder and the one controller the builder completes.
package manager

import (
	"context"
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Runnable is something a manager runs; in a guest only the builder's controller is added.
type Runnable interface {
	Start(context.Context) error
}

// RunnableFunc is a function that is a Runnable.
type RunnableFunc func(context.Context) error

// Start calls f.
func (f RunnableFunc) Start(ctx context.Context) error { return f(ctx) }

// Manager is what a reconciler's SetupWithManager is handed.
type Manager interface {
	// Add adds the builder's controller; other runnables are refused.
	Add(Runnable) error
	// Elected is closed: the host reconciles only while it leads.
	Elected() <-chan struct{}
	// Start refuses: the host runs the manager's parts.
	Start(ctx context.Context) error
	// GetClient reads the host's cache and writes through the host.
	GetClient() client.Client
	// GetScheme is the scheme of the plugin's kinds.
	GetScheme() *runtime.Scheme
	// GetFieldIndexer declares the indexes List with MatchingFields uses.
	GetFieldIndexer() client.FieldIndexer
	// GetRESTMapper maps the scheme's kinds to resources.
	GetRESTMapper() meta.RESTMapper
	// GetLogger is the root logger.
	GetLogger() logr.Logger
	// GetCache reads the host's informer cache and declares field indexes; source.Kind takes it.
	GetCache() cache.Cache
	// GetControllerOptions is the zero configuration: the host's settings decide.
	GetControllerOptions() config.Controller
	// GetWebhookServer is a server on which a registered handler fails the load: the host serves
	// the webhooks ctrl.NewWebhookManagedBy declares.
	GetWebhookServer() webhook.Server
	// GetConfig is the rest.Config of the plugin's own clients, whose transport is the host
	// (config.GetConfig).
	GetConfig() *rest.Config
	// GetHTTPClient is an HTTP client whose requests go to the apiserver through the host.
	GetHTTPClient() *http.Client
	// GetAPIReader reads from the apiserver itself rather than the cache.
	GetAPIReader() client.Reader
	recorder.Provider
}

// Options are the manager options of controller-runtime programs; a guest's manager takes only
// its scheme (wasmop.Plugin.Scheme), the rest being the host's settings.
type Options struct {
	// Scheme is the scheme of the plugin's kinds.
	Scheme *runtime.Scheme
}
