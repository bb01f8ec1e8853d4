package guest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"wasmop.dev/guest/internal/wit"
)

var webAppKind = Kind{"example.wasmop.dev", "v1alpha1", "WebApp"}

// hooks serves every webhook: replicas over 5 are refused, a missing port is defaulted and
// conversion renames the version.
var hooks = Webhooks{
	Validate: []WebhookRule{{Kind: webAppKind}},
	Validator: func(_ context.Context, req AdmissionRequest) ([]string, error) {
		if req.Object.Int("spec", "replicas") > 5 {
			return []string{"think again"}, &Denial{Message: "too many", Warnings: []string{"really"}}
		}
		return []string{"fine by " + req.User.Username}, nil
	},
	Default: []WebhookRule{{Kind: webAppKind, Operations: []Operation{OperationCreate}}},
	Defaulter: func(_ context.Context, req AdmissionRequest) (Object, error) {
		if req.Operation != OperationCreate {
			return nil, errors.New("only creates")
		}
		req.Object.Set(int64(8080), "spec", "port")
		return req.Object, nil
	},
	Convert: []Kind{webAppKind},
	Converter: func(_ context.Context, obj Object, apiVersion string) (Object, error) {
		if apiVersion == "example.wasmop.dev/v9" {
			return nil, Deny("no %s", apiVersion)
		}
		obj["apiVersion"] = apiVersion
		return obj, nil
	},
}

func witRequest(op wit.Operation, object string) wit.AdmissionRequest {
	return wit.AdmissionRequest{Kind: webAppKind.WIT(), Operation: op, Object: &object,
		UserInfo: wit.UserInfo{Username: "alice"}}
}

func TestWebhooksAreDeclaredWithCreateAndUpdateByDefault(t *testing.T) {
	reg := exports{Reconciler{Webhooks: hooks}}.WebhooksDescribeWebhooks()
	if got := reg.Validate[0].Operations; len(got) != 2 || got[0] != wit.OperationCreate || got[1] != wit.OperationUpdate {
		t.Errorf("validate operations %v", got)
	}
	if got := reg.Default[0].Operations; len(got) != 1 || got[0] != wit.OperationCreate {
		t.Errorf("default operations %v", got)
	}
	if len(reg.Convert) != 1 || reg.Convert[0].Kind != "WebApp" {
		t.Errorf("convert %v", reg.Convert)
	}
	if none := (exports{Reconciler{}}).WebhooksDescribeWebhooks(); len(none.Validate)+len(none.Default)+len(none.Convert) != 0 {
		t.Errorf("a reconciler without webhooks declares %+v", none)
	}
}

func TestValidatorErrorsRefuseWithTheirMessageAndWarnings(t *testing.T) {
	e := exports{Reconciler{Webhooks: hooks}}
	allowed := e.WebhooksValidate(witRequest(wit.OperationCreate, `{"spec":{"replicas":2}}`))
	if allowed.Case != wit.VerdictAllowed || allowed.Allowed[0] != "fine by alice" {
		t.Errorf("allowed %+v", allowed)
	}
	denied := e.WebhooksValidate(witRequest(wit.OperationUpdate, `{"spec":{"replicas":9}}`))
	if denied.Case != wit.VerdictDenied || denied.Denied.Message != "too many" || strings.Join(denied.Denied.Warnings, ",") != "think again,really" {
		t.Errorf("denied %+v", denied)
	}
}

func TestDefaulterReturnsTheObjectOrRefuses(t *testing.T) {
	e := exports{Reconciler{Webhooks: hooks}}
	done := e.WebhooksDefault(witRequest(wit.OperationCreate, `{"spec":{}}`))
	if done.IsErr || done.Ok != `{"spec":{"port":8080}}` {
		t.Errorf("defaulted %+v", done)
	}
	refused := e.WebhooksDefault(witRequest(wit.OperationUpdate, `{"spec":{}}`))
	if !refused.IsErr || refused.Err.Message != "only creates" {
		t.Errorf("refused %+v", refused)
	}
}

func TestConverterErrorsFailTheConversion(t *testing.T) {
	e := exports{Reconciler{Webhooks: hooks}}
	beta := e.WebhooksConvert(`{"apiVersion":"example.wasmop.dev/v1alpha1"}`, "example.wasmop.dev/v1beta1")
	if beta.IsErr || beta.Ok != `{"apiVersion":"example.wasmop.dev/v1beta1"}` {
		t.Errorf("converted %+v", beta)
	}
	if failed := e.WebhooksConvert(`{}`, "example.wasmop.dev/v9"); !failed.IsErr || failed.Err != "no example.wasmop.dev/v9" {
		t.Errorf("failed %+v", failed)
	}
	if garbage := e.WebhooksConvert(`[1]`, "example.wasmop.dev/v1beta1"); !garbage.IsErr {
		t.Errorf("a non-object converted: %+v", garbage)
	}
}

func TestHalfDeclaredWebhooksAreRefusedNamingWhatIsMissing(t *testing.T) {
	half := Webhooks{Validate: []WebhookRule{{Kind: webAppKind, Operations: []Operation{"PATCH"}}}, Converter: hooks.Converter}
	err := half.check()
	for _, want := range []string{"Webhooks.Validate declares 1 rules but no function", "Webhooks.Convert has a function but no rules", `operation "PATCH"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not say %q", err, want)
		}
	}
	if err := hooks.check(); err != nil {
		t.Errorf("complete webhooks: %v", err)
	}
}
