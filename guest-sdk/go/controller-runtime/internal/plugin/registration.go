package plugin

import (
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"wasmop.dev/guest"
)

// Plugin is a completed controller as the host runs it: its registration, and what its
// reconcile and handle exports run.
type Plugin struct {
	// Registration is what describe returns.
	Registration guest.Registration
	// Webhooks are the webhooks the setup's webhook builders completed.
	Webhooks guest.Webhooks
	// LoadWarnings say what the plugin does differently from controller-runtime.
	LoadWarnings []string
	manager      *Manager
	controller   *Controller
	primary      schema.GroupVersionKind
	// handled are the sources of each kind whose changes the guest handles.
	handled map[schema.GroupVersionKind][]Watch
}

// ReconcilerType is the Go type of the controller's reconciler, as import path.Name (its
// pointer's element for a pointer), which the markers written for it name.
func (p *Plugin) ReconcilerType() string {
	t := reflect.TypeOf(p.controller.Reconciler)
	if t == nil {
		return ""
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() + "." + t.Name()
}

// Build is the plugin named name at version of the controller m's setup completed (of several,
// the one selection names: the plugin's name then ends in the controller's, and only the first
// controller's plugin serves the setup's webhooks), declaring permissions. A kind whose one source the host can map and filter itself (the For kind's own
// key, an owned kind's controller owner, with the change predicates the host evaluates) is the
// host's; the guest handles every other kind's changes, running its handlers and predicates.
func Build(name, version string, m *Manager, permissions []guest.Permission, selection string) (*Plugin, error) {
	c, suffix, first, err := m.selected(selection)
	if err != nil {
		return nil, err
	}
	if suffix != "" {
		name += "-" + suffix
	}
	if paths := m.server.Paths; len(paths) > 0 {
		return nil, fmt.Errorf("mgr.GetWebhookServer().Register(%q): the host serves only the webhooks ctrl.NewWebhookManagedBy declares", paths[0])
	}
	var sources []Watch
	var primary schema.GroupVersionKind
	if c.For != nil {
		predicates := slices.Concat(c.ForPredicates, c.EventFilter)
		sources = append(sources, Watch{Object: c.For, Handler: handler.EnqueueRequestForObject{}, Predicates: predicates})
	}
	for _, w := range c.Watches {
		w.Predicates = slices.Concat(w.Predicates, c.EventFilter)
		sources = append(sources, w)
	}
	sources = append(sources, c.Raw...)
	if len(sources) == 0 {
		return nil, fmt.Errorf("the controller watches nothing: call For(), Watches() or WatchesRawSource()")
	}
	// The primary kind: For's, else (a controller of only Watches) the first watched kind's.
	primary, err = apiutil.GVKForObject(sources[0].Object, m.scheme)
	if err != nil {
		return nil, fmt.Errorf("the reconciled kind: %w", err)
	}
	warnings, err := checkOptions(c)
	if err != nil {
		return nil, err
	}
	p := &Plugin{manager: m, controller: c, primary: primary, handled: map[schema.GroupVersionKind][]Watch{}, LoadWarnings: warnings}
	p.Registration = guest.Registration{
		Name: name, Version: version, Primary: kindOf(primary),
		Permissions: permissions, MaxConcurrentReconciles: c.Options.MaxConcurrentReconciles,
		ReconcileTimeout: c.Options.ReconciliationTimeout,
	}
	if first {
		p.Webhooks = m.GuestWebhooks()
	}
	kinds, byKind, err := grouped(m.scheme, sources)
	if err != nil {
		return nil, err
	}
	for _, gvk := range kinds {
		watches := byKind[gvk]
		if !p.byHost(gvk, watches) {
			p.byGuest(gvk, watches)
		}
	}
	return p, nil
}

// Kinds are the kinds the plugin registers: its primary, owned and watched kinds and those its
// webhooks serve, each at the version it registers it at.
func (p *Plugin) Kinds() []guest.Kind {
	reg, hooks := p.Registration, p.Webhooks
	kinds := append([]guest.Kind{reg.Primary}, reg.Owns...)
	for _, w := range reg.Watches {
		kinds = append(kinds, w.Kind)
	}
	for _, rule := range slices.Concat(hooks.Validate, hooks.Default) {
		kinds = append(kinds, rule.Kind)
	}
	return append(kinds, hooks.Convert...)
}

// grouped are the sources' kinds in the order they first appear, and each kind's sources.
func grouped(scheme *runtime.Scheme, sources []Watch) ([]schema.GroupVersionKind, map[schema.GroupVersionKind][]Watch, error) {
	var kinds []schema.GroupVersionKind
	byKind := map[schema.GroupVersionKind][]Watch{}
	for _, w := range sources {
		gvk, err := apiutil.GVKForObject(w.Object, scheme)
		if err != nil {
			return nil, nil, fmt.Errorf("a watched kind: %w", err)
		}
		if _, seen := byKind[gvk]; !seen {
			kinds = append(kinds, gvk)
		}
		byKind[gvk] = append(byKind[gvk], w)
	}
	return kinds, byKind, nil
}

// byHost adds gvk to the registration as the host maps and filters it, when it can its one
// source: the primary kind's own key, or an owned kind's controller owner of the primary kind,
// with predicates it evaluates.
func (p *Plugin) byHost(gvk schema.GroupVersionKind, watches []Watch) bool {
	if len(watches) != 1 {
		return false
	}
	w := watches[0]
	host, ok := hostPredicates(w.Predicates)
	switch {
	case !ok:
		return false
	case gvk == p.primary:
		if !ownKey(w.Handler) {
			return false
		}
		p.Registration.Predicates = host
	case !p.toControllerOwner(w.Handler):
		return false
	case len(host) == 0:
		p.Registration.Owns = append(p.Registration.Owns, kindOf(gvk))
	default:
		watch := guest.Watch{Kind: kindOf(gvk), Mapping: guest.MapToControllerOwner(), Predicates: host}
		p.Registration.Watches = append(p.Registration.Watches, watch)
	}
	return true
}

// byGuest declares gvk as a kind whose changes the guest handles with its sources.
func (p *Plugin) byGuest(gvk schema.GroupVersionKind, watches []Watch) {
	p.handled[gvk] = watches
	p.Registration.Handled = append(p.Registration.Handled, kindOf(gvk))
	if gvk != p.primary {
		p.Registration.Watches = append(p.Registration.Watches, guest.Watch{Kind: kindOf(gvk), Mapping: guest.MapByGuest()})
	}
}

// toControllerOwner is whether h maps objects to their controller owner of the primary kind.
func (p *Plugin) toControllerOwner(h handler.EventHandler) bool {
	owner, ok := h.(*handler.OwnerHandler)
	if !ok || !owner.OnlyController {
		return false
	}
	gvk, err := apiutil.GVKForObject(owner.OwnerType, p.manager.scheme)
	return err == nil && gvk.GroupKind() == p.primary.GroupKind()
}

// checkOptions refuses the options the host cannot honour and warns of those it decides itself.
func checkOptions(c *Controller) ([]string, error) {
	switch o := c.Options; {
	case o.CacheSyncTimeout != 0:
		return nil, fmt.Errorf("controller.Options.CacheSyncTimeout is the host's setting (--cache-sync-timeout)")
	case o.RecoverPanic != nil && !*o.RecoverPanic:
		return nil, fmt.Errorf("controller.Options.RecoverPanic false: the host always recovers a guest's panic")
	case o.NeedLeaderElection != nil && !*o.NeedLeaderElection:
		return []string{"controller.Options.NeedLeaderElection false: the host runs the controller where it runs the plugin, on the leader (or on each shard's owner)"}, nil
	}
	return nil, nil
}

func kindOf(gvk schema.GroupVersionKind) guest.Kind {
	return guest.Kind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
}
