package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"wasmop.dev/guest"
)

// ValidateFunc answers one kind's validating requests as the host asks them.
type ValidateFunc = func(ctx context.Context, req guest.AdmissionRequest) ([]string, error)

// DefaultFunc answers one kind's defaulting requests as the host asks them.
type DefaultFunc = func(ctx context.Context, req guest.AdmissionRequest) (guest.Object, error)

// ServeValidator is v answering the host's requests, decoding objects into new T.
func ServeValidator[T runtime.Object](v Validator[T], newT func() T) ValidateFunc {
	return func(ctx context.Context, req guest.AdmissionRequest) ([]string, error) {
		request := requestOf(req)
		ctx = NewContextWithRequest(ctx, request)
		var warnings Warnings
		var err error
		switch req.Operation {
		case guest.OperationCreate:
			obj := newT()
			if err := decode(request.Object, obj); err != nil {
				return nil, err
			}
			warnings, err = v.ValidateCreate(ctx, obj)
		case guest.OperationUpdate:
			obj, old := newT(), newT()
			if err := errors.Join(decode(request.Object, obj), decode(request.OldObject, old)); err != nil {
				return nil, err
			}
			warnings, err = v.ValidateUpdate(ctx, old, obj)
		case guest.OperationDelete:
			obj := newT()
			if err := decode(request.OldObject, obj); err != nil {
				return nil, err
			}
			warnings, err = v.ValidateDelete(ctx, obj)
		}
		return warnings, refusal(err)
	}
}

// ServeDefaulter is d answering the host's requests, decoding objects into new T. The object
// returned is the request's with the changes Default made: fields T does not know are kept
// unless the options remove them.
func ServeDefaulter[T runtime.Object](d Defaulter[T], newT func() T, opts ...DefaulterOption) DefaultFunc {
	var options DefaulterOptions
	for _, o := range opts {
		o(&options)
	}
	return func(ctx context.Context, req guest.AdmissionRequest) (guest.Object, error) {
		if req.Operation == guest.OperationDelete || req.Object == nil {
			return req.Object, nil
		}
		request := requestOf(req)
		ctx = NewContextWithRequest(ctx, request)
		obj := newT()
		if err := decode(request.Object, obj); err != nil {
			return nil, err
		}
		original := obj.DeepCopyObject()
		if err := d.Default(ctx, obj); err != nil {
			return nil, refusal(err)
		}
		if !options.RemoveUnknownOrOmitableFields && reflect.DeepEqual(original, obj) {
			return req.Object, nil
		}
		return defaulted(request.Object.Raw, original, obj, options.RemoveUnknownOrOmitableFields)
	}
}

// defaulted is raw with the changes from original to obj; with replace, obj's encoding alone.
func defaulted(raw []byte, original, obj runtime.Object, replace bool) (guest.Object, error) {
	after, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if !replace {
		before, err := json.Marshal(original)
		if err != nil {
			return nil, err
		}
		changes, err := jsonpatch.CreateMergePatch(before, after)
		if err != nil {
			return nil, err
		}
		if after, err = jsonpatch.MergePatch(raw, changes); err != nil {
			return nil, err
		}
	}
	var out guest.Object
	return out, json.Unmarshal(after, &out)
}

// refusal is err as the client sees it: an apierrors status error by its status's message.
func refusal(err error) error {
	var status apierrors.APIStatus
	if err != nil && errors.As(err, &status) {
		return &guest.Denial{Message: status.Status().Message}
	}
	return err
}

// decode fills obj from one of the request's objects.
func decode(from runtime.RawExtension, obj runtime.Object) error {
	if from.Raw == nil {
		return &guest.Denial{Message: "the request holds no object to decode"}
	}
	if err := json.Unmarshal(from.Raw, obj); err != nil {
		return &guest.Denial{Message: fmt.Sprintf("decoding %T: %v", obj, err)}
	}
	return nil
}

// requestOf is req as admission.k8s.io/v1 writes it.
func requestOf(req guest.AdmissionRequest) Request {
	raw := func(obj guest.Object) runtime.RawExtension {
		if obj == nil {
			return runtime.RawExtension{}
		}
		data, _ := json.Marshal(obj)
		return runtime.RawExtension{Raw: data}
	}
	dryRun := req.DryRun
	return Request{admissionv1.AdmissionRequest{
		UID:       types.UID(req.UID),
		Kind:      metav1.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind},
		Namespace: req.Namespace,
		Name:      req.Name,
		Operation: admissionv1.Operation(req.Operation),
		Object:    raw(req.Object),
		OldObject: raw(req.OldObject),
		UserInfo:  authenticationv1.UserInfo{Username: req.User.Username, UID: req.User.UID, Groups: req.User.Groups},
		DryRun:    &dryRun,
	}}
}
