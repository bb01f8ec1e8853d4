package main

import (
	"context"
	"strings"
	"testing"

	"wasmop.dev/guest"
)

func TestImagesAreCheckedAsTheDistributionSpecWritesThem(t *testing.T) {
	for _, ref := range []string{"nginx", "nginx:1.27", "localhost:5000/team/app:v1", "ghcr.io/a/b@sha256:" + strings.Repeat("ab", 32)} {
		if !wellFormedImage(ref) {
			t.Errorf("%s refused", ref)
		}
	}
	for _, ref := range []string{"Not An Image!", "nginx:", "UPPER/case", "a/" + strings.Repeat("b", 260)} {
		if wellFormedImage(ref) {
			t.Errorf("%s admitted", ref)
		}
	}
}

func TestWebAppsOverFiftyReplicasAreRefusedNamingTheVersionsField(t *testing.T) {
	beta := guest.Kind{Group: WebAppKind.Group, Version: "v1beta1", Kind: "WebApp"}
	app := guest.Object{"spec": map[string]any{"image": "nginx", "instances": 75.0}}
	_, err := validate(context.Background(), guest.AdmissionRequest{Kind: beta, Object: app})
	if err == nil || err.Error() != "spec.instances must be between 0 and 50, not 75" {
		t.Errorf("got %v", err)
	}
	app = guest.Object{"spec": map[string]any{"image": "nginx", "replicas": 50.0}}
	if _, err := validate(context.Background(), guest.AdmissionRequest{Kind: WebAppKind, Object: app}); err != nil {
		t.Errorf("50 replicas: %v", err)
	}
}

func TestConversionRenamesReplicasAndRefusesOtherVersions(t *testing.T) {
	app := guest.Object{"apiVersion": "example.wasmop.dev/v1alpha1", "spec": map[string]any{"replicas": 3.0}}
	beta, err := convert(context.Background(), app, "example.wasmop.dev/v1beta1")
	if err != nil || beta.Int("spec", "instances") != 3 || beta.Get("spec", "replicas") != nil {
		t.Fatalf("beta %v %v", beta, err)
	}
	if _, err := convert(context.Background(), beta, "example.wasmop.dev/v9"); err == nil {
		t.Error("v9 converted")
	}
}
