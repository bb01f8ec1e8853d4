package client

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// GetOptions are the options of Get (none applies to a cache read).
type GetOptions struct{}

// GetOption modifies GetOptions.
type GetOption interface{ ApplyToGet(*GetOptions) }

// ListOptions narrow a List.
type ListOptions struct {
	// LabelSelector keeps objects whose labels match.
	LabelSelector labels.Selector
	// FieldSelector keeps objects whose fields match (an equality on a declared index).
	FieldSelector fields.Selector
	// Namespace keeps objects of one namespace.
	Namespace string
	// Limit keeps at most this many objects, when positive.
	Limit int64
	// Continue pages through a list; the cache serves whole lists, so it must be empty.
	Continue string
}

// ListOption modifies ListOptions.
type ListOption interface{ ApplyToList(*ListOptions) }

// CreateOptions are the options of Create.
type CreateOptions struct {
	// DryRun, when set, asks the apiserver not to persist; wasmop refuses it.
	DryRun []string
	// FieldManager is ignored: the host writes as the plugin's manager, wasmop/<plugin>.
	FieldManager string
}

// CreateOption modifies CreateOptions.
type CreateOption interface{ ApplyToCreate(*CreateOptions) }

// UpdateOptions are the options of Update.
type UpdateOptions struct {
	// DryRun: see CreateOptions.
	DryRun []string
	// FieldManager: see CreateOptions.
	FieldManager string
}

// UpdateOption modifies UpdateOptions.
type UpdateOption interface{ ApplyToUpdate(*UpdateOptions) }

// PatchOptions are the options of Patch.
type PatchOptions struct {
	// DryRun: see CreateOptions.
	DryRun []string
	// Force takes over fields other managers own, in a server-side apply.
	Force *bool
	// FieldManager: see CreateOptions.
	FieldManager string
}

// PatchOption modifies PatchOptions.
type PatchOption interface{ ApplyToPatch(*PatchOptions) }

// ApplyOptions are the options of Apply.
type ApplyOptions struct {
	// DryRun: see CreateOptions.
	DryRun []string
	// Force takes over fields other managers own.
	Force *bool
	// FieldManager: see CreateOptions.
	FieldManager string
}

// ApplyOption modifies ApplyOptions.
type ApplyOption interface{ ApplyToApply(*ApplyOptions) }

// DeleteOptions are the options of Delete.
type DeleteOptions struct {
	// GracePeriodSeconds is how long the object may take to terminate; a delete with one goes
	// to the apiserver through the host's transport (the host's own delete has none).
	GracePeriodSeconds *int64
	// Preconditions must hold for the delete to happen.
	Preconditions *metav1.Preconditions
	// PropagationPolicy is what happens to the object's dependents.
	PropagationPolicy *metav1.DeletionPropagation
	// DryRun, when set, asks the apiserver to check the delete without doing it; such a delete
	// goes through the host's transport, as one with a grace period does.
	DryRun []string
}

// DeleteOption modifies DeleteOptions.
type DeleteOption interface{ ApplyToDelete(*DeleteOptions) }

// SubResourceGetOptions are the options of a subresource read.
type SubResourceGetOptions struct{}

// SubResourceGetOption modifies SubResourceGetOptions.
type SubResourceGetOption interface {
	ApplyToSubResourceGet(*SubResourceGetOptions)
}

// SubResourceCreateOptions are the options of a subresource create.
type SubResourceCreateOptions struct{ CreateOptions }

// SubResourceCreateOption modifies SubResourceCreateOptions.
type SubResourceCreateOption interface {
	ApplyToSubResourceCreate(*SubResourceCreateOptions)
}

// SubResourceUpdateOptions are the options of a subresource update.
type SubResourceUpdateOptions struct {
	UpdateOptions
	// SubResourceBody is refused: the status is written from the object itself.
	SubResourceBody Object
}

// SubResourceUpdateOption modifies SubResourceUpdateOptions.
type SubResourceUpdateOption interface {
	ApplyToSubResourceUpdate(*SubResourceUpdateOptions)
}

