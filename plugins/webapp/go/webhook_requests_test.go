package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"wasmop.dev/guest"
	"wasmop.dev/guest/guesttest"
	"wasmop.dev/guest/guesttest/fixture"
)

// admission is the request for object and oldObject, as the runtime hands it over.
func admission(t *testing.T, object, oldObject guest.Object, options ...guesttest.AdmissionOption) guest.AdmissionRequest {
	t.Helper()
	req, err := guesttest.Admission(object, oldObject, options...)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestValidateRefusesMoreThanFiftyReplicasOfABuiltRequest(t *testing.T) {
	_, err := validate(context.Background(), admission(t, webApp("shop", 75), nil))
	if err == nil || err.Error() != "spec.replicas must be between 0 and 50, not 75" {
		t.Errorf("75 replicas: %v", err)
	}
	// The request's numbers are JSON's, as in the sandbox: int64(3) in the object arrives as 3.0.
	if _, err := validate(context.Background(), admission(t, webApp("shop", 3), webApp("shop", 2))); err != nil {
		t.Errorf("3 replicas: %v", err)
	}
	_, err = validate(context.Background(), admission(t, webApp("shop", 51), webApp("shop", 2), guesttest.WithDryRun()))
	if err == nil || err.Error() != "spec.replicas must be between 0 and 50, not 51" {
		t.Errorf("an update to 51 replicas: %v", err)
	}
	if warnings, err := validate(context.Background(), admission(t, nil, webApp("shop", 75))); err != nil || warnings != nil {
		t.Errorf("a delete: %v %v", warnings, err)
	}
}

func TestDefaultingABuiltRequestSetsPort8080(t *testing.T) {
	app := webApp("shop", 2)
	delete(app["spec"].(map[string]any), "port")
	defaulted, err := setDefaults(context.Background(), admission(t, app, nil))
	if err != nil || defaulted.Int("spec", "port") != 8080 || defaulted.Int("spec", "replicas") != 2 {
		t.Errorf("defaulted %v %v", defaulted, err)
	}
	app["spec"].(map[string]any)["port"] = 9090
	kept, err := setDefaults(context.Background(), admission(t, app, nil))
	if err != nil || kept.Int("spec", "port") != 9090 {
		t.Errorf("a port named: %v %v", kept, err)
	}
}

// conversionRequest is the request of the ConversionReview for objects.
type conversionRequest struct {
	DesiredAPIVersion string         `json:"desiredAPIVersion"`
	Objects           []guest.Object `json:"objects"`
}

func TestConvertingTheObjectsOfABuiltReviewRenamesReplicas(t *testing.T) {
	data, err := guesttest.ConversionReview("example.wasmop.dev/v1beta1", webApp("shop", 2))
	if err != nil {
		t.Fatal(err)
	}
	var review struct{ Request conversionRequest }
	if err := json.Unmarshal(data, &review); err != nil || len(review.Request.Objects) != 1 {
		t.Fatalf("review %s: %v", data, err)
	}
	beta, err := convert(context.Background(), review.Request.Objects[0], review.Request.DesiredAPIVersion)
	if err != nil || beta.String("apiVersion") != "example.wasmop.dev/v1beta1" || beta.Int("spec", "instances") != 2 || beta.Get("spec", "replicas") != nil {
		t.Errorf("converted %v %v", beta, err)
	}
}

// TestBuiltReviewsGetTheNativeAnswersInTheSandbox states the reviews built above as fixtures,
// expecting what the functions answered natively, and has `wasmop test` run them against the
// component: the same request gets the same answer there.
func TestBuiltReviewsGetTheNativeAnswersInTheSandbox(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, fixture map[string]any) {
		data, err := json.Marshal(fixture)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	request := func(req guest.AdmissionRequest) json.RawMessage {
		data, err := guesttest.AdmissionReview(req)
		if err != nil {
			t.Fatal(err)
		}
		var review struct{ Request json.RawMessage }
		if err := json.Unmarshal(data, &review); err != nil {
			t.Fatal(err)
		}
		return review.Request
	}

	refused := admission(t, webApp("shop", 51), webApp("shop", 2), guesttest.WithUser("alice", "devs"))
	_, err := validate(context.Background(), refused)
	if err == nil {
		t.Fatal("51 instances admitted")
	}
	write("refused", map[string]any{"name": "refused", "validate": request(refused),
		"expect": map[string]any{"allowed": false, "message": err.Error()}})

	app := webApp("shop", 2)
	delete(app["spec"].(map[string]any), "port")
	unported := admission(t, app, nil)
	sent := request(unported)
	defaulted, err := setDefaults(context.Background(), unported)
	if err != nil {
		t.Fatal(err)
	}
	write("defaulted", map[string]any{"name": "defaulted", "default": sent,
		"expect": map[string]any{"allowed": true, "patch": []any{
			map[string]any{"op": "add", "path": "/spec/port", "value": defaulted.Get("spec", "port")}}}})

	data, err := guesttest.ConversionReview("example.wasmop.dev/v1beta1", webApp("shop", 2))
	if err != nil {
		t.Fatal(err)
	}
	var review struct{ Request conversionRequest }
	if err := json.Unmarshal(data, &review); err != nil {
		t.Fatal(err)
	}
	posted := review.Request
	converted, err := convert(context.Background(), posted.Objects[0].DeepCopy(), posted.DesiredAPIVersion)
	if err != nil {
		t.Fatal(err)
	}
	write("converted", map[string]any{"name": "converted", "convert": posted,
		"expect": map[string]any{"converted": []guest.Object{converted}}})

	fixture.Run(t, dir)
}
