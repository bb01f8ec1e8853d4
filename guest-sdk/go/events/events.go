// Package events records Kubernetes Events on objects, best effort: a failure to record is
// logged by the host, never returned.
package events

import (
	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/host"
	"wasmop.dev/guest/internal/wit"
)

// Normal records a Normal event about obj; reason is a short CamelCase word, message a sentence.
func Normal(obj guest.Object, reason, message string) {
	record(obj, wit.EventTypeNormal, reason, message)
}

// Warning records a Warning event about obj.
func Warning(obj guest.Object, reason, message string) {
	record(obj, wit.EventTypeWarning, reason, message)
}

func record(obj guest.Object, typ wit.EventType, reason, message string) {
	about := wit.Regarding{Kind: obj.Kind().WIT(), Namespace: obj.Namespace(), Name: obj.Name(), Uid: obj.UID()}
	host.Get().EventsRecord(about, typ, reason, message)
}
