// Package reconcile is controller-runtime's reconcile API for wasmop guests: the request a
// reconcile receives, the result it returns and the reconciler interface.
package reconcile

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Request is the key of the object to reconcile.
type Request struct {
	types.NamespacedName
}

// Result says whether and when to reconcile the request again.
type Result struct {
	// Requeue asks to reconcile again with the queue's backoff (deprecated upstream; kept so
	// existing reconcilers compile). RequeueAfter wins when both are set.
	Requeue bool
	// RequeueAfter reconciles the request again after this delay, when positive.
	RequeueAfter time.Duration
	// Priority orders requeued requests; higher runs first.
	Priority *int
}

// IsZero is whether the result asks for nothing.
func (r *Result) IsZero() bool {
	return r == nil || (!r.Requeue && r.RequeueAfter == 0 && r.Priority == nil)
}

// Reconciler converges one object toward its desired state.
type Reconciler interface {
	Reconcile(context.Context, Request) (Result, error)
}

// Func is a function that is a Reconciler.
type Func func(context.Context, Request) (Result, error)

// Reconcile calls f.
func (f Func) Reconcile(ctx context.Context, req Request) (Result, error) { return f(ctx, req) }

// TypedReconciler is a Reconciler over requests of type R; wasmop guests use R = Request.
type TypedReconciler[R comparable] interface {
	Reconcile(context.Context, R) (Result, error)
}

// terminalError marks an error that retrying cannot fix.
type terminalError struct{ err error }

func (t *terminalError) Error() string { return "terminal error: " + t.err.Error() }

func (t *terminalError) Unwrap() error { return t.err }

func (t *terminalError) Is(target error) bool {
	_, ok := target.(*terminalError)
	return ok
}

// TerminalError wraps err so the request is not retried; the next event reconciles it again.
func TerminalError(err error) error {
	if err == nil {
		err = errors.New("nil error passed to TerminalError")
	}
	return &terminalError{err}
}

// IsTerminal is whether err is, or wraps, a TerminalError.
func IsTerminal(err error) bool {
	return errors.Is(err, &terminalError{})
}
