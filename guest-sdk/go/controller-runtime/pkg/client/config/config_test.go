package config_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"wasmop.dev/guest/guesttest"
)

// apiserver answers a GET of configmap a/web, the core group's discovery and 403 for the rest.
func apiserver(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var answer any
		switch r.Method + " " + r.URL.Path {
		case "GET /api/v1/namespaces/a/configmaps/web":
			answer = corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "a"}, Data: map[string]string{"k": "v"}}
		case "GET /api":
			answer = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
		case "GET /apis":
			answer = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "apps/v1", Version: "v1"}}}}}
		default:
			w.WriteHeader(http.StatusForbidden)
			answer = metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Reason: metav1.StatusReasonForbidden, Code: 403, Message: "plugin p may not " + r.Method + " " + r.URL.Path}
		}
		if err := json.NewEncoder(w).Encode(answer); err != nil {
			t.Error(err)
		}
	})
}

func TestATypedClientsetAndDiscoveryWorkThroughTheHost(t *testing.T) {
	h := guesttest.New()
	h.APIServer = apiserver(t)
	cfg, err := config.GetConfig()
	if err != nil {
		t.Fatal(err)
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := core.ConfigMaps("a").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "v" {
		t.Fatalf("configmap %+v, %v", cm, err)
	}
	_, err = core.Secrets("a").Get(context.Background(), "token", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("a refused read is %v, want Forbidden", err)
	}
	groups, err := discovery.NewDiscoveryClientForConfigOrDie(config.GetConfigOrDie()).ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	if len(names) != 2 || names[0] != "" || names[1] != "apps" {
		t.Fatalf("groups %v", names)
	}
}
