// Command webapp is the `webapp` plugin: each WebApp (example.wasmop.dev/v1alpha1) becomes a
// Deployment and a ClusterIP Service it controls, plus an external marker ConfigMap that its
// finalizer deletes. Its status reports the Deployment's ready replicas and a Ready condition. A
// converged WebApp is reconciled without a single write.
//
// The finalizer is added and removed by updating the whole WebApp at the resourceVersion it was
// read at, so a concurrent change makes the write fail with a conflict, which retries the
// reconcile.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"wasmop.dev/guest"
	"wasmop.dev/guest/cache"
	"wasmop.dev/guest/client"
	"wasmop.dev/guest/events"
)

// Finalizer keeps a WebApp until its marker ConfigMap is gone.
const Finalizer = "example.wasmop.dev/cleanup"

// Version is the plugin's version, in its registration and in the applied-by annotation.
const Version = "0.1.0"

// plugin is the webapp reconciler.
var plugin = guest.Reconciler{
	Registration: guest.Registration{
		Name:    "webapp",
		Version: Version,
		Primary: WebAppKind,
		Owns:    []guest.Kind{guest.Deployment, guest.Service},
		Permissions: []guest.Permission{
			{Kind: guest.Deployment, Verbs: guest.Writes},
			{Kind: guest.Service, Verbs: guest.Writes},
			{Kind: WebAppKind, Verbs: []guest.Verb{guest.VerbUpdate, guest.VerbPatch, guest.VerbStatus}},
			{Kind: guest.ConfigMap, Verbs: []guest.Verb{guest.VerbGet, guest.VerbCreate, guest.VerbDelete}},
		},
		MaxConcurrentReconciles: 4,
		ReconcileTimeout:        10 * time.Second,
	},
	Reconcile: reconcile,
	Webhooks:  webhooks,
}

func init() {
	guest.Register(plugin)
}

func main() {}

// reconcile converges one WebApp: finalizer, marker, Deployment, Service, then status.
func reconcile(_ context.Context, req guest.Request) (guest.Result, error) {
	app, err := cache.GetOptional(WebAppKind, req.Namespace, req.Name)
	if err != nil || app == nil {
		return guest.Result{}, err
	}
	if app.IsDeleting() {
		return guest.Result{}, finalize(app)
	}
	if app, err = ensureFinalizer(app); err != nil {
		return guest.Result{}, err
	}
	if err := ensureMarker(app); err != nil {
		return guest.Result{}, err
	}
	owner := app.ControllerOwnerRef()
	if owner == nil {
		return guest.Result{}, guest.Terminal(fmt.Errorf("WebApp %s has no uid", req))
	}
	deployment, err := ensureDeployment(app, desiredDeployment(app, owner))
	if err != nil {
		return guest.Result{}, err
	}
	if err := ensureService(desiredService(app, owner)); err != nil {
		return guest.Result{}, err
	}
	status := desiredStatus(app, deployment.Int("status", "readyReplicas"))
	if !guest.Equal(app.Get("status"), status) {
		patch := client.MergePatch(map[string]any{"status": status})
		if _, err := client.PatchStatus(WebAppKind, req.Namespace, req.Name, patch); err != nil {
			return guest.Result{}, err
		}
	}
	return guest.Result{}, nil
}

// finalize deletes the marker and releases the WebApp by removing the finalizer.
func finalize(app guest.Object) error {
	if !app.HasFinalizer(Finalizer) {
		return nil
	}
	key := app.Key()
	if err := client.Delete(guest.ConfigMap, key.Namespace, markerName(key.Name)); guest.IgnoreNotFound(err) != nil {
		return err
	}
	app.RemoveFinalizer(Finalizer)
	if _, err := client.Update(app); err != nil {
		return err
	}
	slog.Info("released WebApp " + key.String())
	return nil
}

// ensureFinalizer is the WebApp with the finalizer, added by an update when it was missing.
func ensureFinalizer(app guest.Object) (guest.Object, error) {
	if !app.AddFinalizer(Finalizer) {
		return app, nil
	}
	return client.Update(app)
}

// ensureMarker creates the marker ConfigMap when it does not exist.
func ensureMarker(app guest.Object) error {
	marker := desiredMarker(app)
	existing, err := cache.GetOptional(guest.ConfigMap, marker.Namespace(), marker.Name())
	if err != nil || existing != nil {
		return err
	}
	if _, err := client.Create(marker); err != nil && !errors.Is(err, guest.ErrAlreadyExists) {
		return err
	}
	return nil
}

// ensureDeployment applies the Deployment when it is missing or drifted and returns the
// Deployment as it stands.
func ensureDeployment(app, want guest.Object) (guest.Object, error) {
	current, err := cache.GetOptional(guest.Deployment, want.Namespace(), want.Name())
	if err != nil {
		return nil, err
	}
	if current != nil && deploymentMatches(current, want) {
		return current, nil
	}
	applied, err := client.Apply(want, true)
	if err != nil {
		return nil, err
	}
	if current == nil {
		events.Normal(app, "Created", "Created Deployment "+want.Key().String())
	}
	return applied, nil
}

// ensureService applies the Service when it is missing or drifted.
func ensureService(want guest.Object) error {
	current, err := cache.GetOptional(guest.Service, want.Namespace(), want.Name())
	if err != nil {
		return err
	}
	if current != nil && serviceMatches(current, want) {
		return nil
	}
	_, err = client.Apply(want, true)
	return err
}
