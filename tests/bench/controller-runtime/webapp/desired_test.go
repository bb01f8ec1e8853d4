package webapp

import (
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func testApp() *WebApp {
	return &WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "prod", UID: "uid-1", Generation: 3},
		Spec:       WebAppSpec{Image: "nginx:1.27", Replicas: 2, Port: 8080},
	}
}

// stored is what the apiserver would return for the apply configuration ac: its fields plus
// defaults and an extra label.
func stored[T any](t *testing.T, ac any) *T {
	t.Helper()
	data, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func storedDeployment(t *testing.T) *appsv1.Deployment {
	app := testApp()
	d := stored[appsv1.Deployment](t, desiredDeployment(app, controllerRef(app)))
	d.UID = "uid-d"
	d.Labels["extra"] = "x"
	d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	d.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	return d
}

func TestStoredDeploymentWithDefaultsMatches(t *testing.T) {
	app := testApp()
	if !deploymentMatches(storedDeployment(t), desiredDeployment(app, controllerRef(app))) {
		t.Fatal("a stored Deployment with defaults should match")
	}
}

func TestDeploymentDriftIsDetected(t *testing.T) {
	app := testApp()
	desired := desiredDeployment(app, controllerRef(app))
	drifts := map[string]func(*appsv1.Deployment){
		"replicas":  func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) },
		"image":     func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:old" },
		"port":      func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort = 80 },
		"owner":     func(d *appsv1.Deployment) { d.OwnerReferences = nil },
		"label":     func(d *appsv1.Deployment) { delete(d.Labels, ManagedByLabel) },
		"container": func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "other" },
	}
	for name, drift := range drifts {
		actual := storedDeployment(t)
		drift(actual)
		if deploymentMatches(actual, desired) {
			t.Errorf("%s drift was not detected", name)
		}
	}
}

func TestServicePortChangesAreDetected(t *testing.T) {
	app := testApp()
	desired := desiredService(app, controllerRef(app))
	actual := stored[corev1.Service](t, desired)
	actual.Spec.ClusterIP = "10.0.0.7"
	if !serviceMatches(actual, desired) {
		t.Fatal("a stored Service with a cluster IP should match")
	}
	actual.Spec.Ports[0].Port = 80
	if serviceMatches(actual, desired) {
		t.Fatal("a port change was not detected")
	}
}

func TestMarkerHasNoOwner(t *testing.T) {
	marker := desiredMarker(testApp())
	if marker.Name != "webapp-marker-shop" || marker.Labels[MarkerLabel] != "shop" || marker.OwnerReferences != nil {
		t.Fatalf("unexpected marker %+v", marker.ObjectMeta)
	}
}

func TestStatusIsReadyWhenAllReplicasAre(t *testing.T) {
	app := testApp()
	progressing := desiredStatus(app, 1)
	if progressing.ObservedGeneration != 3 || progressing.ReadyReplicas != 1 {
		t.Fatalf("unexpected status %+v", progressing)
	}
	if c := progressing.Conditions[0]; c.Status != metav1.ConditionFalse || c.Reason != "Progressing" || c.Message != "1/2 replicas ready" {
		t.Fatalf("unexpected condition %+v", c)
	}
	if c := desiredStatus(app, 2).Conditions[0]; c.Status != metav1.ConditionTrue || c.Reason != "Available" {
		t.Fatalf("unexpected condition %+v", c)
	}
}

func TestConvergedStatusIsUnchanged(t *testing.T) {
	app := testApp()
	app.Status = desiredStatus(app, 1)
	since := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	app.Status.Conditions[0].LastTransitionTime = since
	if !equality.Semantic.DeepEqual(desiredStatus(app, 1), app.Status) {
		t.Fatal("a converged status changed")
	}
	if got := desiredStatus(app, 0).Conditions[0].LastTransitionTime; !got.Equal(&since) {
		t.Fatal("the transition time moved while the condition's status held")
	}
	if got := desiredStatus(app, 2).Conditions[0].LastTransitionTime; got.Equal(&since) {
		t.Fatal("the transition time stayed although the condition's status changed")
	}
}
