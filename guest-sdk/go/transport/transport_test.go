package transport_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"wasmop.dev/guest/guesttest"
	"wasmop.dev/guest/transport"
)

func TestTransportCarriesTheRequestAndTheAnswerAsTheyAre(t *testing.T) {
	h := guesttest.New()
	var seen struct{ method, uri, contentType, body string }
	h.APIServer = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen.method, seen.uri, seen.contentType, seen.body = r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), string(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"kind":"Status","code":409}`))
	})
	client := &http.Client{Transport: transport.RoundTripper{}}
	req, _ := http.NewRequest("PATCH", "https://apiserver.wasmop.invalid/api/v1/namespaces/a/configmaps/x?dryRun=All", strings.NewReader(`{"data":{"k":"v"}}`))
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 409 || string(body) != `{"kind":"Status","code":409}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("answer %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	want := [4]string{"PATCH", "/api/v1/namespaces/a/configmaps/x?dryRun=All", "application/merge-patch+json", `{"data":{"k":"v"}}`}
	if got := [4]string{seen.method, seen.uri, seen.contentType, seen.body}; got != want {
		t.Fatalf("the host got %q, want %q", got, want)
	}
}

func TestTransportWithoutAnAnswerIsAnError(t *testing.T) {
	guesttest.New()
	_, err := (&http.Client{Transport: transport.RoundTripper{}}).Get("https://apiserver.wasmop.invalid/api/v1/pods")
	if err == nil || !strings.Contains(err.Error(), "no apiserver") {
		t.Fatalf("err = %v", err)
	}
}
