// Package guesttest is an in-memory host for unit tests of reconcilers: a store of objects with
// resourceVersions, conflicts, finalizers and merge patches, and a record of events and logs.
// It is a fake of the host, not of the apiserver: server-side apply merges like a merge patch
// and nothing is defaulted or garbage-collected.
package guesttest

import (
	"fmt"
	"sort"
	"strconv"
	"sync"

	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/host"
	"wasmop.dev/guest/internal/wit"
)

// Event is a recorded Kubernetes Event.
type Event struct {
	// Object is the key of the object the event is about.
	Object guest.ObjectKey
	// Warning is true for Warning events, false for Normal ones.
	Warning bool
	// Reason and Message are as recorded.
	Reason, Message string
}

// Write is one successful write, in order: the verb and the object's key.
type Write struct {
	// Verb is create, update, patch, delete, update-status or patch-status.
	Verb string
	// Kind is the written object's kind.
	Kind string
	// Key is the written object's key.
	Key guest.ObjectKey
}

// Host is the fake host; New installs one.
type Host struct {
	mu      sync.Mutex
	objects map[string]guest.Object
	version int
	// Events are the events recorded so far.
	Events []Event
	// Logs are the messages logged so far.
	Logs []string
	// Writes are the writes that succeeded so far.
	Writes []Write
	// FailNext, when set, makes the next write of the given verb fail with the error.
	FailNext map[string]error
}

// New installs and returns an empty fake host.
func New() *Host {
	h := &Host{objects: map[string]guest.Object{}, FailNext: map[string]error{}}
	host.Use(h)
	return h
}

func key(kind wit.Gvk, namespace, name string) string {
	return fmt.Sprintf("%s/%s/%s/%s/%s", kind.Group, kind.Version, kind.Kind, namespace, name)
}

func keyOf(obj guest.Object) string {
	return key(obj.Kind().WIT(), obj.Namespace(), obj.Name())
}

// Seed stores objects as if the apiserver had them, giving each a uid, resourceVersion and
// generation when missing.
func (h *Host) Seed(objs ...guest.Object) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, obj := range objs {
		obj = obj.DeepCopy()
		if obj.UID() == "" {
			obj.Set("uid-"+obj.Name(), "metadata", "uid")
		}
		if obj.Generation() == 0 {
			obj.Set(int64(1), "metadata", "generation")
		}
		h.store(obj)
	}
}

// Object is the stored object of kind namespace/name, nil when there is none.
func (h *Host) Object(kind guest.Kind, namespace, name string) guest.Object {
	h.mu.Lock()
	defer h.mu.Unlock()
	obj := h.objects[key(kind.WIT(), namespace, name)]
	if obj == nil {
		return nil
	}
	return obj.DeepCopy()
}

// Keys are the keys of every stored object, sorted.
func (h *Host) Keys() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(h.objects))
	for k := range h.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// store bumps the resourceVersion and saves obj, normalized to decoded JSON.
func (h *Host) store(obj guest.Object) guest.Object {
	h.version++
	obj.Set(strconv.Itoa(h.version), "metadata", "resourceVersion")
	data, _ := obj.Encode()
	stored, _ := guest.Decode(data)
	h.objects[keyOf(stored)] = stored
	return stored
}

func encode(obj guest.Object) wit.Result[wit.Object, wit.Error] {
	data, err := obj.Encode()
	if err != nil {
		return fail[wit.Object](&guest.Invalid{Status: guest.Status{Code: 400, Reason: "Invalid", Message: err.Error()}})
	}
	return wit.Result[wit.Object, wit.Error]{Ok: data}
}

func fail[T any](err error) wit.Result[T, wit.Error] {
	return wit.Result[T, wit.Error]{IsErr: true, Err: guest.ToWIT(err)}
}

func notFound(k string) error {
	return &guest.NotFound{Status: guest.Status{Code: 404, Reason: "NotFound", Message: k + " not found"}}
}
