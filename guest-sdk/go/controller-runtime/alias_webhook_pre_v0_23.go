//go:build controller_runtime_pre_v0_23

package controllerruntime

import "sigs.k8s.io/controller-runtime/pkg/builder"

// NewWebhookManagedBy starts webhooks for a manager, as controller-runtime before v0.23 writes
// it; For names their kind.
var NewWebhookManagedBy = builder.WebhookManagedBy
