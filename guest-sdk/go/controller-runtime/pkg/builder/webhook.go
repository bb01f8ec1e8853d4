package builder

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/internal/plugin"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// webhooks is what a webhook builder collects for one kind, whichever generation of
// controller-runtime's API built it. The host writes the webhook configurations and serves them:
// paths, log and context constructors and custom converters are the host's, and refused.
type webhooks[T runtime.Object] struct {
	mgr             manager.Manager
	apiType         T
	validator       admission.Validator[T]
	customValidator admission.CustomValidator
	defaulter       admission.Defaulter[T]
	customDefaulter admission.CustomDefaulter
	defaulterOpts   []admission.DefaulterOption
	err             error
}

// Refusals of what the host owns, by the builder method that asks for it.
const (
	refuseConverter      = "WithConverter: a custom converter is not supported; make one version a conversion.Hub and the others conversion.Convertible"
	refuseLogConstructor = "WithLogConstructor: the host logs webhook requests with their plugin, kind and uid"
	refuseContextFunc    = "WithContextFunc: the host receives the HTTP request, the guest its admission request (admission.RequestFromContext)"
	refuseRecoverPanic   = "RecoverPanic(false): the host answers a guest's panic with the plugin's failure policy"
	refuseValidatorPath  = "WithValidatorCustomPath: the host serves /validate/<plugin>"
	refuseDefaulterPath  = "WithDefaulterCustomPath: the host serves /default/<plugin>"
)

func (w *webhooks[T]) refuse(message string) {
	if w.err == nil {
		w.err = errors.New(message)
	}
}

func (w *webhooks[T]) recoverPanic(recoverPanic bool) {
	if !recoverPanic {
		w.refuse(refuseRecoverPanic)
	}
}

// complete hands the kind's webhooks to the manager.
func (w *webhooks[T]) complete() error {
	if w.err != nil {
		return w.err
	}
	scheme := w.mgr.GetScheme()
	gvk, err := apiutil.GVKForObject(w.apiType, scheme)
	if err != nil {
		return fmt.Errorf("the webhook's kind: %w", err)
	}
	if (w.validator != nil && w.customValidator != nil) || (w.defaulter != nil && w.customDefaulter != nil) {
		return fmt.Errorf("%s: a validator and a custom validator (or a defaulter and a custom defaulter): choose one", gvk.Kind)
	}
	convertible, err := conversion.IsConvertible(scheme, w.apiType)
	if err != nil {
		return err
	}
	newT := newOf(w.apiType)
	newObject := func() runtime.Object { return newT() }
	hook := &plugin.Webhook{Kind: gvk, Convert: convertible}
	switch {
	case w.validator != nil:
		hook.Validate = admission.ServeValidator(w.validator, newT)
	case w.customValidator != nil:
		hook.Validate = admission.ServeValidator(w.customValidator, newObject)
	}
	switch {
	case w.defaulter != nil:
		hook.Default = admission.ServeDefaulter(w.defaulter, newT, w.defaulterOpts...)
	case w.customDefaulter != nil:
		hook.Default = admission.ServeDefaulter(w.customDefaulter, newObject, w.defaulterOpts...)
	}
	if hook.Validate == nil && hook.Default == nil && !convertible {
		return fmt.Errorf("%s: no validator, no defaulter and no convertible versions: nothing to serve", gvk.Kind)
	}
	return w.mgr.Add(hook)
}

// newOf makes empty objects of obj's type, a pointer as every runtime.Object is.
func newOf[T runtime.Object](obj T) func() T {
	t := reflect.TypeOf(obj).Elem()
	return func() T { return reflect.New(t).Interface().(T) }
}
