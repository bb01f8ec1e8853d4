//go:build !controller_runtime_pre_v0_23

package builder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/internal/plugin"
	"sigs.k8s.io/controller-runtime/internal/testscheme"
)

func TestTheGenericBuilderServesTheValidatorForItsKind(t *testing.T) {
	m := plugin.NewManager(testscheme.New(t))
	validate := served(t, m, WebhookManagedBy(m, &corev1.ConfigMap{}).WithCustomValidator(anyName{}).Complete)
	if validate("good") != nil || validate("bad") == nil {
		t.Error("the validator does not decide")
	}
}
