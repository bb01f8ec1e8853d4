package guest

import "slices"

// ObjectKey names an object: namespace (empty for cluster-scoped kinds) and name.
type ObjectKey struct {
	Namespace, Name string
}

// String is `namespace/name`, or `name` for cluster-scoped objects.
func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// Name is metadata.name.
func (o Object) Name() string { return o.String("metadata", "name") }

// Namespace is metadata.namespace.
func (o Object) Namespace() string { return o.String("metadata", "namespace") }

// UID is metadata.uid.
func (o Object) UID() string { return o.String("metadata", "uid") }

// ResourceVersion is metadata.resourceVersion.
func (o Object) ResourceVersion() string { return o.String("metadata", "resourceVersion") }

// Generation is metadata.generation.
func (o Object) Generation() int64 { return o.Int("metadata", "generation") }

// Key is the object's namespace and name.
func (o Object) Key() ObjectKey { return ObjectKey{o.Namespace(), o.Name()} }

// IsDeleting reports whether the object has a deletionTimestamp: it waits for its finalizers.
func (o Object) IsDeleting() bool { return o.String("metadata", "deletionTimestamp") != "" }

// Labels are metadata.labels.
func (o Object) Labels() map[string]string { return stringMap(o.Map("metadata", "labels")) }

// Annotations are metadata.annotations.
func (o Object) Annotations() map[string]string { return stringMap(o.Map("metadata", "annotations")) }

func stringMap(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// Finalizers are metadata.finalizers.
func (o Object) Finalizers() []string {
	var out []string
	for _, f := range o.Slice("metadata", "finalizers") {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// HasFinalizer reports whether the object carries finalizer f.
func (o Object) HasFinalizer(f string) bool { return slices.Contains(o.Finalizers(), f) }

// AddFinalizer adds f; it reports whether the object changed.
func (o Object) AddFinalizer(f string) bool {
	if o.HasFinalizer(f) {
		return false
	}
	o.setFinalizers(append(o.Finalizers(), f))
	return true
}

// RemoveFinalizer removes f; it reports whether the object changed.
func (o Object) RemoveFinalizer(f string) bool {
	if !o.HasFinalizer(f) {
		return false
	}
	o.setFinalizers(slices.DeleteFunc(o.Finalizers(), func(s string) bool { return s == f }))
	return true
}

func (o Object) setFinalizers(fs []string) {
	list := make([]any, len(fs))
	for i, f := range fs {
		list[i] = f
	}
	o.Set(list, "metadata", "finalizers")
}

// ControllerOwnerRef is the owner reference that makes o the controller of another object, or
// nil when o has no uid yet.
func (o Object) ControllerOwnerRef() map[string]any {
	if o.UID() == "" {
		return nil
	}
	return map[string]any{
		"apiVersion": o.String("apiVersion"), "kind": o.String("kind"), "name": o.Name(),
		"uid": o.UID(), "controller": true, "blockOwnerDeletion": true,
	}
}

// ControllerUID is the uid of the object's controller owner, "" when it has none.
func (o Object) ControllerUID() string {
	for _, ref := range o.Slice("metadata", "ownerReferences") {
		r, _ := ref.(map[string]any)
		if c, _ := r["controller"].(bool); c {
			uid, _ := r["uid"].(string)
			return uid
		}
	}
	return ""
}
