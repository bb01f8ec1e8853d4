package client_test

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/internal/testscheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"wasmop.dev/guest"
	"wasmop.dev/guest/guesttest"
)

var ctx = context.Background()

func newClient(t *testing.T) (client.HostClient, *guesttest.Host) {
	t.Helper()
	return client.NewHostClient(testscheme.New(t), meta.NewDefaultRESTMapper(nil)), guesttest.New()
}

func deployment(extra map[string]any) guest.Object {
	obj := guest.New(guest.Deployment, "shop", "web")
	obj.Set(int64(2), "spec", "replicas")
	obj.Set(map[string]any{"app": "web", "tier": "front"}, "metadata", "labels")
	for k, v := range extra {
		obj.Set(v, k)
	}
	return obj
}

func TestGetDecodesATypedObjectAndMissingIsNotFound(t *testing.T) {
	c, h := newClient(t)
	h.Seed(deployment(nil))
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 || d.Labels["tier"] != "front" || d.ResourceVersion == "" {
		t.Fatalf("decoded %+v", d)
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "gone"}, &d)
	if !apierrors.IsNotFound(err) || client.IgnoreNotFound(err) != nil {
		t.Fatalf("missing object: %v", err)
	}
}

func TestUpdateKeepsFieldsTheTypeDoesNotKnow(t *testing.T) {
	c, h := newClient(t)
	obj := deployment(map[string]any{"futureTopLevel": map[string]any{"on": true}})
	obj.Set("v2", "spec", "futureField")
	h.Seed(obj)
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	replicas := int32(5)
	d.Spec.Replicas = &replicas
	delete(d.Labels, "tier")
	if err := c.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	stored := h.Object(guest.Deployment, "shop", "web")
	if stored.Int("spec", "replicas") != 5 || stored.String("spec", "futureField") != "v2" {
		t.Fatalf("stored spec %v", stored.Map("spec"))
	}
	if on, _ := stored.Get("futureTopLevel", "on").(bool); !on {
		t.Fatalf("unknown top-level field lost: %v", stored)
	}
	if _, kept := stored.Labels()["tier"]; kept {
		t.Fatal("a label the reconciler removed came back")
	}
	if *d.Spec.Replicas != 5 || d.ResourceVersion != stored.ResourceVersion() {
		t.Fatalf("obj not refreshed from the response: %+v", d.Spec)
	}
}

func TestAStaleUpdateIsAConflict(t *testing.T) {
	c, h := newClient(t)
	h.Seed(deployment(nil))
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	stale := d.DeepCopy()
	if err := c.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v", err)
	}
}

func TestListFiltersByNamespaceAndLabelsIntoATypedList(t *testing.T) {
	c, h := newClient(t)
	for _, cm := range []struct{ ns, name, app string }{{"a", "one", "web"}, {"a", "two", "db"}, {"b", "three", "web"}} {
		obj := guest.New(guest.ConfigMap, cm.ns, cm.name)
		obj.Set(map[string]any{"app": cm.app}, "metadata", "labels")
		h.Seed(obj)
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace("a"), client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "one" {
		t.Fatalf("listed %v", list.Items)
	}
	if err := c.List(ctx, &list, client.MatchingLabels{"app": "web"}); err != nil || len(list.Items) != 2 {
		t.Fatalf("listed %d in all namespaces (%v)", len(list.Items), err)
	}
	if err := c.List(ctx, &list, client.MatchingLabels{"app": "web"}, client.Limit(1)); err != nil || len(list.Items) != 1 {
		t.Fatalf("listed %d with a limit of 1 (%v)", len(list.Items), err)
	}
	if err := c.List(ctx, &list, client.Continue("x")); err == nil {
		t.Fatal("a continue token was accepted")
	}
}

func TestMergeFromSendsOnlyTheDifference(t *testing.T) {
	c, h := newClient(t)
	h.Seed(deployment(nil))
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	before := d.DeepCopy()
	d.Labels["tier"] = "back"
	if err := c.Patch(ctx, &d, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	last := h.Writes[len(h.Writes)-1]
	want := map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "back"}}}
	if last.Verb != "merge-patch" || !guest.Equal(last.Body, want) {
		t.Fatalf("sent %s %v", last.Verb, last.Body)
	}
	if h.Object(guest.Deployment, "shop", "web").Labels()["tier"] != "back" {
		t.Fatal("patch not applied")
	}
}

