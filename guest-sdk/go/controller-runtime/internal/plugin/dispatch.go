package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"wasmop.dev/guest"
)

// requeueSoon stands for Result.Requeue without RequeueAfter: the host requeues after its
// minimum requeue delay, not with the key's backoff.
const requeueSoon = time.Millisecond

// Reconcile runs the reconciler on req, unless the primary object is cached and a filter of
// the For kind refuses it (its event would not have been queued).
func (p *Plugin) Reconcile(ctx context.Context, req guest.Request) (guest.Result, error) {
	request := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: req.Namespace, Name: req.Name}}
	if len(p.forFilters) > 0 {
		obj, err := p.object(p.primary)
		if err != nil {
			return guest.Result{}, err
		}
		if p.manager.client.Get(ctx, request.NamespacedName, obj) == nil && !passes(p.forFilters, obj) {
			return guest.Result{}, nil
		}
	}
	logger := log.Log
	if construct := p.manager.controller.Options.LogConstructor; construct != nil {
		logger = construct(&request)
	}
	res, err := p.manager.controller.Reconciler.Reconcile(log.IntoContext(ctx, logger), request)
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

// Map is the requests the watches of kind map obj to, those whose filters pass it.
func (p *Plugin) Map(kind guest.Kind, obj guest.Object) []guest.Request {
	gvk := schema.GroupVersionKind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind}
	typed, err := p.decode(gvk, obj)
	if err != nil {
		slog.Error("mapping a " + kind.Kind + ": " + err.Error())
		return nil
	}
	var out []guest.Request
	for _, w := range p.mapped[gvk] {
		if !passes(w.filters, typed) {
			continue
		}
		for _, r := range w.handler.Requests(context.Background(), typed) {
			out = append(out, guest.Request{Namespace: r.Namespace, Name: r.Name})
		}
	}
	return out
}

// object is an empty object of gvk: its Go type when the scheme has one, else unstructured.
func (p *Plugin) object(gvk schema.GroupVersionKind) (client.Object, error) {
	if typed, err := p.manager.scheme.New(gvk); err == nil {
		if obj, ok := typed.(client.Object); ok {
			return obj, nil
		}
		return nil, fmt.Errorf("%T is not a client.Object", typed)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (p *Plugin) decode(gvk schema.GroupVersionKind, obj guest.Object) (client.Object, error) {
	out, err := p.object(gvk)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return out, json.Unmarshal(data, out)
}
