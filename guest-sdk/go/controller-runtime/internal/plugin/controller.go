// Package plugin turns what a controller-runtime program sets up — the controller its builder
// completes, its field indexes, its event recorders — into a wasmop plugin: the registration
// `describe` returns and the reconcile and handle exports. A use the host cannot honour is an
// error naming it, returned by the setup.
package plugin

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watch is a kind the controller watches: an object of its Go type, its handler, its predicates.
type Watch = source.Watch

// Controller is what a builder completed: the host runs it.
type Controller struct {
	// Name is the builder's name for it, for logs.
	Name string
	// For is an object of the primary kind.
	For client.Object
	// ForPredicates filter the primary kind's events.
	ForPredicates []predicate.Predicate
	// Watches are the other kinds watched, owned ones included.
	Watches []Watch
	// Raw are the sources of WatchesRawSource, which the EventFilter does not filter.
	Raw []Watch
	// EventFilter filters the events of every kind but the raw sources'.
	EventFilter []predicate.Predicate
	// Options are the controller's options.
	Options controller.Options
	// Reconciler reconciles the primary kind.
	Reconciler reconcile.Reconciler
}

// Start refuses: the host runs the controller, not the guest.
func (c *Controller) Start(context.Context) error {
	return errors.New("a wasmop guest's controller is run by the host")
}
