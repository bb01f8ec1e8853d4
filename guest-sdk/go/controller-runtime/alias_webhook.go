//go:build !controller_runtime_pre_v0_23

package controllerruntime

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// NewWebhookManagedBy starts the webhooks of obj's kind for a manager.
func NewWebhookManagedBy[T runtime.Object](mgr manager.Manager, obj T) *builder.WebhookBuilder[T] {
	return builder.WebhookManagedBy(mgr, obj)
}
