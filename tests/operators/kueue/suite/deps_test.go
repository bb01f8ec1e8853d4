package suite

import (
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "sigs.k8s.io/kueue/test/integration/framework"
	_ "sigs.k8s.io/kueue/test/util"
	_ "wasmop.dev/tests/operators/harness"
)
