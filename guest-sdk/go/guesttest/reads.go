package guesttest

import (
	"sort"
	"strings"

	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/wit"
)

// CacheGet returns the stored object.
func (h *Host) CacheGet(kind wit.Gvk, namespace, name string) wit.Result[wit.Object, wit.Error] {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := key(kind, namespace, name)
	obj, ok := h.objects[k]
	if !ok {
		return fail[wit.Object](notFound(k))
	}
	return encode(obj)
}

// CacheList returns the stored objects of kind in the namespace and with the labels asked for
// (equality selectors only).
func (h *Host) CacheList(kind wit.Gvk, options wit.ListOptions) wit.Result[[]wit.Object, wit.Error] {
	return h.list(kind, func(obj guest.Object) bool {
		if options.Namespace != nil && obj.Namespace() != *options.Namespace {
			return false
		}
		if options.LabelSelector != nil {
			for _, term := range strings.Split(*options.LabelSelector, ",") {
				k, v, _ := strings.Cut(term, "=")
				if obj.Labels()[k] != v {
					return false
				}
			}
		}
		return true
	})
}

// CacheListByIndex returns the stored objects of kind whose string at the dotted path index
// equals value: the fake treats the index name as its field.
func (h *Host) CacheListByIndex(kind wit.Gvk, index, value string) wit.Result[[]wit.Object, wit.Error] {
	return h.list(kind, func(obj guest.Object) bool {
		return obj.String(strings.Split(index, ".")...) == value
	})
}

// list returns the stored objects of kind that keep accepts, by namespace, then name.
func (h *Host) list(kind wit.Gvk, keep func(guest.Object) bool) wit.Result[[]wit.Object, wit.Error] {
	h.mu.Lock()
	defer h.mu.Unlock()
	var found []guest.Object
	for _, obj := range h.objects {
		if obj.Kind().WIT() == kind && keep(obj) {
			found = append(found, obj)
		}
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i].Key(), found[j].Key()
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	out := make([]wit.Object, len(found))
	for i, obj := range found {
		out[i], _ = obj.Encode()
	}
	return wit.Result[[]wit.Object, wit.Error]{Ok: out}
}

// EventsRecord records an event.
func (h *Host) EventsRecord(about wit.Regarding, typ wit.EventType, reason, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Events = append(h.Events, Event{
		Object:  guest.ObjectKey{Namespace: about.Namespace, Name: about.Name},
		Kind:    kindOf(about.Kind),
		Warning: typ == wit.EventTypeWarning, Reason: reason, Message: message,
	})
}

// LogLog records a log message.
func (h *Host) LogLog(_ wit.Level, message string, _ []wit.Tuple2[string, string]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Logs = append(h.Logs, message)
}
