// Package cache reads from the host's shared informer cache: no call reaches the apiserver, and
// a plugin reads its own writes.
package cache

import (
	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/host"
	"wasmop.dev/guest/internal/wit"
)

// Get is one object; namespace is "" for cluster-scoped kinds. A missing object is *guest.NotFound.
func Get(kind guest.Kind, namespace, name string) (guest.Object, error) {
	data, err := GetJSON(kind, namespace, name)
	if err != nil {
		return nil, err
	}
	return guest.Decode(data)
}

// GetJSON is Get's object as the host sends it, JSON, for decoding into a type of the caller's.
func GetJSON(kind guest.Kind, namespace, name string) (string, error) {
	r := host.Get().CacheGet(kind.WIT(), namespace, name)
	if r.IsErr {
		return "", guest.FromWIT(r.Err)
	}
	return r.Ok, nil
}

// GetOptional is like Get but returns nil, nil for a missing object.
func GetOptional(kind guest.Kind, namespace, name string) (guest.Object, error) {
	obj, err := Get(kind, namespace, name)
	return obj, guest.IgnoreNotFound(err)
}

// ListOption narrows List.
type ListOption func(*wit.ListOptions)

// InNamespace lists only objects in namespace.
func InNamespace(namespace string) ListOption {
	return func(o *wit.ListOptions) { o.Namespace = &namespace }
}

// MatchingLabels lists only objects matching a label selector, e.g. `app=web,tier!=db`.
func MatchingLabels(selector string) ListOption {
	return func(o *wit.ListOptions) { o.LabelSelector = &selector }
}

// MatchingFields lists only objects matching a field selector, e.g. `metadata.name=foo`.
func MatchingFields(selector string) ListOption {
	return func(o *wit.ListOptions) { o.FieldSelector = &selector }
}

// List lists objects of a kind the plugin watches.
func List(kind guest.Kind, opts ...ListOption) ([]guest.Object, error) {
	return decodeAll(ListJSON(kind, opts...))
}

// ListJSON is List's objects as the host sends them, JSON each.
func ListJSON(kind guest.Kind, opts ...ListOption) ([]string, error) {
	var options wit.ListOptions
	for _, o := range opts {
		o(&options)
	}
	return listed(host.Get().CacheList(kind.WIT(), options))
}

// ListByIndex lists the objects whose value for the declared field index equals value.
func ListByIndex(kind guest.Kind, index, value string) ([]guest.Object, error) {
	return decodeAll(ListByIndexJSON(kind, index, value))
}

// ListByIndexJSON is ListByIndex's objects as the host sends them, JSON each.
func ListByIndexJSON(kind guest.Kind, index, value string) ([]string, error) {
	return listed(host.Get().CacheListByIndex(kind.WIT(), index, value))
}

func listed(r wit.Result[[]wit.Object, wit.Error]) ([]string, error) {
	if r.IsErr {
		return nil, guest.FromWIT(r.Err)
	}
	return r.Ok, nil
}

func decodeAll(all []string, err error) ([]guest.Object, error) {
	if err != nil {
		return nil, err
	}
	objs := make([]guest.Object, len(all))
	for i, data := range all {
		obj, err := guest.Decode(data)
		if err != nil {
			return nil, err
		}
		objs[i] = obj
	}
	return objs, nil
}
