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

func TestMarkersBecomeThePermissionsOfTheirKinds(t *testing.T) {
	perms, err := markerPermissions(encode(t,
		"groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete",
		"groups=apps,resources=deployments/status,verbs=get;update;patch",
		"groups=apps,resources=deployments/finalizers,verbs=update",
		`groups="",resources=configmaps;secrets,verbs=get;create,namespace=shop`,
		"groups=core,resources=configmaps,verbs=delete,namespace=shop",
	), scheme(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[guest.Kind]guest.Permission{}
	for _, p := range perms {
		byKind[p.Kind] = p
	}
	deploy := byKind[guest.Deployment]
	if len(perms) != 3 || len(deploy.Verbs) != 8 || !slices.Contains(deploy.Verbs, guest.VerbStatus) || deploy.Namespaces != nil {
		t.Fatalf("permissions %+v", perms)
	}
	cm := byKind[guest.ConfigMap]
	if !slices.Equal(cm.Verbs, []guest.Verb{guest.VerbGet, guest.VerbCreate, guest.VerbDelete}) || !slices.Equal(cm.Namespaces, []string{"shop"}) {
		t.Fatalf("configmaps %+v", cm)
	}
	if s := byKind[guest.Secret]; !slices.Equal(s.Verbs, []guest.Verb{guest.VerbGet, guest.VerbCreate}) {
		t.Fatalf("secrets %+v", s)
	}
}

func TestAMarkerTheHostCannotHonourFailsNamingWhereItIs(t *testing.T) {
	for body, says := range map[string]string{
		"groups=apps,resources=widgets,verbs=get":                     `resource "widgets"`,
		"urls=/metrics,verbs=get,groups=,resources=":                  "urls=",
		"groups=apps,resources=deployments,verbs=deletecollection":    `verb "deletecollection"`,
		"groups=apps,resources=deployments/scale,verbs=update":        "deployments/scale",
		"groups=apps,resources=deployments,verbs=get,resourceNames=x": "resourceNames=",
		"groups=apps,verbs=get":                                       "no resources=",
	} {
		_, err := markerPermissions(encode(t, body), scheme(t), nil)
		if err == nil || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), "controller.go:1") {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestNoMarkersNoPermissions(t *testing.T) {
	if perms, err := markerPermissions("", scheme(t), nil); err != nil || perms != nil {
		t.Fatalf("%v %v", perms, err)
	}
}

func TestAMarkersKindIsAtTheVersionThePluginRegistersElseTheMostStable(t *testing.T) {
	hpa := func(version string) guest.Kind {
		return guest.Kind{Group: "autoscaling", Version: version, Kind: "HorizontalPodAutoscaler"}
	}
	lease := guest.Kind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}
	for _, c := range []struct {
		marker     string
		registered []guest.Kind
		want       guest.Kind
	}{
		{"groups=coordination.k8s.io,resources=leases,verbs=get;create", nil, lease},
		{"groups=autoscaling,resources=horizontalpodautoscalers,verbs=get", nil, hpa("v2")},
		{"groups=autoscaling,resources=horizontalpodautoscalers,verbs=get", []guest.Kind{guest.ConfigMap, hpa("v1")}, hpa("v1")},
	} {
		perms, err := markerPermissions(encode(t, c.marker), scheme(t), c.registered)
		if err != nil || len(perms) != 1 || perms[0].Kind != c.want {
			t.Errorf("%s with %v registered: %+v %v", c.marker, c.registered, perms, err)
		}
	}
}
