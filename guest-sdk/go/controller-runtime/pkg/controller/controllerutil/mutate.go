package controllerutil

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OperationResult is what CreateOrUpdate or CreateOrPatch did.
type OperationResult string

const (
	// OperationResultNone: the object was already as wanted.
	OperationResultNone OperationResult = "unchanged"
	// OperationResultCreated: the object was created.
	OperationResultCreated OperationResult = "created"
	// OperationResultUpdated: the object was updated.
	OperationResultUpdated OperationResult = "updated"
	// OperationResultUpdatedStatus: the object and its status were patched.
	OperationResultUpdatedStatus OperationResult = "updatedStatus"
	// OperationResultUpdatedStatusOnly: only the status was patched.
	OperationResultUpdatedStatusOnly OperationResult = "updatedStatusOnly"
)

// MutateFn sets an object's desired state in place.
type MutateFn func() error

// CreateOrUpdate reads obj by its key from the cache, sets its desired state with f, and
// creates it when missing or updates it when f changed it.
func CreateOrUpdate(ctx context.Context, c client.Client, obj client.Object, f MutateFn) (OperationResult, error) {
	key := client.ObjectKeyFromObject(obj)
	if found, err := createIfMissing(ctx, c, key, obj, f); err != nil || !found {
		return created(err)
	}
	existing := obj.DeepCopyObject()
	if err := mutate(f, key, obj); err != nil {
		return OperationResultNone, err
	}
	if equality.Semantic.DeepEqual(existing, obj) {
		return OperationResultNone, nil
	}
	if err := c.Update(ctx, obj); err != nil {
		return OperationResultNone, err
	}
	return OperationResultUpdated, nil
}

// CreateOrPatch is CreateOrUpdate with merge patches: one of the object without its status and
// one of its status, each sent only when f changed that part.
func CreateOrPatch(ctx context.Context, c client.Client, obj client.Object, f MutateFn) (OperationResult, error) {
	key := client.ObjectKeyFromObject(obj)
	if found, err := createIfMissing(ctx, c, key, obj, f); err != nil || !found {
		return created(err)
	}
	before := obj.DeepCopyObject().(client.Object)
	if err := mutate(f, key, obj); err != nil {
		return OperationResultNone, err
	}
	changed, statusChanged, err := changes(before, obj)
	if err != nil {
		return OperationResultNone, err
	}
	// The status patch is computed from the object as wanted, before the first patch's response
	// replaces obj's contents.
	wantStatus := obj.DeepCopyObject().(client.Object)
	if changed {
		if err := c.Patch(ctx, obj, withoutStatus{client.MergeFrom(before)}); err != nil {
			return OperationResultNone, err
		}
	}
	if statusChanged {
		if err := c.Status().Patch(ctx, wantStatus, onlyStatus{client.MergeFrom(before)}); err != nil {
			return OperationResultNone, err
		}
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(wantStatus).Elem())
	}
	switch {
	case changed && statusChanged:
		return OperationResultUpdatedStatus, nil
	case statusChanged:
		return OperationResultUpdatedStatusOnly, nil
	case changed:
		return OperationResultUpdated, nil
	}
	return OperationResultNone, nil
}

// createIfMissing reads obj by key; when it is missing, sets it with f and creates it. found
// reports whether it existed.
func createIfMissing(ctx context.Context, c client.Client, key client.ObjectKey, obj client.Object, f MutateFn) (found bool, err error) {
	err = c.Get(ctx, key, obj)
	if err == nil || !apierrors.IsNotFound(err) {
		return err == nil, err
	}
	if err := mutate(f, key, obj); err != nil {
		return false, err
	}
	return false, c.Create(ctx, obj)
}

// created is the result of createIfMissing when it did not find the object.
func created(err error) (OperationResult, error) {
	if err != nil {
		return OperationResultNone, err
	}
	return OperationResultCreated, nil
}

func mutate(f MutateFn, key client.ObjectKey, obj client.Object) error {
	if err := f(); err != nil {
		return err
	}
	if client.ObjectKeyFromObject(obj) != key {
		return errors.New("MutateFn cannot mutate object name and/or object namespace")
	}
	return nil
}

// changes reports whether the object outside its status, and its status, differ.
func changes(before, after runtime.Object) (bool, bool, error) {
	b, err := runtime.DefaultUnstructuredConverter.ToUnstructured(before)
	if err != nil {
		return false, false, fmt.Errorf("converting the object: %w", err)
	}
	a, err := runtime.DefaultUnstructuredConverter.ToUnstructured(after)
	if err != nil {
		return false, false, fmt.Errorf("converting the object: %w", err)
	}
	statusChanged := !equality.Semantic.DeepEqual(b["status"], a["status"])
	delete(b, "status")
	delete(a, "status")
	return !equality.Semantic.DeepEqual(b, a), statusChanged, nil
}
