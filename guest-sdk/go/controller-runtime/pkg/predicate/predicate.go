// Package predicate is controller-runtime's event filters for wasmop guests, generic over the
// object type as upstream, with aliases for client.Object. The host evaluates what it can say
// itself (GenerationChangedPredicate, LabelChangedPredicate, AnnotationChangedPredicate, and
// And of them) before an event is queued; a kind with any other predicate has its changes handed
// to the guest, which runs the predicates on the event with the old and the new object.
package predicate

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Predicate filters events of client.Object.
type Predicate = TypedPredicate[client.Object]

// TypedPredicate filters events: an event passes when its method returns true.
type TypedPredicate[object any] interface {
	// Create decides on a creation.
	Create(event.TypedCreateEvent[object]) bool
	// Delete decides on a deletion.
	Delete(event.TypedDeleteEvent[object]) bool
	// Update decides on a change.
	Update(event.TypedUpdateEvent[object]) bool
	// Generic decides on an event from outside the cluster.
	Generic(event.TypedGenericEvent[object]) bool
}

// Funcs is a predicate of functions on client.Object.
type Funcs = TypedFuncs[client.Object]

// TypedFuncs is a predicate of functions, each passing its events when nil.
type TypedFuncs[object any] struct {
	// CreateFunc decides on creations.
	CreateFunc func(event.TypedCreateEvent[object]) bool
	// DeleteFunc decides on deletions.
	DeleteFunc func(event.TypedDeleteEvent[object]) bool
	// UpdateFunc decides on changes.
	UpdateFunc func(event.TypedUpdateEvent[object]) bool
	// GenericFunc decides on generic events.
	GenericFunc func(event.TypedGenericEvent[object]) bool
}

// Create runs CreateFunc.
func (p TypedFuncs[object]) Create(e event.TypedCreateEvent[object]) bool {
	return p.CreateFunc == nil || p.CreateFunc(e)
}

// Delete runs DeleteFunc.
func (p TypedFuncs[object]) Delete(e event.TypedDeleteEvent[object]) bool {
	return p.DeleteFunc == nil || p.DeleteFunc(e)
}

// Update runs UpdateFunc.
func (p TypedFuncs[object]) Update(e event.TypedUpdateEvent[object]) bool {
	return p.UpdateFunc == nil || p.UpdateFunc(e)
}

// Generic runs GenericFunc.
func (p TypedFuncs[object]) Generic(e event.TypedGenericEvent[object]) bool {
	return p.GenericFunc == nil || p.GenericFunc(e)
}

// NewPredicateFuncs is a predicate passing the events of objects for which filter is true (the
// new object of an update).
func NewPredicateFuncs(filter func(object client.Object) bool) Funcs {
	return NewTypedPredicateFuncs(filter)
}

// NewTypedPredicateFuncs is a predicate passing the events of objects for which filter is true
// (the new object of an update).
func NewTypedPredicateFuncs[object any](filter func(object object) bool) TypedFuncs[object] {
	return TypedFuncs[object]{
		CreateFunc:  func(e event.TypedCreateEvent[object]) bool { return filter(e.Object) },
		DeleteFunc:  func(e event.TypedDeleteEvent[object]) bool { return filter(e.Object) },
		UpdateFunc:  func(e event.TypedUpdateEvent[object]) bool { return filter(e.ObjectNew) },
		GenericFunc: func(e event.TypedGenericEvent[object]) bool { return filter(e.Object) },
	}
}

// changed passes every create, delete and generic event, and the updates whose objects differ
// by differs.
func changed[object metav1.Object](e event.TypedUpdateEvent[object], differs func(old, new metav1.Object) bool) bool {
	if isNil(e.ObjectOld) || isNil(e.ObjectNew) {
		return false
	}
	return differs(e.ObjectOld, e.ObjectNew)
}

func isNil[object any](o object) bool {
	var zero object
	return any(o) == any(zero)
}

// GenerationChangedPredicate passes updates that change metadata.generation; the host evaluates it.
type GenerationChangedPredicate = TypedGenerationChangedPredicate[client.Object]

// TypedGenerationChangedPredicate passes updates that change metadata.generation.
type TypedGenerationChangedPredicate[object metav1.Object] struct {
	TypedFuncs[object]
}

// Update passes a change of generation.
func (TypedGenerationChangedPredicate[object]) Update(e event.TypedUpdateEvent[object]) bool {
	return changed(e, func(old, new metav1.Object) bool { return old.GetGeneration() != new.GetGeneration() })
}

// LabelChangedPredicate passes updates that change metadata.labels; the host evaluates it.
type LabelChangedPredicate = TypedLabelChangedPredicate[client.Object]

// TypedLabelChangedPredicate passes updates that change metadata.labels.
type TypedLabelChangedPredicate[object metav1.Object] struct {
	TypedFuncs[object]
}

