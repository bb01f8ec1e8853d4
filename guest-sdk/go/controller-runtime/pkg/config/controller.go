// Package config is controller-runtime's controller configuration for wasmop guests: what
// mgr.GetControllerOptions returns. The host's settings decide a plugin's concurrency, sync
// timeout and leadership, so a guest's manager returns the zero configuration: a controller
// built from it takes the host's defaults.
package config

import (
	"time"

	"github.com/go-logr/logr"
)

// Controller is the configuration every controller of a manager starts from.
type Controller struct {
	// SkipNameValidation skips the check that controller names are unique.
	SkipNameValidation *bool
	// GroupKindConcurrency is MaxConcurrentReconciles per "Kind.group" of the For kind.
	GroupKindConcurrency map[string]int
	// MaxConcurrentReconciles is how many reconciles may run at once.
	MaxConcurrentReconciles int
	// CacheSyncTimeout bounds the wait for the caches to sync.
	CacheSyncTimeout time.Duration
	// RecoverPanic turns a reconcile's panic into an error.
	RecoverPanic *bool
	// NeedLeaderElection runs the controller only on the leader.
	NeedLeaderElection *bool
	// EnableWarmup starts the sources before leadership is won.
	EnableWarmup *bool
	// UsePriorityQueue uses controller-runtime's priority queue.
	UsePriorityQueue *bool
	// Logger is the controllers' base logger.
	Logger logr.Logger
	// ReconciliationTimeout bounds one reconcile.
	ReconciliationTimeout time.Duration
}
