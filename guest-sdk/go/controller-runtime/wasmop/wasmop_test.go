package wasmop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/internal/plugin"
	"sigs.k8s.io/controller-runtime/internal/testscheme"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"wasmop.dev/guest"
	"wasmop.dev/guest/guesttest"
)

// build is the plugin p registers in an instance with the process's args and environment.
func build(p Plugin) (*plugin.Plugin, error) {
	m, err := setUp(p)
	return complete(p, m, err)
}

func scheme(t *testing.T) *runtime.Scheme { return testscheme.New(t) }

// reconciler records the requests it is given and requeues after a minute.
type reconciler struct{ seen []reconcile.Request }

func (r *reconciler) Reconcile(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.seen = append(r.seen, req)
	return ctrl.Result{RequeueAfter: time.Minute}, nil
}

func labelled(o client.Object) bool { return o.GetLabels()["team"] == "shop" }

func TestTheBuilderBecomesTheRegistrationAndTheExportsRunTheReconciler(t *testing.T) {
	guesttest.New()
	r := &reconciler{}
	byAnnotation := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetAnnotations()["app"]}}}
	})
	p, err := build(Plugin{Name: "webapp", Version: "1.0.0", Scheme: scheme(t), Setup: func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).
			For(&appsv1.Deployment{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Owns(&corev1.Service{}).
			Owns(&corev1.ConfigMap{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
			Watches(&corev1.Secret{}, byAnnotation, builder.WithPredicates(predicate.NewPredicateFuncs(labelled))).
			WithOptions(controller.Options{MaxConcurrentReconciles: 3, ReconciliationTimeout: 5 * time.Second}).
			Complete(r)
	}})
	if err != nil {
		t.Fatal(err)
	}
	reg := p.Registration
	if reg.Primary != guest.Deployment || len(reg.Predicates) != 1 || reg.Predicates[0] != guest.GenerationChanged {
		t.Fatalf("primary %v %v", reg.Primary, reg.Predicates)
	}
	if len(reg.Owns) != 1 || reg.Owns[0] != guest.Service {
		t.Fatalf("owns %v", reg.Owns)
	}
	watched := map[guest.Kind]guest.Watch{}
	for _, w := range reg.Watches {
		watched[w.Kind] = w
	}
	cms, secrets := watched[guest.ConfigMap], watched[guest.Secret]
	if len(reg.Watches) != 2 || len(cms.Predicates) != 1 || cms.Predicates[0] != guest.LabelsChanged || len(secrets.Predicates) != 0 ||
		cms.Mapping != guest.MapToControllerOwner() || secrets.Mapping != guest.MapByGuest() {
		t.Fatalf("watches %+v", reg.Watches)
	}
	if len(reg.Handled) != 1 || reg.Handled[0] != guest.Secret {
		t.Fatalf("handled %v: the Secrets' map function and filter are the guest's", reg.Handled)
	}
	if reg.MaxConcurrentReconciles != 3 || reg.ReconcileTimeout != 5*time.Second {
		t.Fatalf("options %d %v", reg.MaxConcurrentReconciles, reg.ReconcileTimeout)
	}

	secret := guest.New(guest.Secret, "shop", "creds")
	secret.Set(map[string]any{"app": "web"}, "metadata", "annotations")
	if reqs := p.Handle(guest.Secret, guest.Change{New: secret}); len(reqs) != 0 {
		t.Fatalf("an unlabelled secret mapped to %v", reqs)
	}
	secret.Set(map[string]any{"team": "shop"}, "metadata", "labels")
	if reqs := p.Handle(guest.Secret, guest.Change{New: secret}); len(reqs) != 1 || reqs[0] != (guest.Request{Namespace: "shop", Name: "web"}) {
		t.Fatalf("mapped to %v", reqs)
	}

	res, err := p.Reconcile(context.Background(), guest.Request{Namespace: "shop", Name: "web"})
	if err != nil || res.RequeueAfter != time.Minute || len(r.seen) != 1 || r.seen[0].Name != "web" {
		t.Fatalf("reconcile: %+v %v %v", res, err, r.seen)
	}
}

func TestAFilterOfThePrimaryKindDecidesOnItsEventsInTheGuest(t *testing.T) {
	guesttest.New()
	mine := guest.New(guest.ConfigMap, "shop", "mine")
	mine.Set(map[string]any{"team": "shop"}, "metadata", "labels")
	theirs := guest.New(guest.ConfigMap, "shop", "theirs")
	p, err := build(Plugin{Name: "cm", Version: "1.0.0", Scheme: scheme(t), Setup: func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
			WithEventFilter(predicate.NewPredicateFuncs(labelled)).Complete(&reconciler{})
	}})
	if err != nil {
		t.Fatal(err)
	}
	if reg := p.Registration; len(reg.Handled) != 1 || reg.Handled[0] != guest.ConfigMap || len(reg.Watches) != 0 {
		t.Fatalf("the primary kind is handled in the guest: %+v", reg)
	}
	var handled []string
	for _, change := range []guest.Change{{New: mine}, {New: theirs}, {Old: mine}, {Old: theirs, New: mine}} {
		for _, r := range p.Handle(guest.ConfigMap, change) {
			handled = append(handled, r.Name)
		}
	}
	if strings.Join(handled, " ") != "mine mine mine" {
		t.Fatalf("requests %v: created, deleted and changed to labelled", handled)
	}
}

