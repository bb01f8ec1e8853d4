// Package suite holds the dependencies of KubeRay's RayCluster controller tests run against
// wasmop (../run): the controller package itself, from the Go module proxy, and what its envtest
// suite imports, at the versions the operator's v1.5.0 go.mod requires.
package suite

import _ "github.com/ray-project/kuberay/ray-operator/controllers/ray"
