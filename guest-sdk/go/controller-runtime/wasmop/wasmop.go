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
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
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
// in each instance, on its first call (guest.RegisterFunc), so it and the controller it selects
// (WASMOP_CONTROLLER) see the plugin entry's args and environment, not the build's.
func Register(p Plugin) {
	guest.RegisterFunc(func() guest.Reconciler {
		built, err := build(p)
		if err != nil {
			panic(fmt.Sprintf("plugin %s: %v", p.Name, err))
		}
		return guest.Reconciler{Registration: built.Registration, Reconcile: built.Reconcile, Handle: built.Handle, Webhooks: built.Webhooks, LoadWarnings: built.LoadWarnings}
	})
}

func build(p Plugin) (*plugin.Plugin, error) {
	if p.Scheme == nil {
		return nil, fmt.Errorf("no Scheme")
	}
	m := plugin.NewManager(p.Scheme)
	if err := p.Setup(m); err != nil {
		return nil, fmt.Errorf("setting up: %w", err)
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
