// Package event holds the events handlers and predicates are written against, as
// controller-runtime defines them: generic over the object type, with aliases for client.Object.
// In a wasmop guest the host's cache sees the changes; a kind whose handler or predicates only
// the guest can run has each change handed to the guest (the `handlers` export) as one of these.
package event

import "sigs.k8s.io/controller-runtime/pkg/client"

// CreateEvent is an object's creation (or its first sight by the cache).
type CreateEvent = TypedCreateEvent[client.Object]

// UpdateEvent is an object's change.
type UpdateEvent = TypedUpdateEvent[client.Object]

// DeleteEvent is an object's deletion.
type DeleteEvent = TypedDeleteEvent[client.Object]

// GenericEvent is an event from outside the cluster.
type GenericEvent = TypedGenericEvent[client.Object]

// TypedCreateEvent is an object's creation (or its first sight by the cache).
type TypedCreateEvent[object any] struct {
	// Object is the created object.
	Object object
	// IsInInitialList is set when the object was listed as the controller's sources started.
	IsInInitialList bool
}

// TypedUpdateEvent is an object's change.
type TypedUpdateEvent[object any] struct {
	// ObjectOld is the object before, ObjectNew after.
	ObjectOld, ObjectNew object
}

// TypedDeleteEvent is an object's deletion.
type TypedDeleteEvent[object any] struct {
	// Object is the deleted object, in its last state the cache held.
	Object object
	// DeleteStateUnknown is set when the deletion was missed and inferred.
	DeleteStateUnknown bool
}

// TypedGenericEvent is an event from outside the cluster.
type TypedGenericEvent[object any] struct {
	// Object is the object it concerns.
	Object object
}
