package suite

import (
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "wasmop.dev/tests/operators/harness"
)
