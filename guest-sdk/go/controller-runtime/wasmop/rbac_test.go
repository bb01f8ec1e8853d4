package wasmop

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"wasmop.dev/guest"
)

func encode(t *testing.T, bodies ...string) string {
	t.Helper()
	var ms []marker
	for i, b := range bodies {
		ms = append(ms, marker{At: "controller.go:" + string(rune('1'+i)), Marker: b})
	}
	data, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(data)
}

// everyVersion is kind at no version.
func everyVersion(kind guest.Kind) guest.Kind {
	kind.Version = ""
	return kind
}

func TestMarkersBecomeThePermissionsOfTheirKinds(t *testing.T) {
	perms, _, err := markerPermissions(encode(t,
		"groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete",
		"groups=apps,resources=deployments/status,verbs=get;update;patch",
		"groups=apps,resources=deployments/finalizers,verbs=update",
		`groups="",resources=configmaps;secrets,verbs=get;create,namespace=shop`,
		"groups=core,resources=configmaps,verbs=delete,namespace=shop",
	), scheme(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[guest.Kind]guest.Permission{}
	for _, p := range perms {
		byKind[p.Kind] = p
	}
	// None of the kinds is registered: each is granted at every version, as the RBAC rule does.
	deploy := byKind[everyVersion(guest.Deployment)]
	if len(perms) != 3 || len(deploy.Verbs) != 8 || !slices.Contains(deploy.Verbs, guest.VerbStatus) || deploy.Namespaces != nil {
		t.Fatalf("permissions %+v", perms)
	}
	cm := byKind[everyVersion(guest.ConfigMap)]
	if !slices.Equal(cm.Verbs, []guest.Verb{guest.VerbGet, guest.VerbCreate, guest.VerbDelete}) || !slices.Equal(cm.Namespaces, []string{"shop"}) {
		t.Fatalf("configmaps %+v", cm)
	}
	if s := byKind[everyVersion(guest.Secret)]; !slices.Equal(s.Verbs, []guest.Verb{guest.VerbGet, guest.VerbCreate}) {
		t.Fatalf("secrets %+v", s)
	}
}

func TestAMalformedMarkerFailsNamingWhereItIs(t *testing.T) {
	for body, says := range map[string]string{
		"groups=apps,verbs=get":                            "no resources=",
		"groups=apps,resources=deployments,verbs=escalate": `verb "escalate"`,
		"groups=apps,resources=deployments":                "no verbs=",
	} {
		_, _, err := markerPermissions(encode(t, body), scheme(t), nil, "")
		if err == nil || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), "controller.go:1") {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestAMarkerTheHostCannotHoldGrantsNothingAndIsNamedInAWarning(t *testing.T) {
	for body, says := range map[string]string{
		"groups=apps,resources=widgets,verbs=get":                     `resource "widgets"`,
		"groups=route.openshift.io,resources=routes,verbs=get":        `resource "routes" of group "route.openshift.io"`,
		"urls=/metrics,verbs=get,groups=,resources=":                  "urls=",
		"groups=apps,resources=deployments/scale,verbs=update":        "deployments/scale",
		"groups=core,resources=pods/proxy,verbs=get":                  "pods/proxy",
		"groups=apps,resources=deployments,verbs=get,resourceNames=x": "resourceNames=",
	} {
		perms, warnings, err := markerPermissions(encode(t, body), scheme(t), nil, "")
		if err != nil || len(perms) != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], says) || !strings.Contains(warnings[0], "controller.go:1") {
			t.Errorf("%s: %v %v %v", body, perms, warnings, err)
		}
	}
}

func TestDeletecollectionIsListAndDelete(t *testing.T) {
	perms, _, err := markerPermissions(encode(t, "groups=core,resources=pods,verbs=get;deletecollection"), scheme(t), nil, "")
	if err != nil || len(perms) != 1 || !slices.Equal(perms[0].Verbs, []guest.Verb{guest.VerbGet, guest.VerbList, guest.VerbDelete}) {
		t.Fatalf("%+v %v", perms, err)
	}
}

func TestOnlyTheRegisteredReconcilersMarkersAndUnownedOnesAreThePlugins(t *testing.T) {
	var ms []marker
	for i, m := range []marker{
		{Marker: "groups=apps,resources=deployments,verbs=get", Owner: "example.com/ray.RayClusterReconciler"},
		{Marker: "groups=batch,resources=jobs,verbs=get", Owner: "example.com/ray.RayJobReconciler"},
		{Marker: "groups=core,resources=events,verbs=create"},
	} {
		m.At = "controller.go:" + string(rune('1'+i))
		ms = append(ms, m)
	}
	data, _ := json.Marshal(ms)
	encoded := base64.StdEncoding.EncodeToString(data)
	kinds := func(reconciler string) []string {
		perms, _, err := markerPermissions(encoded, scheme(t), nil, reconciler)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range perms {
			out = append(out, p.Kind.Kind)
		}
		return out
	}
	if got := kinds("example.com/ray.RayClusterReconciler"); !slices.Equal(got, []string{"Deployment", "Event"}) {
		t.Fatalf("the RayCluster plugin's kinds: %v", got)
	}
	if got := kinds("example.com/ray.wrapped"); len(got) != 3 {
		t.Fatalf("a reconciler no marker names takes them all: %v", got)
	}
}

func TestMarkersHeadingTheReconcilersFileAreItsNotThoseOfAPackageItImports(t *testing.T) {
	ms := []marker{
		{At: "example.com/core/queue_controller.go:5", Marker: "groups=batch,resources=jobs,verbs=get", Owner: "example.com/core.QueueReconciler"},
		{At: "example.com/core/helpers.go:9", Marker: "groups=apps,resources=deployments,verbs=get"},
		{At: "example.com/recovery/pods.go:47", Marker: "groups=core,resources=pods,verbs=get;delete"},
		{At: "example.com/recovery/pods.go:48", Marker: "groups=core,resources=nodes,verbs=get"},
	}
	data, _ := json.Marshal(ms)
	perms, _, err := markerPermissions(base64.StdEncoding.EncodeToString(data), scheme(t), nil, "example.com/recovery.PodReconciler")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, p := range perms {
		kinds = append(kinds, p.Kind.Kind)
	}
	if !slices.Equal(kinds, []string{"Pod", "Node"}) {
		t.Fatalf("the recovery plugin's kinds: %v", kinds)
	}
}

func TestNoMarkersNoPermissions(t *testing.T) {
	if perms, _, err := markerPermissions("", scheme(t), nil, ""); err != nil || perms != nil {
		t.Fatalf("%v %v", perms, err)
	}
}

func TestAMarkersKindIsAtTheVersionThePluginRegistersElseAtEveryVersion(t *testing.T) {
	hpa := func(version string) guest.Kind {
		return guest.Kind{Group: "autoscaling", Version: version, Kind: "HorizontalPodAutoscaler"}
	}
	// client-go's scheme lists Lease at v1, v1beta1 and v1alpha2; the apiserver may serve any
	// of them, so the marker names none and the host informs the one it prefers.
	lease := guest.Kind{Group: "coordination.k8s.io", Kind: "Lease"}
	for _, c := range []struct {
		marker     string
		registered []guest.Kind
		want       guest.Kind
	}{
		{"groups=coordination.k8s.io,resources=leases,verbs=get;create", nil, lease},
		{"groups=autoscaling,resources=horizontalpodautoscalers,verbs=get", nil, hpa("")},
		{"groups=autoscaling,resources=horizontalpodautoscalers,verbs=get", []guest.Kind{guest.ConfigMap, hpa("v1")}, hpa("v1")},
	} {
		perms, _, err := markerPermissions(encode(t, c.marker), scheme(t), c.registered, "")
		if err != nil || len(perms) != 1 || perms[0].Kind != c.want {
			t.Errorf("%s with %v registered: %+v %v", c.marker, c.registered, perms, err)
		}
	}
}
