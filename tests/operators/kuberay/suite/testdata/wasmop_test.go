package ray

// Added to the operator's test package by ../../../run: starts the wasmop host that replaces the
// suite's manager.

import (
	"context"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"wasmop.dev/tests/operators/harness"

	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
)

// startWasmop runs the host with the plugin against the suite's apiserver, as the suite's own
// user (what its manager ran as), until ctx ends; it returns once the host is ready. The
// plugin's environment selects the module's RayCluster controller and holds what the suite set in
// its own process for the manager: RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV=10.
func startWasmop(ctx context.Context, cfg *rest.Config) {
	kubeconfig := harness.Kubeconfig(cfg.Host, cfg.CAData, cfg.CertData, cfg.KeyData)
	env := map[string]string{"WASMOP_CONTROLLER": "raycluster", utils.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV: "10"}
	Expect(harness.Start(ctx, kubeconfig, env)).To(Succeed())
}
