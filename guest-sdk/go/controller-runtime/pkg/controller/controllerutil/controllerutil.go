// Package controllerutil is controller-runtime's helpers for reconcilers, for wasmop guests:
// owner references, finalizers, and create-or-update/patch over the manager's client.
package controllerutil

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// AlreadyOwnedError is SetControllerReference's error when another object controls the object.
type AlreadyOwnedError struct {
	// Object is the object that already has a controller.
	Object metav1.Object
	// Owner is its controller's reference.
	Owner metav1.OwnerReference
}

func (e *AlreadyOwnedError) Error() string {
	return fmt.Sprintf("object %s/%s is already owned by another %s controller %s",
		e.Object.GetNamespace(), e.Object.GetName(), e.Owner.Kind, e.Owner.Name)
}

// OwnerReferenceOption modifies the owner reference being set.
type OwnerReferenceOption func(*metav1.OwnerReference)

// WithBlockOwnerDeletion sets blockOwnerDeletion.
func WithBlockOwnerDeletion(block bool) OwnerReferenceOption {
	return func(r *metav1.OwnerReference) { r.BlockOwnerDeletion = &block }
}

// SetControllerReference makes owner the controller of controlled (blockOwnerDeletion set), so
// the garbage collector deletes controlled with it and Owns watches map controlled's events to
// it. It fails when another object already controls controlled, or when a namespaced owner's
// namespace differs from controlled's.
func SetControllerReference(owner, controlled metav1.Object, scheme *runtime.Scheme, opts ...OwnerReferenceOption) error {
	ref, err := ownerReference(owner, controlled, scheme)
	if err != nil {
		return err
	}
	yes := true
	ref.Controller, ref.BlockOwnerDeletion = &yes, &yes
	for _, o := range opts {
		o(&ref)
	}
	if existing := metav1.GetControllerOf(controlled); existing != nil && !sameOwner(*existing, ref) {
		return &AlreadyOwnedError{Object: controlled, Owner: *existing}
	}
	upsert(controlled, ref)
	return nil
}

// SetOwnerReference adds owner to object's owners (not as controller), or updates the
// reference already there.
func SetOwnerReference(owner, object metav1.Object, scheme *runtime.Scheme, opts ...OwnerReferenceOption) error {
	ref, err := ownerReference(owner, object, scheme)
	if err != nil {
		return err
	}
	for _, o := range opts {
		o(&ref)
	}
	upsert(object, ref)
	return nil
}

// RemoveOwnerReference removes owner from object's owners; it fails when owner is not one.
func RemoveOwnerReference(owner, object metav1.Object, scheme *runtime.Scheme) error {
	ref, err := ownerReference(owner, object, scheme)
	if err != nil {
		return err
	}
	refs := object.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return sameOwner(r, ref) })
	if len(kept) == len(refs) {
		return fmt.Errorf("%s %s is not an owner of %s", ref.Kind, ref.Name, object.GetName())
	}
	object.SetOwnerReferences(kept)
	return nil
}

// HasControllerReference is whether object has a controller.
func HasControllerReference(object metav1.Object) bool {
	return metav1.GetControllerOf(object) != nil
}

// HasOwnerReference is whether owner is among refs, by group, kind and name.
func HasOwnerReference(refs []metav1.OwnerReference, owner client.Object, scheme *runtime.Scheme) (bool, error) {
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		return false, err
	}
	want := metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName()}
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return sameOwner(r, want) }), nil
}

func ownerReference(owner, object metav1.Object, scheme *runtime.Scheme) (metav1.OwnerReference, error) {
	if ns := owner.GetNamespace(); ns != "" && ns != object.GetNamespace() {
		return metav1.OwnerReference{}, fmt.Errorf("cross-namespace owner references are disallowed, owner's namespace %s, obj's namespace %s", ns, object.GetNamespace())
	}
	ro, ok := owner.(runtime.Object)
	if !ok {
		return metav1.OwnerReference{}, fmt.Errorf("%T is not a runtime.Object, cannot call SetOwnerReference", owner)
	}
	gvk, err := apiutil.GVKForObject(ro, scheme)
	if err != nil {
		return metav1.OwnerReference{}, err
	}
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Name:       owner.GetName(),
		UID:        owner.GetUID(),
	}, nil
}

// sameOwner compares references by group, kind and name (not version or UID).
func sameOwner(a, b metav1.OwnerReference) bool {
	ga, errA := schema.ParseGroupVersion(a.APIVersion)
	gb, errB := schema.ParseGroupVersion(b.APIVersion)
	return errA == nil && errB == nil && ga.Group == gb.Group && a.Kind == b.Kind && a.Name == b.Name
}

func upsert(object metav1.Object, ref metav1.OwnerReference) {
	refs := object.GetOwnerReferences()
	if i := slices.IndexFunc(refs, func(r metav1.OwnerReference) bool { return sameOwner(r, ref) }); i >= 0 {
		refs[i] = ref
	} else {
		refs = append(refs, ref)
	}
	object.SetOwnerReferences(refs)
}

// ContainsFinalizer is whether o has finalizer.
func ContainsFinalizer(o client.Object, finalizer string) bool {
	return slices.Contains(o.GetFinalizers(), finalizer)
}

// AddFinalizer adds finalizer to o unless it has it; it reports whether it added it.
func AddFinalizer(o client.Object, finalizer string) bool {
	if ContainsFinalizer(o, finalizer) {
		return false
	}
	o.SetFinalizers(append(o.GetFinalizers(), finalizer))
	return true
}

// RemoveFinalizer removes finalizer from o; it reports whether o had it.
func RemoveFinalizer(o client.Object, finalizer string) bool {
	fs := o.GetFinalizers()
	kept := slices.DeleteFunc(slices.Clone(fs), func(f string) bool { return f == finalizer })
	if len(kept) == len(fs) {
		return false
	}
	o.SetFinalizers(kept)
	return true
}
