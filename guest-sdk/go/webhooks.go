package guest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Operation is what an admission request is for.
type Operation string

const (
	// OperationCreate is a create.
	OperationCreate Operation = "CREATE"
	// OperationUpdate is an update.
	OperationUpdate Operation = "UPDATE"
	// OperationDelete is a delete.
	OperationDelete Operation = "DELETE"
	// OperationConnect is a connect (exec, attach, port-forward…).
	OperationConnect Operation = "CONNECT"
)

// operations are the Operations in the order of the WIT enum.
var operations = []Operation{OperationCreate, OperationUpdate, OperationDelete, OperationConnect}

// WebhookRule is the operations a validating or defaulting webhook is called for, on one kind;
// no operations means create and update.
type WebhookRule struct {
	// Kind is the kind, in the version the webhook is registered for.
	Kind Kind
	// Operations are what it is called for; create and update when empty.
	Operations []Operation
}

// UserInfo is who sent an admission request, as the apiserver authenticated them.
type UserInfo struct {
	// Username is the user's name.
	Username string
	// UID is the user's uid.
	UID string
	// Groups are the user's groups.
	Groups []string
}

// AdmissionRequest is one admission request: admission.k8s.io/v1 AdmissionReview's `request`.
type AdmissionRequest struct {
	// UID is the request's uid.
	UID string
	// Kind is the object's kind, in the version the webhook is registered for.
	Kind Kind
	// Namespace is the object's namespace; empty when cluster-scoped.
	Namespace string
	// Name is the object's name; empty on a create that generates it.
	Name string
	// Operation is what the request is for.
	Operation Operation
	// Object is the object as it would be stored; nil on delete.
	Object Object
	// OldObject is the object as stored; nil on create.
	OldObject Object
	// User is who sent the request.
	User UserInfo
	// DryRun says the request persists nothing.
	DryRun bool
}

// Denial refuses an admission request: Message is shown to the client, with Warnings.
type Denial struct {
	// Message says why.
	Message string
	// Warnings are shown to the client too.
	Warnings []string
}

// Error is the denial's message.
func (d *Denial) Error() string { return d.Message }

// Deny is a Denial with a formatted message.
func Deny(format string, args ...any) error {
	return &Denial{Message: fmt.Sprintf(format, args...)}
}

// Webhooks are the admission and conversion webhooks a Reconciler serves for its kinds, beside
// its reconciles, in the same sandbox. A Reconciler whose Webhooks are zero serves none.
//
// A Validator admits a request by returning nil (with warnings, possibly none) and refuses it by
// returning an error, whose message the client sees (a *Denial adds warnings). A Defaulter
// returns the request's object with its defaults set (the host sends the difference to the
// apiserver as a JSONPatch); an error refuses the request. A Converter returns the object in
// apiVersion (`group/version`); an error fails the conversion. A panic in any of them is the
// plugin failing: the host answers with the plugin's failure policy.
type Webhooks struct {
	// Validate are the kinds and operations Validator is called for.
	Validate []WebhookRule
	// Validator admits or refuses a request.
	Validator func(ctx context.Context, req AdmissionRequest) (warnings []string, err error)
	// Default are the kinds and operations Defaulter is called for.
	Default []WebhookRule
	// Defaulter sets a request's object's defaults.
	Defaulter func(ctx context.Context, req AdmissionRequest) (Object, error)
	// Convert are the custom resources (group and kind; the version is ignored) whose versions
	// Converter converts between.
	Convert []Kind
	// Converter turns an object into another version of its custom resource.
	Converter func(ctx context.Context, obj Object, apiVersion string) (Object, error)
}

// check says what is missing from w: rules without their function or a function without rules.
func (w Webhooks) check() error {
	var problems []string
	pair := func(name string, rules int, function bool) {
		switch {
		case rules > 0 && !function:
			problems = append(problems, fmt.Sprintf("%s declares %d rules but no function", name, rules))
		case rules == 0 && function:
			problems = append(problems, fmt.Sprintf("%s has a function but no rules", name))
		}
	}
	pair("Webhooks.Validate", len(w.Validate), w.Validator != nil)
	pair("Webhooks.Default", len(w.Default), w.Defaulter != nil)
	pair("Webhooks.Convert", len(w.Convert), w.Converter != nil)
	for _, rules := range [][]WebhookRule{w.Validate, w.Default} {
		for _, r := range rules {
			for _, op := range r.Operations {
				if !slices.Contains(operations, op) {
					problems = append(problems, fmt.Sprintf("%s: operation %q is none of CREATE, UPDATE, DELETE, CONNECT", r.Kind, op))
				}
			}
		}
	}
	if len(problems) > 0 {
		return errors.New("guest: " + strings.Join(problems, "; "))
	}
	return nil
}

// denial is err as a refusal: its message, and its warnings when it is a *Denial.
func denial(err error, warnings []string) *Denial {
	var d *Denial
	if errors.As(err, &d) {
		return &Denial{Message: err.Error(), Warnings: append(warnings, d.Warnings...)}
	}
	return &Denial{Message: err.Error(), Warnings: warnings}
}
