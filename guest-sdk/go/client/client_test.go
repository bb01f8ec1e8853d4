package client_test

import (
	"errors"
	"testing"

	"wasmop.dev/guest"
	"wasmop.dev/guest/cache"
	"wasmop.dev/guest/client"
	"wasmop.dev/guest/guesttest"
)

func TestAStaleUpdateIsAConflict(t *testing.T) {
	guesttest.New().Seed(guest.New(guest.ConfigMap, "ns", "cm"))
	first, err := cache.Get(guest.ConfigMap, "ns", "cm")
	if err != nil {
		t.Fatal(err)
	}
	stale := first.DeepCopy()
	first.Set("v", "data", "k")
	if _, err := client.Update(first); err != nil {
		t.Fatal(err)
	}
	stale.Set("w", "data", "k")
	var conflict *guest.Conflict
	if _, err := client.Update(stale); !errors.As(err, &conflict) {
		t.Fatalf("update at a stale resourceVersion: %v", err)
	}
}

func TestApplyCreatesThenPatches(t *testing.T) {
	h := guesttest.New()
	svc := guest.New(guest.Service, "ns", "web")
	svc.Set("ClusterIP", "spec", "type")
	if _, err := client.Apply(svc, true); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Patch(guest.Service, "ns", "web", client.MergePatch(map[string]any{"spec": map[string]any{"type": nil}})); err != nil {
		t.Fatal(err)
	}
	if got := h.Object(guest.Service, "ns", "web").Get("spec", "type"); got != nil {
		t.Fatalf("spec.type = %v after a merge patch removed it", got)
	}
	if err := client.Delete(guest.Service, "ns", "web"); err != nil {
		t.Fatal(err)
	}
	if err := client.Delete(guest.Service, "ns", "web"); !errors.Is(err, guest.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}
