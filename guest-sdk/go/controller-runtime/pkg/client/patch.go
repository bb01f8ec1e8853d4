package client

import (
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/types"
)

// RawPatch is a patch of a given type with a body of its own.
func RawPatch(patchType types.PatchType, data []byte) Patch {
	return rawPatch{patchType, data}
}

type rawPatch struct {
	patchType types.PatchType
	data      []byte
}

func (p rawPatch) Type() types.PatchType { return p.patchType }

func (p rawPatch) Data(Object) ([]byte, error) { return p.data, nil }

type objectPatch types.PatchType

func (p objectPatch) Type() types.PatchType { return types.PatchType(p) }

func (objectPatch) Data(obj Object) ([]byte, error) { return json.Marshal(obj) }

// Merge patches with the whole object as a JSON merge patch.
var Merge Patch = objectPatch(types.MergePatchType)

// Apply server-side applies the object as it is (with apiVersion and kind set).
var Apply Patch = objectPatch(types.ApplyPatchType)

// MergeFromOption modifies a MergeFrom patch.
type MergeFromOption interface {
	ApplyToMergeFrom(*MergeFromOptions)
}

// MergeFromOptions are the options of a MergeFrom patch.
type MergeFromOptions struct {
	// OptimisticLock adds the original's resourceVersion, so the patch conflicts when the
	// object changed since.
	OptimisticLock bool
}

// MergeFromWithOptimisticLock makes a MergeFrom patch conflict when the object changed since
// the original was read.
type MergeFromWithOptimisticLock struct{}

// ApplyToMergeFrom turns the lock on.
func (MergeFromWithOptimisticLock) ApplyToMergeFrom(o *MergeFromOptions) { o.OptimisticLock = true }

// MergeFrom is the JSON merge patch from original to the object it is applied with.
func MergeFrom(original Object) Patch {
	return &mergeFromPatch{from: original}
}

// MergeFromWithOptions is MergeFrom with options.
func MergeFromWithOptions(original Object, opts ...MergeFromOption) Patch {
	p := &mergeFromPatch{from: original}
	for _, o := range opts {
		o.ApplyToMergeFrom(&p.opts)
	}
	return p
}

type mergeFromPatch struct {
	from Object
	opts MergeFromOptions
}

func (p *mergeFromPatch) Type() types.PatchType { return types.MergePatchType }

func (p *mergeFromPatch) Data(obj Object) ([]byte, error) {
	original, err := json.Marshal(p.from)
	if err != nil {
		return nil, fmt.Errorf("encoding the original: %w", err)
	}
	modified, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding the object: %w", err)
	}
	patch, err := jsonpatch.CreateMergePatch(original, modified)
	if err != nil || !p.opts.OptimisticLock {
		return patch, err
	}
	return lockedAt(patch, p.from.GetResourceVersion())
}

// lockedAt is patch with metadata.resourceVersion set to version.
func lockedAt(patch []byte, version string) ([]byte, error) {
	var body map[string]any
	if err := json.Unmarshal(patch, &body); err != nil {
		return nil, err
	}
	meta, _ := body["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		body["metadata"] = meta
	}
	meta["resourceVersion"] = version
	return json.Marshal(body)
}
