package guesttest

import (
	"strconv"
	"time"

	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/host"
	"wasmop.dev/guest/internal/wit"
)

// ClientCreate stores a new object; an existing one is AlreadyExists.
func (h *Host) ClientCreate(data wit.Object) wit.Result[wit.Object, wit.Error] {
	return h.objectWrite("create", data, func(obj, stored guest.Object) (guest.Object, error) {
		if stored != nil {
			return nil, &guest.AlreadyExists{Status: guest.Status{Code: 409, Reason: "AlreadyExists", Message: keyOf(obj) + " already exists"}}
		}
		return h.save(obj, nil), nil
	})
}

// ClientUpdate replaces an object at its resourceVersion, keeping the stored status.
func (h *Host) ClientUpdate(data wit.Object) wit.Result[wit.Object, wit.Error] {
	return h.objectWrite("update", data, func(obj, stored guest.Object) (guest.Object, error) {
		if err := current(obj, stored); err != nil {
			return nil, err
		}
		delete(obj, "status")
		if status, ok := stored["status"]; ok {
			obj["status"] = status
		}
		return h.save(obj, stored), nil
	})
}

// ClientUpdateStatus replaces an object's status at its resourceVersion.
func (h *Host) ClientUpdateStatus(data wit.Object) wit.Result[wit.Object, wit.Error] {
	return h.objectWrite("update-status", data, func(obj, stored guest.Object) (guest.Object, error) {
		if err := current(obj, stored); err != nil {
			return nil, err
		}
		next := stored.DeepCopy()
		next["status"] = obj["status"]
		return h.save(next, stored), nil
	})
}

// ClientPatch merges a merge patch or an apply into an object (an apply creates it when
// missing); JSON patches are recorded but answered Invalid.
func (h *Host) ClientPatch(kind wit.Gvk, namespace, name string, body wit.PatchBody) wit.Result[wit.Object, wit.Error] {
	return h.patch("patch", kind, namespace, name, body)
}

// ClientPatchStatus merges a patch into an object's status.
func (h *Host) ClientPatchStatus(kind wit.Gvk, namespace, name string, body wit.PatchBody) wit.Result[wit.Object, wit.Error] {
	return h.patch("patch-status", kind, namespace, name, body)
}

// ClientDelete deletes an object meeting the preconditions, or marks it deleting while it has
// finalizers.
func (h *Host) ClientDelete(kind wit.Gvk, namespace, name string, options wit.DeleteOptions) wit.Result[wit.Unit, wit.Error] {
	w := Write{Verb: "delete", Kind: kindOf(kind), Key: guest.ObjectKey{Namespace: namespace, Name: name}, Body: deleteBody(options)}
	_, err := h.send("delete", w, func() (guest.Object, error) {
		k := key(kind, namespace, name)
		stored := h.objects[k]
		if stored == nil {
			return nil, notFound(k)
		}
		if !meets(stored, options.Preconditions) {
			return nil, &guest.Conflict{Status: guest.Status{Code: 409, Reason: "Conflict", Message: k + ": precondition failed"}}
		}
		next := stored.DeepCopy()
		if !next.IsDeleting() {
			next.Set(host.Now().UTC().Format(time.RFC3339), "metadata", "deletionTimestamp")
		}
		return h.save(next, stored), nil
	})
	if err != nil {
		return fail[wit.Unit](err)
	}
	return wit.Result[wit.Unit, wit.Error]{}
}

// send records w, then answers it: with the error FailNext holds for the client function call,
// else with what apply makes of it.
func (h *Host) send(call string, w Write, apply func() (guest.Object, error)) (guest.Object, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var saved guest.Object
	w.Err = h.FailNext[call]
	delete(h.FailNext, call)
	if w.Err == nil {
		saved, w.Err = apply()
	}
	h.Writes = append(h.Writes, w)
	return saved, w.Err
}

// objectWrite sends a write of the object in data, which change turns, with the stored object
// (nil when there is none), into the object stored.
func (h *Host) objectWrite(verb, data string, change func(obj, stored guest.Object) (guest.Object, error)) wit.Result[wit.Object, wit.Error] {
	obj, err := guest.Decode(data)
	if err != nil {
		return fail[wit.Object](err)
	}
	w := Write{Verb: verb, Kind: obj.Kind(), Key: obj.Key(), Body: obj.DeepCopy()}
	saved, err := h.send(verb, w, func() (guest.Object, error) {
		stored := h.objects[keyOf(obj)]
		if stored != nil {
			stored = stored.DeepCopy()
		}
		return change(obj, stored)
	})
	if err != nil {
		return fail[wit.Object](err)
	}
	return encode(saved)
}

// patch sends a patch of an object, or of its status when call is patch-status.
func (h *Host) patch(call string, kind wit.Gvk, namespace, name string, body wit.PatchBody) wit.Result[wit.Object, wit.Error] {
	w, err := patchWrite(kind, namespace, name, body)
	if err != nil {
		return fail[wit.Object](err)
	}
	w.Status = call == "patch-status"
	saved, err := h.send(call, w, func() (guest.Object, error) {
		return h.patched(key(kind, namespace, name), w)
	})
	if err != nil {
		return fail[wit.Object](err)
	}
	return encode(saved)
}