func TestStatusUpdateWritesTheStatusSubresource(t *testing.T) {
	c, h := newClient(t)
	h.Seed(deployment(nil))
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	d.Status.ReadyReplicas = 2
	if err := c.Status().Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if h.Writes[len(h.Writes)-1].Verb != "update-status" {
		t.Fatalf("sent %v", h.Writes)
	}
	if h.Object(guest.Deployment, "shop", "web").Int("status", "readyReplicas") != 2 {
		t.Fatal("status not stored")
	}
	if err := c.SubResource("scale").Update(ctx, &d); err == nil {
		t.Fatal("a scale update was accepted")
	}
}

func TestDeleteSendsPropagationAndPreconditions(t *testing.T) {
	c, h := newClient(t)
	h.Seed(deployment(nil))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	uid := h.Object(guest.Deployment, "shop", "web").UID()
	err := c.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground),
		client.Preconditions(metav1.Preconditions{UID: ptr(uidOf(uid))}))
	if err != nil {
		t.Fatal(err)
	}
	last := h.Writes[len(h.Writes)-1]
	if last.Verb != "delete" || !guest.Equal(last.Body, map[string]any{"propagationPolicy": "Foreground", "uid": uid}) {
		t.Fatalf("sent %s %v", last.Verb, last.Body)
	}
	if err := c.Delete(ctx, d); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestUnstructuredObjectsWorkToo(t *testing.T) {
	c, h := newClient(t)
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.wasmop.dev/v1")
	u.SetKind("WebApp")
	u.SetNamespace("shop")
	u.SetName("web")
	_ = unstructured.SetNestedField(u.Object, "nginx", "spec", "image")
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	if image, _, _ := unstructured.NestedString(got.Object, "spec", "image"); image != "nginx" || got.GetResourceVersion() == "" {
		t.Fatalf("read back %v", got.Object)
	}
	if h.Object(guest.KindOf("example.wasmop.dev/v1", "WebApp"), "shop", "web") == nil {
		t.Fatal("not stored")
	}
}

