package webapp

import (
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
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
	// AppliedByAnnotation names the version that last applied an owned object.
	AppliedByAnnotation = "example.wasmop.dev/applied-by"
	// Version is the version of the webapp behaviour, in the applied-by annotation.
	Version = "0.1.0"
)

// markerName is the name of the marker ConfigMap of the WebApp name.
func markerName(name string) string {
	return "webapp-marker-" + name
}

// desiredMarker is the marker ConfigMap: external state the finalizer cleans up, so it has no
// owner reference.
func desiredMarker(app *WebApp) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:      markerName(app.Name),
		Namespace: app.Namespace,
		Labels:    map[string]string{MarkerLabel: app.Name},
	}}
}

// controllerRef is the owner reference that makes app the controller of an object.
func controllerRef(app *WebApp) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(GroupVersion.String()).
		WithKind("WebApp").
		WithName(app.Name).
		WithUID(app.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

func selector(app *WebApp) map[string]string {
	return map[string]string{NameLabel: app.Name}
}

func ownedLabels(app *WebApp) map[string]string {
	return map[string]string{NameLabel: app.Name, ManagedByLabel: "wasmop"}
}

func ownedAnnotations() map[string]string {
	return map[string]string{AppliedByAnnotation: "webapp/" + Version}
}

// desiredDeployment is the Deployment the WebApp asks for, controlled by it through owner.
func desiredDeployment(app *WebApp, owner *metav1ac.OwnerReferenceApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	container := corev1ac.Container().
		WithName(Container).
		WithImage(app.Spec.Image).
		WithPorts(corev1ac.ContainerPort().
			WithName("http").
			WithContainerPort(app.Spec.ServedPort()).
			WithProtocol(corev1.ProtocolTCP))
	return appsv1ac.Deployment(app.Name, app.Namespace).
		WithLabels(ownedLabels(app)).
		WithAnnotations(ownedAnnotations()).
		WithOwnerReferences(owner).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(app.Spec.Replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector(app))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(selector(app)).
				WithSpec(corev1ac.PodSpec().WithContainers(container))))
}

// desiredService is the ClusterIP Service the WebApp asks for, controlled by it through owner.
func desiredService(app *WebApp, owner *metav1ac.OwnerReferenceApplyConfiguration) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(app.Name, app.Namespace).
		WithLabels(ownedLabels(app)).
		WithAnnotations(ownedAnnotations()).
		WithOwnerReferences(owner).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector(app)).
			WithPorts(corev1ac.ServicePort().
				WithName("http").
				WithPort(app.Spec.ServedPort()).
				WithTargetPort(intstr.FromInt32(app.Spec.ServedPort())).
				WithProtocol(corev1.ProtocolTCP)))
}

// contains reports whether actual has every key of desired with the same value.
func contains(actual, desired map[string]string) bool {
	for k, v := range desired {
		if a, ok := actual[k]; !ok || a != v {
			return false
		}
	}
	return true
}

// hasMetadata reports whether actual has every label and annotation of desired.
func hasMetadata(actual *metav1.ObjectMeta, desired *metav1ac.ObjectMetaApplyConfiguration) bool {
	if desired == nil {
		return true
	}
	return contains(actual.Labels, desired.Labels) && contains(actual.Annotations, desired.Annotations)
}

// sameController reports whether actual has the controller desired names (by uid).
func sameController(actual *metav1.ObjectMeta, desired *metav1ac.ObjectMetaApplyConfiguration) bool {
	var want *string
	for _, ref := range desired.OwnerReferences {
		if ptr.Deref(ref.Controller, false) {
			want = (*string)(ref.UID)
			break
		}
	}
	got := metav1.GetControllerOfNoCopy(actual)
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return string(got.UID) == *want
}

// containerPortsMatch reports whether actual are exactly the desired ports.
func containerPortsMatch(actual []corev1.ContainerPort, desired []corev1ac.ContainerPortApplyConfiguration) bool {
	return slices.EqualFunc(actual, desired, func(a corev1.ContainerPort, d corev1ac.ContainerPortApplyConfiguration) bool {
		return a.Name == ptr.Deref(d.Name, "") &&
			a.ContainerPort == ptr.Deref(d.ContainerPort, 0) &&
			a.Protocol == ptr.Deref(d.Protocol, "") &&
			a.HostPort == ptr.Deref(d.HostPort, 0) &&
			a.HostIP == ptr.Deref(d.HostIP, "")
	})
}

