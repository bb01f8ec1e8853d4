package main

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"

	"wasmop.dev/guest"
)

// The webapp plugin's webhooks, as the Rust and Python plugins': WebApps are refused with more
// than 50 replicas or an image that is not a well-formed reference, get port 8080 when they
// name none, and convert between v1alpha1 and v1beta1, which calls spec.replicas
// spec.instances.

const (
	// MaxReplicas is the most replicas a WebApp may ask for.
	MaxReplicas = 50
	// DefaultPort is the port a WebApp that names none gets.
	DefaultPort = 8080
)

// webhooks are what webapp serves for WebApps.
var webhooks = guest.Webhooks{
	Validate:  []guest.WebhookRule{{Kind: WebAppKind}},
	Validator: validate,
	Default:   []guest.WebhookRule{{Kind: WebAppKind}},
	Defaulter: setDefaults,
	Convert:   []guest.Kind{WebAppKind},
	Converter: convert,
}

const (
	component = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	label     = `[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?`
	host      = `(?:` + label + `(?:\.` + label + `)*(?::[0-9]{1,5})?)`
)

var (
	image = regexp.MustCompile(`^(?:(?P<host>` + host + `)/)?` + component + `(?:/` + component + `)*` +
		`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?` +
		`(?:@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,})?$`)
	pathComponent = regexp.MustCompile(`^` + component + `$`)
)

// wellFormedImage says whether ref is [host[:port]/]path[:tag][@algorithm:digest] as the
// distribution spec writes it: a first part is a host only if it has a dot or a port or is
// localhost.
func wellFormedImage(ref string) bool {
	m := image.FindStringSubmatch(ref)
	if m == nil {
		return false
	}
	named, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(named, ":"); i >= 0 {
		named = named[:i]
	}
	if len(named) > 255 {
		return false
	}
	h := m[image.SubexpIndex("host")]
	return h == "" || strings.ContainsAny(h, ".:") || h == "localhost" || pathComponent.MatchString(h)
}

// validate admits a WebApp whose replicas are within 0..=50 and whose image is well-formed.
func validate(_ context.Context, req guest.AdmissionRequest) ([]string, error) {
	app := req.Object
	if app == nil {
		return nil, nil
	}
	spec := app.Map("spec")
	if spec == nil {
		return nil, guest.Deny("a WebApp needs a spec")
	}
	field := "replicas"
	if req.Kind.Version == "v1beta1" {
		field = "instances"
	}
	if replicas, present := spec[field]; present {
		n, ok := replicas.(float64)
		if !ok || n != math.Trunc(n) || n < 0 || n > MaxReplicas {
			return nil, guest.Deny("spec.%s must be between 0 and %d, not %v", field, MaxReplicas, replicas)
		}
	}
	ref, ok := spec["image"].(string)
	if !ok {
		return nil, guest.Deny("spec.image is required")
	}
	if !wellFormedImage(ref) {
		return nil, guest.Deny("spec.image %q is not a well-formed image reference", ref)
	}
	return nil, nil
}

// setDefaults is the request's WebApp with spec.port set to 8080 when it names none.
func setDefaults(_ context.Context, req guest.AdmissionRequest) (guest.Object, error) {
	app := req.Object
	if app == nil {
		return nil, guest.Deny("no WebApp to default")
	}
	spec := app.Map("spec")
	if spec == nil {
		return nil, guest.Deny("a WebApp needs a spec")
	}
	if _, present := spec["port"]; !present {
		spec["port"] = DefaultPort
	}
	return app, nil
}

// webAppVersion is the version of a WebApp apiVersion, or an error for any other.
func webAppVersion(apiVersion string) (string, error) {
	group, version, _ := strings.Cut(apiVersion, "/")
	if group != WebAppKind.Group || (version != "v1alpha1" && version != "v1beta1") {
		return "", fmt.Errorf("%s is not a WebApp version", apiVersion)
	}
	return version, nil
}

// convert is obj as a WebApp of apiVersion (example.wasmop.dev/v1alpha1 or .../v1beta1).
func convert(_ context.Context, obj guest.Object, apiVersion string) (guest.Object, error) {
	source, err := webAppVersion(obj.String("apiVersion"))
	if err != nil {
		return nil, err
	}
	target, err := webAppVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	if spec := obj.Map("spec"); spec != nil && source != target {
		from, to := "instances", "replicas"
		if target == "v1beta1" {
			from, to = to, from
		}
		if v, present := spec[from]; present {
			spec[to] = v
			delete(spec, from)
		}
	}
	obj["apiVersion"] = apiVersion
	return obj, nil
}