func TestUnsupportedOptionsFailAndSendNothing(t *testing.T) {
	c, h := newClient(t)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	for name, err := range map[string]error{
		"dry run":   c.Create(ctx, d, client.DryRunAll),
		"strategic": c.Patch(ctx, d, client.RawPatch("application/strategic-merge-patch+json", []byte("{}"))),
	} {
		if err == nil || errors.Is(err, guest.ErrNotFound) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(h.Writes) != 0 {
		t.Fatalf("sent %v", h.Writes)
	}
}

func ptr[T any](v T) *T { return &v }

func uidOf(s string) types.UID { return types.UID(s) }

func TestAnIndexedFieldIsMatchedByTheExtractorInTheGuest(t *testing.T) {
	c, h := newClient(t)
	for _, name := range []string{"a", "b", "c"} {
		obj := guest.New(guest.ConfigMap, "shop", name)
		obj.Set(map[string]any{"owner": map[string]string{"a": "x", "b": "y", "c": "x"}[name]}, "data")
		h.Seed(obj)
	}
	byOwner := func(o client.Object) []string { return []string{o.(*corev1.ConfigMap).Data["owner"]} }
	if err := c.IndexField(ctx, &corev1.ConfigMap{}, ".data.owner", byOwner); err != nil {
		t.Fatal(err)
	}
	if err := c.IndexField(ctx, &corev1.ConfigMap{}, ".data.owner", byOwner); err == nil {
		t.Fatal("a second index of the same name was accepted")
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace("shop"), client.MatchingFields{".data.owner": "x"}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[0].Name == "b" || list.Items[1].Name == "b" {
		t.Fatalf("listed %v", list.Items)
	}
	if err := c.List(ctx, &list, client.MatchingFields{".data.owner": "x"}, client.Limit(1)); err != nil || len(list.Items) != 1 {
		t.Fatalf("listed %d with a limit (%v)", len(list.Items), err)
	}
}

func TestApplyOfAnApplyConfigurationSendsItForcedAndReadsTheResultBack(t *testing.T) {
	c, h := newClient(t)
	cm := corev1ac.ConfigMap("web", "shop").WithData(map[string]string{"v": "1"})
	if err := c.Apply(ctx, cm, client.ForceOwnership, client.FieldOwner("ignored")); err != nil {
		t.Fatal(err)
	}
	last := h.Writes[len(h.Writes)-1]
	if last.Verb != "apply" || !last.Force || last.Kind != guest.ConfigMap {
		t.Fatalf("sent %+v", last)
	}
	if cm.ResourceVersion == nil || *cm.ResourceVersion == "" || cm.Data["v"] != "1" {
		t.Fatalf("read back %+v", cm)
	}
	if err := c.Apply(ctx, corev1ac.ConfigMap("", "shop")); err == nil {
		t.Fatal("an apply configuration without a name was sent")
	}
}

func TestAnItemUpdatedFromAListKeepsItsUnknownFields(t *testing.T) {
	c, h := newClient(t)
	obj := guest.New(guest.ConfigMap, "shop", "web")
	obj.Set("later", "futureField")
	h.Seed(obj)
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace("shop")); err != nil || len(list.Items) != 1 {
		t.Fatalf("listed %d (%v)", len(list.Items), err)
	}
	item := &list.Items[0]
	item.Data = map[string]string{"v": "1"}
	if err := c.Update(ctx, item); err != nil {
		t.Fatal(err)
	}
	stored := h.Object(guest.ConfigMap, "shop", "web")
	if stored.String("futureField") != "later" || stored.String("data", "v") != "1" {
		t.Fatalf("stored %v", stored)
	}
}

func TestOptionStructsAreOptionsToo(t *testing.T) {
	c, h := newClient(t)
	for _, cm := range []struct{ ns, name, app string }{{"a", "one", "web"}, {"a", "two", "db"}} {
		obj := guest.New(guest.ConfigMap, cm.ns, cm.name)
		obj.Set(map[string]any{"app": cm.app}, "metadata", "labels")
		h.Seed(obj)
	}
	var list corev1.ConfigMapList
	selector := labels.SelectorFromSet(labels.Set{"app": "db"})
	if err := c.List(ctx, &list, &client.ListOptions{Namespace: "a", LabelSelector: selector}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "two" {
		t.Fatalf("listed %v", list.Items)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := c.Delete(ctx, &list.Items[0], &client.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	if last := h.Writes[len(h.Writes)-1]; !guest.Equal(last.Body, map[string]any{"propagationPolicy": "Orphan"}) {
		t.Fatalf("sent %v", last.Body)
	}
}

func TestDeleteAllOfDeletesWhatTheOptionsSelectOneByOne(t *testing.T) {
	c, h := newClient(t)
	h.Seed(deployment(nil))
	other := guest.New(guest.Deployment, "shop", "api")
	other.Set(map[string]any{"app": "api"}, "metadata", "labels")
	h.Seed(other)
	elsewhere := guest.New(guest.Deployment, "lab", "web")
	elsewhere.Set(map[string]any{"app": "web"}, "metadata", "labels")
	h.Seed(elsewhere)
	err := c.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace("shop"),
		client.MatchingLabels{"app": "web"}, client.PropagationPolicy(metav1.DeletePropagationForeground))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Writes) != 1 {
		t.Fatalf("sent %v", h.Writes)
	}
	sent := h.Writes[0]
	if sent.Verb != "delete" || sent.Key != (guest.ObjectKey{Namespace: "shop", Name: "web"}) ||
		!guest.Equal(sent.Body, map[string]any{"propagationPolicy": "Foreground"}) {
		t.Fatalf("sent %+v", sent)
	}
	if err := c.DeleteAllOf(ctx, &appsv1.Deployment{}, client.PropagationPolicy("Sometimes")); err == nil || len(h.Writes) != 1 {
		t.Fatalf("a propagation policy the apiserver has not: %v, sent %v", err, h.Writes)
	}
	opts := (&client.ListOptions{Namespace: "shop", LabelSelector: labels.SelectorFromSet(labels.Set{"app": "web"})}).AsListOptions()
	if opts.LabelSelector != "app=web" {
		t.Fatalf("as list options %+v", opts)
	}
}
