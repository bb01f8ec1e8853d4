package main

import "wasmop.dev/guest"

// WebAppKind is the WebApp custom resource, as deploy/crds/webapp.yaml declares it.
var WebAppKind = guest.Kind{Group: "example.wasmop.dev", Version: "v1alpha1", Kind: "WebApp"}

// Spec is the desired state of a WebApp, with the CRD's defaults for absent fields.
type Spec struct {
	// Image is the container image to run.
	Image string
	// Replicas is how many pods to run.
	Replicas int64
	// Port is the port the container listens on and the Service exposes.
	Port int64
}

// specOf reads a WebApp's spec.
func specOf(app guest.Object) Spec {
	spec := Spec{Image: app.String("spec", "image"), Replicas: 1, Port: 8080}
	if app.Get("spec", "replicas") != nil {
		spec.Replicas = app.Int("spec", "replicas")
	}
	if app.Get("spec", "port") != nil {
		spec.Port = app.Int("spec", "port")
	}
	return spec
}
