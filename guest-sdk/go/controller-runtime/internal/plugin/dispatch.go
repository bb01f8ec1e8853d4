package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"wasmop.dev/guest"
)

// requeueSoon stands for Result.Requeue without RequeueAfter: the host requeues after its
// minimum requeue delay, not with the key's backoff.
const requeueSoon = time.Millisecond

// Reconcile runs the reconciler on req, with the logger its LogConstructor makes.
func (p *Plugin) Reconcile(ctx context.Context, req guest.Request) (guest.Result, error) {
	request := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: req.Namespace, Name: req.Name}}
	logger := log.Log
	if construct := p.controller.Options.LogConstructor; construct != nil {
		logger = construct(&request)
	}
	res, err := p.controller.Reconciler.Reconcile(log.IntoContext(ctx, logger), request)
	return result(res, err)
}

func result(res reconcile.Result, err error) (guest.Result, error) {
	if err != nil {
		if reconcile.IsTerminal(err) {
			return guest.Result{}, guest.Terminal(err)
		}
		return guest.Result{}, err
	}
	out := guest.Result{RequeueAfter: res.RequeueAfter}
	if res.Requeue && out.RequeueAfter <= 0 {
		out.RequeueAfter = requeueSoon
	}
	if res.Priority != nil {
		priority := int32(*res.Priority)
		out.Priority = &priority
	}
	return out, nil
}

// Handle is the requests the sources of kind make of change: each source's predicates decide on
// its event, with the objects decoded as the source's Go type, and its handler adds what the
// event maps to.
func (p *Plugin) Handle(kind guest.Kind, change guest.Change) []guest.Request {
	gvk := schema.GroupVersionKind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind}
	ctx, queue := context.Background(), &collector{}
	for _, w := range p.handled[gvk] {
		old, updated, err := decodeChange(w.Object, change)
		if err != nil {
			slog.Error("handling a change of a " + kind.Kind + ": " + err.Error())
			return nil
		}
		run(ctx, w, old, updated, queue)
	}
	out := make([]guest.Request, 0, len(queue.requests))
	for _, r := range queue.requests {
		out = append(out, guest.Request{Namespace: r.Namespace, Name: r.Name})
	}
	return out
}

// run hands a change to one source: its predicates, all of them, decide on the event, its
// handler adds to q.
func run(ctx context.Context, w Watch, old, updated client.Object, q *collector) {
	passes := predicate.And(w.Predicates...)
	switch {
	case old == nil:
		if e := (event.CreateEvent{Object: updated}); passes.Create(e) {
			w.Handler.Create(ctx, e, q)
		}
	case updated == nil:
		if e := (event.DeleteEvent{Object: old}); passes.Delete(e) {
			w.Handler.Delete(ctx, e, q)
		}
	default:
		if e := (event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); passes.Update(e) {
			w.Handler.Update(ctx, e, q)
		}
	}
}

// decodeChange is the change's objects as like's Go type; nil where the change has none.
func decodeChange(like client.Object, change guest.Change) (old, updated client.Object, err error) {
	if change.Old != nil {
		if old, err = decodeAs(like, change.Old); err != nil {
			return nil, nil, err
		}
	}
	if change.New != nil {
		if updated, err = decodeAs(like, change.New); err != nil {
			return nil, nil, err
		}
	}
	return old, updated, nil
}

// decodeAs is obj decoded into a new object of like's Go type (a struct of the scheme,
// unstructured, or metadata only).
func decodeAs(like client.Object, obj guest.Object) (client.Object, error) {
	out, ok := reflect.New(reflect.TypeOf(like).Elem()).Interface().(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a pointer to a client.Object", like)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return out, json.Unmarshal(data, out)
}
