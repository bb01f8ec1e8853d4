package webapp

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// SetupWebhookWithManager serves WebApp's validating and defaulting webhooks, and its conversion
// when the manager's scheme holds v1beta1 (AddV1beta1ToScheme).
func SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &WebApp{}).WithValidator(WebAppValidator{}).WithDefaulter(WebAppDefaulter{}).Complete()
}

// MaxReplicas is the most replicas a WebApp may ask for, as the `webapp` plugin validates.
const MaxReplicas = 50

// imageReference is the distribution spec's image reference: `[host[:port]/]path[:tag][@digest]`.
var imageReference = func() *regexp.Regexp {
	component := `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	label := `[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?`
	host := label + `(?:\.` + label + `)*(?::[0-9]{1,5})?`
	return regexp.MustCompile(`^(?:(` + host + `)/)?` + component + `(?:/` + component + `)*` +
		`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?` +
		`(?:@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,})?$`)
}()

// hostPart matches a first path component that can only be a path, never a host.
var hostPart = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)

// wellFormedImage reports whether image is a well-formed reference: a first part is a host only
// if it has a dot or a port or is `localhost`.
func wellFormedImage(image string) bool {
	match := imageReference.FindStringSubmatch(image)
	if match == nil {
		return false
	}
	host := match[1]
	return host == "" || strings.ContainsAny(host, ".:") || host == "localhost" || hostPart.MatchString(host)
}

// WebAppValidator refuses WebApps with more than MaxReplicas replicas or a malformed image: the
// `webapp` plugin's validating webhook, as a controller-runtime user writes it.
type WebAppValidator struct{}

var _ admission.Validator[*WebApp] = WebAppValidator{}

func (WebAppValidator) validate(app *WebApp) (admission.Warnings, error) {
	if app.Spec.Replicas < 0 || app.Spec.Replicas > MaxReplicas {
		return nil, fmt.Errorf("spec.replicas must be between 0 and %d, not %d", MaxReplicas, app.Spec.Replicas)
	}
	if !wellFormedImage(app.Spec.Image) {
		return nil, fmt.Errorf("spec.image %q is not a well-formed image reference", app.Spec.Image)
	}
	return nil, nil
}

// ValidateCreate validates a new WebApp.
func (v WebAppValidator) ValidateCreate(_ context.Context, app *WebApp) (admission.Warnings, error) {
	return v.validate(app)
}

// ValidateUpdate validates a changed WebApp.
func (v WebAppValidator) ValidateUpdate(_ context.Context, _, app *WebApp) (admission.Warnings, error) {
	return v.validate(app)
}

// ValidateDelete admits every delete.
func (WebAppValidator) ValidateDelete(context.Context, *WebApp) (admission.Warnings, error) {
	return nil, nil
}

// WebAppDefaulter sets the port of a WebApp that names none to 8080: the `webapp` plugin's
// defaulting webhook.
type WebAppDefaulter struct{}

var _ admission.Defaulter[*WebApp] = WebAppDefaulter{}

// Default sets the WebApp's defaults.
func (WebAppDefaulter) Default(_ context.Context, app *WebApp) error {
	if app.Spec.Port == 0 {
		app.Spec.Port = 8080
	}
	return nil
}
