//go:build !controller_runtime_pre_v0_23

package builder

import (
	"context"
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// WebhookBuilder builds the webhooks of one kind, as controller-runtime v0.23 and later write it:
// WebhookManagedBy(mgr, &T{}).WithValidator(…).WithDefaulter(…).Complete() makes the plugin
// validate and default T on create and update; a kind whose versions are a conversion.Hub and
// conversion.Convertible types is converted too.
type WebhookBuilder[T runtime.Object] struct {
	w webhooks[T]
}

// WebhookManagedBy starts the webhooks of object's kind for m.
func WebhookManagedBy[T runtime.Object](m manager.Manager, object T) *WebhookBuilder[T] {
	return &WebhookBuilder[T]{webhooks[T]{mgr: m, apiType: object}}
}

// WithValidator validates the kind with validator.
func (b *WebhookBuilder[T]) WithValidator(validator admission.Validator[T]) *WebhookBuilder[T] {
	b.w.validator = validator
	return b
}

// WithCustomValidator validates the kind with validator.
//
// Deprecated: use WithValidator, as controller-runtime says.
func (b *WebhookBuilder[T]) WithCustomValidator(validator admission.CustomValidator) *WebhookBuilder[T] {
	b.w.customValidator = validator
	return b
}

// WithDefaulter defaults the kind with defaulter.
func (b *WebhookBuilder[T]) WithDefaulter(defaulter admission.Defaulter[T], opts ...admission.DefaulterOption) *WebhookBuilder[T] {
	b.w.defaulter, b.w.defaulterOpts = defaulter, opts
	return b
}

// WithCustomDefaulter defaults the kind with defaulter.
//
// Deprecated: use WithDefaulter, as controller-runtime says.
func (b *WebhookBuilder[T]) WithCustomDefaulter(defaulter admission.CustomDefaulter, opts ...admission.DefaulterOption) *WebhookBuilder[T] {
	b.w.customDefaulter, b.w.defaulterOpts = defaulter, opts
	return b
}

// WithConverter is refused: a guest's kinds convert through their hub.
func (b *WebhookBuilder[T]) WithConverter(func(*runtime.Scheme) (conversion.Converter, error)) *WebhookBuilder[T] {
	b.w.refuse(refuseConverter)
	return b
}

// WithLogConstructor is refused: the host's log carries each request's fields.
func (b *WebhookBuilder[T]) WithLogConstructor(func(logr.Logger, *admission.Request) logr.Logger) *WebhookBuilder[T] {
	b.w.refuse(refuseLogConstructor)
	return b
}

// WithContextFunc is refused: the guest sees no HTTP request.
func (b *WebhookBuilder[T]) WithContextFunc(func(context.Context, *http.Request) context.Context) *WebhookBuilder[T] {
	b.w.refuse(refuseContextFunc)
	return b
}

// RecoverPanic(false) is refused: a guest's panic is the plugin failing, answered with its
// failure policy.
func (b *WebhookBuilder[T]) RecoverPanic(recoverPanic bool) *WebhookBuilder[T] {
	b.w.recoverPanic(recoverPanic)
	return b
}

// WithValidatorCustomPath is refused: the host names the paths it serves.
func (b *WebhookBuilder[T]) WithValidatorCustomPath(string) *WebhookBuilder[T] {
	b.w.refuse(refuseValidatorPath)
	return b
}

// WithDefaulterCustomPath is refused: the host names the paths it serves.
func (b *WebhookBuilder[T]) WithDefaulterCustomPath(string) *WebhookBuilder[T] {
	b.w.refuse(refuseDefaulterPath)
	return b
}

// Complete hands the kind's webhooks to the manager.
func (b *WebhookBuilder[T]) Complete() error {
	return b.w.complete()
}
