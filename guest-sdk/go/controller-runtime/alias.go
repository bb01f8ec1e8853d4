// Package controllerruntime is controller-runtime's top-level package for wasmop guests
// (imported as ctrl): aliases of the types and functions reconcilers use most.
package controllerruntime

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Builder builds a controller.
type Builder = builder.Builder

// Request is a reconcile request.
type Request = reconcile.Request

// Result is a reconcile's result.
type Result = reconcile.Result

// Manager is what SetupWithManager is handed.
type Manager = manager.Manager

// Options are manager options.
type Options = manager.Options

// SchemeBuilder registers an API group's types.
type SchemeBuilder = scheme.Builder

// GroupVersion is an API group and version.
type GroupVersion = schema.GroupVersion

// GroupResource is an API group and resource.
type GroupResource = schema.GroupResource

// TypeMeta is an object's apiVersion and kind.
type TypeMeta = metav1.TypeMeta

// ObjectMeta is an object's metadata.
type ObjectMeta = metav1.ObjectMeta

var (
	// NewControllerManagedBy starts a controller for a manager.
	NewControllerManagedBy = builder.ControllerManagedBy
	// CreateOrPatch creates an object or patches it and its status.
	CreateOrPatch = controllerutil.CreateOrPatch
	// CreateOrUpdate creates or updates an object.
	CreateOrUpdate = controllerutil.CreateOrUpdate
	// SetControllerReference makes an owner an object's controller.
	SetControllerReference = controllerutil.SetControllerReference
	// Log is the root logger.
	Log = log.Log
	// LoggerFrom is a context's logger.
	LoggerFrom = log.FromContext
	// LoggerInto puts a logger into a context.
	LoggerInto = log.IntoContext
	// SetLogger replaces the root logger.
	SetLogger = log.SetLogger
	// GetConfig is the rest.Config of the plugin's own clients, whose transport is the host.
	GetConfig = config.GetConfig
	// GetConfigOrDie is GetConfig.
	GetConfigOrDie = config.GetConfigOrDie
)
