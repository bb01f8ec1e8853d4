// Command webapp-controller-runtime is the `webapp` operator's controller-runtime reconciler
// (tests/bench/controller-runtime/webapp, the benchmarks' controller-runtime comparator) as a
// wasmop plugin: its package is compiled unchanged against guest-sdk/go/controller-runtime,
// and this main does what the comparator's main does with a manager — build the scheme and
// call SetupWithManager. Its permissions are the package's kubebuilder RBAC markers.
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
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, webapp.AddToScheme} {
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
			return r.SetupWithManager(mgr)
		},
	})
}

func main() {}
