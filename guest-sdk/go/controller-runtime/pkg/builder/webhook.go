package builder

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/internal/plugin"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// WebhookBuilder builds the webhooks of one kind: WebhookManagedBy(mgr, &T{}).WithValidator(…)
// .WithDefaulter(…).Complete() makes the plugin validate and default T on create and update; a
// kind whose versions are a conversion.Hub and conversion.Convertible types is converted too.
// The host writes the webhook configurations and serves them: paths, log and context
// constructors and custom converters are the host's, and refused.
type WebhookBuilder[T runtime.Object] struct {
	mgr             manager.Manager
	apiType         T
	validator       admission.Validator[T]
	customValidator admission.CustomValidator
	defaulter       admission.Defaulter[T]
	customDefaulter admission.CustomDefaulter
	defaulterOpts   []admission.DefaulterOption
	err             error
}

// WebhookManagedBy starts the webhooks of object's kind for m.
func WebhookManagedBy[T runtime.Object](m manager.Manager, object T) *WebhookBuilder[T] {
	return &WebhookBuilder[T]{mgr: m, apiType: object}
}

// WithValidator validates the kind with validator.
func (b *WebhookBuilder[T]) WithValidator(validator admission.Validator[T]) *WebhookBuilder[T] {
	b.validator = validator
	return b
}

// WithCustomValidator validates the kind with validator.
//
// Deprecated: use WithValidator, as controller-runtime says.
func (b *WebhookBuilder[T]) WithCustomValidator(validator admission.CustomValidator) *WebhookBuilder[T] {
	b.customValidator = validator
	return b
}

// WithDefaulter defaults the kind with defaulter.
func (b *WebhookBuilder[T]) WithDefaulter(defaulter admission.Defaulter[T], opts ...admission.DefaulterOption) *WebhookBuilder[T] {
	b.defaulter, b.defaulterOpts = defaulter, opts
	return b
}

// WithCustomDefaulter defaults the kind with defaulter.
//
// Deprecated: use WithDefaulter, as controller-runtime says.
func (b *WebhookBuilder[T]) WithCustomDefaulter(defaulter admission.CustomDefaulter, opts ...admission.DefaulterOption) *WebhookBuilder[T] {
	b.customDefaulter, b.defaulterOpts = defaulter, opts
	return b
}

// WithConverter is refused: a guest's kinds convert through their hub.
func (b *WebhookBuilder[T]) WithConverter(func(*runtime.Scheme) (conversion.Converter, error)) *WebhookBuilder[T] {
	return b.refuse("WithConverter: a custom converter is not supported; make one version a conversion.Hub and the others conversion.Convertible")
}

// WithLogConstructor is refused: the host's log carries each request's fields.
func (b *WebhookBuilder[T]) WithLogConstructor(func(logr.Logger, *admission.Request) logr.Logger) *WebhookBuilder[T] {
	return b.refuse("WithLogConstructor: the host logs webhook requests with their plugin, kind and uid")
}

// WithContextFunc is refused: the guest sees no HTTP request.
func (b *WebhookBuilder[T]) WithContextFunc(func(context.Context, *http.Request) context.Context) *WebhookBuilder[T] {
	return b.refuse("WithContextFunc: the host receives the HTTP request, the guest its admission request (admission.RequestFromContext)")
}

// RecoverPanic(false) is refused: a guest's panic is the plugin failing, answered with its
// failure policy.
func (b *WebhookBuilder[T]) RecoverPanic(recoverPanic bool) *WebhookBuilder[T] {
	if !recoverPanic {
		return b.refuse("RecoverPanic(false): the host answers a guest's panic with the plugin's failure policy")
	}
	return b
}

// WithValidatorCustomPath is refused: the host names the paths it serves.
func (b *WebhookBuilder[T]) WithValidatorCustomPath(string) *WebhookBuilder[T] {
	return b.refuse("WithValidatorCustomPath: the host serves /validate/<plugin>")
}

// WithDefaulterCustomPath is refused: the host names the paths it serves.
func (b *WebhookBuilder[T]) WithDefaulterCustomPath(string) *WebhookBuilder[T] {
	return b.refuse("WithDefaulterCustomPath: the host serves /default/<plugin>")
}

func (b *WebhookBuilder[T]) refuse(message string) *WebhookBuilder[T] {
	if b.err == nil {
		b.err = errors.New(message)
	}
	return b
}

// Complete hands the kind's webhooks to the manager.
func (b *WebhookBuilder[T]) Complete() error {
	if b.err != nil {
		return b.err
	}
	scheme := b.mgr.GetScheme()
	gvk, err := apiutil.GVKForObject(b.apiType, scheme)
	if err != nil {
		return fmt.Errorf("the webhook's kind: %w", err)
	}
	if (b.validator != nil && b.customValidator != nil) || (b.defaulter != nil && b.customDefaulter != nil) {
		return fmt.Errorf("%s: a validator and a custom validator (or a defaulter and a custom defaulter): choose one", gvk.Kind)
	}
	convertible, err := conversion.IsConvertible(scheme, b.apiType)
	if err != nil {
		return err
	}
	newT := newOf(b.apiType)
	newObject := func() runtime.Object { return newT() }
	w := &plugin.Webhook{Kind: gvk, Convert: convertible}
	switch {
	case b.validator != nil:
		w.Validate = admission.ServeValidator(b.validator, newT)
	case b.customValidator != nil:
		w.Validate = admission.ServeValidator(b.customValidator, newObject)
	}
	switch {
	case b.defaulter != nil:
		w.Default = admission.ServeDefaulter(b.defaulter, newT, b.defaulterOpts...)
	case b.customDefaulter != nil:
		w.Default = admission.ServeDefaulter(b.customDefaulter, newObject, b.defaulterOpts...)
	}
	if w.Validate == nil && w.Default == nil && !convertible {
		return fmt.Errorf("%s: no validator, no defaulter and no convertible versions: nothing to serve", gvk.Kind)
	}
	return b.mgr.Add(w)
}

// newOf makes empty objects of obj's type, a pointer as every runtime.Object is.
func newOf[T runtime.Object](obj T) func() T {
	t := reflect.TypeOf(obj).Elem()
	return func() T { return reflect.New(t).Interface().(T) }
}
