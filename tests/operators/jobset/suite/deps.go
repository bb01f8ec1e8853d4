// Package suite holds the dependencies of JobSet's controller integration tests run against
// wasmop (../run): the controller package itself, from the Go module proxy, and what its envtest
// suite imports, at the versions the operator's v0.12.0 go.mod requires.
package suite

import _ "sigs.k8s.io/jobset/pkg/controllers"
