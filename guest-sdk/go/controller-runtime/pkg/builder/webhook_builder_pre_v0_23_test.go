//go:build controller_runtime_pre_v0_23

package builder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/internal/plugin"
	"sigs.k8s.io/controller-runtime/internal/testscheme"
)

func TestTheBuilderBeforeV023ServesTheValidatorOfItsForKind(t *testing.T) {
	m := plugin.NewManager(testscheme.New(t))
	validate := served(t, m, WebhookManagedBy(m).For(&corev1.ConfigMap{}).WithValidator(anyName{}).Complete)
	if validate("good") != nil || validate("bad") == nil {
		t.Error("the validator does not decide")
	}
	if err := WebhookManagedBy(m).WithValidator(anyName{}).Complete(); err == nil {
		t.Error("no For() accepted")
	}
}
