package controllertest

// Added to the operator's test package by ../../../run: starts the wasmop host that replaces the
// suite's manager.

import (
	"context"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"wasmop.dev/tests/operators/harness"
)

// startWasmop runs the host with the plugin against the suite's apiserver, as the suite's own
// user (what its manager ran as), until ctx ends; it returns once the host is ready.
func startWasmop(ctx context.Context, cfg *rest.Config) {
	kubeconfig := harness.Kubeconfig(cfg.Host, cfg.CAData, cfg.CertData, cfg.KeyData)
	Expect(harness.Start(ctx, kubeconfig, nil)).To(Succeed())
}
