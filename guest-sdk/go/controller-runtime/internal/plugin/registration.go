package plugin

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"wasmop.dev/guest"
)

// Plugin is a completed controller as the host runs it: its registration, and what its
// reconcile and map exports run.
type Plugin struct {
	// Registration is what describe returns.
	Registration guest.Registration
	// Webhooks are the webhooks the setup's webhook builders completed.
	Webhooks guest.Webhooks
	// LoadWarnings say what the plugin does differently from controller-runtime.
	LoadWarnings []string
	manager      *Manager
	primary      schema.GroupVersionKind
	forFilters   []filter
	mapped       map[schema.GroupVersionKind][]mappedWatch
}

// mappedWatch is a watch whose events the guest maps to requests.
type mappedWatch struct {
	handler handler.EventHandler
	filters []filter
}

// Build is the plugin named name at version of the controller m's setup completed, declaring
// permissions.
func Build(name, version string, m *Manager, permissions []guest.Permission) (*Plugin, error) {
	c := m.Controller()
	if c == nil {
		return nil, fmt.Errorf("the setup completed no controller: call ctrl.NewControllerManagedBy(mgr).For(…).Complete(r)")
	}
	primary, err := apiutil.GVKForObject(c.For, m.scheme)
	if err != nil {
		return nil, fmt.Errorf("the For kind: %w", err)
	}
	var passed []string
	host, forFilters, err := split(slices.Concat(c.ForPredicates, c.EventFilter), m.PassUndecidablePredicates, &passed)
	if err != nil {
		return nil, err
	}
	p := &Plugin{manager: m, primary: primary, forFilters: forFilters, mapped: map[schema.GroupVersionKind][]mappedWatch{}}
	if len(passed) > 0 {
		p.LoadWarnings = append(p.LoadWarnings, fmt.Sprintf("%s on %s passes every event (wasmop.Plugin.PassUndecidablePredicates)", strings.Join(passed, ", "), primary.Kind))
	}
	p.Registration = guest.Registration{
		Name: name, Version: version, Primary: kindOf(primary), Predicates: host,
		Permissions: permissions, MaxConcurrentReconciles: c.Options.MaxConcurrentReconciles,
		ReconcileTimeout: c.Options.ReconciliationTimeout,
	}
	if err := checkOptions(c); err != nil {
		return nil, err
	}
	p.Webhooks = m.GuestWebhooks()
	for _, w := range c.Watches {
		if err := p.watch(m.scheme, w, c); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// watch adds w to the registration: as an owned kind when the host maps it to its controller
// owner of the primary kind, else as a kind the guest maps.
func (p *Plugin) watch(scheme *runtime.Scheme, w Watch, c *Controller) error {
	gvk, err := apiutil.GVKForObject(w.Object, scheme)
	if err != nil {
		return fmt.Errorf("a watched kind: %w", err)
	}
	var passed []string
	host, filters, err := split(slices.Concat(w.Predicates, c.EventFilter), p.manager.PassUndecidablePredicates, &passed)
	if err != nil {
		return fmt.Errorf("watching %s: %w", gvk.Kind, err)
	}
	if len(passed) > 0 {
		p.LoadWarnings = append(p.LoadWarnings, fmt.Sprintf("%s on the %s watch passes every event (wasmop.Plugin.PassUndecidablePredicates)", strings.Join(passed, ", "), gvk.Kind))
	}
	if p.toControllerOwner(scheme, w.Handler) && len(filters) == 0 {
		if len(host) == 0 {
			p.Registration.Owns = append(p.Registration.Owns, kindOf(gvk))
			return nil
		}
		p.Registration.Watches = append(p.Registration.Watches, guest.Watch{Kind: kindOf(gvk), Mapping: guest.MapToControllerOwner(), Predicates: host})
		return nil
	}
	p.Registration.Watches = append(p.Registration.Watches, guest.Watch{Kind: kindOf(gvk), Mapping: guest.MapByGuest(), Predicates: host})
	p.mapped[gvk] = append(p.mapped[gvk], mappedWatch{handler: w.Handler, filters: filters})
	return nil
}

// toControllerOwner is whether h maps objects to their controller owner of the primary kind.
func (p *Plugin) toControllerOwner(scheme *runtime.Scheme, h handler.EventHandler) bool {
	owner, ok := h.(*handler.OwnerHandler)
	if !ok || !owner.OnlyController {
		return false
	}
	gvk, err := apiutil.GVKForObject(owner.OwnerType, scheme)
	return err == nil && gvk.GroupKind() == p.primary.GroupKind()
}

func checkOptions(c *Controller) error {
	switch o := c.Options; {
	case o.CacheSyncTimeout != 0:
		return fmt.Errorf("controller.Options.CacheSyncTimeout is the host's setting (--cache-sync-timeout)")
	case o.NeedLeaderElection != nil:
		return fmt.Errorf("controller.Options.NeedLeaderElection is the host's to decide")
	case o.RecoverPanic != nil && !*o.RecoverPanic:
		return fmt.Errorf("controller.Options.RecoverPanic false: the host always recovers a guest's panic")
	}
	return nil
}

func kindOf(gvk schema.GroupVersionKind) guest.Kind {
	return guest.Kind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
}