func TestWhatTheHostCannotHonourFailsTheSetupNamingIt(t *testing.T) {
	for name, setup := range map[string]func(ctrl.Manager) error{
		"several controllers": func(mgr ctrl.Manager) error {
			if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(&reconciler{}); err != nil {
				return err
			}
			return ctrl.NewControllerManagedBy(mgr).For(&corev1.Secret{}).Complete(&reconciler{})
		},
		"CacheSyncTimeout": func(mgr ctrl.Manager) error {
			return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
				WithOptions(controller.Options{CacheSyncTimeout: time.Minute}).Complete(&reconciler{})
		},
		"no controller": func(ctrl.Manager) error { return nil },
	} {
		_, err := build(Plugin{Name: "bad", Version: "1.0.0", Scheme: scheme(t), Setup: setup})
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if name != "no controller" && !strings.Contains(err.Error(), strings.Fields(name)[len(strings.Fields(name))-1]) {
			t.Errorf("%s: the error does not name it: %v", name, err)
		}
	}
}

func TestAPluginRunsTheOneOfItsSetupsControllersItsEnvironmentSelects(t *testing.T) {
	setup := func(mgr ctrl.Manager) error {
		if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(&reconciler{}); err != nil {
			return err
		}
		return ctrl.NewControllerManagedBy(mgr).Named("Secret_Keeper").For(&corev1.Secret{}).Complete(&reconciler{})
	}
	plugin := Plugin{Name: "multi", Version: "1.0.0", Scheme: scheme(t), Setup: setup}
	for selection, want := range map[string]guest.Registration{
		"configmap":     {Name: "multi-configmap", Primary: guest.ConfigMap},
		"Secret_Keeper": {Name: "multi-secret-keeper", Primary: guest.Kind{Version: "v1", Kind: "Secret"}},
	} {
		t.Setenv("WASMOP_CONTROLLER", selection)
		p, err := build(plugin)
		if err != nil {
			t.Fatalf("%s: %v", selection, err)
		}
		if p.Registration.Name != want.Name || p.Registration.Primary != want.Primary {
			t.Errorf("%s: registered %s for %v, want %s for %v", selection, p.Registration.Name, p.Registration.Primary, want.Name, want.Primary)
		}
	}
	t.Setenv("WASMOP_CONTROLLER", "")
	if _, err := build(plugin); err == nil || !strings.Contains(err.Error(), "configmap, Secret_Keeper") || !strings.Contains(err.Error(), "WASMOP_CONTROLLER=<name>") {
		t.Errorf("none selected: %v", err)
	}
	t.Setenv("WASMOP_CONTROLLER", "deployment")
	if _, err := build(plugin); err == nil || !strings.Contains(err.Error(), `"deployment" names none`) {
		t.Errorf("a selection naming none: %v", err)
	}
}

func TestAnUpdatePredicateComparesTheOldAndTheNewObject(t *testing.T) {
	guesttest.New()
	labelsDiffer := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetLabels()["tier"] != e.ObjectNew.GetLabels()["tier"]
	}}
	setup := func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
			Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, ns client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns.GetName(), Name: "settings"}}}
			}), builder.WithPredicates(labelsDiffer)).
			Complete(&reconciler{})
	}
	p, err := build(Plugin{Name: "ns", Version: "1.0.0", Scheme: scheme(t), Setup: setup})
	if err != nil {
		t.Fatal(err)
	}
	namespace := guest.Kind{Version: "v1", Kind: "Namespace"}
	if reg := p.Registration; len(reg.Handled) != 1 || reg.Handled[0] != namespace || len(reg.Predicates) != 0 {
		t.Fatalf("the Namespace watch is handled in the guest, the primary kind by the host: %+v", reg)
	}
	plain, tiered, noted := guest.New(namespace, "", "shop"), guest.New(namespace, "", "shop"), guest.New(namespace, "", "shop")
	tiered.Set(map[string]any{"tier": "gold"}, "metadata", "labels")
	noted.Set(map[string]any{"note": "x"}, "metadata", "annotations")
	for _, c := range []struct {
		name   string
		change guest.Change
		want   int
	}{
		{"a created Namespace", guest.Change{New: plain}, 1},
		{"a change of its tier", guest.Change{Old: plain, New: tiered}, 1},
		{"a change of something else", guest.Change{Old: plain, New: noted}, 0},
	} {
		if got := p.Handle(namespace, c.change); len(got) != c.want || (c.want == 1 && got[0] != guest.Request{Namespace: "shop", Name: "settings"}) {
			t.Errorf("%s: requests %v", c.name, got)
		}
	}
}

