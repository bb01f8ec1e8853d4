// Package client is controller-runtime's client API for wasmop guests. Reads are served by the
// host's informer cache (as controller-runtime's manager client reads its cache), writes go to
// the apiserver through the host, checked against the plugin's declared permissions. Objects
// are typed (k8s.io/api structs, a plugin's own CRD types) or unstructured; an update of a typed
// object keeps the fields its type does not know, as read.
package client

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Object is a Kubernetes object: metadata and a kind.
type Object interface {
	metav1.Object
	runtime.Object
}

// ObjectList is a list of Kubernetes objects.
type ObjectList interface {
	metav1.ListInterface
	runtime.Object
}

// ObjectKey names an object: namespace ("" for cluster-scoped kinds) and name.
type ObjectKey = types.NamespacedName

// ObjectKeyFromObject is obj's key.
func ObjectKeyFromObject(obj Object) ObjectKey {
	return ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// Patch is a patch of an object: its type and its body computed from the object.
type Patch interface {
	Type() types.PatchType
	Data(obj Object) ([]byte, error)
}

// Reader reads objects; the manager's client reads the host's cache.
type Reader interface {
	Get(ctx context.Context, key ObjectKey, obj Object, opts ...GetOption) error
	List(ctx context.Context, list ObjectList, opts ...ListOption) error
}

// Writer writes objects to the apiserver.
type Writer interface {
	Create(ctx context.Context, obj Object, opts ...CreateOption) error
	Delete(ctx context.Context, obj Object, opts ...DeleteOption) error
	DeleteAllOf(ctx context.Context, obj Object, opts ...DeleteAllOfOption) error
	Update(ctx context.Context, obj Object, opts ...UpdateOption) error
	Patch(ctx context.Context, obj Object, patch Patch, opts ...PatchOption) error
	Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...ApplyOption) error
}

// WithFieldOwner is c: the host writes as the plugin's own field manager, wasmop/<plugin>,
// whatever owner a program names.
func WithFieldOwner(c Client, _ string) Client { return c }

// StatusClient writes the status subresource.
type StatusClient interface {
	Status() SubResourceWriter
}

// SubResourceClientConstructor returns a client of a named subresource.
type SubResourceClientConstructor interface {
	SubResource(subResource string) SubResourceClient
}

// StatusWriter writes the status subresource.
type StatusWriter = SubResourceWriter

// SubResourceReader reads a subresource (none is served by the cache).
type SubResourceReader interface {
	Get(ctx context.Context, obj Object, subResource Object, opts ...SubResourceGetOption) error
}

// SubResourceWriter writes a subresource.
type SubResourceWriter interface {
	Create(ctx context.Context, obj Object, subResource Object, opts ...SubResourceCreateOption) error
	Update(ctx context.Context, obj Object, opts ...SubResourceUpdateOption) error
	Patch(ctx context.Context, obj Object, patch Patch, opts ...SubResourcePatchOption) error
}

// SubResourceClient reads and writes a subresource.
type SubResourceClient interface {
	SubResourceReader
	SubResourceWriter
}

// Client reads from the cache and writes to the apiserver.
type Client interface {
	Reader
	Writer
	StatusClient
	SubResourceClientConstructor
	Scheme() *runtime.Scheme
	RESTMapper() meta.RESTMapper
	GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error)
	IsObjectNamespaced(obj runtime.Object) (bool, error)
}
