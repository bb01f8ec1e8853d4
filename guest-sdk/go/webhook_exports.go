package guest

import (
	"context"
	"fmt"
	"slices"

	"wasmop.dev/guest/abi"
	"wasmop.dev/guest/internal/wit"
)

// WebhooksDescribeWebhooks declares the reconciler's webhooks.
func (e exports) WebhooksDescribeWebhooks() wit.WebhooksRegistration {
	defer abi.GuestTurn()()
	w := e.r.Webhooks
	reg := wit.WebhooksRegistration{Validate: rules(w.Validate), Default: rules(w.Default)}
	for _, k := range w.Convert {
		reg.Convert = append(reg.Convert, k.WIT())
	}
	return reg
}

// rules are webhook rules as the host takes them (Register checked their operations); no
// operations means create and update.
func rules(rs []WebhookRule) []wit.Rule {
	var out []wit.Rule
	for _, r := range rs {
		ops := r.Operations
		if len(ops) == 0 {
			ops = []Operation{OperationCreate, OperationUpdate}
		}
		rule := wit.Rule{Kind: r.Kind.WIT()}
		for _, op := range ops {
			rule.Operations = append(rule.Operations, wit.Operation(slices.Index(operations, op)))
		}
		out = append(out, rule)
	}
	return out
}

// WebhooksValidate runs the Validator: nil admits, an error refuses.
func (e exports) WebhooksValidate(req wit.AdmissionRequest) wit.Verdict {
	defer abi.GuestTurn()()
	if e.r.Webhooks.Validator == nil {
		panic("guest: the host asked a plugin with no Validator to validate")
	}
	warnings, err := e.r.Webhooks.Validator(context.Background(), AdmissionRequestFromWIT(req))
	if err != nil {
		d := denial(err, warnings)
		return wit.Verdict{Case: wit.VerdictDenied, Denied: wit.Denial{Message: d.Message, Warnings: d.Warnings}}
	}
	return wit.Verdict{Case: wit.VerdictAllowed, Allowed: warnings}
}

// WebhooksDefault runs the Defaulter and returns its object, or refuses with its error.
func (e exports) WebhooksDefault(req wit.AdmissionRequest) wit.Result[wit.Object, wit.Denial] {
	defer abi.GuestTurn()()
	if e.r.Webhooks.Defaulter == nil {
		panic("guest: the host asked a plugin with no Defaulter to default")
	}
	obj, err := e.r.Webhooks.Defaulter(context.Background(), AdmissionRequestFromWIT(req))
	if err == nil {
		var text string
		if text, err = obj.Encode(); err == nil {
			return wit.Result[wit.Object, wit.Denial]{Ok: text}
		}
		panic(fmt.Sprintf("guest: the defaulted object does not encode: %v", err))
	}
	d := denial(err, nil)
	return wit.Result[wit.Object, wit.Denial]{IsErr: true, Err: wit.Denial{Message: d.Message, Warnings: d.Warnings}}
}

// WebhooksConvert runs the Converter on obj.
func (e exports) WebhooksConvert(obj wit.Object, apiVersion string) wit.Result[wit.Object, string] {
	defer abi.GuestTurn()()
	if e.r.Webhooks.Converter == nil {
		panic("guest: the host asked a plugin with no Converter to convert")
	}
	fail := func(err error) wit.Result[wit.Object, string] {
		return wit.Result[wit.Object, string]{IsErr: true, Err: err.Error()}
	}
	decoded, err := Decode(obj)
	if err != nil {
		return fail(err)
	}
	converted, err := e.r.Webhooks.Converter(context.Background(), decoded, apiVersion)
	if err != nil {
		return fail(err)
	}
	text, err := converted.Encode()
	if err != nil {
		return fail(err)
	}
	return wit.Result[wit.Object, string]{Ok: text}
}

// AdmissionRequestFromWIT is an admission request from the host as a Validator and a Defaulter
// take it, its objects decoded; for the SDK's own packages (guesttest builds requests with it).
func AdmissionRequestFromWIT(req wit.AdmissionRequest) AdmissionRequest {
	return AdmissionRequest{
		UID:       req.Uid,
		Kind:      Kind{req.Kind.Group, req.Kind.Version, req.Kind.Kind},
		Namespace: req.Namespace,
		Name:      req.Name,
		Operation: operations[req.Operation],
		Object:    decodeOptional(req.Object),
		OldObject: decodeOptional(req.OldObject),
		User:      UserInfo{Username: req.UserInfo.Username, UID: req.UserInfo.Uid, Groups: req.UserInfo.Groups},
		DryRun:    req.DryRun,
	}
}

// decodeOptional is the object text decoded, or nil when absent; the host only sends objects.
func decodeOptional(text *wit.Object) Object {
	if text == nil {
		return nil
	}
	obj, err := Decode(*text)
	if err != nil {
		panic(fmt.Sprintf("guest: the host sent an object that does not decode: %v", err))
	}
	return obj
}
