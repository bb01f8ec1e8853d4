// Package recorder is controller-runtime's event recorder types for wasmop guests.
package recorder

import (
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
)

// EventRecorder records events.k8s.io Events, with or without annotations.
type EventRecorder interface {
	events.EventRecorder
	events.AnnotatedEventRecorder
}

// Provider hands out event recorders.
type Provider interface {
	// GetEventRecorderFor is a recorder of the core/v1 Events API.
	GetEventRecorderFor(name string) record.EventRecorder
	// GetEventRecorder is a recorder of the events.k8s.io API.
	GetEventRecorder(name string) EventRecorder
}
