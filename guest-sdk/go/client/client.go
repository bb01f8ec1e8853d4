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
	return write(obj, host.Get().ClientCreate)
}

// Update replaces obj; its metadata.resourceVersion guards against lost updates (*guest.Conflict).
func Update(obj guest.Object) (guest.Object, error) {
	return write(obj, host.Get().ClientUpdate)
}

// UpdateStatus replaces obj's status subresource.
func UpdateStatus(obj guest.Object) (guest.Object, error) {
	return write(obj, host.Get().ClientUpdateStatus)
}

// Patch patches an object; namespace is "" for cluster-scoped kinds.
func Patch(kind guest.Kind, namespace, name string, patch PatchBody) (guest.Object, error) {
	body, err := patch.wit()
	if err != nil {
		return nil, err
	}
	return decode(host.Get().ClientPatch(kind.WIT(), namespace, name, body))
}

// PatchStatus patches an object's status subresource.
func PatchStatus(kind guest.Kind, namespace, name string, patch PatchBody) (guest.Object, error) {
	body, err := patch.wit()
	if err != nil {
		return nil, err
	}
	return decode(host.Get().ClientPatchStatus(kind.WIT(), namespace, name, body))
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

func write(obj guest.Object, call func(wit.Object) wit.Result[wit.Object, wit.Error]) (guest.Object, error) {
	data, err := obj.Encode()
	if err != nil {
		return nil, err
	}
	return decode(call(data))
}

func decode(r wit.Result[wit.Object, wit.Error]) (guest.Object, error) {
	if r.IsErr {
		return nil, guest.FromWIT(r.Err)
	}
	return guest.Decode(r.Ok)
}
