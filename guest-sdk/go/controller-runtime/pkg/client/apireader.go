package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"wasmop.dev/guest/transport"
)

// NewAPIReader is a Reader that reads from the apiserver itself, not the cache: what
// mgr.GetAPIReader hands out, for a read that must see the latest state. Its requests go
// through the host's transport (transport.RoundTripper) and are checked against the plugin's declared
// permissions like every other; each costs an apiserver round trip.
func NewAPIReader(scheme *runtime.Scheme, mapper meta.RESTMapper) Reader {
	return &apiReader{scheme: scheme, mapper: mapper, http: &http.Client{Transport: transport.RoundTripper{}}}
}

type apiReader struct {
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	http   *http.Client
}

func (r *apiReader) Get(ctx context.Context, key ObjectKey, obj Object, _ ...GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return err
	}
	at, err := r.path(gvk, key.Namespace, key.Name)
	if err != nil {
		return err
	}
	return r.read(ctx, at, "get", key.Name, obj)
}

func (r *apiReader) List(ctx context.Context, list ObjectList, opts ...ListOption) error {
	_, gvk, o, err := listing(r.scheme, list, opts)
	if err != nil {
		return err
	}
	at, err := r.path(gvk, o.Namespace, "")
	if err != nil {
		return err
	}
	query := url.Values{}
	lo := o.AsListOptions()
	for key, value := range map[string]string{"labelSelector": lo.LabelSelector, "fieldSelector": lo.FieldSelector, "continue": lo.Continue} {
		if value != "" {
			query.Set(key, value)
		}
	}
	if lo.Limit > 0 {
		query.Set("limit", fmt.Sprint(lo.Limit))
	}
	if len(query) > 0 {
		at += "?" + query.Encode()
	}
	return r.read(ctx, at, "list", "", list)
}

// path is the apiserver path of gvk's resource, in namespace when it is namespaced, of name
// when one is given.
func (r *apiReader) path(gvk schema.GroupVersionKind, namespace, name string) (string, error) {
	mapping, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", err
	}
	at := "/apis/" + gvk.Group + "/" + gvk.Version
	if gvk.Group == "" {
		at = "/api/" + gvk.Version
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace && namespace != "" {
		at = path.Join(at, "namespaces", namespace)
	}
	return path.Join(at, mapping.Resource.Resource, name), nil
}

// read GETs at into obj, or returns the apiserver's error as client-go's StatusError.
func (r *apiReader) read(ctx context.Context, at, verb, name string, obj runtime.Object) error {
	body, err := r.do(ctx, http.MethodGet, at, nil, verb, name)
	if err != nil {
		return err
	}
	return decodeInto(string(body), obj)
}

// delete sends the apiserver's own delete of gvk's object with options o, which the host checks
// as the delete it is.
func (r *apiReader) delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, o *DeleteOptions) error {
	at, err := r.path(gvk, namespace, name)
	if err != nil {
		return err
	}
	options := metav1.DeleteOptions{
		TypeMeta:           metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"},
		GracePeriodSeconds: o.GracePeriodSeconds,
		Preconditions:      o.Preconditions,
		PropagationPolicy:  o.PropagationPolicy,
		DryRun:             o.DryRun,
	}
	body, err := json.Marshal(options)
	if err != nil {
		return err
	}
	_, err = r.do(ctx, http.MethodDelete, at, body, "delete", name)
	return err
}

// do sends method at with body (JSON, if any) and returns what the apiserver answered, or its
// error as client-go's StatusError.
func (r *apiReader) do(ctx context.Context, method, at string, body []byte, verb, name string) ([]byte, error) {
	var content io.Reader
	if body != nil {
		content = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://apiserver.wasmop.invalid"+at, content)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var status metav1.Status
		if json.Unmarshal(answer, &status) == nil && status.Kind == "Status" {
			return nil, &apierrors.StatusError{ErrStatus: status}
		}
		return nil, apierrors.NewGenericServerResponse(resp.StatusCode, verb, schema.GroupResource{}, name, string(answer), 0, false)
	}
	return answer, nil
}
