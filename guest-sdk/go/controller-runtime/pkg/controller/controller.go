// Package controller is controller-runtime's controllers for wasmop guests: their options, and
// controller.New with Watch of source.Kind sources, for operators that build a controller without
// the builder. The host runs the controller itself; Start refuses.
package controller

import (
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Options configure a controller of reconcile requests.
type Options = TypedOptions[reconcile.Request]

// TypedOptions configure the plugin's controller. Fields the host cannot honour fail the
// registration when set.
type TypedOptions[request comparable] struct {
	// MaxConcurrentReconciles is how many reconciles may run at once; 0 means 1.
	MaxConcurrentReconciles int
	// ReconciliationTimeout bounds one reconcile; 0 means the host's default.
	ReconciliationTimeout time.Duration
	// CacheSyncTimeout is the host's to set (--cache-sync-timeout); setting it fails.
	CacheSyncTimeout time.Duration
	// RecoverPanic is always on: a panic in a reconcile is logged and retried.
	RecoverPanic *bool
	// NeedLeaderElection false is logged at load: the host runs the controller where it runs the
	// plugin.
	NeedLeaderElection *bool
	// SkipNameValidation is accepted and has no effect.
	SkipNameValidation *bool
	// LogConstructor makes the logger of a reconcile, handed its request; the root logger when
	// nil. The host's own log lines of the reconcile carry its plugin, object and reconcile id.
	LogConstructor func(request *request) logr.Logger
	// Reconciler reconciles the controller's requests (controller.New's; the builder sets its own).
	Reconciler reconcile.TypedReconciler[request]
}
