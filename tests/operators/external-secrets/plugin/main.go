// Command plugin is External Secrets Operator's ClusterExternalSecret controller
// (github.com/external-secrets/external-secrets v0.16.2, pkg/controllers/clusterexternalsecret)
// as a wasmop plugin: the package is compiled unchanged against guest-sdk/go/controller-runtime,
// and this main does what the operator's own main does for that controller — build the scheme,
// set up its metrics, construct the Reconciler as the package's test suite does and call
// SetupWithManager (the suite's rate limiter aside: the host's queue has its own). The package
// has no kubebuilder RBAC markers (the operator's chart grants its roles), so the writes it makes
// are declared here. Its Namespace watch filters with a predicate.Funcs comparing old and new
// labels: the host hands each Namespace change to the plugin, which runs that predicate on the old
// and the new object, as the operator's own controller does.
package main

import (
	"time"

	esv1 "github.com/external-secrets/external-secrets/apis/externalsecrets/v1"
	"github.com/external-secrets/external-secrets/pkg/controllers/clusterexternalsecret"
	"github.com/external-secrets/external-secrets/pkg/controllers/clusterexternalsecret/cesmetrics"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/wasmop"
	"wasmop.dev/guest"
)

func init() {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, esv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	cesmetrics.SetUpMetrics()
	kind := func(k string) guest.Kind { return guest.Kind{Group: esv1.Group, Version: esv1.Version, Kind: k} }
	wasmop.Register(wasmop.Plugin{
		Name: "clusterexternalsecret", Version: "0.16.2", Scheme: scheme,
		Permissions: []guest.Permission{
			{Kind: kind("ExternalSecret"), Verbs: guest.Writes},
			{Kind: kind("ClusterExternalSecret"), Verbs: []guest.Verb{guest.VerbStatus}},
		},
		Setup: func(mgr ctrl.Manager) error {
			r := &clusterexternalsecret.Reconciler{
				Client:          mgr.GetClient(),
				Scheme:          mgr.GetScheme(),
				Log:             ctrl.Log.WithName("controllers").WithName("ClusterExternalSecret"),
				RequeueInterval: time.Second,
			}
			return r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 1})
		},
	})
}

func main() {}