// SubResourcePatchOptions are the options of a subresource patch.
type SubResourcePatchOptions struct {
	PatchOptions
	// SubResourceBody is refused: see SubResourceUpdateOptions.
	SubResourceBody Object
}

// SubResourcePatchOption modifies SubResourcePatchOptions.
type SubResourcePatchOption interface {
	ApplyToSubResourcePatch(*SubResourcePatchOptions)
}

// InNamespace lists (or deletes) objects of one namespace.
type InNamespace string

// ApplyToList sets the namespace.
func (n InNamespace) ApplyToList(o *ListOptions) { o.Namespace = string(n) }

// MatchingLabels lists objects whose labels equal these.
type MatchingLabels map[string]string

// ApplyToList adds the labels to the selector.
func (m MatchingLabels) ApplyToList(o *ListOptions) {
	o.LabelSelector = addRequirements(o.LabelSelector, labels.SelectorFromSet(labels.Set(m)))
}

// HasLabels lists objects that have these labels, whatever their values.
type HasLabels []string

// ApplyToList adds an existence requirement per label.
func (h HasLabels) ApplyToList(o *ListOptions) {
	sel := labels.NewSelector()
	for _, label := range h {
		if r, err := labels.NewRequirement(label, selection.Exists, nil); err == nil {
			sel = sel.Add(*r)
		}
	}
	o.LabelSelector = addRequirements(o.LabelSelector, sel)
}

// MatchingLabelsSelector lists objects matching a label selector.
type MatchingLabelsSelector struct{ labels.Selector }

// ApplyToList sets the selector.
func (m MatchingLabelsSelector) ApplyToList(o *ListOptions) { o.LabelSelector = m.Selector }

// MatchingFields lists objects whose indexed fields equal these.
type MatchingFields fields.Set

// ApplyToList sets the field selector.
func (m MatchingFields) ApplyToList(o *ListOptions) {
	o.FieldSelector = fields.SelectorFromSet(fields.Set(m))
}

// MatchingFieldsSelector lists objects matching a field selector.
type MatchingFieldsSelector struct{ fields.Selector }

// ApplyToList sets the selector.
func (m MatchingFieldsSelector) ApplyToList(o *ListOptions) { o.FieldSelector = m.Selector }

// Limit lists at most this many objects.
type Limit int64

// ApplyToList sets the limit.
func (l Limit) ApplyToList(o *ListOptions) { o.Limit = int64(l) }

// Continue pages through a list; the cache serves whole lists, so List refuses it.
type Continue string

// ApplyToList sets the token.
func (c Continue) ApplyToList(o *ListOptions) { o.Continue = string(c) }

func addRequirements(to, from labels.Selector) labels.Selector {
	if to == nil {
		return from
	}
	reqs, _ := from.Requirements()
	return to.Add(reqs...)
}

// FieldOwner names the field manager of a write; the host always writes as wasmop/<plugin>, so
// it is recorded and has no effect.
type FieldOwner string

// ApplyToCreate sets the field manager.
func (f FieldOwner) ApplyToCreate(o *CreateOptions) { o.FieldManager = string(f) }

// ApplyToUpdate sets the field manager.
func (f FieldOwner) ApplyToUpdate(o *UpdateOptions) { o.FieldManager = string(f) }

// ApplyToPatch sets the field manager.
func (f FieldOwner) ApplyToPatch(o *PatchOptions) { o.FieldManager = string(f) }

// ApplyToApply sets the field manager.
func (f FieldOwner) ApplyToApply(o *ApplyOptions) { o.FieldManager = string(f) }

// ApplyToSubResourceUpdate sets the field manager.
func (f FieldOwner) ApplyToSubResourceUpdate(o *SubResourceUpdateOptions) {
	o.FieldManager = string(f)
}

// ApplyToSubResourcePatch sets the field manager.
func (f FieldOwner) ApplyToSubResourcePatch(o *SubResourcePatchOptions) {
	o.FieldManager = string(f)
}

type dryRunAll struct{}

// DryRunAll asks the apiserver not to persist a write; wasmop refuses dry runs with an error.
var DryRunAll = dryRunAll{}

var all = []string{metav1.DryRunAll}

