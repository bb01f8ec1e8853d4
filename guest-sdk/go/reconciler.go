package guest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"wasmop.dev/guest/abi"
	"wasmop.dev/guest/internal/wit"
)

// Request is one reconcile request: the primary object's key.
type Request = ObjectKey

// Result is a successful reconcile: the zero Result means converged, RequeueAfter asks to
// reconcile the key again after a delay.
type Result struct {
	// RequeueAfter reconciles the key again after this delay, when positive.
	RequeueAfter time.Duration
	// Priority orders requeued keys; higher runs first.
	Priority *int32
}

// Reconciler is a plugin: its registration, its reconcile function and, for watches mapped by
// the guest, its map function.
type Reconciler struct {
	Registration
	// Reconcile converges one primary object; an error is retried with backoff unless it is
	// Terminal.
	Reconcile func(ctx context.Context, req Request) (Result, error)
	// Map turns a changed object of a kind watched with MapByGuest into requests.
	Map func(kind Kind, obj Object) []Request
	// Handle turns a change of a kind in Registration.Handled into requests; none drops it.
	Handle func(kind Kind, change Change) []Request
	// Webhooks are the admission and conversion webhooks it serves; none when zero.
	Webhooks Webhooks
	// LoadWarnings are logged once, at warning level, when the host loads the plugin (describe),
	// not in every instance.
	LoadWarnings []string
}

// Register makes r the component's reconciler and sends log/slog's default logger to the host;
// call it from an init function of the plugin's main package. Webhooks with rules but no function
// (or a function but no rules) panic here, so the plugin fails to load saying which.
func Register(r Reconciler) {
	if err := r.Webhooks.check(); err != nil {
		panic(err)
	}
	RegisterFunc(func() Reconciler { return r })
}

// RegisterFunc makes the reconciler make returns the component's reconciler, as Register does,
// but make runs in each instance, on its first call, once os.Args and the environment are the
// instance's. Init functions run once, when `wasmop build` pre-initialises the plugin; what
// depends on the plugin entry's args or env belongs in make.
func RegisterFunc(make func() Reconciler) {
	wit.Export = &instance{make: make}
	slog.SetDefault(slog.New(NewLogHandler(slog.LevelDebug)))
}

// terminal marks an error that must not be retried.
type terminal struct{ err error }

// Error is the wrapped error's message.
func (t terminal) Error() string { return t.err.Error() }

// Unwrap is the wrapped error.
func (t terminal) Unwrap() error { return t.err }

// Terminal marks err as not retryable (controller-runtime's TerminalError): the next event on the
// object reconciles it again.
func Terminal(err error) error {
	return terminal{err}
}

// exports implements the component's exports over a Reconciler; each export is a guest turn
// (abi.GuestTurn), the only time the collector runs.
type exports struct{ r Reconciler }

// Describe is the registration as the host takes it; the load warnings go to the log.
func (e exports) Describe() wit.Registration {
	defer abi.GuestTurn()()
	for _, warning := range e.r.LoadWarnings {
		slog.Warn(warning)
	}
	return e.r.Registration.wit()
}

// Reconcile runs the reconcile function, turning a panic into a retryable error.
func (e exports) Reconcile(req wit.Request) (result wit.Result[wit.Outcome, wit.ReconcileError]) {
	defer abi.GuestTurn()()
	defer func() {
		if p := recover(); p != nil {
			msg := fmt.Sprintf("panic: %v", p)
			slog.Error(msg, "stack", string(debug.Stack()))
			result = wit.Result[wit.Outcome, wit.ReconcileError]{IsErr: true, Err: wit.ReconcileError{Case: wit.ReconcileErrorRetryable, Retryable: msg}}
		}
	}()
	res, err := e.r.Reconcile(context.Background(), Request{Namespace: req.Namespace, Name: req.Name})
	return outcome(res, err)
}

// outcome is what a reconcile's result and error mean for the host.
func outcome(res Result, err error) wit.Result[wit.Outcome, wit.ReconcileError] {
	var t terminal
	switch {
	case errors.As(err, &t):
		return wit.Result[wit.Outcome, wit.ReconcileError]{IsErr: true, Err: wit.ReconcileError{Case: wit.ReconcileErrorTerminal, Terminal: err.Error()}}
	case err != nil:
		return wit.Result[wit.Outcome, wit.ReconcileError]{IsErr: true, Err: wit.ReconcileError{Case: wit.ReconcileErrorRetryable, Retryable: err.Error()}}
	case res.RequeueAfter > 0:
		requeue := wit.Requeue{After: uint64(res.RequeueAfter.Milliseconds()), Priority: res.Priority}
		return wit.Result[wit.Outcome, wit.ReconcileError]{Ok: wit.Outcome{Case: wit.OutcomeRequeueAfter, RequeueAfter: requeue}}
	}
	return wit.Result[wit.Outcome, wit.ReconcileError]{Ok: wit.Outcome{Case: wit.OutcomeDone}}
}

// Map runs the map function; none maps to no requests.
func (e exports) Map(kind wit.Gvk, obj wit.Object) []wit.ObjectKey {
	defer abi.GuestTurn()()
	if e.r.Map == nil {
		return nil
	}
	o, err := Decode(obj)
	if err != nil {
		slog.Error("map: " + err.Error())
		return nil
	}
	return witKeys(e.r.Map(Kind{kind.Group, kind.Version, kind.Kind}, o))
}
