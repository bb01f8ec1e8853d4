// Package apiutil finds the kind of an object from a scheme, as controller-runtime's does.
package apiutil

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GVKForObject is obj's group, version and kind: its own when it carries them (unstructured
// objects and typed ones with TypeMeta set), else the one the scheme registers for its type.
func GVKForObject(obj runtime.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
		return gvk, nil
	}
	if _, ok := obj.(runtime.Unstructured); ok {
		return schema.GroupVersionKind{}, fmt.Errorf("unstructured object %T has no apiVersion and kind", obj)
	}
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	if len(gvks) != 1 {
		return schema.GroupVersionKind{}, fmt.Errorf("%T is registered as %d kinds %v; set its apiVersion and kind", obj, len(gvks), gvks)
	}
	return gvks[0], nil
}

// ItemKind is the kind of a list's items: the list's kind without its "List" suffix.
func ItemKind(list schema.GroupVersionKind) (schema.GroupVersionKind, error) {
	kind, ok := strings.CutSuffix(list.Kind, "List")
	if !ok || kind == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("%s is not a list kind", list.Kind)
	}
	return list.GroupVersion().WithKind(kind), nil
}
