package main

import (
	"context"
	"errors"
	"testing"

	"wasmop.dev/guest"
	"wasmop.dev/guest/guesttest"
)

func webApp(name string, replicas int64) guest.Object {
	app := guest.New(WebAppKind, "prod", name)
	app["spec"] = map[string]any{"image": "nginx:1.27", "replicas": replicas, "port": 8080}
	return app
}

func reconcileShop(t *testing.T) error {
	t.Helper()
	_, err := plugin.Reconcile(context.Background(), guest.Request{Namespace: "prod", Name: "shop"})
	return err
}

func TestANewWebAppGetsItsObjectsFinalizerAndStatus(t *testing.T) {
	h := guesttest.New()
	h.Seed(webApp("shop", 2))
	if err := reconcileShop(t); err != nil {
		t.Fatal(err)
	}
	app := h.Object(WebAppKind, "prod", "shop")
	if !app.HasFinalizer(Finalizer) {
		t.Error("no finalizer")
	}
	deployment := h.Object(guest.Deployment, "prod", "shop")
	if deployment == nil || deployment.Int("spec", "replicas") != 2 || deployment.ControllerUID() != app.UID() {
		t.Fatalf("deployment %v", deployment)
	}
	if svc := h.Object(guest.Service, "prod", "shop"); svc == nil || svc.String("spec", "type") != "ClusterIP" {
		t.Fatalf("service %v", svc)
	}
	if marker := h.Object(guest.ConfigMap, "prod", "webapp-marker-shop"); marker == nil || marker.Labels()[MarkerLabel] != "shop" {
		t.Fatalf("marker %v", marker)
	}
	if len(h.Events) != 1 || h.Events[0].Reason != "Created" {
		t.Fatalf("events %v", h.Events)
	}
	ready := app.Slice("status", "conditions")[0].(map[string]any)
	if ready["status"] != "False" || ready["message"] != "0/2 replicas ready" || app.Int("status", "observedGeneration") != 1 {
		t.Fatalf("status %v", app.Get("status"))
	}
}

func TestAConvergedWebAppCausesNoWrites(t *testing.T) {
	h := guesttest.New()
	h.Seed(webApp("shop", 2))
	if err := reconcileShop(t); err != nil {
		t.Fatal(err)
	}
	before := len(h.Writes)
	if err := reconcileShop(t); err != nil {
		t.Fatal(err)
	}
	if extra := h.Writes[before:]; len(extra) != 0 {
		t.Fatalf("writes on a converged WebApp: %v", extra)
	}
}

func TestStatusFollowsTheDeploymentsReadyReplicas(t *testing.T) {
	h := guesttest.New()
	h.Seed(webApp("shop", 2))
	if err := reconcileShop(t); err != nil {
		t.Fatal(err)
	}
	deployment := h.Object(guest.Deployment, "prod", "shop")
	deployment.Set(int64(2), "status", "readyReplicas")
	h.Seed(deployment)
	if err := reconcileShop(t); err != nil {
		t.Fatal(err)
	}
	app := h.Object(WebAppKind, "prod", "shop")
	ready := app.Slice("status", "conditions")[0].(map[string]any)
	if ready["status"] != "True" || ready["reason"] != "Available" || app.Int("status", "readyReplicas") != 2 {
		t.Fatalf("status %v", app.Get("status"))
	}
}

func TestADriftedDeploymentIsPutBack(t *testing.T) {
	h := guesttest.New()
	h.Seed(webApp("shop", 2))
	if err := reconcileShop(t); err != nil {
		t.Fatal(err)
	}
	deployment := h.Object(guest.Deployment, "prod", "shop")
	deployment.Slice("spec", "template", "spec", "containers")[0].(map[string]any)["image"] = "nginx:edited"
	h.Seed(deployment)
	if err := reconcileShop(t); err != nil {
		t.Fatal(err)
	}
	image := webContainer(h.Object(guest.Deployment, "prod", "shop"))["image"]
	if image != "nginx:1.27" {
		t.Fatalf("image %v", image)
	}
}

func TestDeletionRemovesTheMarkerThenReleasesTheWebApp(t *testing.T) {
	h := guesttest.New()
	h.Seed(webApp("shop", 1))
	if err := reconcileShop(t); err != nil {
		t.Fatal(err)
	}
	app := h.Object(WebAppKind, "prod", "shop")
	app.Set("2026-01-01T00:00:00Z", "metadata", "deletionTimestamp")
	h.Seed(app)
	if err := reconcileShop(t); err != nil {
		t.Fatal(err)
	}
	if h.Object(guest.ConfigMap, "prod", "webapp-marker-shop") != nil {
		t.Error("the marker is still there")
	}
	if h.Object(WebAppKind, "prod", "shop") != nil {
		t.Error("the WebApp was not released")
	}
}

func TestAConflictingFinalizerUpdateIsRetried(t *testing.T) {
	h := guesttest.New()
	h.Seed(webApp("shop", 1))
	h.FailNext["update"] = &guest.Conflict{Status: guest.Status{Code: 409, Reason: "Conflict"}}
	if err := reconcileShop(t); !errors.Is(err, guest.ErrConflict) {
		t.Fatalf("reconcile = %v, want a conflict to retry", err)
	}
	if h.Object(guest.Deployment, "prod", "shop") != nil {
		t.Fatal("the reconcile went on after the conflict")
	}
	if err := reconcileShop(t); err != nil {
		t.Fatal(err)
	}
}

func TestServicePortChangesAreDetected(t *testing.T) {
	app := webApp("shop", 1)
	app.Set("uid-1", "metadata", "uid")
	want := desiredService(app, app.ControllerOwnerRef())
	actual := want.DeepCopy()
	actual.Set("10.0.0.7", "spec", "clusterIP")
	if !serviceMatches(actual, want) {
		t.Fatal("a defaulted clusterIP counts as drift")
	}
	actual.Slice("spec", "ports")[0].(map[string]any)["port"] = 80
	if serviceMatches(actual, want) {
		t.Fatal("a changed port is not drift")
	}
}
