// Package wasmop makes a controller-runtime reconciler a wasmop plugin. A plugin's main
// package registers it from an init function, with the setup its controller-runtime main
// would run:
//
//	func init() {
//		wasmop.Register(wasmop.Plugin{
//			Name: "webapp", Version: "0.1.0", Scheme: scheme,
//			Setup: func(mgr ctrl.Manager) error {
//				return (&controller.WebAppReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}).SetupWithManager(mgr)
//			},
//		})
//	}
//
// The builder's For, Owns, Watches, predicates and options become the plugin's registration
// (the kinds whose handlers or predicates only Go can run are handled in the guest),
// the webhooks ctrl.NewWebhookManagedBy completes the webhooks it serves, and the
// `// +kubebuilder:rbac:` markers of its packages its permissions — those written for its
// reconciler (on its Reconcile, as kubebuilder does) and those written for none, not a sibling
// controller's.
// What the host cannot honour stops the registration with a panic naming it, which the host
// reports as the plugin's load failure.
package wasmop

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/internal/plugin"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"wasmop.dev/guest"
)

// Plugin is a controller-runtime reconciler as a wasmop plugin.
type Plugin struct {
	// Name is the plugin's name (lowercase letters, digits, dashes).
	Name string
	// Version is the plugin's own version.
	Version string
	// Scheme holds the Go types of the plugin's kinds (clientgoscheme's and its own).
	Scheme *runtime.Scheme
	// Setup wires the reconciler to the manager, as a controller-runtime main does.
	Setup func(mgr manager.Manager) error
	// Permissions are writes and extra reads the plugin declares besides those of its
	// kubebuilder RBAC markers, which `wasmop build` reads from its packages.
	Permissions []guest.Permission
}

// Register makes the controller p's setup completes the component's reconciler. The setup runs
// here, in the init function, which `wasmop build` runs once for every instance; an instance
// whose args or environment are not those the init function saw (a plugin entry's args and env)
// runs it again on its first call, so Setup always sees the instance's. Which controller the
// instance runs (WASMOP_CONTROLLER) is chosen on its first call.
func Register(p Plugin) {
	m, setupErr := setUp(p)
	seen := configuration()
	unselected, unselectedErr := complete(p, m, setupErr)
	if unselectedErr == nil {
		warm(p.Scheme, unselected.Kinds())
	}
	guest.RegisterFunc(func() guest.Reconciler {
		b, err := unselected, unselectedErr
		if setupErr != nil || configuration() != seen {
			m, setupErr = setUp(p)
			b, err = complete(p, m, setupErr)
		} else if os.Getenv(plugin.SelectionVariable) != "" {
			b, err = complete(p, m, nil)
		}
		if err != nil {
			panic(fmt.Sprintf("plugin %s: %v", p.Name, err))
		}
		return guest.Reconciler{Registration: b.Registration, Reconcile: b.Reconcile, Handle: b.Handle, Webhooks: b.Webhooks, LoadWarnings: b.LoadWarnings}
	})
}

// configuration is what of the process's args and environment a setup may read: the args after
// the program's name, and every variable but the controller selection.
func configuration() string {
	var b strings.Builder
	for _, arg := range os.Args[min(1, len(os.Args)):] {
		b.WriteString(arg + "\x00")
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, plugin.SelectionVariable+"=") {
			b.WriteString(kv + "\x00")
		}
	}
	return b.String()
}

// warm fills encoding/json's caches for the Go types of kinds, which a reconcile would otherwise
// fill in every fresh instance (a Deployment's types take milliseconds).
func warm(scheme *runtime.Scheme, kinds []guest.Kind) {
	for _, k := range kinds {
		obj, err := scheme.New(schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
		if err != nil {
			continue
		}
		if data, err := json.Marshal(obj); err == nil {
			_ = json.Unmarshal(data, obj)
		}
	}
}

// setUp is a manager with p's setup run on it.
func setUp(p Plugin) (*plugin.Manager, error) {
	if p.Scheme == nil {
		return nil, fmt.Errorf("no Scheme")
	}
	m := plugin.NewManager(p.Scheme)
	if err := p.Setup(m); err != nil {
		return nil, fmt.Errorf("setting up: %w", err)
	}
	return m, nil
}

// complete is the plugin of the controller the instance selects from m's, with its
// permissions; setupErr when the setup failed.
func complete(p Plugin, m *plugin.Manager, setupErr error) (*plugin.Plugin, error) {
	if setupErr != nil {
		return nil, setupErr
	}
	built, err := plugin.Build(p.Name, p.Version, m, p.Permissions, os.Getenv(plugin.SelectionVariable))
	if err != nil {
		return nil, err
	}
	fromMarkers, warnings, err := markerPermissions(markers, p.Scheme, built.Kinds(), built.ReconcilerType())
	if err != nil {
		return nil, err
	}
	built.LoadWarnings = append(built.LoadWarnings, warnings...)
	built.Registration.Permissions = merge(fromMarkers, p.Permissions...)
	return built, nil
}
