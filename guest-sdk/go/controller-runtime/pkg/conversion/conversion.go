// Package conversion is controller-runtime's hub-and-spoke conversion: the versions of a custom
// resource's Go types convert through the one version that is the Hub.
package conversion

import "k8s.io/apimachinery/pkg/runtime"

// Convertible is a version of a kind that converts to and from the hub.
type Convertible interface {
	runtime.Object
	// ConvertTo fills dst, the hub, from this version.
	ConvertTo(dst Hub) error
	// ConvertFrom fills this version from src, the hub.
	ConvertFrom(src Hub) error
}

// Hub marks the version of a kind every other version converts through.
type Hub interface {
	runtime.Object
	// Hub marks the type; it does nothing.
	Hub()
}
