// Package fake is named here so that `go mod tidy` of a plugin module resolves what an
// operator's own tests import from controller-runtime; the wasmop layer does not implement it.
// A plugin runs inside the host, not under an operator's unit tests: run those tests with
// controller-runtime itself, and the operator's controller under wasmop as
// tests/operators/external-secrets does.
package fake
