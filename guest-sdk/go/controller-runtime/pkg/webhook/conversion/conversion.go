// Package conversion is controller-runtime's conversion webhook for wasmop guests: a kind whose
// versions are Go types in the scheme, one of them a conversion.Hub and the others
// conversion.Convertible, is converted by the plugin when the apiserver asks the host.
package conversion

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"wasmop.dev/guest"
)

// Converter is a custom converter, which a guest cannot use: its kinds convert through their
// hub (builder.WebhookBuilder.WithConverter refuses one).
type Converter = any

// ConvertFunc converts an object as the host asks.
type ConvertFunc = func(ctx context.Context, obj guest.Object, apiVersion string) (guest.Object, error)

// IsConvertible says whether obj's kind has versions in scheme that convert through a hub: one
// version is a conversion.Hub and every other a conversion.Convertible. Spokes without a hub,
// or more than one hub, are an error.
func IsConvertible(scheme *runtime.Scheme, obj runtime.Object) (bool, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return false, err
	}
	hubs, spokes, others := versions(scheme, gvk.GroupKind())
	switch {
	case len(hubs) > 1:
		return false, fmt.Errorf("%s has more than one hub: %v", gvk.GroupKind(), hubs)
	case len(hubs) == 0 && len(spokes) > 0:
		return false, fmt.Errorf("%s has convertible versions %v but no hub", gvk.GroupKind(), spokes)
	case len(hubs) == 1 && len(others) > 0:
		return false, fmt.Errorf("%s versions %v are neither the hub nor convertible", gvk.GroupKind(), others)
	}
	return len(hubs) == 1 && len(spokes) > 0, nil
}

// versions sorts the versions of gk in scheme into hubs, spokes and the rest.
func versions(scheme *runtime.Scheme, gk schema.GroupKind) (hubs, spokes, others []string) {
	for gvk := range scheme.AllKnownTypes() {
		if gvk.GroupKind() != gk {
			continue
		}
		obj, err := scheme.New(gvk)
		switch _, hub := obj.(conversion.Hub); {
		case err != nil:
		case hub:
			hubs = append(hubs, gvk.Version)
		default:
			if _, ok := obj.(conversion.Convertible); ok {
				spokes = append(spokes, gvk.Version)
			} else {
				others = append(others, gvk.Version)
			}
		}
	}
	return hubs, spokes, others
}

// Convert converts the versions of the kinds of scheme through their hubs.
func Convert(scheme *runtime.Scheme) ConvertFunc {
	return func(_ context.Context, obj guest.Object, apiVersion string) (guest.Object, error) {
		from := schema.FromAPIVersionAndKind(obj.String("apiVersion"), obj.String("kind"))
		to := schema.FromAPIVersionAndKind(apiVersion, from.Kind)
		if to.GroupKind() != from.GroupKind() {
			return nil, fmt.Errorf("cannot convert %s to another group, %s", from.GroupKind(), apiVersion)
		}
		src, err := typed(scheme, from, obj)
		if err != nil {
			return nil, err
		}
		dst, err := scheme.New(to)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", apiVersion, err)
		}
		if err := convert(scheme, src, dst); err != nil {
			return nil, fmt.Errorf("converting %s to %s: %w", from.Version, to.Version, err)
		}
		dst.GetObjectKind().SetGroupVersionKind(to)
		data, err := json.Marshal(dst)
		if err != nil {
			return nil, err
		}
		var out guest.Object
		return out, json.Unmarshal(data, &out)
	}
}

// typed is obj decoded into gvk's Go type.
func typed(scheme *runtime.Scheme, gvk schema.GroupVersionKind, obj guest.Object) (runtime.Object, error) {
	out, err := scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(obj)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	return out, err
}

// convert fills dst from src through the hub of their kind.
func convert(scheme *runtime.Scheme, src, dst runtime.Object) error {
	srcHub, srcIsHub := src.(conversion.Hub)
	dstHub, dstIsHub := dst.(conversion.Hub)
	srcSpoke, _ := src.(conversion.Convertible)
	dstSpoke, _ := dst.(conversion.Convertible)
	switch {
	case srcIsHub && dstIsHub:
		return fmt.Errorf("both versions are hubs")
	case srcIsHub && dstSpoke != nil:
		return dstSpoke.ConvertFrom(srcHub)
	case dstIsHub && srcSpoke != nil:
		return srcSpoke.ConvertTo(dstHub)
	case srcSpoke != nil && dstSpoke != nil:
		hub, err := hubOf(scheme, src)
		if err != nil {
			return err
		}
		if err := srcSpoke.ConvertTo(hub); err != nil {
			return err
		}
		return dstSpoke.ConvertFrom(hub)
	}
	return fmt.Errorf("%T and %T do not convert through a hub", src, dst)
}

// hubOf is a new object of the hub version of obj's kind.
func hubOf(scheme *runtime.Scheme, obj runtime.Object) (conversion.Hub, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	hubs, _, _ := versions(scheme, gvk.GroupKind())
	if len(hubs) != 1 {
		return nil, fmt.Errorf("%s has no single hub", gvk.GroupKind())
	}
	hub, err := scheme.New(gvk.GroupKind().WithVersion(hubs[0]))
	if err != nil {
		return nil, err
	}
	return hub.(conversion.Hub), nil
}
