// Package handler is controller-runtime's event handlers for wasmop guests: how an event on a
// watched object becomes reconcile requests. The builder turns each into the host's mapping
// (an object's controller owner) or runs it in the guest's map export.
package handler

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// EventHandler maps a watched object's events to requests.
type EventHandler interface {
	// Requests are the requests an event on obj makes.
	Requests(ctx context.Context, obj client.Object) []reconcile.Request
}

// EnqueueRequestForObject requests a reconcile of the object itself.
type EnqueueRequestForObject struct{}

// Requests is obj's own key.
func (EnqueueRequestForObject) Requests(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(obj)}}
}

// MapFunc maps an object to requests.
type MapFunc func(context.Context, client.Object) []reconcile.Request

// EnqueueRequestsFromMapFunc requests what fn maps an object to.
func EnqueueRequestsFromMapFunc(fn MapFunc) EventHandler { return mapFunc(fn) }

type mapFunc MapFunc

func (f mapFunc) Requests(ctx context.Context, obj client.Object) []reconcile.Request {
	return f(ctx, obj)
}

// OwnerOption modifies EnqueueRequestForOwner.
type OwnerOption func(*OwnerHandler)

// OnlyControllerOwner maps only to the object's controller, not to its other owners.
func OnlyControllerOwner() OwnerOption {
	return func(h *OwnerHandler) { h.OnlyController = true }
}

// EnqueueRequestForOwner requests a reconcile of the object's owners of ownerType's kind.
func EnqueueRequestForOwner(scheme *runtime.Scheme, _ meta.RESTMapper, ownerType client.Object, opts ...OwnerOption) EventHandler {
	h := &OwnerHandler{Scheme: scheme, OwnerType: ownerType}
	for _, o := range opts {
		o(h)
	}
	return h
}

// OwnerHandler is EnqueueRequestForOwner's handler; the builder gives the host the mapping to
// the controller owner when it is the primary kind's.
type OwnerHandler struct {
	// Scheme names OwnerType's kind.
	Scheme *runtime.Scheme
	// OwnerType is an object of the owners' kind.
	OwnerType client.Object
	// OnlyController maps only to the controller owner.
	OnlyController bool
}

// Requests are obj's owners of OwnerType's group and kind, in obj's namespace.
func (h *OwnerHandler) Requests(_ context.Context, obj client.Object) []reconcile.Request {
	gvks, _, err := h.Scheme.ObjectKinds(h.OwnerType)
	if err != nil || len(gvks) == 0 {
		return nil
	}
	want := gvks[0].GroupKind()
	var out []reconcile.Request
	for _, ref := range obj.GetOwnerReferences() {
		if h.OnlyController && (ref.Controller == nil || !*ref.Controller) {
			continue
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != want.Group || ref.Kind != want.Kind {
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}})
	}
	return out
}
