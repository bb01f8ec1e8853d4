// `@NAME@`: marks each @KIND@ (`@API_VERSION@`) with the generation it last reconciled, in the
// annotation `@NAME@.wasmop.dev/observed-generation`. Replace `reconcile` with your own logic and
// `fixtures/` with what it should do.
package main

import (
	"context"
	"strconv"

	guest "wasmop.dev/guest"
	"wasmop.dev/guest/cache"
	"wasmop.dev/guest/client"
)

const observed = "@NAME@.wasmop.dev/observed-generation"

var primary = guest.Kind{Group: "@GROUP@", Version: "@VERSION@", Kind: "@KIND@"}

func init() {
	guest.Register(guest.Reconciler{
		Registration: guest.Registration{
			Name: "@NAME@", Version: "0.1.0", Primary: primary,
			Permissions: []guest.Permission{{Kind: primary, Verbs: []guest.Verb{guest.VerbPatch}}},
		},
		Reconcile: reconcile,
	})
}

func main() {}

func reconcile(_ context.Context, req guest.Request) (guest.Result, error) {
	obj, err := cache.GetOptional(primary, req.Namespace, req.Name)
	if err != nil || obj == nil {
		return guest.Result{}, err
	}
	generation := strconv.FormatInt(obj.Generation(), 10)
	if obj.Annotations()[observed] == generation {
		return guest.Result{}, nil
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]string{observed: generation}}}
	_, err = client.Patch(primary, req.Namespace, req.Name, client.MergePatch(patch))
	return guest.Result{}, err
}
