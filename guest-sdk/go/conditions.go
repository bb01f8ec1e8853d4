package guest

import (
	"time"

	"wasmop.dev/guest/internal/host"
)

// Condition is a standard Kubernetes status condition (metav1.Condition).
type Condition struct {
	// Type names the condition, e.g. Ready.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status string `json:"status"`
	// ObservedGeneration is the metadata.generation the condition describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastTransitionTime is when Status last changed, RFC 3339.
	LastTransitionTime string `json:"lastTransitionTime"`
	// Reason is a CamelCase word for why.
	Reason string `json:"reason"`
	// Message says why, for people.
	Message string `json:"message"`
}

// NewCondition is a condition of type t, True when ok, stamped now.
func NewCondition(t string, ok bool, reason, message string) Condition {
	status := "False"
	if ok {
		status = "True"
	}
	return Condition{Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: Now()}
}

// SetCondition puts c into conditions, replacing the one of its type; the lastTransitionTime
// of that one is kept while its status holds.
func SetCondition(conditions []Condition, c Condition) []Condition {
	for i, old := range conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			conditions[i] = c
			return conditions
		}
	}
	return append(conditions, c)
}

// FindCondition is the condition of type t, nil when there is none.
func FindCondition(conditions []Condition, t string) *Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// Now is the current time in RFC 3339 with whole seconds, as Kubernetes writes times: the host's
// wall clock (the fixture's time under `wasmop test`), or the time a guesttest host is set to.
func Now() string {
	return host.Now().UTC().Format(time.RFC3339)
}
