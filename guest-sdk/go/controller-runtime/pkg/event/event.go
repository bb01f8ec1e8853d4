// Package event holds the events predicates are written against. In a wasmop guest only
// predicates the host evaluates, or that look at one object, filter events (see predicate).
package event

import "sigs.k8s.io/controller-runtime/pkg/client"

// CreateEvent is an object's creation (or its first sight by the cache).
type CreateEvent struct {
	// Object is the created object.
	Object client.Object
}

// UpdateEvent is an object's change.
type UpdateEvent struct {
	// ObjectOld is the object before, ObjectNew after.
	ObjectOld, ObjectNew client.Object
}

// DeleteEvent is an object's deletion.
type DeleteEvent struct {
	// Object is the deleted object.
	Object client.Object
	// DeleteStateUnknown is set when the deletion was missed and inferred.
	DeleteStateUnknown bool
}

// GenericEvent is an event from outside the cluster.
type GenericEvent struct {
	// Object is the object it concerns.
	Object client.Object
}
