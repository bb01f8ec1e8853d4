package client

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	guestclient "wasmop.dev/guest/client"
)

// appliedMeta is what a server-side apply needs to know of its object.
type appliedMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
}

// Apply server-side applies an apply configuration (client-go's applyconfigurations, or an
// unstructured one) and replaces its contents with the object the apiserver stored.
func (c *hostClient) Apply(_ context.Context, obj runtime.ApplyConfiguration, opts ...ApplyOption) error {
	var o ApplyOptions
	for _, opt := range opts {
		opt.ApplyToApply(&o)
	}
	if len(o.DryRun) > 0 {
		return fmt.Errorf("apply with dry run: %w", errUnsupported)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding the apply configuration: %w", err)
	}
	var m appliedMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	gvk := schema.FromAPIVersionAndKind(m.APIVersion, m.Kind)
	if gvk.Kind == "" || m.Metadata.Name == "" {
		return fmt.Errorf("an apply configuration needs apiVersion, kind and name")
	}
	force := o.Force != nil && *o.Force
	stored, err := guestclient.PatchJSON(guestKind(gvk), m.Metadata.Namespace, m.Metadata.Name, guestclient.ApplyPatchJSON(data, force))
	if err != nil {
		return apiError(err, gvk, m.Metadata.Name)
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().SetZero()
	}
	return json.Unmarshal([]byte(stored), obj)
}
