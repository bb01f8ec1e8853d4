package wasmop

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"wasmop.dev/guest"
)

// markers are the plugin's kubebuilder RBAC markers, which `wasmop build` finds in its
// packages (wasmop-rbac) and sets here at link time: base64 of a JSON array of markers.
var markers string

// marker is one `// +kubebuilder:rbac:` marker.
type marker struct {
	// At is where it was written, file:line.
	At string `json:"at"`
	// Marker is what follows +kubebuilder:rbac:.
	Marker string `json:"marker"`
}

// verbs maps an RBAC verb to the host's.
var verbs = map[string]guest.Verb{
	"get": guest.VerbGet, "list": guest.VerbList, "watch": guest.VerbWatch, "create": guest.VerbCreate,
	"update": guest.VerbUpdate, "patch": guest.VerbPatch, "delete": guest.VerbDelete,
}

// markerPermissions are the permissions encoded declares, kinds found in scheme: at the version
// the plugin registers the kind at (its For, Owns, Watches and webhook kinds, registered), else
// at the kind's most stable version in the scheme (v1 before v1beta1 before v1alpha1), which is
// the one an apiserver serves longest.
func markerPermissions(encoded string, scheme *runtime.Scheme, registered []guest.Kind) ([]guest.Permission, error) {
	if encoded == "" {
		return nil, nil
	}
	data, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("the build's RBAC markers: %w", err)
	}
	var found []marker
	if err := json.Unmarshal(data, &found); err != nil {
		return nil, fmt.Errorf("the build's RBAC markers: %w", err)
	}
	var perms []guest.Permission
	for _, m := range found {
		more, err := m.permissions(scheme, registered)
		if err != nil {
			return nil, fmt.Errorf("+kubebuilder:rbac marker at %s: %w", m.At, err)
		}
		perms = merge(perms, more...)
	}
	return perms, nil
}

// permissions are what one marker grants, per kind.
func (m marker) permissions(scheme *runtime.Scheme, registered []guest.Kind) ([]guest.Permission, error) {
	fields, err := parseMarker(m.Marker)
	if err != nil {
		return nil, err
	}
	for _, unsupported := range []string{"urls", "resourceNames"} {
		if _, set := fields[unsupported]; set {
			return nil, fmt.Errorf("%s= is not supported: a plugin's permissions name kinds, namespaces and verbs", unsupported)
		}
	}
	var namespaces []string
	if ns := fields["namespace"]; len(ns) > 0 {
		namespaces = ns
	}
	var out []guest.Permission
	for _, group := range fields["groups"] {
		if group == "core" {
			group = ""
		}
		for _, resource := range fields["resources"] {
			perm, skip, err := permission(scheme, registered, group, resource, fields["verbs"])
			if err != nil {
				return nil, err
			}
			if !skip {
				perm.Namespaces = namespaces
				out = append(out, perm)
			}
		}
	}
	return out, nil
}

// permission is what verbs on group's resource (or its subresource) grant; skip when the
// subresource means nothing to the host (finalizers).
func permission(scheme *runtime.Scheme, registered []guest.Kind, group, resource string, verbNames []string) (guest.Permission, bool, error) {
	resource, sub, _ := strings.Cut(resource, "/")
	kind, err := kindOfResource(scheme, registered, group, resource)
	if err != nil {
		return guest.Permission{}, false, err
	}
	perm := guest.Permission{Kind: kind}
	switch sub {
	case "":
	case "finalizers":
		return perm, true, nil
	case "status":
		if slices.ContainsFunc(verbNames, func(v string) bool { return v == "update" || v == "patch" || v == "*" }) {
			perm.Verbs = []guest.Verb{guest.VerbStatus}
		}
		return perm, len(perm.Verbs) == 0, nil
	default:
		return perm, false, fmt.Errorf("subresource %s/%s is not supported (status and finalizers are)", resource, sub)
	}
	for _, name := range verbNames {
		if name == "*" {
			perm.Verbs = append(perm.Verbs, guest.VerbGet, guest.VerbList, guest.VerbWatch, guest.VerbCreate, guest.VerbUpdate, guest.VerbPatch, guest.VerbDelete)
			continue
		}
		verb, ok := verbs[name]
		if !ok {
			return perm, false, fmt.Errorf("verb %q is not supported (get, list, watch, create, update, patch, delete are)", name)
		}
		perm.Verbs = append(perm.Verbs, verb)
	}
	return perm, false, nil
}

// kindOfResource is the kind of group whose resource is resource: at the version the plugin
// registers it at, else at its most stable version in the scheme.
func kindOfResource(scheme *runtime.Scheme, registered []guest.Kind, group, resource string) (guest.Kind, error) {
	var found []guest.Kind
	for gvk := range scheme.AllKnownTypes() {
		if gvk.Group != group || strings.HasSuffix(gvk.Kind, "List") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource == resource {
			found = append(found, guestKind(gvk))
		}
	}
	if len(found) == 0 {
		return guest.Kind{}, fmt.Errorf("resource %q of group %q is not a kind in the plugin's scheme", resource, group)
	}
	for _, k := range registered {
		if k.Group == found[0].Group && k.Kind == found[0].Kind {
			return k, nil
		}
	}
	return slices.MaxFunc(found, func(a, b guest.Kind) int {
		return version.CompareKubeAwareVersionStrings(a.Version, b.Version)
	}), nil
}

func guestKind(gvk schema.GroupVersionKind) guest.Kind {
	return guest.Kind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
}

// parseMarker splits `key=v1;v2,key2="v"` into its keys' values.
func parseMarker(body string) (map[string][]string, error) {
	fields := map[string][]string{}
	for _, part := range strings.Split(body, ",") {
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not key=value", part)
		}
		for _, v := range strings.Split(value, ";") {
			fields[strings.TrimSpace(key)] = append(fields[strings.TrimSpace(key)], strings.Trim(strings.TrimSpace(v), `"`))
		}
	}
	for _, required := range []string{"groups", "resources", "verbs"} {
		if len(fields[required]) == 0 {
			return nil, fmt.Errorf("no %s=", required)
		}
	}
	return fields, nil
}

// merge adds more to perms, joining the verbs of permissions of the same kind and namespaces.
func merge(perms []guest.Permission, more ...guest.Permission) []guest.Permission {
	for _, p := range more {
		i := slices.IndexFunc(perms, func(q guest.Permission) bool {
			return q.Kind == p.Kind && slices.Equal(q.Namespaces, p.Namespaces)
		})
		if i < 0 {
			perms = append(perms, p)
			continue
		}
		for _, v := range p.Verbs {
			if !slices.Contains(perms[i].Verbs, v) {
				perms[i].Verbs = append(perms[i].Verbs, v)
			}
		}
	}
	return perms
}
