package guest

import (
	"encoding/json"
	"reflect"
)

// Object is a Kubernetes object as the apiserver serves it: decoded JSON, with accessors for the
// fields every object has and for paths into the rest.
type Object map[string]any

// New is an empty object of kind named namespace/name.
func New(kind Kind, namespace, name string) Object {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return Object{"apiVersion": kind.APIVersion(), "kind": kind.Kind, "metadata": meta}
}

// Decode parses an object from JSON.
func Decode(data string) (Object, error) {
	var obj Object
	if err := json.Unmarshal([]byte(data), &obj); err != nil {
		return nil, &Invalid{Status{Reason: "Invalid", Message: "decoding an object: " + err.Error()}}
	}
	return obj, nil
}

// Encode is the object as JSON.
func (o Object) Encode() (string, error) {
	data, err := json.Marshal(o)
	return string(data), err
}

// Kind is the object's apiVersion and kind.
func (o Object) Kind() Kind {
	return KindOf(o.String("apiVersion"), o.String("kind"))
}

// Get is the value at path, or nil when any step is missing.
func (o Object) Get(path ...string) any {
	var v any = map[string]any(o)
	for _, step := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[step]
	}
	return v
}

// String is the string at path, "" when absent.
func (o Object) String(path ...string) string {
	s, _ := o.Get(path...).(string)
	return s
}

// Int is the number at path, 0 when absent.
func (o Object) Int(path ...string) int64 {
	switch n := o.Get(path...).(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	case int32:
		return int64(n)
	}
	return 0
}

// Map is the object at path, nil when absent.
func (o Object) Map(path ...string) map[string]any {
	m, _ := o.Get(path...).(map[string]any)
	return m
}

// Slice is the array at path, nil when absent.
func (o Object) Slice(path ...string) []any {
	s, _ := o.Get(path...).([]any)
	return s
}

// Set sets the value at path, creating the objects on the way.
func (o Object) Set(value any, path ...string) {
	m := map[string]any(o)
	for _, step := range path[:len(path)-1] {
		next, ok := m[step].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[step] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
}

// DeepCopy is a copy sharing nothing with o.
func (o Object) DeepCopy() Object {
	return Object(deepCopy(map[string]any(o)).(map[string]any))
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, e := range v {
			c[k] = deepCopy(e)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = deepCopy(e)
		}
		return c
	}
	return v
}

// Equal reports whether a and b are the same JSON: Go values are compared as they would encode,
// so a struct equals the map it encodes to and 3 equals 3.0.
func Equal(a, b any) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var n any
	if json.Unmarshal(data, &n) != nil {
		return v
	}
	return n
}
