package transport

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"wasmop.dev/guest/internal/wit"
)

func TestARefusalReadsAsTheApiserversStatus(t *testing.T) {
	req, _ := http.NewRequest("GET", "https://apiserver.wasmop.invalid/api/v1/namespaces/a/secrets", nil)
	denied := wit.Error{Case: wit.ErrorForbidden, Forbidden: wit.Tuple2[wit.DeniedBy, wit.Status]{
		F0: wit.DeniedByDeclaredPermissions,
		F1: wit.Status{Code: 403, Reason: "Forbidden", Message: "plugin p may not List Secret.v1 in namespace a"},
	}}
	resp, err := refusal(req, denied)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	var status struct {
		Kind, Status, Reason, Message string
		Code                          int
	}
	if err := json.Unmarshal(body, &status); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 403 || status.Kind != "Status" || status.Status != "Failure" || status.Reason != "Forbidden" || status.Code != 403 || status.Message != "plugin p may not List Secret.v1 in namespace a" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
