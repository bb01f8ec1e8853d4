// Package suite holds the dependencies of Kueue's failure-recovery integration tests run against
// wasmop (../run): the test package itself, from the Go module proxy, and what it imports, at the
// versions the operator's v0.17.0 go.mod requires.
package suite

import _ "sigs.k8s.io/kueue/pkg/controller/failurerecovery"
