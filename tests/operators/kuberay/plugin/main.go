// Command plugin is KubeRay's RayCluster controller (github.com/ray-project/kuberay/ray-operator
// v1.5.0, controllers/ray) as a wasmop plugin: the package is compiled unchanged against
// guest-sdk/go/controller-runtime, and this main does what the package's test suite does with a
// manager for that controller — build the scheme, construct the reconciler with the suite's head
// sidecar and call SetupWithManager. Its permissions are the package's kubebuilder RBAC markers
// written for RayClusterReconciler (the RayJob and RayService controllers' are theirs); its
// environment (the suite's RAYCLUSTER_DEFAULT_REQUEUE_SECONDS) comes from the host's
// configuration, as an operator's would from its pod.
package main

import (
	"context"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/wasmop"
)

func init() {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, rayv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	wasmop.Register(wasmop.Plugin{
		Name: "raycluster", Version: "1.5.0", Scheme: scheme,
		Setup: func(mgr ctrl.Manager) error {
			options := ray.RayClusterReconcilerOptions{
				HeadSidecarContainers: []corev1.Container{{Name: "fluentbit", Image: "fluent/fluent-bit:1.9.6"}},
			}
			return ray.NewReconciler(context.Background(), mgr, options).SetupWithManager(mgr, 1)
		},
	})
}

func main() {}
