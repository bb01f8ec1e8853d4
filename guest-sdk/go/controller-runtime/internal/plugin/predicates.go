package plugin

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"wasmop.dev/guest"
)

// hostPredicates are predicates as the host evaluates them, when it can every one: the
// generation, label and annotation change predicates, and And of them.
func hostPredicates(predicates []predicate.Predicate) ([]guest.Predicate, bool) {
	var host []guest.Predicate
	for _, p := range predicates {
		switch p := p.(type) {
		case predicate.GenerationChangedPredicate, *predicate.GenerationChangedPredicate:
			host = append(host, guest.GenerationChanged)
		case predicate.LabelChangedPredicate, *predicate.LabelChangedPredicate:
			host = append(host, guest.LabelsChanged)
		case predicate.AnnotationChangedPredicate, *predicate.AnnotationChangedPredicate:
			host = append(host, guest.AnnotationsChanged)
		case predicate.AllOf[client.Object]:
			parts, ok := hostPredicates(p)
			if !ok {
				return nil, false
			}
			host = append(host, parts...)
		default:
			return nil, false
		}
	}
	return host, true
}

// ownKey is whether h requests the object's own key.
func ownKey(h handler.EventHandler) bool {
	switch h.(type) {
	case handler.EnqueueRequestForObject, *handler.EnqueueRequestForObject:
		return true
	}
	return false
}
