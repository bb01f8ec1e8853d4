package guesttest_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"wasmop.dev/guest"
	"wasmop.dev/guest/guesttest"
)

var webAppKind = guest.Kind{Group: "example.wasmop.dev", Version: "v1alpha1", Kind: "WebApp"}

func webApp(replicas int) guest.Object {
	app := guest.New(webAppKind, "shop", "web")
	app["spec"] = map[string]any{"replicas": replicas}
	return app
}

func TestACreateIsFilledInFromItsObjectAsTheRuntimeHandsItOver(t *testing.T) {
	app := webApp(75)
	req, err := guesttest.Admission(app, nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.Operation != guest.OperationCreate || req.Kind != webAppKind || req.Namespace != "shop" || req.Name != "web" || req.UID != "wasmop-test" || req.DryRun {
		t.Errorf("request %+v", req)
	}
	if req.User.Username != "wasmop-test" || req.User.UID != "" || req.User.Groups == nil || len(req.User.Groups) != 0 {
		t.Errorf("user %#v: want wasmop-test, no uid, groups empty but not nil as the host's lists arrive", req.User)
	}
	if req.OldObject != nil {
		t.Errorf("a create has the old object %v", req.OldObject)
	}
	// The object came through JSON: its numbers are float64, and it is not the caller's.
	if replicas, ok := req.Object.Get("spec", "replicas").(float64); !ok || replicas != 75 {
		t.Errorf("replicas %#v, want float64 75", req.Object.Get("spec", "replicas"))
	}
	req.Object.Set(1.0, "spec", "replicas")
	if app.Get("spec", "replicas") != 75 {
		t.Error("the request shares its object with the caller")
	}
}

func TestTheOperationFollowsTheObjectsGivenAndTheKindTheObjectShown(t *testing.T) {
	old := guest.New(guest.ConfigMap, "", "settings")
	update, err := guesttest.Admission(webApp(2), webApp(1))
	if err != nil || update.Operation != guest.OperationUpdate || update.Object.Int("spec", "replicas") != 2 || update.OldObject.Int("spec", "replicas") != 1 {
		t.Errorf("update %+v %v", update, err)
	}
	deleted, err := guesttest.Admission(nil, old)
	if err != nil || deleted.Operation != guest.OperationDelete || deleted.Object != nil || deleted.OldObject.Name() != "settings" {
		t.Errorf("delete %+v %v", deleted, err)
	}
	if deleted.Kind != guest.ConfigMap || deleted.Namespace != "" || deleted.Name != "settings" {
		t.Errorf("a core, cluster-less old object gives kind %+v namespace %q name %q", deleted.Kind, deleted.Namespace, deleted.Name)
	}
	bare, err := guesttest.Admission(guest.Object{"kind": "Thing"}, nil)
	if err != nil || bare.Kind != (guest.Kind{Kind: "Thing"}) || bare.Name != "" || bare.Namespace != "" {
		t.Errorf("an object without apiVersion or metadata: %+v %v", bare, err)
	}
}

func TestOptionsSetTheOperationUserAndDryRun(t *testing.T) {
	req, err := guesttest.Admission(webApp(1), nil, guesttest.WithOperation(guest.OperationConnect),
		guesttest.WithUser("alice", "devs", "ops"), guesttest.WithDryRun())
	if err != nil {
		t.Fatal(err)
	}
	if req.Operation != guest.OperationConnect || !req.DryRun || req.User.Username != "alice" || strings.Join(req.User.Groups, ",") != "devs,ops" {
		t.Errorf("request %+v", req)
	}
}

func TestAdmissionRefusesWhatTheRuntimeNeverSends(t *testing.T) {
	for name, build := range map[string]func() (guest.AdmissionRequest, error){
		"object or oldObject": func() (guest.AdmissionRequest, error) { return guesttest.Admission(nil, nil) },
		`"PATCH"`: func() (guest.AdmissionRequest, error) {
			return guesttest.Admission(webApp(1), nil, guesttest.WithOperation("PATCH"))
		},
		"does not encode": func() (guest.AdmissionRequest, error) {
			return guesttest.Admission(webApp(1), guest.Object{"f": func() {}})
		},
	} {
		if _, err := build(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v does not say %s", err, name)
		}
	}
}

func TestAnAdmissionReviewIsWhatTheAPIServerPosts(t *testing.T) {
	req, err := guesttest.Admission(webApp(75), nil)
	if err != nil {
		t.Fatal(err)
	}
	review, err := guesttest.AdmissionReview(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"wasmop-test",` +
		`"kind":{"group":"example.wasmop.dev","version":"v1alpha1","kind":"WebApp"},` +
		`"resource":{"group":"example.wasmop.dev","version":"v1alpha1","resource":"webapps"},` +
		`"namespace":"shop","name":"web","operation":"CREATE","userInfo":{"username":"wasmop-test"},` +
		`"object":{"apiVersion":"example.wasmop.dev/v1alpha1","kind":"WebApp","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":75}},` +
		`"dryRun":false}}`
	if string(review) != want {
		t.Errorf("review\n%s\nwant\n%s", review, want)
	}
}

func TestAnAdmissionReviewLeavesOutWhatTheRequestHasNot(t *testing.T) {
	old := guest.New(guest.ConfigMap, "", "settings")
	req, err := guesttest.Admission(nil, old, guesttest.WithUser("alice", "devs"), guesttest.WithDryRun())
	if err != nil {
		t.Fatal(err)
	}
	data, err := guesttest.AdmissionReview(req)
	if err != nil {
		t.Fatal(err)
	}
	var review map[string]any
	if err := json.Unmarshal(data, &review); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"uid":       "wasmop-test",
		"kind":      map[string]any{"group": "", "version": "v1", "kind": "ConfigMap"},
		"resource":  map[string]any{"group": "", "version": "v1", "resource": "configmaps"},
		"name":      "settings",
		"operation": "DELETE",
		"userInfo":  map[string]any{"username": "alice", "groups": []any{"devs"}},
		"oldObject": map[string]any(old),
		"dryRun":    true,
	}
	if !reflect.DeepEqual(review["request"], want) {
		t.Errorf("request %v\nwant %v", review["request"], want)
	}
	if _, err := guesttest.AdmissionReview(guest.AdmissionRequest{Operation: "create"}); err == nil {
		t.Error("a lower-case operation makes a review")
	}
}

func TestAConversionReviewIsWhatTheAPIServerPosts(t *testing.T) {
	review, err := guesttest.ConversionReview("example.wasmop.dev/v1beta1", webApp(2))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"wasmop-test",` +
		`"desiredAPIVersion":"example.wasmop.dev/v1beta1","objects":[` +
		`{"apiVersion":"example.wasmop.dev/v1alpha1","kind":"WebApp","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":2}}]}}`
	if string(review) != want {
		t.Errorf("review\n%s\nwant\n%s", review, want)
	}
	if none, err := guesttest.ConversionReview("v1"); err != nil || !strings.HasSuffix(string(none), `"objects":[]}}`) {
		t.Errorf("no objects: %s %v", none, err)
	}
	if _, err := guesttest.ConversionReview("v1", webApp(1), nil); err == nil || !strings.Contains(err.Error(), "object 1") {
		t.Errorf("a nil object: %v", err)
	}
}
