// Command reach is a controller-runtime plugin that reaches the apiserver with client-go's own
// clients, as operators do beside their controller-runtime client: a typed clientset and a
// dynamic client built from ctrl.GetConfig, discovery, and mgr.GetAPIReader. It declares
// ConfigMaps, and reads of Leases by a marker, which names no version: the host informs the one
// the apiserver prefers. Reconciling the ConfigMap `reach` of a namespace, it tries each client on
// what it declared and on what it did not (Secrets, Pods, a watch, an owner reference to a
// Secret), reads the Lease `reach` through its clientset and its cache, lists ConfigMaps in `default` and in every namespace (which a tenant's plugin
// confined to its namespace may not), and writes what each answered (`ok` or the apiserver's
// reason) into the ConfigMap `reach-result` beside it, created through the clientset, with the
// arguments and the variable REACH_MARK it started with (`args`, `mark`), as an operator's main
// reads its flags. It may also read OpenShift's routes, which a plain apiserver does not serve.
package main

import (
	"context"
	"os"
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/wasmop"
	"wasmop.dev/guest"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch

type reacher struct {
	cache     client.Reader
	leases    coordinationv1client.CoordinationV1Interface
	core      corev1client.CoreV1Interface
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	api       client.Reader
}

func (r *reacher) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Name != "reach" {
		return ctrl.Result{}, nil
	}
	ns := req.Namespace
	results := map[string]string{}
	note := func(what string, err error) {
		results[what] = answer(err)
	}
	_, err := r.core.ConfigMaps(ns).Get(ctx, "reach", metav1.GetOptions{})
	note("typed-get", err)
	_, err = r.core.Secrets(ns).List(ctx, metav1.ListOptions{})
	note("typed-list-secrets", err)
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	_, err = r.dynamic.Resource(secrets).Namespace(ns).Get(ctx, "token", metav1.GetOptions{})
	note("dynamic-get-secret", err)
	_, err = r.core.Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}}, metav1.CreateOptions{})
	note("typed-create-pod", err)
	_, err = r.core.ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	note("typed-watch", err)
	forged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "forged", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "Secret", Name: "token", UID: "00000000-0000-0000-0000-000000000000"},
	}}}
	_, err = r.core.ConfigMaps(ns).Create(ctx, forged, metav1.CreateOptions{})
	note("typed-create-owned-by-secret", err)
	groups, err := r.discovery.ServerGroups()
	note("discovery", err)
	if err == nil && slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "apps" }) {
		results["discovery-finds-apps"] = "ok"
	}
	_, err = r.core.ConfigMaps(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	note("typed-list-elsewhere", err)
	_, err = r.core.ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	note("typed-list-everywhere", err)
	var read corev1.ConfigMap
	note("api-reader-get", r.api.Get(ctx, req.NamespacedName, &read))
	var secretList corev1.SecretList
	note("api-reader-list-secrets", r.api.List(ctx, &secretList, client.InNamespace(ns)))

	_, err = r.leases.Leases(ns).Get(ctx, "reach", metav1.GetOptions{})
	note("typed-get-lease", err)
	note("cache-get-lease", r.cache.Get(ctx, types.NamespacedName{Namespace: ns, Name: "reach"}, &coordinationv1.Lease{}))

	results["args"] = strings.Join(os.Args[1:], " ")
	results["mark"] = os.Getenv("REACH_MARK")
	result := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reach-result"}, Data: results}
	_, err = r.core.ConfigMaps(ns).Create(ctx, result, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = r.core.ConfigMaps(ns).Update(ctx, result, metav1.UpdateOptions{})
	}
	return ctrl.Result{}, err
}

// answer is `ok`, or the apiserver's reason for err (Forbidden, Invalid, …).
func answer(err error) string {
	if err == nil {
		return "ok"
	}
	if reason := apierrors.ReasonForError(err); reason != metav1.StatusReasonUnknown {
		return string(reason)
	}
	return "error: " + err.Error()
}

func init() {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	// OpenShift's routes, which it may read where an apiserver serves them, as operators with
	// optional integrations declare.
	route := guest.Kind{Group: "route.openshift.io", Version: "v1", Kind: "Route"}
	wasmop.Register(wasmop.Plugin{
		Name:        "reach",
		Version:     "0.1.0",
		Scheme:      scheme,
		Permissions: []guest.Permission{{Kind: route, Verbs: []guest.Verb{guest.VerbGet, guest.VerbList}}},
		Setup: func(mgr ctrl.Manager) error {
			core, err := corev1client.NewForConfig(ctrl.GetConfigOrDie())
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(mgr.GetConfig())
			if err != nil {
				return err
			}
			disc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
			if err != nil {
				return err
			}
			leases, err := coordinationv1client.NewForConfig(mgr.GetConfig())
			if err != nil {
				return err
			}
			r := &reacher{cache: mgr.GetClient(), leases: leases, core: core, dynamic: dyn, discovery: disc, api: mgr.GetAPIReader()}
			return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(r)
		},
	})
}

func main() {}
