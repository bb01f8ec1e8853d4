// Command plugin is JobSet's JobSet controller (sigs.k8s.io/jobset v0.12.0, pkg/controllers) as a
// wasmop plugin: the package is compiled unchanged against guest-sdk/go/controller-runtime, and
// this main does what the package's integration suite does with a manager for that controller —
// build the scheme, construct the reconciler, set up its field indexes and call SetupWithManager.
// Its permissions are the kubebuilder RBAC markers written for JobSetReconciler.
package main

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/wasmop"

	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/jobset/pkg/controllers"
)

func init() {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, jobset.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	wasmop.Register(wasmop.Plugin{
		Name: "jobset", Version: "0.12.0", Scheme: scheme,
		Setup: func(mgr ctrl.Manager) error {
			ctx := context.Background()
			r := controllers.NewJobSetReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder("jobset"))
			if err := controllers.SetupJobSetIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
				return err
			}
			return r.SetupWithManager(mgr)
		},
	})
}

func main() {}
