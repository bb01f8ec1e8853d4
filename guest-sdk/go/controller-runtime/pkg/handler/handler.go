// Package handler is controller-runtime's event handlers for wasmop guests, generic over the
// object and request types as upstream, with aliases for client.Object and reconcile.Request: how
// an event on a watched object becomes reconcile requests. The builder gives the host the mapping
// it can do itself (an object's own key, its controller owner of the primary kind); every other
// handler runs in the guest on each change the host hands it, adding to a queue that becomes the
// requests the host queues.
package handler

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// EventHandler maps events on client.Object to reconcile requests.
type EventHandler = TypedEventHandler[client.Object, reconcile.Request]

// TypedEventHandler maps a watched object's events to requests, adding them to the queue.
type TypedEventHandler[object any, request comparable] interface {
	// Create is called for a creation.
	Create(context.Context, event.TypedCreateEvent[object], workqueue.TypedRateLimitingInterface[request])
	// Update is called for a change.
	Update(context.Context, event.TypedUpdateEvent[object], workqueue.TypedRateLimitingInterface[request])
	// Delete is called for a deletion.
	Delete(context.Context, event.TypedDeleteEvent[object], workqueue.TypedRateLimitingInterface[request])
	// Generic is called for an event from outside the cluster.
	Generic(context.Context, event.TypedGenericEvent[object], workqueue.TypedRateLimitingInterface[request])
}

// Funcs is an event handler of functions on client.Object.
type Funcs = TypedFuncs[client.Object, reconcile.Request]

// TypedFuncs is an event handler of functions; a nil one ignores its events.
type TypedFuncs[object any, request comparable] struct {
	// CreateFunc handles creations.
	CreateFunc func(context.Context, event.TypedCreateEvent[object], workqueue.TypedRateLimitingInterface[request])
	// UpdateFunc handles changes.
	UpdateFunc func(context.Context, event.TypedUpdateEvent[object], workqueue.TypedRateLimitingInterface[request])
	// DeleteFunc handles deletions.
	DeleteFunc func(context.Context, event.TypedDeleteEvent[object], workqueue.TypedRateLimitingInterface[request])
	// GenericFunc handles generic events.
	GenericFunc func(context.Context, event.TypedGenericEvent[object], workqueue.TypedRateLimitingInterface[request])
}

// Create runs CreateFunc.
func (h TypedFuncs[object, request]) Create(ctx context.Context, e event.TypedCreateEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
	if h.CreateFunc != nil {
		h.CreateFunc(ctx, e, q)
	}
}

// Update runs UpdateFunc.
func (h TypedFuncs[object, request]) Update(ctx context.Context, e event.TypedUpdateEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
	if h.UpdateFunc != nil {
		h.UpdateFunc(ctx, e, q)
	}
}

// Delete runs DeleteFunc.
func (h TypedFuncs[object, request]) Delete(ctx context.Context, e event.TypedDeleteEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
	if h.DeleteFunc != nil {
		h.DeleteFunc(ctx, e, q)
	}
}

// Generic runs GenericFunc.
func (h TypedFuncs[object, request]) Generic(ctx context.Context, e event.TypedGenericEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
	if h.GenericFunc != nil {
		h.GenericFunc(ctx, e, q)
	}
}

// mapped is the handler that adds what requests maps an event's objects to: the new and the old
// object of an update.
func mapped[object any, request comparable](requests func(context.Context, object) []request) TypedFuncs[object, request] {
	add := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[request], objs ...object) {
		for _, obj := range objs {
			for _, r := range requests(ctx, obj) {
				q.Add(r)
			}
		}
	}
	return TypedFuncs[object, request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
			add(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
			add(ctx, q, e.ObjectNew, e.ObjectOld)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
			add(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[object], q workqueue.TypedRateLimitingInterface[request]) {
			add(ctx, q, e.Object)
		},
	}
}

// EnqueueRequestForObject requests a reconcile of the object itself.
type EnqueueRequestForObject = TypedEnqueueRequestForObject[client.Object]

// TypedEnqueueRequestForObject requests a reconcile of the object itself.
type TypedEnqueueRequestForObject[object client.Object] struct{}

// Create requests the created object.
func (TypedEnqueueRequestForObject[object]) Create(_ context.Context, e event.TypedCreateEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
}

// Update requests the changed object (its key is the same before and after).
func (TypedEnqueueRequestForObject[object]) Update(_ context.Context, e event.TypedUpdateEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.ObjectNew)})
}

// Delete requests the deleted object.
func (TypedEnqueueRequestForObject[object]) Delete(_ context.Context, e event.TypedDeleteEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
}

// Generic requests the object.
func (TypedEnqueueRequestForObject[object]) Generic(_ context.Context, e event.TypedGenericEvent[object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
}

// MapFunc maps an object to requests.
type MapFunc = TypedMapFunc[client.Object, reconcile.Request]

// TypedMapFunc maps an object to requests.
type TypedMapFunc[object any, request comparable] func(context.Context, object) []request

// EnqueueRequestsFromMapFunc requests what fn maps an event's objects to.
func EnqueueRequestsFromMapFunc(fn MapFunc) EventHandler {
	return TypedEnqueueRequestsFromMapFunc(fn)
}

// TypedEnqueueRequestsFromMapFunc requests what fn maps an event's objects to.
func TypedEnqueueRequestsFromMapFunc[object any, request comparable](fn TypedMapFunc[object, request]) TypedEventHandler[object, request] {
	return mapped[object, request](fn)
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

// TypedEnqueueRequestForOwner requests a reconcile of the object's owners of ownerType's kind.
func TypedEnqueueRequestForOwner[object client.Object](scheme *runtime.Scheme, mapper meta.RESTMapper, ownerType client.Object, opts ...OwnerOption) TypedEventHandler[object, reconcile.Request] {
	owner := EnqueueRequestForOwner(scheme, mapper, ownerType, opts...).(*OwnerHandler)
	return mapped(func(ctx context.Context, obj object) []reconcile.Request { return owner.Requests(ctx, obj) })
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

// Create requests the created object's owners.
func (h *OwnerHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	mapped(h.Requests).Create(ctx, e, q)
}

// Update requests the owners of the object before and after.
func (h *OwnerHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	mapped(h.Requests).Update(ctx, e, q)
}

// Delete requests the deleted object's owners.
func (h *OwnerHandler) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	mapped(h.Requests).Delete(ctx, e, q)
}

// Generic requests the object's owners.
func (h *OwnerHandler) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	mapped(h.Requests).Generic(ctx, e, q)
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
