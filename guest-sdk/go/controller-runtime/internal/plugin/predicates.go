package plugin

import (
	"fmt"
	"strings"

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
		case predicate.AllOf:
			h, f, err := split(p, passUndecidable, passed)
			if err != nil {
				return nil, nil, err
			}
			host, filters = append(host, h...), append(filters, f...)
		default:
			if f, ok := onOneObject(p); ok {
				filters = append(filters, f)
				continue
			}
			if passUndecidable {
				*passed = append(*passed, fmt.Sprintf("%T", p))
				continue
			}
			return nil, nil, fmt.Errorf("predicate %s is not supported: the host filters events before they are queued; use GenerationChangedPredicate, LabelChangedPredicate, AnnotationChangedPredicate, NewPredicateFuncs (one object) or And of them, Or and Not only of predicates on one object, or set wasmop.Plugin.PassUndecidablePredicates to let it pass every event", named(p))
		}
	}
	return host, filters, nil
}

// onOneObject is p as a filter of one object, when p decides on the object alone: a
// NewPredicateFuncs, or And, Or and Not of such.
func onOneObject(p predicate.Predicate) (filter, bool) {
	switch p := p.(type) {
	case predicate.ObjectFilter:
		return p.Filter, true
	case predicate.Negation:
		f, ok := onOneObject(p.Of)
		return func(obj client.Object) bool { return !f(obj) }, ok
	case predicate.AllOf:
		return combined(p, true)
	case predicate.AnyOf:
		return combined(p, false)
	}
	return nil, false
}

// combined is the filter passing what every one of parts passes (all) or any one passes, when
// each decides on one object.
func combined(parts []predicate.Predicate, all bool) (filter, bool) {
	fs := make([]filter, 0, len(parts))
	for _, part := range parts {
		f, ok := onOneObject(part)
		if !ok {
			return nil, false
		}
		fs = append(fs, f)
	}
	return func(obj client.Object) bool {
		for _, f := range fs {
			if f(obj) != all {
				return !all
			}
		}
		return all
	}, true
}

// named is p's type, with the parts an Or or a Not combines.
func named(p predicate.Predicate) string {
	var of []predicate.Predicate
	switch p := p.(type) {
	case predicate.AnyOf:
		of = p
	case predicate.Negation:
		of = []predicate.Predicate{p.Of}
	default:
		return fmt.Sprintf("%T", p)
	}
	names := make([]string, len(of))
	for i, part := range of {
		names[i] = fmt.Sprintf("%T", part)
	}
	return fmt.Sprintf("%T over %s", p, strings.Join(names, ", "))
}

func passes(filters []filter, obj client.Object) bool {
	for _, f := range filters {
		if !f(obj) {
			return false
		}
	}
	return true
}