func TestOrAndNotRunInTheGuestOnEachEvent(t *testing.T) {
	guesttest.New()
	frontOrShop := predicate.Or(predicate.NewPredicateFuncs(labelled),
		predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == "front" }))
	notSystem := predicate.Not(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == "kube-system" }))
	p, err := build(Plugin{Name: "cm", Version: "1.0.0", Scheme: scheme(t), Setup: func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
			Watches(&corev1.Secret{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(frontOrShop, notSystem)).
			Complete(&reconciler{})
	}})
	if err != nil {
		t.Fatal(err)
	}
	var mapped []string
	for _, s := range []struct{ namespace, name, team string }{
		{"shop", "front", ""}, {"shop", "back", "shop"}, {"shop", "back", ""}, {"kube-system", "front", ""},
	} {
		secret := guest.New(guest.Secret, s.namespace, s.name)
		if s.team != "" {
			secret.Set(map[string]any{"team": s.team}, "metadata", "labels")
		}
		for _, r := range p.Handle(guest.Secret, guest.Change{New: secret}) {
			mapped = append(mapped, r.Namespace+"/"+r.Name+":"+s.team)
		}
	}
	if strings.Join(mapped, " ") != "shop/front: shop/back:shop" {
		t.Fatalf("mapped %v", mapped)
	}

	changes := predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{})
	p, err = build(Plugin{Name: "cm", Version: "1.0.0", Scheme: scheme(t), Setup: func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).WithEventFilter(changes).Complete(&reconciler{})
	}})
	if err != nil {
		t.Fatal(err)
	}
	before, relabelled, annotated := guest.New(guest.ConfigMap, "shop", "a"), guest.New(guest.ConfigMap, "shop", "a"), guest.New(guest.ConfigMap, "shop", "a")
	relabelled.Set(map[string]any{"team": "shop"}, "metadata", "labels")
	annotated.Set(map[string]any{"note": "x"}, "metadata", "annotations")
	if got := p.Handle(guest.ConfigMap, guest.Change{Old: before, New: relabelled}); len(got) != 1 {
		t.Errorf("a label change passes the Or: %v", got)
	}
	if got := p.Handle(guest.ConfigMap, guest.Change{Old: before, New: annotated}); len(got) != 0 {
		t.Errorf("an annotation change passes neither part: %v", got)
	}
}

