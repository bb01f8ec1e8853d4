package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"wasmop.dev/guest"
	"wasmop.dev/guest/cache"
	guestclient "wasmop.dev/guest/client"
)

// HostClient is the client of a wasmop guest's manager, which is also its field indexer.
type HostClient interface {
	Client
	FieldIndexer
}

// NewHostClient is the client a wasmop guest's manager hands out: reads from the host's cache,
// writes through the host, kinds found in scheme and scopes in mapper.
func NewHostClient(scheme *runtime.Scheme, mapper meta.RESTMapper) HostClient {
	return &hostClient{scheme: scheme, mapper: mapper, reads: newReads(), indexes: map[fieldIndex]IndexerFunc{}}
}

type hostClient struct {
	scheme  *runtime.Scheme
	mapper  meta.RESTMapper
	reads   *reads
	indexes map[fieldIndex]IndexerFunc
}

func (c *hostClient) Scheme() *runtime.Scheme { return c.scheme }

func (c *hostClient) RESTMapper() meta.RESTMapper { return c.mapper }

func (c *hostClient) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, c.scheme)
}

func (c *hostClient) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return false, err
	}
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func (c *hostClient) Get(_ context.Context, key ObjectKey, obj Object, _ ...GetOption) error {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	data, err := cache.GetJSON(guestKind(gvk), key.Namespace, key.Name)
	if err != nil {
		return apiError(err, gvk, key.Name)
	}
	if err := decodeInto(data, obj); err != nil {
		return err
	}
	c.reads.remember(gvk, obj, data)
	return nil
}

