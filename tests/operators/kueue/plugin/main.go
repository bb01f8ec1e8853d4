// Command plugin is Kueue's failure-recovery controller (sigs.k8s.io/kueue v0.17.0,
// pkg/controller/failurerecovery: the pod termination controller, which forcefully deletes
// opted-in Pods stuck terminating on unreachable nodes) as a wasmop plugin: the package is
// compiled unchanged against guest-sdk/go/controller-runtime, and this main does what the
// package's integration suite does with a manager for it — a one-millisecond forceful termination
// grace period and an empty Kueue configuration. Its permissions are the package's kubebuilder
// RBAC markers.
package main

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/wasmop"
	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/kueue/pkg/constants"
	"sigs.k8s.io/kueue/pkg/controller/failurerecovery"
)

func init() {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	wasmop.Register(wasmop.Plugin{
		Name: "failurerecovery", Version: "0.17.0", Scheme: scheme,
		Setup: func(mgr ctrl.Manager) error {
			reconciler := failurerecovery.NewTerminatingPodReconciler(
				mgr.GetClient(),
				mgr.GetEventRecorderFor(constants.PodTerminationControllerName),
				failurerecovery.WithForcefulTerminationGracePeriod(time.Millisecond),
			)
			_, err := reconciler.SetupWithManager(mgr, &configapi.Configuration{})
			return err
		},
	})
}

func main() {}
