// Command webapp-controller-runtime is the `webapp` operator's controller-runtime reconciler
// (tests/bench/controller-runtime/webapp, the benchmarks' controller-runtime comparator) as a
// wasmop plugin: its package is compiled unchanged against guest-sdk/go/controller-runtime,
// and this main does what the comparator's main does with a manager — build the scheme, call
// SetupWithManager and SetupWebhookWithManager — with WebApp v1beta1 in the scheme, so that
// the plugin converts between the versions too. Its permissions are the package's kubebuilder
// RBAC markers.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/wasmop"
	"wasmop.dev/bench/webapp-controller-runtime/webapp"
)

func init() {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, webapp.AddToScheme, webapp.AddV1beta1ToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	wasmop.Register(wasmop.Plugin{
		Name:    "webapp",
		Version: "0.1.0",
		Scheme:  scheme,
		Setup: func(mgr ctrl.Manager) error {
			r := &webapp.WebAppReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("webapp")}
			if err := r.SetupWithManager(mgr); err != nil {
				return err
			}
			return webapp.SetupWebhookWithManager(mgr)
		},
	})
}

func main() {}
