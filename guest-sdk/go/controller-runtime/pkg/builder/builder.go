// Package builder is controller-runtime's controller builder for wasmop guests:
// ControllerManagedBy(mgr).For(…).Owns(…).Watches(…).WatchesRawSource(…).WithEventFilter(…)
// .WithOptions(…).Complete(r) hands the manager the controller the host will run, from which the
// plugin's registration is made. The host queues object keys, so a TypedBuilder of requests other
// than reconcile.Request fails Complete.
package builder

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/internal/plugin"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Builder builds a controller of reconcile requests.
type Builder = TypedBuilder[reconcile.Request]

// TypedBuilder builds a controller.
type TypedBuilder[request comparable] struct {
	mgr        manager.Manager
	controller plugin.Controller
	options    controller.TypedOptions[request]
	owns       []plugin.Watch
	err        error
}

// ControllerManagedBy starts a controller for mgr.
func ControllerManagedBy(m manager.Manager) *Builder {
	return TypedControllerManagedBy[reconcile.Request](m)
}

// TypedControllerManagedBy starts a controller of request for mgr.
func TypedControllerManagedBy[request comparable](m manager.Manager) *TypedBuilder[request] {
	return &TypedBuilder[request]{mgr: m}
}

// Predicates are the predicates of one For, Owns or Watches.
type Predicates struct {
	predicates []predicate.Predicate
}

// ForOption modifies For.
type ForOption interface{ ApplyToFor(*Predicates) }

// OwnsOption modifies Owns.
type OwnsOption interface{ ApplyToOwns(*Predicates) }

// WatchesOption modifies Watches.
type WatchesOption interface{ ApplyToWatches(*Predicates) }

// WithPredicates filters the events of one For, Owns or Watches.
func WithPredicates(predicates ...predicate.Predicate) Predicates {
	return Predicates{predicates: predicates}
}

// ApplyToFor adds the predicates.
func (p Predicates) ApplyToFor(to *Predicates) {
	to.predicates = append(to.predicates, p.predicates...)
}

// ApplyToOwns adds the predicates.
func (p Predicates) ApplyToOwns(to *Predicates) {
	to.predicates = append(to.predicates, p.predicates...)
}

// ApplyToWatches adds the predicates.
func (p Predicates) ApplyToWatches(to *Predicates) {
	to.predicates = append(to.predicates, p.predicates...)
}

// For names the kind the controller reconciles.
func (b *TypedBuilder[request]) For(object client.Object, opts ...ForOption) *TypedBuilder[request] {
	if b.controller.For != nil {
		b.fail(errors.New("For() may be called only once"))
		return b
	}
	var p Predicates
	for _, o := range opts {
		o.ApplyToFor(&p)
	}
	b.controller.For, b.controller.ForPredicates = object, p.predicates
	return b
}

// Owns watches a kind the controller creates: its events reconcile the object's controller
// owner of the For kind.
func (b *TypedBuilder[request]) Owns(object client.Object, opts ...OwnsOption) *TypedBuilder[request] {
	var p Predicates
	for _, o := range opts {
		o.ApplyToOwns(&p)
	}
	b.owns = append(b.owns, plugin.Watch{Object: object, Predicates: p.predicates})
	return b
}

// Watches watches another kind, its events mapped to requests by eventHandler.
func (b *TypedBuilder[request]) Watches(object client.Object, eventHandler handler.TypedEventHandler[client.Object, request], opts ...WatchesOption) *TypedBuilder[request] {
	h, ok := any(eventHandler).(handler.EventHandler)
	if !ok {
		b.fail(fmt.Errorf("Watches of %T: a handler of requests other than reconcile.Request; the host queues object keys", object))
		return b
	}
	var p Predicates
	for _, o := range opts {
		o.ApplyToWatches(&p)
	}
	b.controller.Watches = append(b.controller.Watches, plugin.Watch{Object: object, Handler: h, Predicates: p.predicates})
	return b
}

// WatchesMetadata watches another kind's metadata only: its handler and predicates see
// *metav1.PartialObjectMetadata (object's apiVersion and kind name the kind).
func (b *TypedBuilder[request]) WatchesMetadata(object client.Object, eventHandler handler.TypedEventHandler[client.Object, request], opts ...WatchesOption) *TypedBuilder[request] {
	gvk := object.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		b.fail(fmt.Errorf("WatchesMetadata of %T: set its apiVersion and kind", object))
		return b
	}
	metadata := &metav1.PartialObjectMetadata{}
	metadata.SetGroupVersionKind(gvk)
	return b.Watches(metadata, eventHandler, opts...)
}

// WatchesRawSource watches a source.Kind: its kind's changes run its typed handler and
// predicates (not the builder's event filters). A source the host cannot watch fails Complete,
// naming it.
func (b *TypedBuilder[request]) WatchesRawSource(src source.TypedSource[request]) *TypedBuilder[request] {
	watcher, ok := src.(source.Watcher)
	if !ok {
		b.fail(fmt.Errorf("source %T: the host watches only source.Kind sources", src))
		return b
	}
	w, err := watcher.HostWatch()
	if err != nil {
		b.fail(err)
		return b
	}
	b.controller.Raw = append(b.controller.Raw, w)
	return b
}

// WithEventFilter filters the events of every watched kind.
func (b *TypedBuilder[request]) WithEventFilter(p predicate.Predicate) *TypedBuilder[request] {
	b.controller.EventFilter = append(b.controller.EventFilter, p)
	return b
}

// WithOptions sets the controller's options.
func (b *TypedBuilder[request]) WithOptions(options controller.TypedOptions[request]) *TypedBuilder[request] {
	b.options = options
	return b
}

// WithLogConstructor makes each reconcile's logger from its request.
func (b *TypedBuilder[request]) WithLogConstructor(logConstructor func(*request) logr.Logger) *TypedBuilder[request] {
	b.options.LogConstructor = logConstructor
	return b
}

// Named names the controller in logs.
func (b *TypedBuilder[request]) Named(name string) *TypedBuilder[request] {
	b.controller.Name = name
	return b
}

// Complete hands the controller reconciling with r to the manager.
func (b *TypedBuilder[request]) Complete(r reconcile.TypedReconciler[request]) error {
	reconciler, ok := any(r).(reconcile.Reconciler)
	options, sameRequests := any(b.options).(controller.Options)
	switch {
	case b.err != nil:
		return b.err
	case r == nil:
		return errors.New("must provide a non-nil Reconciler")
	case !ok || !sameRequests:
		return errors.New("a controller of requests other than reconcile.Request: the host queues object keys")
	case b.controller.For == nil && len(b.controller.Watches) == 0 && len(b.controller.Raw) == 0:
		return errors.New("must provide an object for reconciliation: call For(), Watches() or WatchesRawSource()")
	case len(b.owns) > 0 && b.controller.For == nil:
		return errors.New("Owns() needs For(): owned objects are mapped to their controller owner of the For kind")
	}
	for _, owned := range b.owns {
		owned.Handler = handler.EnqueueRequestForOwner(b.mgr.GetScheme(), b.mgr.GetRESTMapper(), b.controller.For, handler.OnlyControllerOwner())
		b.controller.Watches = append(b.controller.Watches, owned)
	}
	b.controller.Reconciler, b.controller.Options = reconciler, options
	c := b.controller
	return b.mgr.Add(&c)
}

func (b *TypedBuilder[request]) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}
