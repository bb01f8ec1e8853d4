// Package source is controller-runtime's event sources for wasmop guests. The host's informers
// are the only sources: source.Kind names a kind, its handler and its predicates, which the
// builder's WatchesRawSource makes a watch of the plugin (its changes handled in the guest, with
// the handler and predicates typed as the source declares them). A source of other events —
// source.Channel, a custom Source — cannot run in a sandbox that lives for one call, and the
// builder refuses it naming it.
package source

import (
	"context"
	"errors"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Source is a source of reconcile requests.
type Source = TypedSource[reconcile.Request]

// TypedSource is a source of requests: started by the controller with its queue.
type TypedSource[request comparable] interface {
	// Start adds the source's requests to the queue; the host runs a guest's sources.
	Start(context.Context, workqueue.TypedRateLimitingInterface[request]) error
}

// SyncingSource is a source of reconcile requests that says when it synced.
type SyncingSource = TypedSyncingSource[reconcile.Request]

// TypedSyncingSource is a source that says when it synced.
type TypedSyncingSource[request comparable] interface {
	TypedSource[request]
	// WaitForSync waits for the source's cache.
	WaitForSync(ctx context.Context) error
}

// Watch is a source as the builder declares it to the host: a kind, the handler of its events
// and their predicates, on client.Object.
type Watch struct {
	// Object is an object of the kind, of the Go type its handler and predicates take.
	Object client.Object
	// Handler maps its events to requests.
	Handler handler.EventHandler
	// Predicates filter its events.
	Predicates []predicate.Predicate
}

// Watcher is a source the host can watch: the builder asks it for its Watch.
type Watcher interface {
	// HostWatch is the source as a watch of the host's informers, or why it cannot be one.
	HostWatch() (Watch, error)
}

// errHostStarts is what starting a guest's source returns.
var errHostStarts = errors.New("a wasmop plugin's sources are started by the host")

// Kind is the source of obj's kind's events, mapped by handler and filtered by predicates.
func Kind[object client.Object](cache cache.Cache, obj object, handler handler.TypedEventHandler[object, reconcile.Request], predicates ...predicate.TypedPredicate[object]) SyncingSource {
	return TypedKind(cache, obj, handler, predicates...)
}

// TypedKind is the source of obj's kind's events, mapped by handler to requests and filtered
// by predicates.
func TypedKind[object client.Object, request comparable](_ cache.Cache, obj object, handler handler.TypedEventHandler[object, request], predicates ...predicate.TypedPredicate[object]) TypedSyncingSource[request] {
	return &kind[object, request]{obj: obj, handler: handler, predicates: predicates}
}

type kind[object client.Object, request comparable] struct {
	obj        object
	handler    handler.TypedEventHandler[object, request]
	predicates []predicate.TypedPredicate[object]
}

func (k *kind[object, request]) Start(context.Context, workqueue.TypedRateLimitingInterface[request]) error {
	return errHostStarts
}

func (k *kind[object, request]) WaitForSync(context.Context) error { return nil }

func (k *kind[object, request]) String() string { return "Kind source" }

// HostWatch is the source on client.Object, when its requests are reconcile.Requests.
func (k *kind[object, request]) HostWatch() (Watch, error) {
	h, ok := any(k.handler).(handler.TypedEventHandler[object, reconcile.Request])
	if !ok {
		return Watch{}, errors.New("source.TypedKind with requests other than reconcile.Request: the host queues object keys")
	}
	w := Watch{Object: k.obj, Handler: erasedHandler[object]{h}}
	for _, p := range k.predicates {
		w.Predicates = append(w.Predicates, erasedPredicate[object]{p})
	}
	return w, nil
}

// Channel is the source of the events sent on source; it cannot run in a guest, and the builder
// refuses it.
func Channel[object any](source <-chan event.TypedGenericEvent[object], handler handler.TypedEventHandler[object, reconcile.Request], _ ...ChannelOpt[object, reconcile.Request]) Source {
	return unwatchable("source.Channel: a wasmop plugin's instance lives for one call, so no goroutine can send it events; have the host watch a kind instead (source.Kind)")
}

// ChannelOpt modifies Channel.
type ChannelOpt[object any, request comparable] func(*ChannelOptions[object, request])

// ChannelOptions are Channel's options.
type ChannelOptions[object any, request comparable] struct {
	// Predicates filter the channel's events.
	Predicates []predicate.TypedPredicate[object]
}

// WithPredicates filters a Channel's events.
func WithPredicates[object any, request comparable](p ...predicate.TypedPredicate[object]) ChannelOpt[object, request] {
	return func(o *ChannelOptions[object, request]) { o.Predicates = append(o.Predicates, p...) }
}

// unwatchable is a source the host cannot watch, saying why.
type unwatchable string

func (u unwatchable) Start(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	return errHostStarts
}

func (u unwatchable) HostWatch() (Watch, error) { return Watch{}, errors.New(string(u)) }
