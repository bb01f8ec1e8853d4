package client

import (
	"encoding/json"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// readsKept bounds the objects remembered for their unknown fields; past it, all are forgotten
// at once (an update of a forgotten object sends only what its type knows, as
// controller-runtime's client always does).
const readsKept = 512

// reads remembers the JSON of objects as read or written, by kind, key and resourceVersion, so
// an update of a typed object can send back the fields its Go type does not know.
type reads struct {
	mu   sync.Mutex
	seen map[readKey]string
}

type readKey struct {
	gvk                              schema.GroupVersionKind
	namespace, name, resourceVersion string
}

func newReads() *reads { return &reads{seen: map[readKey]string{}} }

// remember keeps data, the JSON obj was decoded from.
func (r *reads) remember(gvk schema.GroupVersionKind, obj metav1.Object, data string) {
	if obj.GetResourceVersion() == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) >= readsKept {
		clear(r.seen)
	}
	r.seen[readKey{gvk, obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion()}] = data
}

// rememberEach keeps the JSON of each item of list, decoded from items in their order.
func (r *reads) rememberEach(gvk schema.GroupVersionKind, list runtime.Object, items []string) {
	decoded, err := meta.ExtractList(list)
	if err != nil || len(decoded) != len(items) {
		return
	}
	for i, item := range decoded {
		if obj, ok := item.(metav1.Object); ok {
			r.remember(gvk, obj, items[i])
		}
	}
}

func (r *reads) lookup(gvk schema.GroupVersionKind, obj Object) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[readKey{gvk, obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion()}]
}

// withUnknownFields is data, the encoding of the typed obj, with every field of the object as
// read at obj's resourceVersion that obj's type does not know. Fields inside lists are not
// merged: a list is the type's to replace.
func (r *reads) withUnknownFields(gvk schema.GroupVersionKind, obj Object, data []byte) []byte {
	if _, ok := obj.(runtime.Unstructured); ok {
		return data
	}
	read := r.lookup(gvk, obj)
	if read == "" {
		return data
	}
	known := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
	if json.Unmarshal([]byte(read), known) != nil {
		return data
	}
	knownData, err := json.Marshal(known)
	if err != nil {
		return data
	}
	var readFields, knownFields, out map[string]any
	if json.Unmarshal([]byte(read), &readFields) != nil || json.Unmarshal(knownData, &knownFields) != nil ||
		json.Unmarshal(data, &out) != nil {
		return data
	}
	if !addUnknown(out, readFields, knownFields) {
		return data
	}
	merged, err := json.Marshal(out)
	if err != nil {
		return data
	}
	return merged
}

// addUnknown adds to out every field of read missing from known (read through the type), into
// nested objects present in all three; it reports whether it added any.
func addUnknown(out, read, known map[string]any) bool {
	added := false
	for field, value := range read {
		knownValue, isKnown := known[field]
		if !isKnown {
			if _, set := out[field]; !set {
				out[field] = value
				added = true
			}
			continue
		}
		readObj, ok1 := value.(map[string]any)
		knownObj, ok2 := knownValue.(map[string]any)
		outObj, ok3 := out[field].(map[string]any)
		if ok1 && ok2 && ok3 && addUnknown(outObj, readObj, knownObj) {
			added = true
		}
	}
	return added
}
