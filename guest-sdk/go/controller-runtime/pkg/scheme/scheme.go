// Package scheme builds the scheme of an API group's Go types, as kubebuilder projects'
// groupversion_info.go files use it: SchemeBuilder = &scheme.Builder{GroupVersion: …}.
package scheme

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Builder registers Go types as kinds of one group and version.
type Builder struct {
	// GroupVersion is the group and version the types are registered under.
	GroupVersion schema.GroupVersion
	runtime.SchemeBuilder
}

// Register adds the types of objects (each a kind named after its Go type) to the group.
func (b *Builder) Register(objects ...runtime.Object) *Builder {
	b.SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(b.GroupVersion, objects...)
		metav1.AddToGroupVersion(s, b.GroupVersion)
		return nil
	})
	return b
}

// RegisterAll adds the types with a function of the caller's.
func (b *Builder) RegisterAll(add func(*runtime.Scheme) error) *Builder {
	b.SchemeBuilder.Register(add)
	return b
}

// AddToScheme adds every registered type to s.
func (b *Builder) AddToScheme(s *runtime.Scheme) error {
	return b.SchemeBuilder.AddToScheme(s)
}

// Build is a new scheme holding the registered types.
func (b *Builder) Build() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	return s, b.AddToScheme(s)
}
