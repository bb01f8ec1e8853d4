package builder

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/internal/plugin"
	"sigs.k8s.io/controller-runtime/internal/testscheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"wasmop.dev/guest"
)

// anyName refuses ConfigMaps named "bad", whatever generation of the API registered it.
type anyName struct{}

func (anyName) ValidateCreate(_ context.Context, obj runtime.Object) (admission.Warnings, error) {
	if obj.(*corev1.ConfigMap).Name == "bad" {
		return nil, guest.Deny("bad name")
	}
	return nil, nil
}
func (anyName) ValidateUpdate(context.Context, runtime.Object, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}
func (anyName) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// served is the validator the manager serves for ConfigMaps, after complete ran on it.
func served(t *testing.T, m *plugin.Manager, complete func() error) func(string) error {
	t.Helper()
	if err := complete(); err != nil {
		t.Fatal(err)
	}
	hooks := m.GuestWebhooks()
	if len(hooks.Validate) != 1 || hooks.Validate[0].Kind.Kind != "ConfigMap" {
		t.Fatalf("declared %+v", hooks.Validate)
	}
	return func(name string) error {
		obj := guest.New(guest.ConfigMap, "shop", name)
		_, err := hooks.Validator(context.Background(), guest.AdmissionRequest{Kind: guest.ConfigMap, Operation: guest.OperationCreate, Object: obj})
		return err
	}
}

func TestWhatTheHostOwnsIsRefusedByTheWebhookBuilder(t *testing.T) {
	m := plugin.NewManager(testscheme.New(t))
	w := webhooks[runtime.Object]{mgr: m, apiType: &corev1.ConfigMap{}, customValidator: anyName{}}
	w.recoverPanic(false)
	if err := w.complete(); err == nil || !strings.Contains(err.Error(), "RecoverPanic(false)") {
		t.Errorf("got %v", err)
	}
	empty := webhooks[runtime.Object]{mgr: m, apiType: &corev1.ConfigMap{}}
	if err := empty.complete(); err == nil || !strings.Contains(err.Error(), "nothing to serve") {
		t.Errorf("got %v", err)
	}
}
