// Package guest writes wasmop reconcilers in Go, built into WebAssembly components with Go's own
// wasip1 port. A plugin declares a [Reconciler] (its [Registration] and reconcile function) and
// calls [Register] from an init function; the packages cache, client and events reach the host,
// log/slog writes to the host's log, and errors from the host are the typed errors of this
// package ([NotFound], [Conflict], ...).
package guest
