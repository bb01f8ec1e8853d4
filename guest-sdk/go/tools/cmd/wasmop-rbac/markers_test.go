package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMarkersAreTheRBACLineCommentsOfAFileWithTheReconcilerTheyPrecede(t *testing.T) {
	path := filepath.Join(t.TempDir(), "controller.go")
	src := `package controller

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
//+kubebuilder:rbac:groups="",resources=configmaps,verbs=create
// +kubebuilder:object:root=true
/* +kubebuilder:rbac:groups=x,resources=y,verbs=get */
var s = "// +kubebuilder:rbac:groups=no,resources=no,verbs=no"

// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get

// Reconcile reconciles.
func (r *RayClusterReconciler) Reconcile() {}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	markers, err := fileMarkers(path, "example.com/controller", "example.com/controller/controller.go")
	if err != nil {
		t.Fatal(err)
	}
	want := []Marker{
		{At: "example.com/controller/controller.go:3", Marker: "groups=apps,resources=deployments,verbs=get;list;watch"},
		{At: "example.com/controller/controller.go:4", Marker: `groups="",resources=configmaps,verbs=create`},
		{At: "example.com/controller/controller.go:9", Marker: "groups=ray.io,resources=rayclusters,verbs=get", Owner: "example.com/controller.RayClusterReconciler"},
	}
	if len(markers) != len(want) {
		t.Fatalf("markers %+v", markers)
	}
	for i := range want {
		if markers[i] != want[i] {
			t.Errorf("marker %d is %+v, want %+v", i, markers[i], want[i])
		}
	}
}

func TestOnlyImportersOfControllerRuntimeOutsideItAreRead(t *testing.T) {
	for _, c := range []struct {
		p    listedPackage
		want bool
	}{
		{listedPackage{ImportPath: "example.com/op/controller", Imports: []string{"sigs.k8s.io/controller-runtime/pkg/client"}}, true},
		{listedPackage{ImportPath: "example.com/op/api", Imports: []string{"k8s.io/apimachinery/pkg/runtime"}}, false},
		{listedPackage{ImportPath: "sigs.k8s.io/controller-runtime/pkg/builder", Imports: []string{"sigs.k8s.io/controller-runtime/pkg/client"}}, false},
	} {
		if got := importsControllerRuntime(c.p); got != c.want {
			t.Errorf("%s: %v", c.p.ImportPath, got)
		}
	}
}
