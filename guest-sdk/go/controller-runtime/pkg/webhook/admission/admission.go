// Package admission is controller-runtime's admission webhooks for wasmop guests: the typed
// Validator[T] and Defaulter[T] (and their runtime.Object forms CustomValidator and
// CustomDefaulter) that the webhook builder serves through the host, which receives the
// apiserver's AdmissionReviews and asks the plugin. The request a webhook answers is in its
// context (RequestFromContext).
package admission

import (
	"context"
	"errors"
	"github.com/go-logr/logr"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Warnings are shown to the client beside the verdict.
type Warnings []string

// Validator validates objects of type T on create, update and delete; an error refuses the
// request with its message (an apierrors status error with its status's message).
type Validator[T runtime.Object] interface {
	// ValidateCreate validates an object being created.
	ValidateCreate(ctx context.Context, obj T) (warnings Warnings, err error)
	// ValidateUpdate validates an object being updated from oldObj.
	ValidateUpdate(ctx context.Context, oldObj, newObj T) (warnings Warnings, err error)
	// ValidateDelete validates an object being deleted.
	ValidateDelete(ctx context.Context, obj T) (warnings Warnings, err error)
}

// CustomValidator is a Validator of any object.
type CustomValidator = Validator[runtime.Object]

// Defaulter sets the defaults of objects of type T; an error refuses the request.
type Defaulter[T runtime.Object] interface {
	// Default sets obj's defaults.
	Default(ctx context.Context, obj T) error
}

// CustomDefaulter is a Defaulter of any object.
type CustomDefaulter = Defaulter[runtime.Object]

// DefaulterOptions are what DefaulterOptions set.
type DefaulterOptions struct {
	// RemoveUnknownOrOmitableFields removes the fields the Go type does not know, or omits when
	// empty, from the stored object.
	RemoveUnknownOrOmitableFields bool
}

// DefaulterOption configures a defaulting webhook.
type DefaulterOption func(*DefaulterOptions)

// DefaulterRemoveUnknownOrOmitableFields removes the fields the Go type does not know, or omits
// when empty, from the stored object; without it they are kept.
func DefaulterRemoveUnknownOrOmitableFields(o *DefaulterOptions) {
	o.RemoveUnknownOrOmitableFields = true
}

// Request is the admission request a webhook answers.
type Request struct {
	admissionv1.AdmissionRequest
}

type requestKey struct{}

// NewContextWithRequest is ctx carrying req.
func NewContextWithRequest(ctx context.Context, req Request) context.Context {
	return context.WithValue(ctx, requestKey{}, req)
}

// RequestFromContext is the admission request ctx carries.
func RequestFromContext(ctx context.Context) (Request, error) {
	if req, ok := ctx.Value(requestKey{}).(Request); ok {
		return req, nil
	}
	return Request{}, errors.New("admission.Request not found in context")
}

// DefaultLogConstructor is base with the request's object, namespace, name, resource, user and
// uid, as controller-runtime logs a webhook's request.
func DefaultLogConstructor(base logr.Logger, req *Request) logr.Logger {
	if req == nil {
		return base
	}
	return base.WithValues("object", req.Namespace+"/"+req.Name, "namespace", req.Namespace, "name", req.Name,
		"resource", req.Resource, "user", req.UserInfo.Username, "requestID", req.UID)
}
