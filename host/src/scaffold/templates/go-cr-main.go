// `@NAME@`: a controller-runtime reconciler run by wasmop. It marks each @KIND@
// (`@API_VERSION@`) with the generation it last reconciled, in the annotation
// `@NAME@.wasmop.dev/observed-generation`. Replace Reconcile with your own logic and `fixtures/`
// with what it should do; the kubebuilder RBAC markers are the plugin's permissions.
package main

import (
	"context"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/wasmop"
)

const observed = "@NAME@.wasmop.dev/observed-generation"

var primary = schema.GroupVersionKind{Group: "@GROUP@", Version: "@VERSION@", Kind: "@KIND@"}

// Reconciler marks objects with their generation.
type Reconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=@RBAC_GROUP@,resources=@PLURAL@,verbs=get;list;watch;patch

// Reconcile marks one object with the generation it was reconciled at.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(primary)
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	generation := strconv.FormatInt(obj.GetGeneration(), 10)
	annotations := obj.GetAnnotations()
	if annotations[observed] == generation {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(obj.DeepCopy())
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[observed] = generation
	obj.SetAnnotations(annotations)
	ctrl.LoggerFrom(ctx).Info("observed", "generation", generation)
	return ctrl.Result{}, r.Patch(ctx, obj, patch)
}

// SetupWithManager reconciles @KIND@ objects.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(primary)
	return ctrl.NewControllerManagedBy(mgr).For(obj).Complete(r)
}

func init() {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if !scheme.Recognizes(primary) {
		scheme.AddKnownTypeWithName(primary, &unstructured.Unstructured{})
	}
	wasmop.Register(wasmop.Plugin{
		Name: "@NAME@", Version: "0.1.0", Scheme: scheme,
		Setup: func(mgr ctrl.Manager) error {
			return (&Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
		},
	})
}

func main() {}
