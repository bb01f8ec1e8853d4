// Package client writes to the apiserver through the host. Every call is checked against the
// plugin's declared permissions; successful writes return the object as the apiserver stored it.
package client

import (
	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/host"
	"wasmop.dev/guest/internal/wit"
)

// Create creates obj (namespace and kind taken from it).
func Create(obj guest.Object) (guest.Object, error) {
	return write(obj, CreateJSON)
}

// Update replaces obj; its metadata.resourceVersion guards against lost updates (*guest.Conflict).
func Update(obj guest.Object) (guest.Object, error) {
	return write(obj, UpdateJSON)
}

// UpdateStatus replaces obj's status subresource.
func UpdateStatus(obj guest.Object) (guest.Object, error) {
	return write(obj, UpdateStatusJSON)
}

// Patch patches an object; namespace is "" for cluster-scoped kinds.
func Patch(kind guest.Kind, namespace, name string, patch PatchBody) (guest.Object, error) {
	return decode(PatchJSON(kind, namespace, name, patch))
}

// PatchStatus patches an object's status subresource.
func PatchStatus(kind guest.Kind, namespace, name string, patch PatchBody) (guest.Object, error) {
	return decode(PatchStatusJSON(kind, namespace, name, patch))
}

// Apply server-side applies obj, the fields the plugin owns, under its field manager; force takes
// over fields other managers own.
func Apply(obj guest.Object, force bool) (guest.Object, error) {
	return Patch(obj.Kind(), obj.Namespace(), obj.Name(), ApplyPatch(obj, force))
}

// ApplyStatus server-side applies obj's status.
func ApplyStatus(obj guest.Object, force bool) (guest.Object, error) {
	return PatchStatus(obj.Kind(), obj.Namespace(), obj.Name(), ApplyPatch(obj, force))
}

// CreateJSON is Create of an object encoded as JSON, returning the stored object's JSON.
func CreateJSON(obj string) (string, error) {
	return stored(host.Get().ClientCreate(obj))
}

// UpdateJSON is Update of an object encoded as JSON, returning the stored object's JSON.
func UpdateJSON(obj string) (string, error) {
	return stored(host.Get().ClientUpdate(obj))
}

// UpdateStatusJSON is UpdateStatus of an object encoded as JSON.
func UpdateStatusJSON(obj string) (string, error) {
	return stored(host.Get().ClientUpdateStatus(obj))
}

// PatchJSON is Patch, returning the stored object's JSON.
func PatchJSON(kind guest.Kind, namespace, name string, patch PatchBody) (string, error) {
	body, err := patch.wit()
	if err != nil {
		return "", err
	}
	return stored(host.Get().ClientPatch(kind.WIT(), namespace, name, body))
}

// PatchStatusJSON is PatchStatus, returning the stored object's JSON.
func PatchStatusJSON(kind guest.Kind, namespace, name string, patch PatchBody) (string, error) {
	body, err := patch.wit()
	if err != nil {
		return "", err
	}
	return stored(host.Get().ClientPatchStatus(kind.WIT(), namespace, name, body))
}

func write(obj guest.Object, call func(string) (string, error)) (guest.Object, error) {
	data, err := obj.Encode()
	if err != nil {
		return nil, err
	}
	return decode(call(data))
}

func stored(r wit.Result[wit.Object, wit.Error]) (string, error) {
	if r.IsErr {
		return "", guest.FromWIT(r.Err)
	}
	return r.Ok, nil
}

func decode(data string, err error) (guest.Object, error) {
	if err != nil {
		return nil, err
	}
	return guest.Decode(data)
}
