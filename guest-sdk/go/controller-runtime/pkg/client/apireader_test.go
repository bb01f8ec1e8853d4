package client_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/internal/testscheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"wasmop.dev/guest/guesttest"
)

func TestTheAPIReaderReadsTheApiserverThroughTheHost(t *testing.T) {
	h := guesttest.New()
	var asked []string
	h.APIServer = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RequestURI())
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/apps/v1/namespaces/shop/deployments/web":
			w.Write([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","resourceVersion":"7"}}`))
		case "/apis/apps/v1/namespaces/shop/deployments":
			w.Write([]byte(`{"apiVersion":"apps/v1","kind":"DeploymentList","metadata":{"continue":"next"},"items":[{"metadata":{"name":"web"}}]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"deployments.apps \"gone\" not found"}`))
		}
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	reader := client.NewAPIReader(testscheme.New(t), mapper)
	ctx := context.Background()

	var d appsv1.Deployment
	if err := reader.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil || d.ResourceVersion != "7" {
		t.Fatalf("get: %+v %v", d.ObjectMeta, err)
	}
	var list appsv1.DeploymentList
	err := reader.List(ctx, &list, client.InNamespace("shop"), client.MatchingLabels{"app": "web"}, client.Limit(1))
	if err != nil || len(list.Items) != 1 || list.Continue != "next" {
		t.Fatalf("list: %+v %v", list, err)
	}
	err = reader.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "gone"}, &d)
	if !apierrors.IsNotFound(err) {
		t.Fatalf("a missing object is %v, want NotFound", err)
	}
	want := []string{
		"/apis/apps/v1/namespaces/shop/deployments/web",
		"/apis/apps/v1/namespaces/shop/deployments?labelSelector=app%3Dweb&limit=1",
		"/apis/apps/v1/namespaces/shop/deployments/gone",
	}
	if len(asked) != len(want) {
		t.Fatalf("asked %q", asked)
	}
	for i := range want {
		if asked[i] != want[i] {
			t.Fatalf("request %d is %q, want %q", i, asked[i], want[i])
		}
	}
}

func TestADeleteWithAGracePeriodIsTheApiserversOwnThroughTheHost(t *testing.T) {
	h := guesttest.New()
	type request struct{ method, uri, body string }
	var asked []request
	h.APIServer = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		asked = append(asked, request{r.Method, r.URL.RequestURI(), string(body)})
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/namespaces/shop/pods/gone" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	c := client.NewHostClient(testscheme.New(t), mapper)
	ctx := context.Background()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "gone"}}
	if err := c.Delete(ctx, gone, client.DryRunAll); !apierrors.IsNotFound(err) {
		t.Fatalf("the apiserver's answer is %v, want NotFound", err)
	}
	want := []request{
		{"DELETE", "/api/v1/namespaces/shop/pods/web", `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0}`},
		{"DELETE", "/api/v1/namespaces/shop/pods/gone", `{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}`},
	}
	if len(asked) != len(want) {
		t.Fatalf("asked %q", asked)
	}
	for i := range want {
		if asked[i] != want[i] {
			t.Fatalf("request %d is %q, want %q", i, asked[i], want[i])
		}
	}
	if len(h.Writes) != 0 {
		t.Fatalf("the host's own delete was used too: %v", h.Writes)
	}
}
