package guest

import "testing"

func decoded(t *testing.T, data string) Object {
	t.Helper()
	obj, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestAccessorsReadDecodedJSON(t *testing.T) {
	obj := decoded(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod","generation":3,"labels":{"a":"b"}},"status":{"readyReplicas":2}}`)
	if obj.Kind() != Deployment || obj.Key() != (ObjectKey{"prod", "web"}) || obj.Generation() != 3 {
		t.Fatalf("kind %v key %v generation %d", obj.Kind(), obj.Key(), obj.Generation())
	}
	if obj.Int("status", "readyReplicas") != 2 || obj.Int("status", "missing") != 0 || obj.Labels()["a"] != "b" {
		t.Fatal("path accessors")
	}
}

func TestFinalizersAreAddedAndRemovedOnce(t *testing.T) {
	obj := New(ConfigMap, "ns", "cm")
	if !obj.AddFinalizer("x/y") || obj.AddFinalizer("x/y") || !obj.HasFinalizer("x/y") {
		t.Fatal("AddFinalizer")
	}
	if !obj.RemoveFinalizer("x/y") || obj.RemoveFinalizer("x/y") || len(obj.Finalizers()) != 0 {
		t.Fatal("RemoveFinalizer")
	}
}

func TestEqualComparesAsJSON(t *testing.T) {
	stored := decoded(t, `{"spec":{"replicas":3,"ports":[{"port":80}]}}`)
	desired := Object{"spec": map[string]any{"replicas": int64(3), "ports": []any{map[string]any{"port": 80}}}}
	if !Equal(stored, desired) {
		t.Fatal("3 and 3.0 differ")
	}
	desired.Set(int64(4), "spec", "replicas")
	if Equal(stored, desired) {
		t.Fatal("3 and 4 are equal")
	}
}

func TestDeepCopySharesNothing(t *testing.T) {
	obj := decoded(t, `{"metadata":{"labels":{"a":"b"}}}`)
	c := obj.DeepCopy()
	c.Set("c", "metadata", "labels", "a")
	if obj.Labels()["a"] != "b" {
		t.Fatal("the copy shares its labels")
	}
}

func TestControllerOwnerRefPointsAtTheObject(t *testing.T) {
	owner := decoded(t, `{"apiVersion":"example.wasmop.dev/v1alpha1","kind":"WebApp","metadata":{"name":"shop","uid":"u-1"}}`)
	owned := New(Service, "ns", "shop")
	owned.Set([]any{owner.ControllerOwnerRef()}, "metadata", "ownerReferences")
	if owned.ControllerUID() != "u-1" {
		t.Fatalf("controller uid %q", owned.ControllerUID())
	}
	if New(Service, "", "x").ControllerOwnerRef() != nil {
		t.Fatal("an object without uid cannot own")
	}
}
