package client

import (
	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/host"
	"wasmop.dev/guest/internal/wit"
)

// Propagation is what happens to an object's dependents when it is deleted.
type Propagation int

const (
	// Background deletes dependents after the object.
	Background Propagation = iota
	// Foreground keeps the object until its dependents are gone.
	Foreground
	// Orphan leaves dependents behind.
	Orphan
)

// DeleteOption is a condition or policy of Delete.
type DeleteOption func(*wit.DeleteOptions)

// WithPropagation sets what happens to dependents.
func WithPropagation(p Propagation) DeleteOption {
	return func(o *wit.DeleteOptions) {
		w := wit.Propagation(p)
		o.Propagation = &w
	}
}

// WithUID deletes the object only if it has this uid.
func WithUID(uid string) DeleteOption {
	return func(o *wit.DeleteOptions) { preconditions(o).Uid = &uid }
}

// WithResourceVersion deletes the object only at this resourceVersion.
func WithResourceVersion(rv string) DeleteOption {
	return func(o *wit.DeleteOptions) { preconditions(o).ResourceVersion = &rv }
}

func preconditions(o *wit.DeleteOptions) *wit.Preconditions {
	if o.Preconditions == nil {
		o.Preconditions = &wit.Preconditions{}
	}
	return o.Preconditions
}

// Delete deletes an object; deleting one that is already gone is *guest.NotFound.
func Delete(kind guest.Kind, namespace, name string, opts ...DeleteOption) error {
	var options wit.DeleteOptions
	for _, o := range opts {
		o(&options)
	}
	r := host.Get().ClientDelete(kind.WIT(), namespace, name, options)
	if r.IsErr {
		return guest.FromWIT(r.Err)
	}
	return nil
}