// patchWrite is the write of body to kind namespace/name.
func patchWrite(kind wit.Gvk, namespace, name string, body wit.PatchBody) (Write, error) {
	w := Write{Kind: kindOf(kind), Key: guest.ObjectKey{Namespace: namespace, Name: name}}
	text := body.Merge
	switch body.Case {
	case wit.PatchBodyMerge:
		w.Verb = "merge-patch"
	case wit.PatchBodyJson:
		w.Verb, text = "json-patch", body.Json
	case wit.PatchBodyApply:
		w.Verb, text, w.Force = "apply", body.Apply.Object, body.Apply.Force
	}
	var err error
	w.Body, err = decodeJSON(text)
	return w, err
}

// patched stores the object at k as the patch w makes it: an apply creates a missing object, a
// status patch changes the status alone, any other patch leaves the status alone.
func (h *Host) patched(k string, w Write) (guest.Object, error) {
	if w.Verb == "json-patch" {
		return nil, &guest.Invalid{Status: guest.Status{Code: 400, Reason: "BadRequest", Message: "guesttest supports merge patches and applies only"}}
	}
	stored := h.objects[k]
	if stored == nil && (w.Verb != "apply" || w.Status) {
		return nil, notFound(k)
	}
	next, _ := merge(map[string]any(stored.DeepCopy()), w.Body).(map[string]any)
	if next == nil {
		return nil, &guest.Invalid{Status: guest.Status{Code: 422, Reason: "Invalid", Message: k + ": a patch must be a JSON object"}}
	}
	if stored == nil {
		return h.save(next, nil), nil
	}
	if w.Status {
		status := next["status"]
		next = stored.DeepCopy()
		next["status"] = status
	} else {
		next["status"] = stored["status"]
	}
	return h.save(next, stored), nil
}

// save stores next as the new state of stored (nil for a new object) at the next
// resourceVersion: a new object gets uid `uid-N` at resourceVersion N and, when it has a spec,
// generation 1; an existing one keeps its uid and deletionTimestamp, and its generation (if it
// has a spec or had a generation) is bumped when anything but its metadata and status changed.
// An object being deleted is gone once it has no finalizers.
func (h *Host) save(next, stored guest.Object) guest.Object {
	h.version++
	next.Set(strconv.Itoa(h.version), "metadata", "resourceVersion")
	generated := hasGeneration(next)
	if stored == nil {
		next.Set("uid-"+strconv.Itoa(h.version), "metadata", "uid")
		if generated {
			next.Set(int64(1), "metadata", "generation")
		}
	} else {
		next.Set(stored.UID(), "metadata", "uid")
		if _, had := stored.Map("metadata")["generation"]; generated || had {
			next.Set(generation(next, stored), "metadata", "generation")
		}
		if stored.IsDeleting() && !next.IsDeleting() {
			next.Set(stored.Get("metadata", "deletionTimestamp"), "metadata", "deletionTimestamp")
		}
	}
	if next["status"] == nil {
		delete(next, "status")
	}
	saved := h.put(next)
	if saved.IsDeleting() && len(saved.Finalizers()) == 0 {
		delete(h.objects, keyOf(saved))
	}
	return saved
}

// hasGeneration reports whether the apiserver gives obj a generation: kinds with a spec have one,
// kinds of bare data (ConfigMap, Secret) have none, so a recording of them replays alike.
func hasGeneration(obj guest.Object) bool {
	_, ok := obj["spec"]
	return ok
}

// generation is stored's generation (1 when it has none), plus one when next differs from it
// outside metadata and status.
func generation(next, stored guest.Object) int64 {
	current := int64(1)
	switch stored.Get("metadata", "generation").(type) {
	case float64, int64, int, int32:
		current = stored.Generation()
	}
	if guest.Equal(content(next), content(stored)) {
		return current
	}
	return current + 1
}

// content is obj without its metadata and status.
func content(obj guest.Object) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		if k != "metadata" && k != "status" {
			out[k] = v
		}
	}
	return out
}

// merge applies a JSON merge patch (RFC 7386).
func merge(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok || t == nil {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = merge(t[k], v)
		}
	}
	return t
}

// current fails with NotFound or Conflict unless obj was read at stored's resourceVersion.
func current(obj, stored guest.Object) error {
	if stored == nil {
		return notFound(keyOf(obj))
	}
	if rv := obj.ResourceVersion(); rv != "" && rv != stored.ResourceVersion() {
		return &guest.Conflict{Status: guest.Status{Code: 409, Reason: "Conflict", Message: keyOf(obj) + " was modified"}}
	}
	return nil
}

// meets reports whether obj has the uid and resourceVersion the preconditions ask for.
func meets(obj guest.Object, p *wit.Preconditions) bool {
	if p == nil {
		return true
	}
	return (p.Uid == nil || *p.Uid == obj.UID()) &&
		(p.ResourceVersion == nil || *p.ResourceVersion == obj.ResourceVersion())
}
