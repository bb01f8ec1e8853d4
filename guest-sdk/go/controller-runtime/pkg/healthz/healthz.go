// Package healthz is controller-runtime's health checks for wasmop guests. The host answers
// /healthz and /readyz for every plugin (its readiness: every plugin it requires loaded and
// synced), so a guest's checkers are types for code that declares them.
package healthz

import "net/http"

// Checker checks one aspect of health; nil is healthy.
type Checker func(req *http.Request) error

// Ping is always healthy.
var Ping Checker = func(*http.Request) error { return nil }
