package guesttest

import (
	"encoding/json"

	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/wit"
)

// Write is one write the plugin sent, as fixture files state it.
type Write struct {
	// Verb is create, update, update-status, merge-patch, json-patch, apply or delete.
	Verb string
	// Status is true for a patch (merge-patch, json-patch, apply) of the status subresource.
	Status bool
	// Force is true for an apply that takes fields other managers own.
	Force bool
	// Kind is the target's kind.
	Kind guest.Kind
	// Key is the target's namespace and name.
	Key guest.ObjectKey
	// Body is the object or patch sent, as decoded JSON; for a delete, its options (uid,
	// resourceVersion, propagationPolicy: those set), nil when none is.
	Body any
	// Err is the error the host answered with, nil when it applied the write.
	Err error
}

// Target is `verb apiVersion kind namespace/name`, ` (status)` following the verb of a status
// patch: the write's kind and target, as reports name them.
func (w Write) Target() string {
	status := ""
	if w.Status {
		status = " (status)"
	}
	return w.Verb + status + " " + w.Kind.APIVersion() + " " + w.Kind.Kind + " " + w.Key.String()
}

func kindOf(kind wit.Gvk) guest.Kind {
	return guest.Kind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind}
}

// deleteBody is a delete's options as fixtures state them: only those set, nil when none is.
func deleteBody(options wit.DeleteOptions) any {
	body := map[string]any{}
	if p := options.Preconditions; p != nil && p.Uid != nil {
		body["uid"] = *p.Uid
	}
	if p := options.Preconditions; p != nil && p.ResourceVersion != nil {
		body["resourceVersion"] = *p.ResourceVersion
	}
	if options.Propagation != nil {
		body["propagationPolicy"] = [...]string{"Background", "Foreground", "Orphan"}[*options.Propagation]
	}
	if len(body) == 0 {
		return nil
	}
	return body
}

// decodeJSON is the value of the JSON text, numbers as float64 as guest.Decode has them.
func decodeJSON(text string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, &guest.Invalid{Status: guest.Status{Code: 400, Reason: "BadRequest", Message: "decoding a patch: " + err.Error()}}
	}
	return v, nil
}
