package guest

import (
	"time"

	"wasmop.dev/guest/internal/wit"
)

// Registration is everything the host needs to run a plugin: what `describe` returns.
type Registration struct {
	// Name is the plugin's name (lowercase letters, digits, dashes); its field manager is
	// `wasmop/<name>`.
	Name string
	// Version is the plugin's own version, e.g. 1.4.0.
	Version string
	// Primary is the kind the plugin reconciles.
	Primary Kind
	// Predicates filter events on the primary kind.
	Predicates []Predicate
	// Owns are the kinds the plugin creates and controls; their events map to the controller owner.
	Owns []Kind
	// Watches are other kinds whose events map to primary objects.
	Watches []Watch
	// Permissions are the writes and extra reads the plugin needs.
	Permissions []Permission
	// Indexes are field indexes over cached kinds, for cache.ListByIndex.
	Indexes []Index
	// MaxConcurrentReconciles is how many reconciles may run at once; 0 means 1.
	MaxConcurrentReconciles int
	// ReconcileTimeout bounds one reconcile; 0 means the host's default.
	ReconcileTimeout time.Duration
	// Handled are the kinds (the primary, owned or watched ones) whose changes the reconciler's
	// Handle function maps itself instead of the host's mapping and predicates.
	Handled []Kind
}

// Watch is a kind the plugin watches besides its primary and owned kinds.
type Watch struct {
	// Kind is the watched kind.
	Kind Kind
	// Mapping turns its events into requests.
	Mapping Mapping
	// Predicates filter its events.
	Predicates []Predicate
}

// Mapping says how an event on a watched kind becomes a request; see MapToControllerOwner,
// MapByLabel and MapByGuest.
type Mapping struct {
	kind  wit.MappingCase
	label string
}

// MapToControllerOwner maps an object to its controller owner of the primary kind.
func MapToControllerOwner() Mapping { return Mapping{kind: wit.MappingControllerOwner} }

// MapByLabel maps an object to the primary object in its namespace named by its label.
func MapByLabel(label string) Mapping { return Mapping{kind: wit.MappingLabel, label: label} }

// MapByGuest maps an object by calling the reconciler's Map function.
func MapByGuest() Mapping { return Mapping{kind: wit.MappingGuest} }

// Predicate drops events before they reach the queue.
type Predicate int

const (
	// GenerationChanged passes updates only when metadata.generation changed.
	GenerationChanged Predicate = iota
	// LabelsChanged passes updates only when metadata.labels changed.
	LabelsChanged
	// AnnotationsChanged passes updates only when metadata.annotations changed.
	AnnotationsChanged
)

// Verb is something a plugin may do with a kind.
type Verb int

const (
	// VerbGet reads one object.
	VerbGet Verb = iota
	// VerbList lists objects.
	VerbList
	// VerbWatch watches objects.
	VerbWatch
	// VerbCreate creates objects.
	VerbCreate
	// VerbUpdate replaces objects.
	VerbUpdate
	// VerbPatch patches objects, including server-side apply.
	VerbPatch
	// VerbDelete deletes objects.
	VerbDelete
	// VerbStatus writes the status subresource.
	VerbStatus
)

// Writes are the verbs that write an owned kind: create, update, patch and delete.
var Writes = []Verb{VerbCreate, VerbUpdate, VerbPatch, VerbDelete}

// Permission is what the plugin may do with a kind, in some namespaces (all when empty).
type Permission struct {
	// Kind is the kind the verbs apply to.
	Kind Kind
	// Verbs are what the plugin may do.
	Verbs []Verb
	// Namespaces limit the permission; all namespaces when empty.
	Namespaces []string
}

// Index is a field index the host keeps for cache.ListByIndex.
type Index struct {
	// Name is what ListByIndex calls it.
	Name string
	// Kind is the indexed kind.
	Kind Kind
	// Field is a dotted path to a string field, e.g. spec.nodeName.
	Field string
}

// wit is the registration as `describe` returns it.
func (r Registration) wit() wit.Registration {
	reg := wit.Registration{
		Name: r.Name, Version: r.Version, Primary: r.Primary.WIT(),
		Predicates:              predicates(r.Predicates),
		MaxConcurrentReconciles: uint32(max(r.MaxConcurrentReconciles, 1)),
	}
	for _, k := range r.Owns {
		reg.Owns = append(reg.Owns, k.WIT())
	}
	for _, w := range r.Watches {
		reg.Watches = append(reg.Watches, wit.Watch{
			Kind:       w.Kind.WIT(),
			Mapping:    wit.Mapping{Case: w.Mapping.kind, Label: w.Mapping.label},
			Predicates: predicates(w.Predicates),
		})
	}
	for _, p := range r.Permissions {
		perm := wit.Permission{Kind: p.Kind.WIT(), Namespaces: p.Namespaces}
		for _, v := range p.Verbs {
			perm.Verbs = append(perm.Verbs, wit.Verb(v))
		}
		reg.Permissions = append(reg.Permissions, perm)
	}
	for _, i := range r.Indexes {
		reg.Indexes = append(reg.Indexes, wit.FieldIndex{Name: i.Name, Kind: i.Kind.WIT(), Field: i.Field})
	}
	if r.ReconcileTimeout > 0 {
		millis := uint64(r.ReconcileTimeout.Milliseconds())
		reg.ReconcileTimeout = &millis
	}
	return reg
}

func predicates(ps []Predicate) []wit.Predicate {
	out := make([]wit.Predicate, len(ps))
	for i, p := range ps {
		out[i] = wit.Predicate(p)
	}
	return out
}
