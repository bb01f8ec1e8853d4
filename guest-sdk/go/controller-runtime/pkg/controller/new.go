package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Controller is a controller of reconcile requests.
type Controller = TypedController[reconcile.Request]

// TypedController reconciles the requests its sources make.
type TypedController[request comparable] interface {
	reconcile.TypedReconciler[request]
	// Watch adds a source of requests: a source.Kind the host watches.
	Watch(src source.TypedSource[request]) error
	// Start refuses: the host runs the controller.
	Start(ctx context.Context) error
	// GetLogger is the controller's logger.
	GetLogger() logr.Logger
}

// errHostRuns is what starting a guest's controller returns.
var errHostRuns = errors.New("a wasmop guest's controller is run by the host")

// New is a controller named name, added to mgr, reconciling with options.Reconciler.
func New(name string, mgr manager.Manager, options Options) (Controller, error) {
	c, err := NewUnmanaged(name, options)
	if err != nil {
		return nil, err
	}
	return c, mgr.Add(c)
}

// NewTyped is New for a controller of request, which must be reconcile.Request: the host queues
// object keys.
func NewTyped[request comparable](name string, mgr manager.Manager, options TypedOptions[request]) (TypedController[request], error) {
	untyped, ok := any(options).(Options)
	if !ok {
		return nil, fmt.Errorf("controller %s of requests other than reconcile.Request: the host queues object keys", name)
	}
	c, err := New(name, mgr, untyped)
	if err != nil {
		return nil, err
	}
	return any(c).(TypedController[request]), nil
}

// NewUnmanaged is a controller named name not yet added to a manager (mgr.Add adds it).
func NewUnmanaged(name string, options Options) (Controller, error) {
	if options.Reconciler == nil {
		return nil, fmt.Errorf("controller %s: must specify Reconciler", name)
	}
	return &Hosted{name: name, options: options}, nil
}

// Hosted is a controller controller.New made, as the host runs it.
type Hosted struct {
	name    string
	options Options
	watches []source.Watch
}

// Reconcile runs the controller's reconciler.
func (h *Hosted) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return h.options.Reconciler.Reconcile(ctx, req)
}

// Watch adds a source.Kind; any other source is refused naming it.
func (h *Hosted) Watch(src source.Source) error {
	watcher, ok := src.(source.Watcher)
	if !ok {
		return fmt.Errorf("source %T: the host watches only source.Kind sources", src)
	}
	w, err := watcher.HostWatch()
	if err != nil {
		return err
	}
	h.watches = append(h.watches, w)
	return nil
}

// Start refuses: the host runs the controller.
func (h *Hosted) Start(context.Context) error { return errHostRuns }

// GetLogger is the root logger named after the controller.
func (h *Hosted) GetLogger() logr.Logger { return log.Log.WithName(h.name) }

// Spec is the controller as the plugin declares it: its name, options and the sources its
// Watch added so far.
func (h *Hosted) Spec() (string, Options, []source.Watch) {
	return h.name, h.options, h.watches
}
