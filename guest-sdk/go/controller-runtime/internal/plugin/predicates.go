package plugin

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"wasmop.dev/guest"
)

// filter is a predicate on one object that the guest runs.
type filter func(client.Object) bool

// split sorts predicates into those the host evaluates and those of one object the guest runs;
// any other predicate is an error naming it, unless passUndecidable lets it pass every event,
// which passed says.
func split(predicates []predicate.Predicate, passUndecidable bool, passed *[]string) ([]guest.Predicate, []filter, error) {
	var host []guest.Predicate
	var filters []filter
	for _, p := range predicates {
		switch p := p.(type) {
		case predicate.GenerationChangedPredicate, *predicate.GenerationChangedPredicate:
			host = append(host, guest.GenerationChanged)
		case predicate.LabelChangedPredicate, *predicate.LabelChangedPredicate:
			host = append(host, guest.LabelsChanged)
		case predicate.AnnotationChangedPredicate, *predicate.AnnotationChangedPredicate:
			host = append(host, guest.AnnotationsChanged)
		case predicate.ObjectFilter:
			filters = append(filters, p.Filter)
		case predicate.AllOf:
			h, f, err := split(p, passUndecidable, passed)
			if err != nil {
				return nil, nil, err
			}
			host, filters = append(host, h...), append(filters, f...)
		default:
			if passUndecidable {
				*passed = append(*passed, fmt.Sprintf("%T", p))
				continue
			}
			return nil, nil, fmt.Errorf("predicate %T is not supported: the host filters events before they are queued; use GenerationChangedPredicate, LabelChangedPredicate, AnnotationChangedPredicate, NewPredicateFuncs (one object) or And of them, or set wasmop.Plugin.PassUndecidablePredicates to let it pass every event", p)
		}
	}
	return host, filters, nil
}

func passes(filters []filter, obj client.Object) bool {
	for _, f := range filters {
		if !f(obj) {
			return false
		}
	}
	return true
}
