package guesttest_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"wasmop.dev/guest"
	"wasmop.dev/guest/cache"
	"wasmop.dev/guest/client"
	"wasmop.dev/guest/guesttest"
)

func TestEveryWriteIsRecordedAsFixturesStateIt(t *testing.T) {
	h := guesttest.New()
	cm := guest.New(guest.ConfigMap, "ns", "cm")
	if _, err := client.Create(cm); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ApplyStatus(cm, true); err != nil {
		t.Fatal(err)
	}
	if err := client.Delete(guest.ConfigMap, "ns", "cm", client.WithUID("uid-9"), client.WithPropagation(client.Foreground)); !errors.Is(err, guest.ErrConflict) {
		t.Fatalf("a delete of another uid: %v", err)
	}
	targets := []string{"create v1 ConfigMap ns/cm", "apply (status) v1 ConfigMap ns/cm", "delete v1 ConfigMap ns/cm"}
	for i, w := range h.Writes {
		if w.Target() != targets[i] {
			t.Errorf("write %d: %s, want %s", i, w.Target(), targets[i])
		}
	}
	if w := h.Writes[1]; !w.Force || w.Err != nil || !reflect.DeepEqual(w.Body, map[string]any(cm)) {
		t.Errorf("apply %+v", w)
	}
	options := map[string]any{"uid": "uid-9", "propagationPolicy": "Foreground"}
	if w := h.Writes[2]; !reflect.DeepEqual(w.Body, options) || !errors.Is(w.Err, guest.ErrConflict) {
		t.Errorf("delete %+v", w)
	}
}

func TestSeedKeepsWhatObjectsHaveAndCountsTheRest(t *testing.T) {
	h := guesttest.New()
	given := guest.New(guest.ConfigMap, "ns", "given")
	given["metadata"] = map[string]any{"name": "given", "namespace": "ns", "uid": "u", "resourceVersion": "7", "generation": 3}
	h.Seed(given, guest.New(guest.ConfigMap, "ns", "bare"))
	kept := h.Object(guest.ConfigMap, "ns", "given")
	if kept.UID() != "u" || kept.ResourceVersion() != "7" || kept.Generation() != 3 {
		t.Errorf("given %v", kept["metadata"])
	}
	filled := h.Object(guest.ConfigMap, "ns", "bare")
	if _, has := filled.Map("metadata")["generation"]; filled.UID() != "uid-2" || filled.ResourceVersion() != "2" || has {
		t.Errorf("bare %v", filled["metadata"])
	}
}

func TestOnlyObjectsWithASpecHaveAGenerationWhichSpecChangesBump(t *testing.T) {
	h := guesttest.New()
	cm := guest.New(guest.ConfigMap, "ns", "cm")
	cm.Set(map[string]any{"k": "1"}, "data")
	deploy := guest.New(guest.Deployment, "ns", "web")
	deploy.Set(int64(1), "spec", "replicas")
	h.Seed(cm, deploy)
	hasGeneration := func(obj guest.Object) bool {
		_, has := obj.Map("metadata")["generation"]
		return has
	}
	if seeded := h.Object(guest.ConfigMap, "ns", "cm"); hasGeneration(seeded) {
		t.Errorf("seeded ConfigMap %v", seeded["metadata"])
	}
	if seeded := h.Object(guest.Deployment, "ns", "web"); seeded.Generation() != 1 {
		t.Errorf("seeded Deployment %v", seeded["metadata"])
	}
	changed := h.Object(guest.ConfigMap, "ns", "cm")
	changed.Set("2", "data", "k")
	if updated, err := client.Update(changed); err != nil || hasGeneration(updated) {
		t.Errorf("updated ConfigMap %v: %v", updated["metadata"], err)
	}
	if created, err := client.Create(guest.New(guest.ConfigMap, "ns", "new")); err != nil || hasGeneration(created) {
		t.Errorf("created ConfigMap %v: %v", created["metadata"], err)
	}
	labelled := h.Object(guest.Deployment, "ns", "web")
	labelled.Set(map[string]any{"tier": "web"}, "metadata", "labels")
	if updated, err := client.Update(labelled); err != nil || updated.Generation() != 1 {
		t.Errorf("relabelled Deployment %v: %v", updated["metadata"], err)
	}
	scaled := h.Object(guest.Deployment, "ns", "web")
	scaled.Set(int64(2), "spec", "replicas")
	if updated, err := client.Update(scaled); err != nil || updated.Generation() != 2 {
		t.Errorf("scaled Deployment %v: %v", updated["metadata"], err)
	}
	other := deploy.DeepCopy()
	other.Set("other", "metadata", "name")
	if created, err := client.Create(other); err != nil || created.Generation() != 1 {
		t.Errorf("created Deployment %v: %v", created["metadata"], err)
	}
}

func TestListsAreInKeyOrder(t *testing.T) {
	guesttest.New().Seed(guest.New(guest.ConfigMap, "b", "x"), guest.New(guest.ConfigMap, "a", "z"), guest.New(guest.ConfigMap, "a", "y"))
	objs, err := cache.List(guest.ConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, obj := range objs {
		keys = append(keys, obj.Key().String())
	}
	if want := []string{"a/y", "a/z", "b/x"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
}

func TestTheClockReadsWhatTheHostIsSetTo(t *testing.T) {
	h := guesttest.New()
	h.SetNow(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	if got := guest.NewCondition("Ready", true, "Up", "").LastTransitionTime; got != "2026-03-04T05:06:07Z" {
		t.Fatalf("lastTransitionTime %s", got)
	}
	guesttest.New()
	if got := guest.Now(); got == "2026-03-04T05:06:07Z" {
		t.Fatal("a new host kept the clock of the last")
	}
}
