// Package webapp is the `webapp` operator's controller written with controller-runtime: the
// WebApp type, the reconciler and its setup. The comparator's main runs it in a manager; the
// plugin at plugins/webapp-controller-runtime/go runs this package, unchanged, in wasmop.
package webapp

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of WebApp, as deploy/crds/webapp.yaml declares it.
var GroupVersion = schema.GroupVersion{Group: "example.wasmop.dev", Version: "v1alpha1"}

// UseGroup serves WebApp from another API group than deploy/crds/webapp.yaml's (the consolidation
// benchmark runs one operator per group); call it before AddToScheme.
func UseGroup(group string) {
	GroupVersion.Group = group
	V1beta1.Group = group
}

// AddToScheme registers WebApp and WebAppList with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &WebApp{}, &WebAppList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// WebApp is a web application: an image served on a port by some replicas.
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the user asks for.
	Spec WebAppSpec `json:"spec"`
	// Status is what the operator observed.
	Status WebAppStatus `json:"status,omitzero"`
}

// WebAppSpec is the desired state of a WebApp. The CRD defaults replicas to 1; a missing port
// (left to the defaulting webhook, when one runs) means 8080.
type WebAppSpec struct {
	// Image is the container image to run.
	Image string `json:"image"`
	// Replicas is how many pods to run.
	Replicas int32 `json:"replicas"`
	// Port is the port the container listens on and the Service exposes; 8080 when unset.
	Port int32 `json:"port,omitempty"`
}

// ServedPort is the port the WebApp asks for, 8080 when it names none.
func (s WebAppSpec) ServedPort() int32 {
	if s.Port == 0 {
		return 8080
	}
	return s.Port
}

// WebAppStatus is the observed state of a WebApp.
type WebAppStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReadyReplicas counts the pods of the Deployment that are ready.
	ReadyReplicas int32 `json:"readyReplicas"`
	// Conditions are the standard conditions; Ready says whether all replicas are ready.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WebAppList is a list of WebApps.
type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the WebApps.
	Items []WebApp `json:"items"`
}

// DeepCopyInto copies the status into out.
func (in *WebAppStatus) DeepCopyInto(out *WebAppStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies the WebApp into out.
func (in *WebApp) DeepCopyInto(out *WebApp) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy is a copy of the WebApp.
func (in *WebApp) DeepCopy() *WebApp {
	if in == nil {
		return nil
	}
	out := new(WebApp)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject is a copy of the WebApp as a runtime.Object.
func (in *WebApp) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}

// DeepCopyInto copies the list into out.
func (in *WebAppList) DeepCopyInto(out *WebAppList) {
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]WebApp, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy is a copy of the list.
func (in *WebAppList) DeepCopy() *WebAppList {
	if in == nil {
		return nil
	}
	out := new(WebAppList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject is a copy of the list as a runtime.Object.
func (in *WebAppList) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}
