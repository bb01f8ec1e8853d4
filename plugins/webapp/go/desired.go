package main

import (
	"encoding/json"
	"fmt"

	"wasmop.dev/guest"
)

// Labels, annotations and names of what a WebApp owns.
const (
	// NameLabel names the WebApp; the Deployment selects its pods by it.
	NameLabel = "app.kubernetes.io/name"
	// ManagedByLabel says who manages the owned objects.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// MarkerLabel on the marker ConfigMap names its WebApp.
	MarkerLabel = "example.wasmop.dev/webapp"
	// Container is the name of the web container.
	Container = "web"
	// AppliedByAnnotation names the plugin version that last applied an owned object.
	AppliedByAnnotation = "example.wasmop.dev/applied-by"
)

// markerName is the name of the marker ConfigMap of the WebApp name.
func markerName(name string) string {
	return "webapp-marker-" + name
}

// desiredMarker is the marker ConfigMap: external state the finalizer cleans up, so it has no
// owner reference.
func desiredMarker(app guest.Object) guest.Object {
	marker := guest.New(guest.ConfigMap, app.Namespace(), markerName(app.Name()))
	marker.Set(map[string]any{MarkerLabel: app.Name()}, "metadata", "labels")
	return marker
}

func selector(app guest.Object) map[string]any {
	return map[string]any{NameLabel: app.Name()}
}

// owned is an object of kind named like app, labelled, annotated and controlled by it.
func owned(kind guest.Kind, app guest.Object, owner map[string]any) guest.Object {
	obj := guest.New(kind, app.Namespace(), app.Name())
	labels := selector(app)
	labels[ManagedByLabel] = "wasmop"
	obj.Set(labels, "metadata", "labels")
	obj.Set(map[string]any{AppliedByAnnotation: "webapp/" + Version}, "metadata", "annotations")
	obj.Set([]any{owner}, "metadata", "ownerReferences")
	return obj
}

// desiredDeployment is the Deployment the WebApp asks for, controlled by it through owner.
func desiredDeployment(app guest.Object, owner map[string]any) guest.Object {
	spec := specOf(app)
	deployment := owned(guest.Deployment, app, owner)
	deployment["spec"] = map[string]any{
		"replicas": spec.Replicas,
		"selector": map[string]any{"matchLabels": selector(app)},
		"template": map[string]any{
			"metadata": map[string]any{"labels": selector(app)},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name":  Container,
				"image": spec.Image,
				"ports": []any{map[string]any{"name": "http", "containerPort": spec.Port, "protocol": "TCP"}},
			}}},
		},
	}
	return deployment
}

// desiredService is the ClusterIP Service the WebApp asks for, controlled by it through owner.
func desiredService(app guest.Object, owner map[string]any) guest.Object {
	port := specOf(app).Port
	service := owned(guest.Service, app, owner)
	service["spec"] = map[string]any{
		"type":     "ClusterIP",
		"selector": selector(app),
		"ports":    []any{map[string]any{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}},
	}
	return service
}

// contains reports whether actual has every key of desired with the same value.
func contains(actual, desired map[string]any) bool {
	for k, v := range desired {
		if !guest.Equal(actual[k], v) {
			return false
		}
	}
	return true
}

// hasMetadata reports whether the metadata at path of actual has every label and annotation
// that of desired sets.
func hasMetadata(actual, desired guest.Object, path ...string) bool {
	labels := append(append([]string(nil), path...), "labels")
	annotations := append(append([]string(nil), path...), "annotations")
	return contains(actual.Map(labels...), desired.Map(labels...)) &&
		contains(actual.Map(annotations...), desired.Map(annotations...))
}

func webContainer(deployment guest.Object) map[string]any {
	for _, c := range deployment.Slice("spec", "template", "spec", "containers") {
		if m, _ := c.(map[string]any); m["name"] == Container {
			return m
		}
	}
	return nil
}

// deploymentMatches reports whether the existing Deployment has every field the desired one sets.
func deploymentMatches(actual, desired guest.Object) bool {
	a, d := webContainer(actual), webContainer(desired)
	return hasMetadata(actual, desired, "metadata") &&
		actual.ControllerUID() == desired.ControllerUID() &&
		guest.Equal(actual.Get("spec", "replicas"), desired.Get("spec", "replicas")) &&
		guest.Equal(actual.Get("spec", "selector"), desired.Get("spec", "selector")) &&
		hasMetadata(actual, desired, "spec", "template", "metadata") &&
		a != nil && d != nil && guest.Equal(a["image"], d["image"]) && guest.Equal(a["ports"], d["ports"])
}

// servicePort is what the plugin sets on a Service port.
type servicePort struct {
	Name       any `json:"name"`
	Port       any `json:"port"`
	TargetPort any `json:"targetPort"`
	Protocol   any `json:"protocol"`
}

func ports(service guest.Object) []servicePort {
	var out []servicePort
	for _, p := range service.Slice("spec", "ports") {
		m, _ := p.(map[string]any)
		out = append(out, servicePort{m["name"], m["port"], m["targetPort"], m["protocol"]})
	}
	return out
}

// serviceMatches reports whether the existing Service has every field the desired one sets.
func serviceMatches(actual, desired guest.Object) bool {
	return actual.Map("spec") != nil &&
		hasMetadata(actual, desired, "metadata") &&
		actual.ControllerUID() == desired.ControllerUID() &&
		guest.Equal(actual.Get("spec", "type"), desired.Get("spec", "type")) &&
		guest.Equal(actual.Get("spec", "selector"), desired.Get("spec", "selector")) &&
		guest.Equal(ports(actual), ports(desired))
}

// desiredStatus is the status the WebApp should have given its Deployment's ready replicas;
// the Ready condition keeps its lastTransitionTime while its status holds.
func desiredStatus(app guest.Object, readyReplicas int64) map[string]any {
	replicas := specOf(app).Replicas
	status := guest.Object(app.Map("status")).DeepCopy()
	var conditions []guest.Condition
	if data, err := json.Marshal(status["conditions"]); err == nil {
		_ = json.Unmarshal(data, &conditions)
	}
	available := readyReplicas >= replicas
	reason := "Progressing"
	if available {
		reason = "Available"
	}
	ready := guest.NewCondition("Ready", available, reason, fmt.Sprintf("%d/%d replicas ready", readyReplicas, replicas))
	ready.ObservedGeneration = app.Generation()
	status["observedGeneration"] = app.Generation()
	status["readyReplicas"] = readyReplicas
	status["conditions"] = guest.SetCondition(conditions, ready)
	return status
}
