// Package predicate is controller-runtime's event filters for wasmop guests. The host filters
// events before they are queued, so a plugin's predicates must be ones it can say to the host
// (GenerationChangedPredicate, LabelChangedPredicate, AnnotationChangedPredicate), ones that
// look at one object (NewPredicateFuncs: run in the guest, on the watched object when it is
// mapped and on the primary object before its reconcile), And of those, and Or and Not of
// predicates on one object. Any other predicate fails the plugin's registration with a message
// naming it.
package predicate

import (
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Predicate filters events.
type Predicate interface {
	Create(event.CreateEvent) bool
	Delete(event.DeleteEvent) bool
	Update(event.UpdateEvent) bool
	Generic(event.GenericEvent) bool
}

// Funcs is a predicate of functions, each passing its events when nil. It runs in the guest
// and sees old and new objects, which the host does not hand it: as a builder's predicate it
// fails the registration.
type Funcs struct {
	CreateFunc  func(event.CreateEvent) bool
	DeleteFunc  func(event.DeleteEvent) bool
	UpdateFunc  func(event.UpdateEvent) bool
	GenericFunc func(event.GenericEvent) bool
}

// Create runs CreateFunc.
func (p Funcs) Create(e event.CreateEvent) bool { return p.CreateFunc == nil || p.CreateFunc(e) }

// Delete runs DeleteFunc.
func (p Funcs) Delete(e event.DeleteEvent) bool { return p.DeleteFunc == nil || p.DeleteFunc(e) }

// Update runs UpdateFunc.
func (p Funcs) Update(e event.UpdateEvent) bool { return p.UpdateFunc == nil || p.UpdateFunc(e) }

// Generic runs GenericFunc.
func (p Funcs) Generic(e event.GenericEvent) bool { return p.GenericFunc == nil || p.GenericFunc(e) }

// ObjectFilter is a predicate that decides on one object, whatever the event.
type ObjectFilter struct {
	// Filter passes an object's events when it returns true.
	Filter func(client.Object) bool
}

// NewPredicateFuncs is a predicate passing the events of objects for which filter is true.
func NewPredicateFuncs(filter func(client.Object) bool) ObjectFilter {
	return ObjectFilter{Filter: filter}
}

// Create runs the filter on the object.
func (p ObjectFilter) Create(e event.CreateEvent) bool { return p.Filter(e.Object) }

// Delete runs the filter on the object.
func (p ObjectFilter) Delete(e event.DeleteEvent) bool { return p.Filter(e.Object) }

// Update runs the filter on the new object.
func (p ObjectFilter) Update(e event.UpdateEvent) bool { return p.Filter(e.ObjectNew) }

// Generic runs the filter on the object.
func (p ObjectFilter) Generic(e event.GenericEvent) bool { return p.Filter(e.Object) }

// updatesOnly passes every create, delete and generic event and the updates changed passes.
type updatesOnly struct{}

func (updatesOnly) Create(event.CreateEvent) bool { return true }

func (updatesOnly) Delete(event.DeleteEvent) bool { return true }

func (updatesOnly) Generic(event.GenericEvent) bool { return true }

// GenerationChangedPredicate passes updates that change metadata.generation; the host
// evaluates it.
type GenerationChangedPredicate struct{ updatesOnly }

// Update passes a change of generation.
func (GenerationChangedPredicate) Update(e event.UpdateEvent) bool {
	return e.ObjectOld != nil && e.ObjectNew != nil && e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
}

// LabelChangedPredicate passes updates that change metadata.labels; the host evaluates it.
type LabelChangedPredicate struct{ updatesOnly }

// Update passes a change of labels.
func (LabelChangedPredicate) Update(e event.UpdateEvent) bool {
	return e.ObjectOld != nil && e.ObjectNew != nil && !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
}

// AnnotationChangedPredicate passes updates that change metadata.annotations; the host
// evaluates it.
type AnnotationChangedPredicate struct{ updatesOnly }

// Update passes a change of annotations.
func (AnnotationChangedPredicate) Update(e event.UpdateEvent) bool {
	return e.ObjectOld != nil && e.ObjectNew != nil && !maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
}

// And passes what every one of predicates passes.
func And(predicates ...Predicate) Predicate { return AllOf(predicates) }

// AllOf is the predicate And returns; its parts are the host's to split.
type AllOf []Predicate

// Create passes when every part does.
func (a AllOf) Create(e event.CreateEvent) bool {
	return every(a, func(p Predicate) bool { return p.Create(e) })
}

// Delete passes when every part does.
func (a AllOf) Delete(e event.DeleteEvent) bool {
	return every(a, func(p Predicate) bool { return p.Delete(e) })
}

// Update passes when every part does.
func (a AllOf) Update(e event.UpdateEvent) bool {
	return every(a, func(p Predicate) bool { return p.Update(e) })
}

// Generic passes when every part does.
func (a AllOf) Generic(e event.GenericEvent) bool {
	return every(a, func(p Predicate) bool { return p.Generic(e) })
}

func every(ps []Predicate, pass func(Predicate) bool) bool {
	for _, p := range ps {
		if !pass(p) {
			return false
		}
	}
	return true
}

// Or passes what any one of predicates passes.
func Or(predicates ...Predicate) Predicate { return AnyOf(predicates) }

// AnyOf is the predicate Or returns; the guest runs it when each part looks at one object.
type AnyOf []Predicate

// Create passes when any part does.
func (a AnyOf) Create(e event.CreateEvent) bool {
	return !every(a, func(p Predicate) bool { return !p.Create(e) })
}

// Delete passes when any part does.
func (a AnyOf) Delete(e event.DeleteEvent) bool {
	return !every(a, func(p Predicate) bool { return !p.Delete(e) })
}

// Update passes when any part does.
func (a AnyOf) Update(e event.UpdateEvent) bool {
	return !every(a, func(p Predicate) bool { return !p.Update(e) })
}

// Generic passes when any part does.
func (a AnyOf) Generic(e event.GenericEvent) bool {
	return !every(a, func(p Predicate) bool { return !p.Generic(e) })
}

// Not passes what predicate does not.
func Not(predicate Predicate) Predicate { return Negation{Of: predicate} }

// Negation is the predicate Not returns; the guest runs it when Of looks at one object.
type Negation struct {
	// Of is the predicate negated.
	Of Predicate
}

// Create passes when Of does not.
func (n Negation) Create(e event.CreateEvent) bool { return !n.Of.Create(e) }

// Delete passes when Of does not.
func (n Negation) Delete(e event.DeleteEvent) bool { return !n.Of.Delete(e) }

// Update passes when Of does not.
func (n Negation) Update(e event.UpdateEvent) bool { return !n.Of.Update(e) }

// Generic passes when Of does not.
func (n Negation) Generic(e event.GenericEvent) bool { return !n.Of.Generic(e) }
