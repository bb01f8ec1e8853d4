package guesttest

import (
	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/wit"
)

// ClientCreate stores a new object; an existing one is AlreadyExists.
func (h *Host) ClientCreate(data wit.Object) wit.Result[wit.Object, wit.Error] {
	return h.write("create", data, func(obj, stored guest.Object) (guest.Object, error) {
		if stored != nil {
			return nil, &guest.AlreadyExists{Status: guest.Status{Code: 409, Reason: "AlreadyExists", Message: keyOf(obj) + " already exists"}}
		}
		obj.Set("uid-"+obj.Name(), "metadata", "uid")
		obj.Set(int64(1), "metadata", "generation")
		return obj, nil
	})
}

// ClientUpdate replaces an object at its resourceVersion, keeping the stored status.
func (h *Host) ClientUpdate(data wit.Object) wit.Result[wit.Object, wit.Error] {
	return h.write("update", data, func(obj, stored guest.Object) (guest.Object, error) {
		if err := current(obj, stored); err != nil {
			return nil, err
		}
		if status, ok := stored["status"]; ok {
			obj["status"] = status
		} else {
			delete(obj, "status")
		}
		return nextGeneration(obj, stored), nil
	})
}

// ClientUpdateStatus replaces an object's status at its resourceVersion.
func (h *Host) ClientUpdateStatus(data wit.Object) wit.Result[wit.Object, wit.Error] {
	return h.write("update-status", data, func(obj, stored guest.Object) (guest.Object, error) {
		if err := current(obj, stored); err != nil {
			return nil, err
		}
		next := stored.DeepCopy()
		next["status"] = obj["status"]
		return next, nil
	})
}

// ClientPatch merges a merge patch or an apply into an object (an apply creates it when
// missing); JSON patches are not supported.
func (h *Host) ClientPatch(kind wit.Gvk, namespace, name string, body wit.PatchBody) wit.Result[wit.Object, wit.Error] {
	return h.patch("patch", kind, namespace, name, body, func(patched, stored guest.Object) guest.Object {
		if stored != nil {
			patched["status"] = stored["status"]
		}
		return nextGeneration(patched, stored)
	})
}

// ClientPatchStatus merges a patch into an object's status.
func (h *Host) ClientPatchStatus(kind wit.Gvk, namespace, name string, body wit.PatchBody) wit.Result[wit.Object, wit.Error] {
	return h.patch("patch-status", kind, namespace, name, body, func(patched, stored guest.Object) guest.Object {
		next := stored.DeepCopy()
		next["status"] = patched["status"]
		return next
	})
}

// ClientDelete deletes an object, or marks it deleting while it has finalizers.
func (h *Host) ClientDelete(kind wit.Gvk, namespace, name string, _ wit.DeleteOptions) wit.Result[wit.Unit, wit.Error] {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.failNext("delete"); err != nil {
		return fail[wit.Unit](err)
	}
	k := key(kind, namespace, name)
	stored, ok := h.objects[k]
	if !ok {
		return fail[wit.Unit](notFound(k))
	}
	h.Writes = append(h.Writes, Write{"delete", kind.Kind, stored.Key()})
	if len(stored.Finalizers()) == 0 {
		delete(h.objects, k)
	} else if !stored.IsDeleting() {
		stored.Set("2026-01-01T00:00:00Z", "metadata", "deletionTimestamp")
		h.store(stored)
	}
	return wit.Result[wit.Unit, wit.Error]{}
}

func (h *Host) failNext(verb string) error {
	err := h.FailNext[verb]
	delete(h.FailNext, verb)
	return err
}

// write decodes data, lets change compute the object to store from it and the stored one, and
// stores the result; a deleting object without finalizers is removed.
func (h *Host) write(verb string, data string, change func(obj, stored guest.Object) (guest.Object, error)) wit.Result[wit.Object, wit.Error] {
	obj, err := guest.Decode(data)
	if err != nil {
		return fail[wit.Object](err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.failNext(verb); err != nil {
		return fail[wit.Object](err)
	}
	stored := h.objects[keyOf(obj)]
	if stored != nil {
		stored = stored.DeepCopy()
	}
	next, err := change(obj, stored)
	if err != nil {
		return fail[wit.Object](err)
	}
	h.Writes = append(h.Writes, Write{verb, next.Kind().Kind, next.Key()})
	saved := h.store(next)
	if saved.IsDeleting() && len(saved.Finalizers()) == 0 {
		delete(h.objects, keyOf(saved))
	}
	return encode(saved)
}

func (h *Host) patch(verb string, kind wit.Gvk, namespace, name string, body wit.PatchBody, finish func(patched, stored guest.Object) guest.Object) wit.Result[wit.Object, wit.Error] {
	var patch string
	switch body.Case {
	case wit.PatchBodyMerge:
		patch = body.Merge
	case wit.PatchBodyApply:
		patch = body.Apply.Object
	default:
		return fail[wit.Object](&guest.Invalid{Status: guest.Status{Code: 400, Reason: "BadRequest", Message: "guesttest supports merge patches and applies only"}})
	}
	h.mu.Lock()
	stored := h.objects[key(kind, namespace, name)]
	if stored == nil && body.Case != wit.PatchBodyApply {
		h.mu.Unlock()
		return fail[wit.Object](notFound(key(kind, namespace, name)))
	}
	base := guest.Object{}
	if stored != nil {
		base = stored.DeepCopy()
	}
	h.mu.Unlock()
	p, err := guest.Decode(patch)
	if err != nil {
		return fail[wit.Object](err)
	}
	patched := guest.Object(merge(map[string]any(base), map[string]any(p)).(map[string]any))
	data, _ := patched.Encode()
	return h.write(verb, data, func(obj, stored guest.Object) (guest.Object, error) {
		if stored == nil {
			obj.Set("uid-"+obj.Name(), "metadata", "uid")
			obj.Set(int64(1), "metadata", "generation")
			return obj, nil
		}
		return finish(obj, stored), nil
	})
}

// merge applies a JSON merge patch (RFC 7386).
func merge(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
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

// nextGeneration is obj with metadata.generation bumped when its spec differs from stored's.
func nextGeneration(obj, stored guest.Object) guest.Object {
	generation := stored.Generation()
	if !guest.Equal(obj["spec"], stored["spec"]) {
		generation++
	}
	obj.Set(generation, "metadata", "generation")
	return obj
}
