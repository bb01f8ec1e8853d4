package client

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// IndexerFunc extracts the values of an object's indexed field.
type IndexerFunc func(Object) []string

// FieldIndexer declares field indexes for List with MatchingFields.
type FieldIndexer interface {
	IndexField(ctx context.Context, obj Object, field string, extractValue IndexerFunc) error
}

type fieldIndex struct {
	gvk   schema.GroupVersionKind
	field string
}

// IndexField declares an index: a List of obj's kind matching field to a value keeps the
// objects whose extractValue holds it. The extractor is Go code of the plugin's, so it runs in
// the guest over the listed objects (narrowed by the list's namespace and labels first).
func (c *hostClient) IndexField(_ context.Context, obj Object, field string, extractValue IndexerFunc) error {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	key := fieldIndex{gvk, field}
	if _, dup := c.indexes[key]; dup {
		return fmt.Errorf("an index named %q of %s already exists", field, gvk.Kind)
	}
	c.indexes[key] = extractValue
	return nil
}

// indexed splits a field selector into the requirements on declared indexes of gvk, as
// filters, and the rest, for the host.
func (c *hostClient) indexed(gvk schema.GroupVersionKind, sel fields.Selector) ([]func(Object) bool, fields.Selector, error) {
	if sel == nil || sel.Empty() {
		return nil, sel, nil
	}
	var filters []func(Object) bool
	var rest []fields.Selector
	for _, req := range sel.Requirements() {
		extract, ok := c.indexes[fieldIndex{gvk, req.Field}]
		if !ok {
			rest = append(rest, fields.OneTermEqualSelector(req.Field, req.Value))
			if req.Operator != selection.Equals && req.Operator != selection.DoubleEquals {
				return nil, nil, fmt.Errorf("field selector %s: %w (only equality)", sel, errUnsupported)
			}
			continue
		}
		if req.Operator != selection.Equals && req.Operator != selection.DoubleEquals {
			return nil, nil, fmt.Errorf("field selector %s on an index: %w (only equality)", sel, errUnsupported)
		}
		value := req.Value
		filters = append(filters, func(obj Object) bool {
			for _, v := range extract(obj) {
				if v == value {
					return true
				}
			}
			return false
		})
	}
	if len(rest) == 0 {
		return filters, nil, nil
	}
	return filters, fields.AndSelectors(rest...), nil
}
