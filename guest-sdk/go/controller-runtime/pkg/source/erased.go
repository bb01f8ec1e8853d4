package source

import (
	"context"
	"fmt"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// as is obj as the source's object type; the guest decodes each change into the Go type of the
// source's object, so only a mismatch of the source's own making fails, naming both types.
func as[object client.Object](obj client.Object) object {
	typed, ok := obj.(object)
	if !ok && obj != nil {
		var want object
		panic(fmt.Sprintf("source.Kind of %T was handed a %T", want, obj))
	}
	return typed
}

// erasedHandler is a typed handler on client.Object.
type erasedHandler[object client.Object] struct {
	h handler.TypedEventHandler[object, reconcile.Request]
}

func (e erasedHandler[object]) Create(ctx context.Context, ev event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.h.Create(ctx, event.TypedCreateEvent[object]{Object: as[object](ev.Object), IsInInitialList: ev.IsInInitialList}, q)
}

func (e erasedHandler[object]) Update(ctx context.Context, ev event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.h.Update(ctx, event.TypedUpdateEvent[object]{ObjectOld: as[object](ev.ObjectOld), ObjectNew: as[object](ev.ObjectNew)}, q)
}

func (e erasedHandler[object]) Delete(ctx context.Context, ev event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.h.Delete(ctx, event.TypedDeleteEvent[object]{Object: as[object](ev.Object), DeleteStateUnknown: ev.DeleteStateUnknown}, q)
}

func (e erasedHandler[object]) Generic(ctx context.Context, ev event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.h.Generic(ctx, event.TypedGenericEvent[object]{Object: as[object](ev.Object)}, q)
}

// erasedPredicate is a typed predicate on client.Object.
type erasedPredicate[object client.Object] struct {
	p predicate.TypedPredicate[object]
}

func (e erasedPredicate[object]) Create(ev event.CreateEvent) bool {
	return e.p.Create(event.TypedCreateEvent[object]{Object: as[object](ev.Object), IsInInitialList: ev.IsInInitialList})
}

func (e erasedPredicate[object]) Update(ev event.UpdateEvent) bool {
	return e.p.Update(event.TypedUpdateEvent[object]{ObjectOld: as[object](ev.ObjectOld), ObjectNew: as[object](ev.ObjectNew)})
}

func (e erasedPredicate[object]) Delete(ev event.DeleteEvent) bool {
	return e.p.Delete(event.TypedDeleteEvent[object]{Object: as[object](ev.Object), DeleteStateUnknown: ev.DeleteStateUnknown})
}

func (e erasedPredicate[object]) Generic(ev event.GenericEvent) bool {
	return e.p.Generic(event.TypedGenericEvent[object]{Object: as[object](ev.Object)})
}
