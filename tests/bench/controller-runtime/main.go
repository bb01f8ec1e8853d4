// Command webapp-controller-runtime is the `webapp` operator written natively with
// controller-runtime, the baseline the wasmop benchmarks (tests/bench) compare wasmop with. Each
// WebApp (example.wasmop.dev/v1alpha1) gets a finalizer, an external marker ConfigMap, a
// Deployment and a ClusterIP Service it controls, and a status: the behaviour of the `webapp`
// plugin (plugins/webapp), written the way controller-runtime users write an operator.
//
// It reads the kubeconfig from KUBECONFIG (or the in-cluster config) and watches the namespace
// WEBAPP_NAMESPACE, or all namespaces when that is unset, and serves WebApps from the API group
// WEBAPP_GROUP when set; with WEBAPP_WEBHOOK_CERT_DIR it also
// serves the plugin's validating and defaulting webhooks (webapp/webhook.go). It has no leader
// election, no metrics or health endpoints, logs JSON at info level to stderr, and stops on
// SIGTERM or SIGINT once running reconciles finish.
package main

import (
	"fmt"
	"os"
	"strconv"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"wasmop.dev/bench/webapp-controller-runtime/webapp"
)

// Settings of the operator, the `webapp` plugin's where it has them.
const (
	// NamespaceEnv names the environment variable naming the one namespace to watch.
	NamespaceEnv = "WEBAPP_NAMESPACE"
	// GroupEnv names the environment variable naming another API group to serve WebApps from.
	GroupEnv = "WEBAPP_GROUP"
	// Manager is the field manager of every write.
	Manager = "webapp-controller-runtime"
	// WebhookCertDirEnv names the environment variable naming a directory with tls.crt and
	// tls.key: when set, the validating and defaulting webhooks are served on 127.0.0.1 at the
	// port WebhookPortEnv names, under controller-runtime's paths
	// /validate-example-wasmop-dev-v1alpha1-webapp and /mutate-example-wasmop-dev-v1alpha1-webapp.
	WebhookCertDirEnv = "WEBAPP_WEBHOOK_CERT_DIR"
	// WebhookPortEnv names the environment variable naming the webhook server's port.
	WebhookPortEnv = "WEBAPP_WEBHOOK_PORT"
)

func main() {
	ctrl.SetLogger(zap.New(zap.UseDevMode(false), zap.Level(zapcore.InfoLevel)))
	setup := ctrl.Log.WithName("setup")
	if err := run(); err != nil {
		setup.Error(err, "webapp-controller-runtime failed")
		os.Exit(1)
	}
}

// cacheOptions caches the namespace (when not empty) or all namespaces, every object without its
// managedFields, as controller-runtime's best users configure it: all operators of the benchmark
// cache the same objects (ConfigMaps whole, as controller-runtime does by default), without
// managedFields, as wasmop's cache holds them.
func cacheOptions(namespace string) cache.Options {
	options := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if namespace != "" {
		options.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	return options
}

func run() error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if group := os.Getenv(GroupEnv); group != "" {
		webapp.UseGroup(group)
	}
	if err := webapp.AddToScheme(scheme); err != nil {
		return err
	}
	namespace := os.Getenv(NamespaceEnv)
	options := ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOptions(namespace),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	}
	certDir := os.Getenv(WebhookCertDirEnv)
	if certDir != "" {
		port, err := strconv.Atoi(os.Getenv(WebhookPortEnv))
		if err != nil {
			return fmt.Errorf("%s: %w", WebhookPortEnv, err)
		}
		options.WebhookServer = webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), options)
	if err != nil {
		return err
	}
	if certDir != "" {
		if err := webapp.SetupWebhookWithManager(mgr); err != nil {
			return err
		}
	}
	reconciler := &webapp.WebAppReconciler{
		Client:   client.WithFieldOwner(mgr.GetClient(), Manager),
		Recorder: mgr.GetEventRecorder(Manager),
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return err
	}
	if namespace == "" {
		namespace = "<all>"
	}
	ctrl.Log.Info("webapp-controller-runtime starting", "namespace", namespace, "concurrency", webapp.Concurrency)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return err
	}
	ctrl.Log.Info("webapp-controller-runtime stopped")
	return nil
}
