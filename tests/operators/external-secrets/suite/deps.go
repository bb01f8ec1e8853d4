// Package suite holds the dependencies of External Secrets Operator's ClusterExternalSecret
// controller tests run against wasmop (../run): the controller package itself, from the Go
// module proxy, and what its envtest suite imports, at the versions the operator's v0.16.2
// go.mod requires.
package suite

import _ "github.com/external-secrets/external-secrets/pkg/controllers/clusterexternalsecret"
