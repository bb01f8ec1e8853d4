package webapp

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Finalizer keeps a WebApp until its marker ConfigMap is gone.
const Finalizer = "example.wasmop.dev/cleanup"

const (
	// Concurrency is how many WebApps are reconciled at once.
	Concurrency = 4
	// ReconcileTimeout is how long one reconcile may take.
	ReconcileTimeout = 10 * time.Second
)

// WebAppReconciler converges each WebApp: finalizer, marker ConfigMap, Deployment, Service, then
// status. It reads from the manager's cache and writes only what differs, so a converged WebApp
// causes no writes.
type WebAppReconciler struct {
	// Client reads from the cache and writes to the apiserver under the operator's field manager.
	Client client.Client
	// Recorder records an event when a WebApp's Deployment is created.
	Recorder events.EventRecorder
}

// SetupWithManager has mgr run r over WebApps and the Deployments and Services they own.
func (r *WebAppReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&WebApp{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: Concurrency,
			ReconciliationTimeout:   ReconcileTimeout,
		}).
		Complete(r)
}

// Reconcile converges the WebApp named by req.
//
// +kubebuilder:rbac:groups=example.wasmop.dev,resources=webapps,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=example.wasmop.dev,resources=webapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=example.wasmop.dev,resources=webapps/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;delete
func (r *WebAppReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := &WebApp{}
	if err := r.Client.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, app)
	}
	// The finalizer is added by updating the whole WebApp at the resourceVersion it was read at,
	// so a concurrent change fails with a conflict and the reconcile is retried.
	if controllerutil.AddFinalizer(app, Finalizer) {
		if err := r.Client.Update(ctx, app); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.ensureMarker(ctx, app); err != nil {
		return ctrl.Result{}, err
	}
	if app.UID == "" {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("WebApp %s has no uid", req))
	}
	owner := controllerRef(app)
	ready, err := r.ensureDeployment(ctx, app, desiredDeployment(app, owner))
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureService(ctx, desiredService(app, owner)); err != nil {
		return ctrl.Result{}, err
	}
	status := desiredStatus(app, ready)
	if !equality.Semantic.DeepEqual(app.Status, status) {
		patch := client.MergeFrom(app.DeepCopy())
		app.Status = status
		if err := r.Client.Status().Patch(ctx, app, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// finalize deletes the marker and releases the WebApp by removing the finalizer.
func (r *WebAppReconciler) finalize(ctx context.Context, app *WebApp) error {
	if !controllerutil.ContainsFinalizer(app, Finalizer) {
		return nil
	}
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: markerName(app.Name)}}
	if err := r.Client.Delete(ctx, marker); client.IgnoreNotFound(err) != nil {
		return err
	}
	controllerutil.RemoveFinalizer(app, Finalizer)
	if err := r.Client.Update(ctx, app); err != nil {
		return err
	}
	log.FromContext(ctx).Info("released WebApp")
	return nil
}

// ensureMarker creates the marker ConfigMap unless the cache has it.
func (r *WebAppReconciler) ensureMarker(ctx context.Context, app *WebApp) error {
	marker := desiredMarker(app)
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(marker), &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	if err := r.Client.Create(ctx, marker); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// ensureDeployment applies the Deployment when it is missing or drifted and returns its ready
// replicas as they stand.
func (r *WebAppReconciler) ensureDeployment(ctx context.Context, app *WebApp, want *appsv1ac.DeploymentApplyConfiguration) (int32, error) {
	key := types.NamespacedName{Namespace: *want.Namespace, Name: *want.Name}
	current := &appsv1.Deployment{}
	err := r.Client.Get(ctx, key, current)
	switch {
	case err == nil && deploymentMatches(current, want):
		return current.Status.ReadyReplicas, nil
	case err != nil && !apierrors.IsNotFound(err):
		return 0, err
	}
	missing := err != nil
	if err := r.Client.Apply(ctx, want, client.ForceOwnership); err != nil {
		return 0, err
	}
	if missing {
		r.Recorder.Eventf(app, nil, corev1.EventTypeNormal, "Created", "Created", "Created Deployment %s", key)
	}
	if want.Status == nil || want.Status.ReadyReplicas == nil {
		return 0, nil
	}
	return *want.Status.ReadyReplicas, nil
}

// ensureService applies the Service when it is missing or drifted.
func (r *WebAppReconciler) ensureService(ctx context.Context, want *corev1ac.ServiceApplyConfiguration) error {
	current := &corev1.Service{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: *want.Namespace, Name: *want.Name}, current)
	switch {
	case err == nil && serviceMatches(current, want):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	return r.Client.Apply(ctx, want, client.ForceOwnership)
}
