// Package log is controller-runtime's logging API for wasmop guests: a logr.Logger whose
// records go to the host's log, where they carry the reconcile's plugin, object and id.
package log

import (
	"context"

	"github.com/go-logr/logr"
	"wasmop.dev/guest"
)

// Log is the root logger; every record reaches the host's log.
var Log = logr.FromSlogHandler(guest.NewLogHandler(guest.LevelTrace))

// SetLogger replaces the root logger (upstream's delegating logger); a guest need not call it.
func SetLogger(l logr.Logger) { Log = l }

// FromContext is the logger of ctx, the root logger when it carries none, with keysAndValues
// added.
func FromContext(ctx context.Context, keysAndValues ...any) logr.Logger {
	l := Log
	if ctx != nil {
		if fromCtx, err := logr.FromContext(ctx); err == nil {
			l = fromCtx
		}
	}
	return l.WithValues(keysAndValues...)
}

// IntoContext returns ctx carrying l.
func IntoContext(ctx context.Context, l logr.Logger) context.Context {
	return logr.NewContext(ctx, l)
}
