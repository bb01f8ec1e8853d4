package ray

// Added to the operator's test package by ../../../run: starts the wasmop host that replaces the
// suite's manager.

import (
	"context"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"wasmop.dev/tests/operators/harness"

	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
)

// startWasmop runs the host with the plugin against the suite's apiserver, as a user of
// system:masters (what the suite's manager ran as), until ctx ends; it returns once the host is
// ready. The plugin's environment holds what the suite set in its own process for the manager:
// RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV=10.
func startWasmop(ctx context.Context, cfg *rest.Config) {
	user, err := testEnv.AddUser(envtest.User{Name: "wasmop", Groups: []string{"system:masters"}}, cfg)
	Expect(err).ToNot(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	Expect(err).ToNot(HaveOccurred())
	env := map[string]string{utils.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV: "10"}
	Expect(harness.Start(ctx, kubeconfig, env)).To(Succeed())
}