// ApplyToCreate sets dry run.
func (dryRunAll) ApplyToCreate(o *CreateOptions) { o.DryRun = all }

// ApplyToUpdate sets dry run.
func (dryRunAll) ApplyToUpdate(o *UpdateOptions) { o.DryRun = all }

// ApplyToPatch sets dry run.
func (dryRunAll) ApplyToPatch(o *PatchOptions) { o.DryRun = all }

// ApplyToApply sets dry run.
func (dryRunAll) ApplyToApply(o *ApplyOptions) { o.DryRun = all }

// ApplyToDelete sets dry run.
func (dryRunAll) ApplyToDelete(o *DeleteOptions) { o.DryRun = all }

// ApplyToSubResourceUpdate sets dry run.
func (dryRunAll) ApplyToSubResourceUpdate(o *SubResourceUpdateOptions) { o.DryRun = all }

// ApplyToSubResourcePatch sets dry run.
func (dryRunAll) ApplyToSubResourcePatch(o *SubResourcePatchOptions) { o.DryRun = all }

type forceOwnership struct{}

// ForceOwnership takes over fields other managers own in a server-side apply.
var ForceOwnership = forceOwnership{}

// ApplyToPatch sets force.
func (forceOwnership) ApplyToPatch(o *PatchOptions) {
	force := true
	o.Force = &force
}

// ApplyToApply sets force.
func (forceOwnership) ApplyToApply(o *ApplyOptions) {
	force := true
	o.Force = &force
}

// ApplyToSubResourcePatch sets force.
func (forceOwnership) ApplyToSubResourcePatch(o *SubResourcePatchOptions) {
	force := true
	o.Force = &force
}

// PropagationPolicy is what happens to a deleted object's dependents.
type PropagationPolicy metav1.DeletionPropagation

// ApplyToDelete sets the policy.
func (p PropagationPolicy) ApplyToDelete(o *DeleteOptions) {
	policy := metav1.DeletionPropagation(p)
	o.PropagationPolicy = &policy
}

// Preconditions must hold for a delete to happen.
type Preconditions metav1.Preconditions

// ApplyToDelete sets the preconditions.
func (p Preconditions) ApplyToDelete(o *DeleteOptions) {
	pre := metav1.Preconditions(p)
	o.Preconditions = &pre
}

// GracePeriodSeconds is a delete's grace period; the host's delete has none, so it is refused.
type GracePeriodSeconds int64

// ApplyToDelete sets the grace period.
func (g GracePeriodSeconds) ApplyToDelete(o *DeleteOptions) {
	seconds := int64(g)
	o.GracePeriodSeconds = &seconds
}

// DeleteAllOfOptions are DeleteAllOf's options: which objects, as List selects them, and how
// each is deleted.
type DeleteAllOfOptions struct {
	ListOptions
	DeleteOptions
}

// DeleteAllOfOption is an option of DeleteAllOf.
type DeleteAllOfOption interface{ ApplyToDeleteAllOf(*DeleteAllOfOptions) }

// ApplyToDeleteAllOf sets the options o sets, so a *DeleteAllOfOptions is itself an option.
func (o *DeleteAllOfOptions) ApplyToDeleteAllOf(to *DeleteAllOfOptions) {
	o.ListOptions.ApplyToList(&to.ListOptions)
	o.DeleteOptions.ApplyToDelete(&to.DeleteOptions)
}

// ApplyToDeleteAllOf selects the namespace's objects.
func (n InNamespace) ApplyToDeleteAllOf(o *DeleteAllOfOptions) { n.ApplyToList(&o.ListOptions) }

// ApplyToDeleteAllOf selects the objects with these labels.
func (m MatchingLabels) ApplyToDeleteAllOf(o *DeleteAllOfOptions) { m.ApplyToList(&o.ListOptions) }

// ApplyToDeleteAllOf selects the objects with these label keys.
func (h HasLabels) ApplyToDeleteAllOf(o *DeleteAllOfOptions) { h.ApplyToList(&o.ListOptions) }

// ApplyToDeleteAllOf selects the objects the selector matches.
func (m MatchingLabelsSelector) ApplyToDeleteAllOf(o *DeleteAllOfOptions) {
	m.ApplyToList(&o.ListOptions)
}

