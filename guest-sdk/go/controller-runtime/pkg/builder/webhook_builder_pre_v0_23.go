//go:build controller_runtime_pre_v0_23

package builder

import (
	"errors"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// WebhookBuilder builds the webhooks of one kind, as controller-runtime before v0.23 writes it
// (`wasmop build` picks this API for a plugin whose go.mod requires such a version):
// WebhookManagedBy(mgr).For(&T{}).WithValidator(…).WithDefaulter(…).Complete().
type WebhookBuilder struct {
	w webhooks[runtime.Object]
}

// WebhookManagedBy starts webhooks for m; For names their kind.
func WebhookManagedBy(m manager.Manager) *WebhookBuilder {
	return &WebhookBuilder{webhooks[runtime.Object]{mgr: m}}
}

// For names the kind the webhooks are for.
func (b *WebhookBuilder) For(apiType runtime.Object) *WebhookBuilder {
	if b.w.apiType != nil {
		b.w.refuse("For() may be called only once")
	}
	b.w.apiType = apiType
	return b
}

// WithValidator validates the kind with validator.
func (b *WebhookBuilder) WithValidator(validator admission.CustomValidator) *WebhookBuilder {
	b.w.customValidator = validator
	return b
}

// WithDefaulter defaults the kind with defaulter.
func (b *WebhookBuilder) WithDefaulter(defaulter admission.CustomDefaulter, opts ...admission.DefaulterOption) *WebhookBuilder {
	b.w.customDefaulter, b.w.defaulterOpts = defaulter, opts
	return b
}

// WithLogConstructor is refused: the host's log carries each request's fields.
func (b *WebhookBuilder) WithLogConstructor(func(logr.Logger, *admission.Request) logr.Logger) *WebhookBuilder {
	b.w.refuse(refuseLogConstructor)
	return b
}

// RecoverPanic(false) is refused: a guest's panic is the plugin failing, answered with its
// failure policy.
func (b *WebhookBuilder) RecoverPanic(recoverPanic bool) *WebhookBuilder {
	b.w.recoverPanic(recoverPanic)
	return b
}

// WithValidatorCustomPath is refused: the host names the paths it serves.
func (b *WebhookBuilder) WithValidatorCustomPath(string) *WebhookBuilder {
	b.w.refuse(refuseValidatorPath)
	return b
}

// WithDefaulterCustomPath is refused: the host names the paths it serves.
func (b *WebhookBuilder) WithDefaulterCustomPath(string) *WebhookBuilder {
	b.w.refuse(refuseDefaulterPath)
	return b
}

// Complete hands the kind's webhooks to the manager.
func (b *WebhookBuilder) Complete() error {
	if b.w.apiType == nil {
		return errors.New("must provide the webhooks' kind: call For()")
	}
	return b.w.complete()
}
