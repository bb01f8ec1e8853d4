// Package builder is controller-runtime's controller builder for wasmop guests:
// ControllerManagedBy(mgr).For(…).Owns(…).Watches(…).WatchesRawSource(…).WithEventFilter(…)
// .WithOptions(…).Complete(r) hands the manager the controller the host will run, from which the plugin's
// registration is made.
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

// Builder builds a controller.
type Builder struct {
	mgr        manager.Manager
	controller plugin.Controller
	owns       []plugin.Watch
	err        error
}

// ControllerManagedBy starts a controller for mgr.
func ControllerManagedBy(m manager.Manager) *Builder {
	return &Builder{mgr: m}
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
func (b *Builder) For(object client.Object, opts ...ForOption) *Builder {
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
func (b *Builder) Owns(object client.Object, opts ...OwnsOption) *Builder {
	var p Predicates
	for _, o := range opts {
		o.ApplyToOwns(&p)
	}
	b.owns = append(b.owns, plugin.Watch{Object: object, Predicates: p.predicates})
	return b
}

// Watches watches another kind, its events mapped to requests by eventHandler.
func (b *Builder) Watches(object client.Object, eventHandler handler.EventHandler, opts ...WatchesOption) *Builder {
	var p Predicates
	for _, o := range opts {
		o.ApplyToWatches(&p)
	}
	b.controller.Watches = append(b.controller.Watches, plugin.Watch{Object: object, Handler: eventHandler, Predicates: p.predicates})
	return b
}

// WatchesMetadata watches another kind's metadata only: its handler and predicates see
// *metav1.PartialObjectMetadata (object's apiVersion and kind name the kind).
func (b *Builder) WatchesMetadata(object client.Object, eventHandler handler.EventHandler, opts ...WatchesOption) *Builder {
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
func (b *Builder) WatchesRawSource(src source.Source) *Builder {
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

// WithLogConstructor makes each reconcile's logger from its request.
func (b *Builder) WithLogConstructor(logConstructor func(*reconcile.Request) logr.Logger) *Builder {
	b.controller.Options.LogConstructor = logConstructor
	return b
}

// WithEventFilter filters the events of every watched kind.
func (b *Builder) WithEventFilter(p predicate.Predicate) *Builder {
	b.controller.EventFilter = append(b.controller.EventFilter, p)
	return b
}

// WithOptions sets the controller's options.
func (b *Builder) WithOptions(options controller.Options) *Builder {
	b.controller.Options = options
	return b
}

// Named names the controller in logs.
func (b *Builder) Named(name string) *Builder {
	b.controller.Name = name
	return b
}

// Complete hands the controller reconciling with r to the manager.
func (b *Builder) Complete(r reconcile.Reconciler) error {
	switch {
	case b.err != nil:
		return b.err
	case b.controller.For == nil && len(b.controller.Watches) == 0 && len(b.controller.Raw) == 0:
		return errors.New("must provide an object for reconciliation: call For(), Watches() or WatchesRawSource()")
	case r == nil:
		return errors.New("must provide a non-nil Reconciler")
	}
	if len(b.owns) > 0 && b.controller.For == nil {
		return errors.New("Owns() needs For(): owned objects are mapped to their controller owner of the For kind")
	}
	for _, owned := range b.owns {
		owned.Handler = handler.EnqueueRequestForOwner(b.mgr.GetScheme(), b.mgr.GetRESTMapper(), b.controller.For, handler.OnlyControllerOwner())
		b.controller.Watches = append(b.controller.Watches, owned)
	}
	b.controller.Reconciler = r
	c := b.controller
	return b.mgr.Add(&c)
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}