// Update passes a change of labels.
func (TypedLabelChangedPredicate[object]) Update(e event.TypedUpdateEvent[object]) bool {
	return changed(e, func(old, new metav1.Object) bool { return !maps.Equal(old.GetLabels(), new.GetLabels()) })
}

// AnnotationChangedPredicate passes updates that change metadata.annotations; the host
// evaluates it.
type AnnotationChangedPredicate = TypedAnnotationChangedPredicate[client.Object]

// TypedAnnotationChangedPredicate passes updates that change metadata.annotations.
type TypedAnnotationChangedPredicate[object metav1.Object] struct {
	TypedFuncs[object]
}

// Update passes a change of annotations.
func (TypedAnnotationChangedPredicate[object]) Update(e event.TypedUpdateEvent[object]) bool {
	return changed(e, func(old, new metav1.Object) bool { return !maps.Equal(old.GetAnnotations(), new.GetAnnotations()) })
}

// ResourceVersionChangedPredicate passes updates that change metadata.resourceVersion.
type ResourceVersionChangedPredicate = TypedResourceVersionChangedPredicate[client.Object]

// TypedResourceVersionChangedPredicate passes updates that change metadata.resourceVersion.
type TypedResourceVersionChangedPredicate[object metav1.Object] struct {
	TypedFuncs[object]
}

// Update passes a change of resourceVersion.
func (TypedResourceVersionChangedPredicate[object]) Update(e event.TypedUpdateEvent[object]) bool {
	return changed(e, func(old, new metav1.Object) bool { return old.GetResourceVersion() != new.GetResourceVersion() })
}

// LabelSelectorPredicate passes the events of objects whose labels s selects.
func LabelSelectorPredicate(s metav1.LabelSelector) (Predicate, error) {
	selector, err := metav1.LabelSelectorAsSelector(&s)
	if err != nil {
		return Funcs{}, err
	}
	return NewPredicateFuncs(func(o client.Object) bool {
		return selector.Matches(labels.Set(o.GetLabels()))
	}), nil
}

// And passes what every one of predicates passes.
func And[object any](predicates ...TypedPredicate[object]) TypedPredicate[object] {
	return AllOf[object](predicates)
}

// AllOf is the predicate And returns; the host evaluates it when it can each part.
type AllOf[object any] []TypedPredicate[object]

// Create passes when every part does.
func (a AllOf[object]) Create(e event.TypedCreateEvent[object]) bool {
	return every(a, func(p TypedPredicate[object]) bool { return p.Create(e) })
}

// Delete passes when every part does.
func (a AllOf[object]) Delete(e event.TypedDeleteEvent[object]) bool {
	return every(a, func(p TypedPredicate[object]) bool { return p.Delete(e) })
}

// Update passes when every part does.
func (a AllOf[object]) Update(e event.TypedUpdateEvent[object]) bool {
	return every(a, func(p TypedPredicate[object]) bool { return p.Update(e) })
}

// Generic passes when every part does.
func (a AllOf[object]) Generic(e event.TypedGenericEvent[object]) bool {
	return every(a, func(p TypedPredicate[object]) bool { return p.Generic(e) })
}

func every[P any](ps []P, pass func(P) bool) bool {
	for _, p := range ps {
		if !pass(p) {
			return false
		}
	}
	return true
}

// Or passes what any one of predicates passes.
func Or[object any](predicates ...TypedPredicate[object]) TypedPredicate[object] {
	return anyOf[object](predicates)
}

type anyOf[object any] []TypedPredicate[object]

func (a anyOf[object]) Create(e event.TypedCreateEvent[object]) bool {
	return !every(a, func(p TypedPredicate[object]) bool { return !p.Create(e) })
}

func (a anyOf[object]) Delete(e event.TypedDeleteEvent[object]) bool {
	return !every(a, func(p TypedPredicate[object]) bool { return !p.Delete(e) })
}

func (a anyOf[object]) Update(e event.TypedUpdateEvent[object]) bool {
	return !every(a, func(p TypedPredicate[object]) bool { return !p.Update(e) })
}

func (a anyOf[object]) Generic(e event.TypedGenericEvent[object]) bool {
	return !every(a, func(p TypedPredicate[object]) bool { return !p.Generic(e) })
}

// Not passes what predicate does not.
func Not[object any](predicate TypedPredicate[object]) TypedPredicate[object] {
	return not[object]{predicate}
}

type not[object any] struct{ of TypedPredicate[object] }

func (n not[object]) Create(e event.TypedCreateEvent[object]) bool { return !n.of.Create(e) }

func (n not[object]) Delete(e event.TypedDeleteEvent[object]) bool { return !n.of.Delete(e) }

func (n not[object]) Update(e event.TypedUpdateEvent[object]) bool { return !n.of.Update(e) }

func (n not[object]) Generic(e event.TypedGenericEvent[object]) bool { return !n.of.Generic(e) }
