package plugin

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
	"wasmop.dev/guest"
)

// Webhook is what a webhook builder completed for one kind: the host serves it.
type Webhook struct {
	// Kind is the kind, in the version of the builder's type.
	Kind schema.GroupVersionKind
	// Validate answers its validating requests; nil when it has none.
	Validate admission.ValidateFunc
	// Default answers its defaulting requests; nil when it has none.
	Default admission.DefaultFunc
	// Convert says its versions convert through their hub.
	Convert bool
}

// Start refuses: the host serves the webhooks, not the guest.
func (w *Webhook) Start(context.Context) error {
	return errors.New("a wasmop guest's webhooks are served by the host")
}

// addWebhook takes w, refusing a second webhook builder for its kind.
func (m *Manager) addWebhook(w *Webhook) error {
	for _, known := range m.webhooks {
		if known.Kind.GroupKind() == w.Kind.GroupKind() {
			return fmt.Errorf("a second webhook builder for %s: build one per kind", w.Kind.GroupKind())
		}
	}
	m.webhooks = append(m.webhooks, w)
	return nil
}

// createAndUpdate are the operations a controller-runtime webhook is registered for.
var createAndUpdate = []guest.Operation{guest.OperationCreate, guest.OperationUpdate}

// GuestWebhooks are the guest's webhooks: each kind's, its requests dispatched by kind.
func (m *Manager) GuestWebhooks() guest.Webhooks {
	var out guest.Webhooks
	validators := map[schema.GroupVersionKind]admission.ValidateFunc{}
	defaulters := map[schema.GroupVersionKind]admission.DefaultFunc{}
	for _, w := range m.webhooks {
		rule := guest.WebhookRule{Kind: kindOf(w.Kind), Operations: createAndUpdate}
		if w.Validate != nil {
			out.Validate, validators[w.Kind] = append(out.Validate, rule), w.Validate
		}
		if w.Default != nil {
			out.Default, defaulters[w.Kind] = append(out.Default, rule), w.Default
		}
		if w.Convert {
			out.Convert = append(out.Convert, kindOf(w.Kind))
		}
	}
	if len(validators) > 0 {
		out.Validator = func(ctx context.Context, req guest.AdmissionRequest) ([]string, error) {
			return byKind(validators, req.Kind)(ctx, req)
		}
	}
	if len(defaulters) > 0 {
		out.Defaulter = func(ctx context.Context, req guest.AdmissionRequest) (guest.Object, error) {
			return byKind(defaulters, req.Kind)(ctx, req)
		}
	}
	if len(out.Convert) > 0 {
		out.Converter = conversion.Convert(m.scheme)
	}
	return out
}

// byKind is the function registered for kind; the host asks only for declared kinds.
func byKind[F any](functions map[schema.GroupVersionKind]F, kind guest.Kind) F {
	f, ok := functions[schema.GroupVersionKind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind}]
	if !ok {
		panic(fmt.Sprintf("the host asked for a webhook of %s, which the plugin did not declare", kind))
	}
	return f
}
