package client

import (
	"encoding/json"

	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/wit"
)

// PatchBody is how to patch an object: MergePatch, JSONPatch or ApplyPatch.
type PatchBody struct {
	kind  wit.PatchBodyCase
	value any
	force bool
}

// MergePatch is a JSON merge patch (RFC 7386) of the JSON encoding of v.
func MergePatch(v any) PatchBody { return PatchBody{kind: wit.PatchBodyMerge, value: v} }

// JSONPatch is a JSON patch (RFC 6902) of the JSON encoding of ops, an array of operations.
func JSONPatch(ops any) PatchBody { return PatchBody{kind: wit.PatchBodyJson, value: ops} }

// ApplyPatch is a server-side apply of obj (with apiVersion and kind).
func ApplyPatch(obj guest.Object, force bool) PatchBody {
	return PatchBody{kind: wit.PatchBodyApply, value: obj, force: force}
}

func (p PatchBody) wit() (wit.PatchBody, error) {
	data, err := json.Marshal(p.value)
	if err != nil {
		return wit.PatchBody{}, err
	}
	switch p.kind {
	case wit.PatchBodyMerge:
		return wit.PatchBody{Case: p.kind, Merge: string(data)}, nil
	case wit.PatchBodyJson:
		return wit.PatchBody{Case: p.kind, Json: string(data)}, nil
	}
	return wit.PatchBody{Case: p.kind, Apply: wit.ApplyPatch{Object: string(data), Force: p.force}}, nil
}

// ApplyPatchJSON is a server-side apply of an object already encoded as JSON (with apiVersion
// and kind).
func ApplyPatchJSON(obj []byte, force bool) PatchBody {
	return PatchBody{kind: wit.PatchBodyApply, value: json.RawMessage(obj), force: force}
}
