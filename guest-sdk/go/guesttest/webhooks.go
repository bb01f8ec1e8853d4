package guesttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/wit"
)

// testName is the uid of the requests and reviews built here, and the username of their user
// unless WithUser names another, as `wasmop test` fills them in for a fixture.
const testName = "wasmop-test"

// operations are the Operations in the order of the WIT enum.
var operations = []guest.Operation{guest.OperationCreate, guest.OperationUpdate, guest.OperationDelete, guest.OperationConnect}

// AdmissionOption changes a request Admission builds.
type AdmissionOption func(*admission)

// admission is what the options set.
type admission struct {
	operation guest.Operation
	username  string
	groups    []string
	dryRun    bool
}

// WithOperation makes the request's operation op (CREATE, UPDATE, DELETE or CONNECT) instead of
// the one its objects imply.
func WithOperation(op guest.Operation) AdmissionOption {
	return func(a *admission) { a.operation = op }
}

// WithUser makes the request's user username, a member of groups, instead of wasmop-test in no
// group.
func WithUser(username string, groups ...string) AdmissionOption {
	return func(a *admission) { a.username, a.groups = username, groups }
}

// WithDryRun makes the request a dry run: it persists nothing.
func WithDryRun() AdmissionOption {
	return func(a *admission) { a.dryRun = true }
}

// Admission is the admission request for object (as it would be stored; nil on a delete) and
// oldObject (as stored; nil on a create) as the runtime hands it to a plugin's Validator and
// Defaulter, each object passed through JSON as the host sends it (numbers are float64), so a
// webhook function runs natively on what it gets in the sandbox. What the options do not set is
// filled in as `wasmop test` fills in a fixture's request: the operation is CREATE with object
// alone, UPDATE with both and DELETE with oldObject alone; the kind is the group, version (the
// core group is "") and kind of the object shown (object, else oldObject), the namespace and name
// those of its metadata (empty when absent); the uid is wasmop-test, the user wasmop-test (no
// uid, no groups), and it is no dry run. It is an error when both objects are nil, an object does
// not encode, or the operation is none of the four.
//
//	req, err := guesttest.Admission(app, nil, guesttest.WithUser("alice", "devs"))
//	_, err = validate(context.Background(), req)
func Admission(object, oldObject guest.Object, options ...AdmissionOption) (guest.AdmissionRequest, error) {
	shown := object
	if shown == nil {
		shown = oldObject
	}
	if shown == nil {
		return guest.AdmissionRequest{}, errors.New("guesttest: an admission request needs its object or oldObject")
	}
	a := admission{operation: guest.OperationUpdate, username: testName}
	switch {
	case oldObject == nil:
		a.operation = guest.OperationCreate
	case object == nil:
		a.operation = guest.OperationDelete
	}
	for _, option := range options {
		option(&a)
	}
	op := slices.Index(operations, a.operation)
	if op < 0 {
		return guest.AdmissionRequest{}, fmt.Errorf("guesttest: operation %q is none of CREATE, UPDATE, DELETE, CONNECT", a.operation)
	}
	apiVersion := shown.String("apiVersion")
	group, version := "", apiVersion
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		group, version = apiVersion[:i], apiVersion[i+1:]
	}
	req := wit.AdmissionRequest{
		Uid:       testName,
		Kind:      wit.Gvk{Group: group, Version: version, Kind: shown.String("kind")},
		Namespace: shown.Namespace(),
		Name:      shown.Name(),
		Operation: wit.Operation(op),
		// Lists arrive from the host as empty slices, not nil.
		UserInfo: wit.UserInfo{Username: a.username, Groups: append([]string{}, a.groups...)},
		DryRun:   a.dryRun,
	}
	var err error
	if req.Object, err = encodeOptional("object", object); err != nil {
		return guest.AdmissionRequest{}, err
	}
	if req.OldObject, err = encodeOptional("oldObject", oldObject); err != nil {
		return guest.AdmissionRequest{}, err
	}
	return guest.AdmissionRequestFromWIT(req), nil
}

