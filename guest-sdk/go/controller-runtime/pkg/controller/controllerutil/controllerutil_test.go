package controllerutil_test

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/internal/testscheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"wasmop.dev/guest"
	"wasmop.dev/guest/guesttest"
)

func scheme(t *testing.T) *runtime.Scheme { return testscheme.New(t) }

func TestSetControllerReferenceRefusesASecondControllerAndAnotherNamespace(t *testing.T) {
	s := scheme(t)
	owner := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-config"}}
	if err := controllerutil.SetControllerReference(owner, cm, s); err != nil {
		t.Fatal(err)
	}
	ref := cm.OwnerReferences[0]
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.UID != "u1" || !*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Fatalf("reference %+v", ref)
	}
	if err := controllerutil.SetControllerReference(owner, cm, s); err != nil || len(cm.OwnerReferences) != 1 {
		t.Fatalf("setting it again: %v, %d references", err, len(cm.OwnerReferences))
	}
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: "u2"}}
	var owned *controllerutil.AlreadyOwnedError
	if err := controllerutil.SetControllerReference(other, cm, s); !errors.As(err, &owned) {
		t.Fatalf("second controller: %v", err)
	}
	elsewhere := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "web"}}
	if err := controllerutil.SetOwnerReference(elsewhere, cm, s); err == nil {
		t.Fatal("a cross-namespace owner was accepted")
	}
}

func TestFinalizersReportWhetherTheyChangedAnything(t *testing.T) {
	cm := &corev1.ConfigMap{}
	if !controllerutil.AddFinalizer(cm, "x/y") || controllerutil.AddFinalizer(cm, "x/y") {
		t.Fatal("AddFinalizer")
	}
	if !controllerutil.ContainsFinalizer(cm, "x/y") {
		t.Fatal("ContainsFinalizer")
	}
	if !controllerutil.RemoveFinalizer(cm, "x/y") || controllerutil.RemoveFinalizer(cm, "x/y") || len(cm.Finalizers) != 0 {
		t.Fatal("RemoveFinalizer")
	}
}

func TestCreateOrUpdateCreatesThenLeavesAloneThenUpdates(t *testing.T) {
	h := guesttest.New()
	c := client.NewHostClient(scheme(t), meta.NewDefaultRESTMapper(nil))
	ctx := context.Background()
	want := "1"
	run := func() controllerutil.OperationResult {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
		res, err := controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
			cm.Data = map[string]string{"v": want}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i, expected := range []controllerutil.OperationResult{controllerutil.OperationResultCreated, controllerutil.OperationResultNone} {
		if got := run(); got != expected {
			t.Fatalf("run %d: %s, want %s", i, got, expected)
		}
	}
	want = "2"
	if got := run(); got != controllerutil.OperationResultUpdated {
		t.Fatalf("after a change: %s", got)
	}
	if h.Object(guest.ConfigMap, "shop", "web").String("data", "v") != "2" || len(h.Writes) != 2 {
		t.Fatalf("writes %v", h.Writes)
	}
}

func TestCreateOrPatchPatchesTheObjectAndItsStatusApart(t *testing.T) {
	h := guesttest.New()
	c := client.NewHostClient(scheme(t), meta.NewDefaultRESTMapper(nil))
	seed := guest.New(guest.Deployment, "shop", "web")
	seed.Set(int64(1), "spec", "replicas")
	h.Seed(seed)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	res, err := controllerutil.CreateOrPatch(context.Background(), c, d, func() error {
		replicas := int32(3)
		d.Spec.Replicas = &replicas
		d.Status.ReadyReplicas = 3
		return nil
	})
	if err != nil || res != controllerutil.OperationResultUpdatedStatus {
		t.Fatalf("%s, %v", res, err)
	}
	if len(h.Writes) != 2 || h.Writes[0].Status || !h.Writes[1].Status {
		t.Fatalf("writes %+v", h.Writes)
	}
	stored := h.Object(guest.Deployment, "shop", "web")
	if stored.Int("spec", "replicas") != 3 || stored.Int("status", "readyReplicas") != 3 {
		t.Fatalf("stored %v", stored)
	}
	mutateName := func() error { d.Name = "other"; return nil }
	if _, err := controllerutil.CreateOrPatch(context.Background(), c, d, mutateName); err == nil {
		t.Fatal("a mutate function that renames was accepted")
	}
}