// ApplyToDeleteAllOf selects the objects with these fields.
func (m MatchingFields) ApplyToDeleteAllOf(o *DeleteAllOfOptions) { m.ApplyToList(&o.ListOptions) }

// ApplyToDeleteAllOf selects the objects the field selector matches.
func (m MatchingFieldsSelector) ApplyToDeleteAllOf(o *DeleteAllOfOptions) {
	m.ApplyToList(&o.ListOptions)
}

// ApplyToDeleteAllOf sets each delete's propagation policy.
func (p PropagationPolicy) ApplyToDeleteAllOf(o *DeleteAllOfOptions) {
	p.ApplyToDelete(&o.DeleteOptions)
}

// ApplyToDeleteAllOf sets each delete's preconditions.
func (p Preconditions) ApplyToDeleteAllOf(o *DeleteAllOfOptions) { p.ApplyToDelete(&o.DeleteOptions) }

// ApplyToDeleteAllOf sets each delete's grace period.
func (g GracePeriodSeconds) ApplyToDeleteAllOf(o *DeleteAllOfOptions) {
	g.ApplyToDelete(&o.DeleteOptions)
}

// ApplyToDeleteAllOf makes each delete a dry run.
func (d dryRunAll) ApplyToDeleteAllOf(o *DeleteAllOfOptions) { d.ApplyToDelete(&o.DeleteOptions) }

// AsListOptions is o as the apiserver's list options.
func (o *ListOptions) AsListOptions() *metav1.ListOptions {
	out := &metav1.ListOptions{Limit: o.Limit, Continue: o.Continue}
	if o.LabelSelector != nil {
		out.LabelSelector = o.LabelSelector.String()
	}
	if o.FieldSelector != nil {
		out.FieldSelector = o.FieldSelector.String()
	}
	return out
}

// ApplyToList sets the options o sets, so a *ListOptions is itself an option.
func (o *ListOptions) ApplyToList(to *ListOptions) {
	if o.LabelSelector != nil {
		to.LabelSelector = o.LabelSelector
	}
	if o.FieldSelector != nil {
		to.FieldSelector = o.FieldSelector
	}
	if o.Namespace != "" {
		to.Namespace = o.Namespace
	}
	if o.Limit > 0 {
		to.Limit = o.Limit
	}
	if o.Continue != "" {
		to.Continue = o.Continue
	}
}

// ApplyToDelete sets the options o sets, so a *DeleteOptions is itself an option.
func (o *DeleteOptions) ApplyToDelete(to *DeleteOptions) {
	if o.GracePeriodSeconds != nil {
		to.GracePeriodSeconds = o.GracePeriodSeconds
	}
	if o.Preconditions != nil {
		to.Preconditions = o.Preconditions
	}
	if o.PropagationPolicy != nil {
		to.PropagationPolicy = o.PropagationPolicy
	}
	if o.DryRun != nil {
		to.DryRun = o.DryRun
	}
}

// ApplyToCreate sets the options o sets, so a *CreateOptions is itself an option.
func (o *CreateOptions) ApplyToCreate(to *CreateOptions) {
	setWrite(&to.DryRun, &to.FieldManager, o.DryRun, o.FieldManager)
}

// ApplyToUpdate sets the options o sets, so an *UpdateOptions is itself an option.
func (o *UpdateOptions) ApplyToUpdate(to *UpdateOptions) {
	setWrite(&to.DryRun, &to.FieldManager, o.DryRun, o.FieldManager)
}

// ApplyToPatch sets the options o sets, so a *PatchOptions is itself an option.
func (o *PatchOptions) ApplyToPatch(to *PatchOptions) {
	setWrite(&to.DryRun, &to.FieldManager, o.DryRun, o.FieldManager)
	if o.Force != nil {
		to.Force = o.Force
	}
}

// setWrite copies the dry run and field manager a write's options set.
func setWrite(toDryRun *[]string, toManager *string, dryRun []string, manager string) {
	if dryRun != nil {
		*toDryRun = dryRun
	}
	if manager != "" {
		*toManager = manager
	}
}
