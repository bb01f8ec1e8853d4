package guest

import (
	"log/slog"

	"wasmop.dev/guest/abi"
	"wasmop.dev/guest/internal/wit"
)

// Change is a change of a handled kind, as the host's cache saw it: Old is nil when the object
// was added (created, or listed when the plugin's sources start), New is nil when it was deleted
// (Old is then its last state).
type Change struct {
	// Old is the object before the change.
	Old Object
	// New is the object after it.
	New Object
}

// HandlersDescribeHandlers declares the kinds whose changes Handle maps.
func (e exports) HandlersDescribeHandlers() []wit.Gvk {
	defer abi.GuestTurn()()
	var kinds []wit.Gvk
	for _, k := range e.r.Handled {
		kinds = append(kinds, k.WIT())
	}
	return kinds
}

// HandlersHandle runs the Handle function on a change; an object that does not decode, or no
// Handle function, maps to no requests.
func (e exports) HandlersHandle(kind wit.Gvk, change wit.Change) []wit.ObjectKey {
	defer abi.GuestTurn()()
	if e.r.Handle == nil {
		return nil
	}
	c, err := decodeChange(change)
	if err != nil {
		slog.Error("handle: " + err.Error())
		return nil
	}
	return witKeys(e.r.Handle(Kind{kind.Group, kind.Version, kind.Kind}, c))
}

// decodeChange decodes the objects of a change.
func decodeChange(change wit.Change) (Change, error) {
	var (
		c   Change
		err error
	)
	switch change.Case {
	case wit.ChangeAdded:
		c.New, err = Decode(change.Added)
	case wit.ChangeDeleted:
		c.Old, err = Decode(change.Deleted)
	case wit.ChangeUpdated:
		if c.Old, err = Decode(change.Updated.Old); err == nil {
			c.New, err = Decode(change.Updated.New)
		}
	}
	return c, err
}

// witKeys are requests as the host takes them.
func witKeys(reqs []Request) []wit.ObjectKey {
	var keys []wit.ObjectKey
	for _, req := range reqs {
		keys = append(keys, wit.ObjectKey{Namespace: req.Namespace, Name: req.Name})
	}
	return keys
}