func TestALogConstructorMakesEachReconcilesLogger(t *testing.T) {
	guesttest.New()
	var made []string
	seen := &reconciler{}
	p, err := build(Plugin{Name: "cm", Version: "1.0.0", Scheme: scheme(t), Setup: func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
			WithOptions(controller.Options{LogConstructor: func(req *reconcile.Request) logr.Logger {
				made = append(made, req.String())
				return mgr.GetLogger().WithValues("configmap", req.NamespacedName)
			}}).Complete(seen)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reconcile(context.Background(), guest.Request{Namespace: "shop", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	if len(made) != 1 || made[0] != "shop/web" || len(seen.seen) != 1 {
		t.Fatalf("loggers made for %v, reconciled %v", made, seen.seen)
	}
}

// terminating is a typed predicate of the operator's own, as Kueue's pod termination
// reconciler is: it passes Pods that are being deleted.
type terminating struct{}

func (terminating) Create(e event.TypedCreateEvent[*corev1.Pod]) bool {
	return e.Object.DeletionTimestamp != nil
}
func (terminating) Update(e event.TypedUpdateEvent[*corev1.Pod]) bool {
	return e.ObjectNew.DeletionTimestamp != nil && e.ObjectOld.DeletionTimestamp == nil
}
func (terminating) Delete(event.TypedDeleteEvent[*corev1.Pod]) bool   { return false }
func (terminating) Generic(event.TypedGenericEvent[*corev1.Pod]) bool { return false }

func TestARawSourceOfTypedHandlersAndPredicatesIsTheControllersKind(t *testing.T) {
	guesttest.New()
	p, err := build(Plugin{Name: "pods", Version: "1.0.0", Scheme: scheme(t), Setup: func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).
			Named("pod_termination_controller").
			WatchesRawSource(source.TypedKind(mgr.GetCache(), &corev1.Pod{}, &handler.TypedEnqueueRequestForObject[*corev1.Pod]{}, terminating{})).
			WithOptions(controller.Options{
				NeedLeaderElection:      ptr.To(false),
				MaxConcurrentReconciles: mgr.GetControllerOptions().GroupKindConcurrency["Pod"],
			}).
			WithLogConstructor(func(*reconcile.Request) logr.Logger { return mgr.GetLogger() }).
			Complete(&reconciler{})
	}})
	if err != nil {
		t.Fatal(err)
	}
	pod := guest.Kind{Version: "v1", Kind: "Pod"}
	if reg := p.Registration; reg.Primary != pod || len(reg.Handled) != 1 || reg.Handled[0] != pod || reg.MaxConcurrentReconciles != 0 {
		t.Fatalf("the raw source's kind is the reconciled one, handled in the guest: %+v", reg)
	}
	if len(p.LoadWarnings) != 1 || !strings.Contains(p.LoadWarnings[0], "NeedLeaderElection") {
		t.Errorf("load warnings %q", p.LoadWarnings)
	}
	running, deleting := guest.New(pod, "shop", "web-0"), guest.New(pod, "shop", "web-0")
	deleting.Set("2026-12-06T00:00:00Z", "metadata", "deletionTimestamp")
	if got := p.Handle(pod, guest.Change{New: running}); len(got) != 0 {
		t.Errorf("a running Pod: %v", got)
	}
	if got := p.Handle(pod, guest.Change{Old: running, New: deleting}); len(got) != 1 || got[0].Name != "web-0" {
		t.Errorf("a Pod being deleted: %v", got)
	}
}

func TestAMetadataWatchSeesPartialObjectsAndAChannelIsRefusedNamingIt(t *testing.T) {
	guesttest.New()
	var seen []string
	byOwnerLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		seen = append(seen, fmt.Sprintf("%T", o))
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetLabels()["owner"]}}}
	})
	secrets := &metav1.PartialObjectMetadata{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	p, err := build(Plugin{Name: "cm", Version: "1.0.0", Scheme: scheme(t), Setup: func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).WatchesMetadata(secrets, byOwnerLabel).Complete(&reconciler{})
	}})
	if err != nil {
		t.Fatal(err)
	}
	secret := guest.New(guest.Secret, "shop", "creds")
	secret.Set(map[string]any{"owner": "web"}, "metadata", "labels")
	if got := p.Handle(guest.Secret, guest.Change{New: secret}); len(got) != 1 || got[0].Name != "web" || seen[0] != "*v1.PartialObjectMetadata" {
		t.Fatalf("requests %v from %v", got, seen)
	}

	events := make(chan event.GenericEvent)
	_, err = build(Plugin{Name: "cm", Version: "1.0.0", Scheme: scheme(t), Setup: func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
			WatchesRawSource(source.Channel(events, &handler.EnqueueRequestForObject{})).Complete(&reconciler{})
	}})
	if err == nil || !strings.Contains(err.Error(), "source.Channel") {
		t.Fatalf("a channel source: %v", err)
	}
}

func TestAControllerMadeWithNewWatchesItsSourcesAndARawWebhookHandlerFailsTheLoad(t *testing.T) {
	guesttest.New()
	r := &reconciler{}
	p, err := build(Plugin{Name: "cms", Version: "1.0.0", Scheme: scheme(t), Setup: func(mgr ctrl.Manager) error {
		c, err := controller.New("configmaps", mgr, controller.Options{Reconciler: r, MaxConcurrentReconciles: 2})
		if err != nil {
			return err
		}
		return c.Watch(source.Kind(mgr.GetCache(), &corev1.ConfigMap{}, &handler.TypedEnqueueRequestForObject[*corev1.ConfigMap]{}))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if reg := p.Registration; reg.Primary != guest.ConfigMap || len(reg.Handled) != 1 || reg.MaxConcurrentReconciles != 2 {
		t.Fatalf("registration %+v", reg)
	}
	if got := p.Handle(guest.ConfigMap, guest.Change{New: guest.New(guest.ConfigMap, "shop", "web")}); len(got) != 1 || got[0].Name != "web" {
		t.Fatalf("requests %v", got)
	}
	if _, err := p.Reconcile(context.Background(), guest.Request{Namespace: "shop", Name: "web"}); err != nil || len(r.seen) != 1 {
		t.Fatalf("reconciled %v: %v", r.seen, err)
	}

	_, err = build(Plugin{Name: "cms", Version: "1.0.0", Scheme: scheme(t), Setup: func(mgr ctrl.Manager) error {
		mgr.GetWebhookServer().Register("/mutate-v1-pod", nil)
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(r)
	}})
	if err == nil || !strings.Contains(err.Error(), `"/mutate-v1-pod"`) {
		t.Fatalf("a raw webhook handler: %v", err)
	}
}
