// Package guesttest is an in-memory host for unit tests of reconcilers: a store of objects with
// resourceVersions, conflicts, finalizers and merge patches, a record of every write, event and
// log, failures given in advance for writes, and a settable clock. It is a fake of the host, not
// of the apiserver: server-side apply merges like a merge patch and nothing is defaulted or
// garbage-collected. Admission builds the requests a plugin's validator and defaulter take, as the
// runtime hands them over, and AdmissionReview and ConversionReview the reviews the apiserver
// would post, for fixture files and other tools. Its subpackage fixture has `wasmop test` run
// fixture files against the built plugin instead.
package guesttest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"time"

	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/host"
	"wasmop.dev/guest/internal/wit"
)

// Event is a recorded Kubernetes Event.
type Event struct {
	// Object is the key of the object the event is about.
	Object guest.ObjectKey
	// Kind is the kind of the object the event is about.
	Kind guest.Kind
	// Warning is true for Warning events, false for Normal ones.
	Warning bool
	// Reason and Message are as recorded.
	Reason, Message string
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
	// Writes are the writes sent so far, in order, whether applied or answered with an error.
	Writes []Write
	// FailNext, when set, makes the next call of the given client function fail with the error:
	// create, update, update-status, patch, patch-status or delete.
	FailNext map[string]error
	// APIServer, when set, answers the requests of the plugin's own client (transport.RoundTripper) as
	// the apiserver would; without it they fail as unavailable.
	APIServer http.Handler
}

// New installs and returns an empty fake host, its clock the real one.
func New() *Host {
	h := &Host{objects: map[string]guest.Object{}, FailNext: map[string]error{}}
	host.Use(h)
	host.SetClock(nil)
	return h
}

// SetNow stops the clock the SDK reads (guest.Now, and so the conditions it stamps) at now.
func (h *Host) SetNow(now time.Time) {
	host.SetClock(func() time.Time { return now })
}

func key(kind wit.Gvk, namespace, name string) string {
	return fmt.Sprintf("%s/%s/%s/%s/%s", kind.Group, kind.Version, kind.Kind, namespace, name)
}

func keyOf(obj guest.Object) string {
	return key(obj.Kind().WIT(), obj.Namespace(), obj.Name())
}

// Seed stores objects as if the apiserver had them, keeping the uid, resourceVersion and
// generation each has; the N-th object seeded on this host gets uid `uid-N`, resourceVersion
// `N` and (when it has a spec) generation 1 when it has none, as `wasmop test` seeds a
// fixture's objects.
func (h *Host) Seed(objs ...guest.Object) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, obj := range objs {
		obj = obj.DeepCopy()
		h.version++
		fill(obj, "uid", "uid-"+strconv.Itoa(h.version))
		fill(obj, "resourceVersion", strconv.Itoa(h.version))
		if hasGeneration(obj) {
			fill(obj, "generation", int64(1))
		}
		h.put(obj)
	}
}

// fill sets metadata.field to value when obj has none.
func fill(obj guest.Object, field string, value any) {
	if obj.Get("metadata", field) == nil {
		obj.Set(value, "metadata", field)
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

// put stores obj as it is, normalized to decoded JSON, and returns what it stored.
func (h *Host) put(obj guest.Object) guest.Object {
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

// TransportSend answers a request of the plugin's own client with h.APIServer.
func (h *Host) TransportSend(request wit.HttpRequest) wit.Result[wit.HttpResponse, wit.Error] {
	if h.APIServer == nil {
		status := wit.Status{Reason: "Unavailable", Message: "guesttest has no apiserver: set Host.APIServer"}
		return wit.Result[wit.HttpResponse, wit.Error]{IsErr: true, Err: wit.Error{Case: wit.ErrorUnavailable, Unavailable: status}}
	}
	req := httptest.NewRequest(request.Method, request.Path, bytes.NewReader(request.Body))
	if request.ContentType != "" {
		req.Header.Set("Content-Type", request.ContentType)
	}
	recorder := httptest.NewRecorder()
	h.APIServer.ServeHTTP(recorder, req)
	return wit.Result[wit.HttpResponse, wit.Error]{Ok: wit.HttpResponse{
		Status:      uint16(recorder.Code),
		ContentType: recorder.Header().Get("Content-Type"),
		Body:        recorder.Body.Bytes(),
	}}
}
