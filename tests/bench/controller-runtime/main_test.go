package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"wasmop.dev/bench/webapp-controller-runtime/webapp"
)

func TestCacheOptionsStripManagedFields(t *testing.T) {
	options := cacheOptions("prod")
	if _, ok := options.DefaultNamespaces["prod"]; !ok || len(options.DefaultNamespaces) != 1 {
		t.Fatalf("namespaces: %v", options.DefaultNamespaces)
	}
	if options.DefaultTransform == nil {
		t.Fatal("no transform: managedFields would be cached")
	}
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:          "webapp-marker-shop",
		Labels:        map[string]string{webapp.MarkerLabel: "shop"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "webapp-controller-runtime"}},
	}}
	out, err := options.DefaultTransform(marker)
	if err != nil {
		t.Fatal(err)
	}
	cached := out.(*corev1.ConfigMap)
	if cached.ManagedFields != nil || cached.Labels[webapp.MarkerLabel] != "shop" {
		t.Fatalf("cached: %+v", cached.ObjectMeta)
	}
	if all := cacheOptions(""); all.DefaultNamespaces != nil || all.DefaultTransform == nil {
		t.Fatalf("all namespaces: %+v", all)
	}
}