// encodeOptional is obj as the host sends it, nil when it is nil.
func encodeOptional(field string, obj guest.Object) (*wit.Object, error) {
	if obj == nil {
		return nil, nil
	}
	text, err := obj.Encode()
	if err != nil {
		return nil, fmt.Errorf("guesttest: the %s does not encode: %w", field, err)
	}
	return &text, nil
}

// AdmissionReview is the admission.k8s.io/v1 AdmissionReview the apiserver would post for req,
// as JSON: for a fixture file's `validate` or `default` (its `request`), or a tool that takes a
// review. Its request has req's uid, kind, resource (the same group and version, the kind
// lower-cased with an s), namespace (left out when empty), name, operation, userInfo (username;
// uid and groups when it has any), object and oldObject (each left out when nil) and dryRun.
// For a request Admission built, it is what `wasmop test` posts for a fixture stating the same
// objects. It is an error when an object does not encode or the operation is none of CREATE,
// UPDATE, DELETE and CONNECT.
func AdmissionReview(req guest.AdmissionRequest) ([]byte, error) {
	if !slices.Contains(operations, req.Operation) {
		return nil, fmt.Errorf("guesttest: operation %q is none of CREATE, UPDATE, DELETE, CONNECT", req.Operation)
	}
	type groupVersionKind struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	}
	type groupVersionResource struct {
		Group    string `json:"group"`
		Version  string `json:"version"`
		Resource string `json:"resource"`
	}
	type userInfo struct {
		Username string   `json:"username"`
		UID      string   `json:"uid,omitempty"`
		Groups   []string `json:"groups,omitempty"`
	}
	type request struct {
		UID       string               `json:"uid"`
		Kind      groupVersionKind     `json:"kind"`
		Resource  groupVersionResource `json:"resource"`
		Namespace string               `json:"namespace,omitempty"`
		Name      string               `json:"name"`
		Operation guest.Operation      `json:"operation"`
		UserInfo  userInfo             `json:"userInfo"`
		Object    guest.Object         `json:"object,omitzero"`
		OldObject guest.Object         `json:"oldObject,omitzero"`
		DryRun    bool                 `json:"dryRun"`
	}
	k := req.Kind
	review := struct {
		APIVersion string  `json:"apiVersion"`
		Kind       string  `json:"kind"`
		Request    request `json:"request"`
	}{"admission.k8s.io/v1", "AdmissionReview", request{
		UID:       req.UID,
		Kind:      groupVersionKind{k.Group, k.Version, k.Kind},
		Resource:  groupVersionResource{k.Group, k.Version, strings.ToLower(k.Kind) + "s"},
		Namespace: req.Namespace,
		Name:      req.Name,
		Operation: req.Operation,
		UserInfo:  userInfo{req.User.Username, req.User.UID, req.User.Groups},
		Object:    req.Object,
		OldObject: req.OldObject,
		DryRun:    req.DryRun,
	}}
	data, err := json.Marshal(review)
	if err != nil {
		return nil, fmt.Errorf("guesttest: the AdmissionReview does not encode: %w", err)
	}
	return data, nil
}

// ConversionReview is the apiextensions.k8s.io/v1 ConversionReview the apiserver would post to
// have objects converted to desiredAPIVersion (`group/version`), as JSON, its uid wasmop-test:
// what `wasmop test` posts for a fixture's `convert` stating the same. It is an error when an
// object is nil or does not encode.
func ConversionReview(desiredAPIVersion string, objects ...guest.Object) ([]byte, error) {
	for i, obj := range objects {
		if obj == nil {
			return nil, fmt.Errorf("guesttest: object %d of the ConversionReview is nil", i)
		}
	}
	type request struct {
		UID               string         `json:"uid"`
		DesiredAPIVersion string         `json:"desiredAPIVersion"`
		Objects           []guest.Object `json:"objects"`
	}
	review := struct {
		APIVersion string  `json:"apiVersion"`
		Kind       string  `json:"kind"`
		Request    request `json:"request"`
	}{"apiextensions.k8s.io/v1", "ConversionReview", request{
		UID: testName, DesiredAPIVersion: desiredAPIVersion, Objects: append([]guest.Object{}, objects...),
	}}
	data, err := json.Marshal(review)
	if err != nil {
		return nil, fmt.Errorf("guesttest: the ConversionReview does not encode: %w", err)
	}
	return data, nil
}
