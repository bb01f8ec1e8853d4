package client

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"wasmop.dev/guest"
)

// IgnoreNotFound is nil for a NotFound error, err otherwise.
func IgnoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// IgnoreAlreadyExists is nil for an AlreadyExists error, err otherwise.
func IgnoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// errUnsupported is an option or call wasmop cannot honour.
var errUnsupported = errors.New("not supported by wasmop")

// apiError is a host error as the apiserver's StatusError, so apierrors.IsNotFound, IsConflict
// and the rest answer as they do for controller-runtime's client; other errors pass unchanged.
func apiError(err error, gvk schema.GroupVersionKind, name string) error {
	s, ok := guest.StatusOf(err)
	if !ok {
		return err
	}
	code := s.Code
	if code == 0 {
		code = http.StatusInternalServerError
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    int32(code),
		Reason:  metav1.StatusReason(s.Reason),
		Message: s.Message,
		Details: &metav1.StatusDetails{Name: name, Group: gvk.Group, Kind: gvk.Kind},
	}}
}
