package wasmop

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// Owner is the reconciler type (import path.Name) whose method follows the marker, if any.
	Owner string `json:"owner,omitempty"`
}

// skipped is a marker that grants nothing the host can hold, and why: the plugin loads without
// it, with a warning naming it.
type skipped struct{ why string }

func (s skipped) Error() string { return s.why }

// verbs maps an RBAC verb to the host's.
var verbs = map[string]guest.Verb{
	"get": guest.VerbGet, "list": guest.VerbList, "watch": guest.VerbWatch, "create": guest.VerbCreate,
	"update": guest.VerbUpdate, "patch": guest.VerbPatch, "delete": guest.VerbDelete,
}

// markerPermissions are the permissions encoded declares for the plugin's reconciler (of type
// reconciler, import path.Name), kinds found in scheme: at the version the plugin registers the
// kind at (its For, Owns, Watches and webhook kinds, registered), else at no version, which
// grants the kind at every version as the RBAC rule does, and which the host informs at the
// version the apiserver prefers. A marker written for another reconciler (the next method after it is another type's,
// as kubebuilder puts each controller's markers on its Reconcile) is not the plugin's; a marker
// the host cannot hold (a kind not in the scheme, a subresource other than status, a URL, named
// resources) grants nothing and is named in the warnings.
func markerPermissions(encoded string, scheme *runtime.Scheme, registered []guest.Kind, reconciler string) ([]guest.Permission, []string, error) {
	if encoded == "" {
		return nil, nil, nil
	}
	data, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, nil, fmt.Errorf("the build's RBAC markers: %w", err)
	}
	var found []marker
	if err := json.Unmarshal(data, &found); err != nil {
		return nil, nil, fmt.Errorf("the build's RBAC markers: %w", err)
	}
	var perms []guest.Permission
	var warnings []string
	for _, m := range ofReconciler(found, reconciler) {
		more, err := m.permissions(scheme, registered)
		var skip skipped
		switch {
		case errors.As(err, &skip):
			warnings = append(warnings, fmt.Sprintf("+kubebuilder:rbac marker at %s grants nothing: %s", m.At, skip.why))
		case err != nil:
			return nil, nil, fmt.Errorf("+kubebuilder:rbac marker at %s: %w", m.At, err)
		}
		perms = merge(perms, more...)
	}
	return perms, warnings, nil
}

// ofReconciler are the markers of found written for reconciler or for no reconciler. When none
// names reconciler, they are those of its package if none there names another reconciler (the
// markers head a file, not a method), else all of them (its markers are elsewhere, or it is
// wrapped).
func ofReconciler(found []marker, reconciler string) []marker {
	if !slices.ContainsFunc(found, func(m marker) bool { return m.Owner == reconciler }) {
		home := reconciler[:max(strings.LastIndex(reconciler, "."), 0)]
		inHome := slices.DeleteFunc(slices.Clone(found), func(m marker) bool { return m.pkg() != home })
		if len(inHome) > 0 && !slices.ContainsFunc(inHome, func(m marker) bool { return m.Owner != "" }) {
			return inHome
		}
		return found
	}
	var own []marker
	for _, m := range found {
		if m.Owner == "" || m.Owner == reconciler {
			own = append(own, m)
		}
	}
	return own
}

// pkg is the import path of the package the marker is written in.
func (m marker) pkg() string {
	file, _, _ := strings.Cut(m.At, ":")
	return path.Dir(file)
}

// permissions are what one marker grants, per kind.
func (m marker) permissions(scheme *runtime.Scheme, registered []guest.Kind) ([]guest.Permission, error) {
	fields, err := parseMarker(m.Marker)
	if err != nil {
		return nil, err
	}
	for _, unsupported := range []string{"urls", "resourceNames"} {
		if _, set := fields[unsupported]; set {
			return nil, skipped{fmt.Sprintf("%s= is not supported: a plugin's permissions name kinds, namespaces and verbs", unsupported)}
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
		return perm, false, skipped{fmt.Sprintf("subresource %s/%s is not one a plugin can use (status and finalizers are)", resource, sub)}
	}
	for _, name := range verbNames {
		switch name {
		case "*":
			perm.Verbs = append(perm.Verbs, guest.VerbGet, guest.VerbList, guest.VerbWatch, guest.VerbCreate, guest.VerbUpdate, guest.VerbPatch, guest.VerbDelete)
			continue
		case "deletecollection":
			perm.Verbs = append(perm.Verbs, guest.VerbList, guest.VerbDelete)
			continue
		}
		verb, ok := verbs[name]
		if !ok {
			return perm, false, fmt.Errorf("verb %q is not supported (get, list, watch, create, update, patch, delete, deletecollection are)", name)
		}
		perm.Verbs = append(perm.Verbs, verb)
	}
	slices.Sort(perm.Verbs)
	perm.Verbs = slices.Compact(perm.Verbs)
	return perm, false, nil
}

// kindOfResource is the kind of group whose resource is resource: at the version the plugin
// registers it at, else at none (every version).
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
		return guest.Kind{}, skipped{fmt.Sprintf("resource %q of group %q is not a kind in the plugin's scheme (add its types to the scheme, or declare it in Plugin.Permissions)", resource, group)}
	}
	for _, k := range registered {
		if k.Group == found[0].Group && k.Kind == found[0].Kind {
			return k, nil
		}
	}
	return guest.Kind{Group: found[0].Group, Kind: found[0].Kind}, nil
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
