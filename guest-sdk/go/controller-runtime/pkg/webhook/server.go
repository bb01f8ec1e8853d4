// Package webhook is controller-runtime's webhook server for wasmop guests. The host serves a
// plugin's webhooks — those ctrl.NewWebhookManagedBy declares, checked against its permissions
// and the operator's policy — on its own listener; a handler registered on a path of the
// manager's server fails the plugin's load naming the path.
package webhook

import (
	"context"
	"errors"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// Server is the manager's webhook server.
type Server interface {
	// NeedLeaderElection is false: webhooks are served by every replica.
	NeedLeaderElection() bool
	// Register adds a handler on path; in a guest it fails the load.
	Register(path string, hook http.Handler)
	// Start refuses: the host serves webhooks.
	Start(ctx context.Context) error
	// StartedChecker is healthy: the host's readiness covers its listener.
	StartedChecker() healthz.Checker
	// WebhookMux is a mux no listener serves.
	WebhookMux() *http.ServeMux
}

// Options are the webhook server's options; the host's flags set its listener.
type Options struct {
	// Host is the address to listen on.
	Host string
	// Port is the port to listen on.
	Port int
	// CertDir holds the serving certificate.
	CertDir string
	// CertName and KeyName are the certificate's files.
	CertName, KeyName string
}

// NewServer is a server that refuses handlers (see Server.Register): the host serves webhooks.
func NewServer(Options) Server { return &Refusing{} }

// Refusing is the guest's webhook server: it records the paths handlers were registered on.
type Refusing struct {
	// Paths are the paths Register was called with.
	Paths []string
	mux   http.ServeMux
}

// NeedLeaderElection is false.
func (*Refusing) NeedLeaderElection() bool { return false }

// Register records path, which fails the plugin's load.
func (r *Refusing) Register(path string, _ http.Handler) { r.Paths = append(r.Paths, path) }

// Start refuses.
func (*Refusing) Start(context.Context) error {
	return errors.New("a wasmop guest's webhooks are served by the host")
}

// StartedChecker is healthy.
func (*Refusing) StartedChecker() healthz.Checker { return healthz.Ping }

// WebhookMux is a mux no listener serves.
func (r *Refusing) WebhookMux() *http.ServeMux { return &r.mux }
