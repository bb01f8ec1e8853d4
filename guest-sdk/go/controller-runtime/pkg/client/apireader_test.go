package client_test

import (
	"context"
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
