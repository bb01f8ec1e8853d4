package plugin

import (
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"wasmop.dev/guest"
	"wasmop.dev/guest/events"
)

// recording records Events through the host, which sends them as the plugin's, with the
// reconcile's id; an Event there has a type, a reason and a message about one object.
type recording struct{ scheme *runtime.Scheme }

func (r recording) record(object runtime.Object, eventtype, reason, message string) {
	about, err := r.about(object)
	if err != nil {
		slog.Error("recording an event: "+err.Error(), "reason", reason)
		return
	}
	if eventtype == corev1.EventTypeWarning {
		events.Warning(about, reason, message)
		return
	}
	events.Normal(about, reason, message)
}

// about is what the host needs of the object an event is about.
func (r recording) about(object runtime.Object) (guest.Object, error) {
	m, err := meta.Accessor(object)
	if err != nil {
		return nil, err
	}
	gvk, err := apiutil.GVKForObject(object, r.scheme)
	if err != nil {
		return nil, err
	}
	about := guest.New(guest.Kind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}, m.GetNamespace(), m.GetName())
	about.Set(string(m.GetUID()), "metadata", "uid")
	return about, nil
}

// coreRecorder is record.EventRecorder (the core/v1 Events API); annotations are dropped.
type coreRecorder struct{ recording }

func (r coreRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.record(object, eventtype, reason, message)
}

func (r coreRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.record(object, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (r coreRecorder) AnnotatedEventf(object runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.Eventf(object, eventtype, reason, messageFmt, args...)
}

// eventsRecorder is the events.k8s.io recorder; the related object, action and annotations are
// dropped, the note is the message.
type eventsRecorder struct{ recording }

func (r eventsRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	r.record(regarding, eventtype, reason, fmt.Sprintf(note, args...))
}

func (r eventsRecorder) AnnotatedEventf(regarding, related runtime.Object, _ map[string]string, eventtype, reason, action, note string, args ...any) {
	r.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
