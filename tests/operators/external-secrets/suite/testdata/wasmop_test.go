package clusterexternalsecret

// Added to the operator's test package by ../../../run: starts the wasmop host that replaces the
// suite's manager.

import (
	"context"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"wasmop.dev/tests/operators/harness"
)

// startWasmop runs the host with the plugin against the suite's apiserver, as a user of
// system:masters (what the suite's manager ran as), until ctx ends; it returns once the host is
// ready.
func startWasmop(ctx context.Context, cfg *rest.Config) {
	user, err := testEnv.AddUser(envtest.User{Name: "wasmop", Groups: []string{"system:masters"}}, cfg)
	Expect(err).ToNot(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	Expect(err).ToNot(HaveOccurred())
	Expect(harness.Start(ctx, kubeconfig, nil)).To(Succeed())
}