// webContainer is the web container of a pod spec, or nil.
func webContainer(pod *corev1.PodSpec) *corev1.Container {
	for i := range pod.Containers {
		if pod.Containers[i].Name == Container {
			return &pod.Containers[i]
		}
	}
	return nil
}

// deploymentMatches reports whether the existing Deployment has every field the desired one
// sets, so that a stored Deployment with the apiserver's defaults needs no apply.
func deploymentMatches(actual *appsv1.Deployment, desired *appsv1ac.DeploymentApplyConfiguration) bool {
	d := desired.Spec
	if d == nil || d.Template == nil || d.Template.Spec == nil || d.Selector == nil {
		return false
	}
	a := &actual.Spec
	var want *corev1ac.ContainerApplyConfiguration
	for i := range d.Template.Spec.Containers {
		if ptr.Deref(d.Template.Spec.Containers[i].Name, "") == Container {
			want = &d.Template.Spec.Containers[i]
			break
		}
	}
	got := webContainer(&a.Template.Spec)
	return hasMetadata(&actual.ObjectMeta, desired.ObjectMetaApplyConfiguration) &&
		sameController(&actual.ObjectMeta, desired.ObjectMetaApplyConfiguration) &&
		ptr.Equal(a.Replicas, d.Replicas) &&
		a.Selector != nil && len(a.Selector.MatchExpressions) == 0 &&
		maps.Equal(a.Selector.MatchLabels, d.Selector.MatchLabels) &&
		hasMetadata(&a.Template.ObjectMeta, d.Template.ObjectMetaApplyConfiguration) &&
		got != nil && want != nil &&
		got.Image == ptr.Deref(want.Image, "") &&
		containerPortsMatch(got.Ports, want.Ports)
}

// servicePort is what the operator sets on a Service port.
type servicePort struct {
	name       string
	port       int32
	targetPort intstr.IntOrString
	protocol   corev1.Protocol
}

// serviceMatches reports whether the existing Service has every field the desired one sets.
func serviceMatches(actual *corev1.Service, desired *corev1ac.ServiceApplyConfiguration) bool {
	d := desired.Spec
	if d == nil {
		return false
	}
	a := &actual.Spec
	got := make([]servicePort, 0, len(a.Ports))
	for _, p := range a.Ports {
		got = append(got, servicePort{p.Name, p.Port, p.TargetPort, p.Protocol})
	}
	want := make([]servicePort, 0, len(d.Ports))
	for _, p := range d.Ports {
		want = append(want, servicePort{
			ptr.Deref(p.Name, ""), ptr.Deref(p.Port, 0),
			ptr.Deref(p.TargetPort, intstr.IntOrString{}), ptr.Deref(p.Protocol, ""),
		})
	}
	return hasMetadata(&actual.ObjectMeta, desired.ObjectMetaApplyConfiguration) &&
		sameController(&actual.ObjectMeta, desired.ObjectMetaApplyConfiguration) &&
		a.Type == ptr.Deref(d.Type, "") &&
		maps.Equal(a.Selector, d.Selector) &&
		slices.Equal(got, want)
}

// desiredStatus is the status the WebApp should have given its Deployment's ready replicas; the
// Ready condition keeps its lastTransitionTime while its status holds.
func desiredStatus(app *WebApp, readyReplicas int32) WebAppStatus {
	var status WebAppStatus
	app.Status.DeepCopyInto(&status)
	status.ObservedGeneration = app.Generation
	status.ReadyReplicas = readyReplicas
	available := readyReplicas >= app.Spec.Replicas
	ready := metav1.Condition{
		Type:               "Ready",
		Status:             metav1.ConditionFalse,
		Reason:             "Progressing",
		Message:            fmt.Sprintf("%d/%d replicas ready", readyReplicas, app.Spec.Replicas),
		ObservedGeneration: app.Generation,
	}
	if available {
		ready.Status, ready.Reason = metav1.ConditionTrue, "Available"
	}
	meta.SetStatusCondition(&status.Conditions, ready)
	return status
}
