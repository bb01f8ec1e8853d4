// Command plugin is KubeRay's controllers (github.com/ray-project/kuberay/ray-operator v1.5.0,
// controllers/ray) as one wasmop module: the package is compiled unchanged against
// guest-sdk/go/controller-runtime, and this main sets up what the operator's main does — the
// RayCluster, RayService and RayJob controllers (with the suite's head sidecar for RayCluster) —
// each of which runs as a plugin of its own, loaded from this module with WASMOP_CONTROLLER
// naming it in its environment (raycluster, rayservice, rayjob). Each plugin's permissions are
// the package's kubebuilder RBAC markers written for its reconciler; its environment (the
// suite's RAYCLUSTER_DEFAULT_REQUEUE_SECONDS) comes from the host's configuration, as an
// operator's would from its pod.
package main

import (
	"context"

	configapi "github.com/ray-project/kuberay/ray-operator/apis/config/v1alpha1"
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
		Name: "kuberay", Version: "1.5.0", Scheme: scheme,
		Setup: func(mgr ctrl.Manager) error {
			options := ray.RayClusterReconcilerOptions{
				HeadSidecarContainers: []corev1.Container{{Name: "fluentbit", Image: "fluent/fluent-bit:1.9.6"}},
			}
			ctx := context.Background()
			if err := ray.NewReconciler(ctx, mgr, options).SetupWithManager(mgr, 1); err != nil {
				return err
			}
			config := configapi.Configuration{}
			if err := ray.NewRayServiceReconciler(ctx, mgr, config).SetupWithManager(mgr, 1); err != nil {
				return err
			}
			return ray.NewRayJobReconciler(ctx, mgr, ray.RayJobReconcilerOptions{}, config).SetupWithManager(mgr, 1)
		},
	})
}

func main() {}