func (c *hostClient) List(_ context.Context, list ObjectList, opts ...ListOption) error {
	listGVK, gvk, o, err := listing(c.scheme, list, opts)
	if err != nil {
		return err
	}
	filters, hostFields, err := c.indexed(gvk, o.FieldSelector)
	if err != nil {
		return err
	}
	o.FieldSelector = hostFields
	cacheOpts, err := cacheListOptions(o)
	if err != nil {
		return err
	}
	items, err := cache.ListJSON(guestKind(gvk), cacheOpts...)
	if err != nil {
		return apiError(err, gvk, "")
	}
	if len(filters) == 0 && o.Limit > 0 && int64(len(items)) > o.Limit {
		items = items[:o.Limit]
	}
	body := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{},"items":[%s]}`,
		listGVK.GroupVersion().String(), listGVK.Kind, strings.Join(items, ","))
	if err := decodeInto(body, list); err != nil {
		return err
	}
	c.reads.rememberEach(gvk, list, items)
	if len(filters) == 0 {
		return nil
	}
	return narrow(list, filters, o.Limit)
}

// listing is the kind of list and of its items, and opts applied.
func listing(scheme *runtime.Scheme, list ObjectList, opts []ListOption) (listGVK, gvk schema.GroupVersionKind, o ListOptions, err error) {
	if listGVK, err = apiutil.GVKForObject(list, scheme); err != nil {
		return
	}
	if gvk, err = apiutil.ItemKind(listGVK); err != nil {
		return
	}
	for _, opt := range opts {
		opt.ApplyToList(&o)
	}
	return
}

// narrow keeps the items of list every filter passes, at most limit of them when positive.
func narrow(list ObjectList, filters []func(Object) bool, limit int64) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		obj, ok := item.(Object)
		if ok && every(filters, obj) && (limit <= 0 || int64(len(kept)) < limit) {
			kept = append(kept, item)
		}
	}
	return meta.SetList(list, kept)
}

func every(filters []func(Object) bool, obj Object) bool {
	for _, f := range filters {
		if !f(obj) {
			return false
		}
	}
	return true
}

func cacheListOptions(o ListOptions) ([]cache.ListOption, error) {
	if o.Continue != "" {
		return nil, fmt.Errorf("list with a continue token: %w (the cache lists whole)", errUnsupported)
	}
	var out []cache.ListOption
	if o.Namespace != "" {
		out = append(out, cache.InNamespace(o.Namespace))
	}
	if o.LabelSelector != nil && !o.LabelSelector.Empty() {
		out = append(out, cache.MatchingLabels(o.LabelSelector.String()))
	}
	if o.FieldSelector != nil && !o.FieldSelector.Empty() {
		out = append(out, cache.MatchingFields(o.FieldSelector.String()))
	}
	return out, nil
}

func (c *hostClient) Create(_ context.Context, obj Object, opts ...CreateOption) error {
	var o CreateOptions
	for _, opt := range opts {
		opt.ApplyToCreate(&o)
	}
	if len(o.DryRun) > 0 {
		return fmt.Errorf("create with dry run: %w", errUnsupported)
	}
	return c.write(obj, false, guestclient.CreateJSON)
}

func (c *hostClient) Update(_ context.Context, obj Object, opts ...UpdateOption) error {
	var o UpdateOptions
	for _, opt := range opts {
		opt.ApplyToUpdate(&o)
	}
	if len(o.DryRun) > 0 {
		return fmt.Errorf("update with dry run: %w", errUnsupported)
	}
	return c.write(obj, true, guestclient.UpdateJSON)
}

// write sends obj (with the fields its type does not know but the cache had, for an update)
// through call and decodes what the apiserver stored into obj.
func (c *hostClient) write(obj Object, update bool, call func(string) (string, error)) error {
	data, gvk, err := c.encode(obj)
	if err != nil {
		return err
	}
	if update {
		data = c.reads.withUnknownFields(gvk, obj, data)
	}
	stored, err := call(string(data))
	if err != nil {
		return apiError(err, gvk, obj.GetName())
	}
	return c.stored(gvk, stored, obj)
}

func (c *hostClient) Patch(_ context.Context, obj Object, patch Patch, opts ...PatchOption) error {
	var o PatchOptions
	for _, opt := range opts {
		opt.ApplyToPatch(&o)
	}
	return c.patch(obj, patch, o, guestclient.PatchJSON)
}

type patchCall func(guest.Kind, string, string, guestclient.PatchBody) (string, error)

func (c *hostClient) patch(obj Object, patch Patch, o PatchOptions, call patchCall) error {
	if len(o.DryRun) > 0 {
		return fmt.Errorf("patch with dry run: %w", errUnsupported)
	}
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	body, err := c.patchBody(obj, patch, o.Force != nil && *o.Force)
	if err != nil {
		return err
	}
	stored, err := call(guestKind(gvk), obj.GetNamespace(), obj.GetName(), body)
	if err != nil {
		return apiError(err, gvk, obj.GetName())
	}
	return c.stored(gvk, stored, obj)
}

func (c *hostClient) patchBody(obj Object, patch Patch, force bool) (guestclient.PatchBody, error) {
	var data []byte
	var err error
	if _, whole := patch.(objectPatch); whole {
		data, _, err = c.encode(obj)
	} else {
		data, err = patch.Data(obj)
	}
	if err != nil {
		return guestclient.PatchBody{}, fmt.Errorf("computing the patch: %w", err)
	}
	switch patch.Type() {
	case types.MergePatchType:
		return guestclient.MergePatch(json.RawMessage(data)), nil
	case types.JSONPatchType:
		return guestclient.JSONPatch(json.RawMessage(data)), nil
	case types.ApplyPatchType:
		return guestclient.ApplyPatchJSON(data, force), nil
	}
	return guestclient.PatchBody{}, fmt.Errorf("a %s patch: %w (use a merge, JSON or apply patch)", patch.Type(), errUnsupported)
}

func (c *hostClient) Delete(ctx context.Context, obj Object, opts ...DeleteOption) error {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	var o DeleteOptions
	for _, opt := range opts {
		opt.ApplyToDelete(&o)
	}
	return c.deleteOne(ctx, gvk, obj.GetNamespace(), obj.GetName(), &o)
}

// DeleteAllOf deletes every object of obj's kind the options select, as the apiserver's
// deletecollection does: it lists them (from the host's cache) and deletes each through the
// host, each delete checked against the plugin's permissions. One already gone is skipped.
func (c *hostClient) DeleteAllOf(ctx context.Context, obj Object, opts ...DeleteAllOfOption) error {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	var o DeleteAllOfOptions
	for _, opt := range opts {
		opt.ApplyToDeleteAllOf(&o)
	}
	if _, err := deleteOptions(&o.DeleteOptions); err != nil && !errors.Is(err, errThroughTransport) {
		return err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list, &o.ListOptions); err != nil {
		return err
	}
	for _, item := range list.Items {
		err := c.deleteOne(ctx, gvk, item.GetNamespace(), item.GetName(), &o.DeleteOptions)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// errThroughTransport says a delete's options need the apiserver's own delete, which the host's
// transport sends (a grace period, a dry run): the host's delete has no such options.
var errThroughTransport = errors.New("the delete goes through the transport")

// deleteOne deletes one object with the host's delete, or through the host's transport when its
// options need the apiserver's own; either way the host checks it against the plugin's
// permissions.
func (c *hostClient) deleteOne(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, o *DeleteOptions) error {
	deleteOpts, err := deleteOptions(o)
	if errors.Is(err, errThroughTransport) {
		reader := NewAPIReader(c.scheme, c.mapper).(*apiReader)
		return reader.delete(ctx, gvk, namespace, name, o)
	}
	if err != nil {
		return err
	}
	err = guestclient.Delete(guestKind(gvk), namespace, name, deleteOpts...)
	return apiError(err, gvk, name)
}

// deleteOptions are o as the host's delete takes them; errThroughTransport when it cannot.
func deleteOptions(o *DeleteOptions) ([]guestclient.DeleteOption, error) {
	if len(o.DryRun) > 0 || o.GracePeriodSeconds != nil {
		return nil, errThroughTransport
	}
	var out []guestclient.DeleteOption
	if p := o.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationBackground:
			out = append(out, guestclient.WithPropagation(guestclient.Background))
		case metav1.DeletePropagationForeground:
			out = append(out, guestclient.WithPropagation(guestclient.Foreground))
		case metav1.DeletePropagationOrphan:
			out = append(out, guestclient.WithPropagation(guestclient.Orphan))
		default:
			return nil, fmt.Errorf("propagation policy %q: %w", *p, errUnsupported)
		}
	}
	if pre := o.Preconditions; pre != nil {
		if pre.UID != nil {
			out = append(out, guestclient.WithUID(string(*pre.UID)))
		}
		if pre.ResourceVersion != nil {
			out = append(out, guestclient.WithResourceVersion(*pre.ResourceVersion))
		}
	}
	return out, nil
}

// stored decodes what the apiserver stored into obj and remembers it.
func (c *hostClient) stored(gvk schema.GroupVersionKind, data string, obj Object) error {
	if err := decodeInto(data, obj); err != nil {
		return err
	}
	c.reads.remember(gvk, obj, data)
	return nil
}

// encode is obj as JSON with its apiVersion and kind, which typed objects often leave empty.
func (c *hostClient) encode(obj Object) ([]byte, schema.GroupVersionKind, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return nil, gvk, err
	}
	kind := obj.GetObjectKind()
	was := kind.GroupVersionKind()
	kind.SetGroupVersionKind(gvk)
	data, err := json.Marshal(obj)
	kind.SetGroupVersionKind(was)
	if err != nil {
		return nil, gvk, fmt.Errorf("encoding %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return data, gvk, nil
}

// decodeInto replaces obj's contents with the object (or list) data encodes.
func decodeInto(data string, obj runtime.Object) error {
	if _, ok := obj.(runtime.Unstructured); !ok {
		reflect.ValueOf(obj).Elem().SetZero()
	}
	if err := json.Unmarshal([]byte(data), obj); err != nil {
		return fmt.Errorf("decoding into %T: %w", obj, err)
	}
	return nil
}

func guestKind(gvk schema.GroupVersionKind) guest.Kind {
	return guest.Kind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
}
