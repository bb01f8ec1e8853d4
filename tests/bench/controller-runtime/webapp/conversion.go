package webapp

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// V1beta1 is WebApp's second version, which calls replicas instances.
var V1beta1 = schema.GroupVersion{Group: GroupVersion.Group, Version: "v1beta1"}

// AddV1beta1ToScheme registers WebApp v1beta1, which converts through v1alpha1, with a scheme.
func AddV1beta1ToScheme(s *runtime.Scheme) error {
	s.AddKnownTypeWithName(V1beta1.WithKind("WebApp"), &WebAppV1beta1{})
	metav1.AddToGroupVersion(s, V1beta1)
	return nil
}

// Hub makes v1alpha1 the version every other converts through.
func (*WebApp) Hub() {}

// WebAppV1beta1 is a WebApp in v1beta1.
type WebAppV1beta1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the user asks for.
	Spec WebAppV1beta1Spec `json:"spec"`
	// Status is what the operator observed.
	Status WebAppStatus `json:"status,omitzero"`
}

// WebAppV1beta1Spec is WebAppSpec with replicas called instances.
type WebAppV1beta1Spec struct {
	// Image is the container image to run.
	Image string `json:"image"`
	// Instances is how many pods to run.
	Instances int32 `json:"instances"`
	// Port is the port the container listens on and the Service exposes; 8080 when unset.
	Port int32 `json:"port,omitempty"`
}

var _ conversion.Convertible = &WebAppV1beta1{}

// ConvertTo fills the v1alpha1 hub from this WebApp.
func (in *WebAppV1beta1) ConvertTo(dst conversion.Hub) error {
	out := dst.(*WebApp)
	out.ObjectMeta = *in.ObjectMeta.DeepCopy()
	out.Spec = WebAppSpec{Image: in.Spec.Image, Replicas: in.Spec.Instances, Port: in.Spec.Port}
	in.Status.DeepCopyInto(&out.Status)
	return nil
}

// ConvertFrom fills this WebApp from the v1alpha1 hub.
func (in *WebAppV1beta1) ConvertFrom(src conversion.Hub) error {
	from := src.(*WebApp)
	in.ObjectMeta = *from.ObjectMeta.DeepCopy()
	in.Spec = WebAppV1beta1Spec{Image: from.Spec.Image, Instances: from.Spec.Replicas, Port: from.Spec.Port}
	from.Status.DeepCopyInto(&in.Status)
	return nil
}

// DeepCopyObject is a copy of the WebApp as a runtime.Object.
func (in *WebAppV1beta1) DeepCopyObject() runtime.Object {
	out := new(WebAppV1beta1)
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Status.DeepCopyInto(&out.Status)
	return out
}
