// Package transport carries the requests of a Kubernetes client of the plugin's own (client-go's
// clientsets, dynamic client and discovery) to the apiserver through the host. It is a package
// of its own so that a plugin that does not use it does not link net/http.
package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"wasmop.dev/guest"
	"wasmop.dev/guest/internal/host"
	"wasmop.dev/guest/internal/wit"
)

// RoundTripper sends HTTP requests to the apiserver through the host (WIT `transport`), for a
// Kubernetes client of the plugin's own: set it as a rest.Config's Transport and client-go's
// typed clientsets, dynamic client and discovery work unchanged. The host reads each request as
// the apiserver would (verb, group, version, resource, namespace, name, subresource), checks it
// against the plugin's declared permissions and sends it as the plugin; the URL's scheme and host
// are ignored. The apiserver's answers come back as they are, 404s and 409s included; a request
// the host refuses comes back as the Status the apiserver would give (403 Forbidden for an
// undeclared permission, 422 Invalid for a request it cannot check, such as a watch), so
// client-go's errors.IsForbidden and friends see it. Reads through it go to the apiserver: the
// cache (Cache, client.Client's reads) is the cheap way to read.
type RoundTripper struct{}

// RoundTrip sends req through the host and returns the apiserver's answer.
func (RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		read, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
		body = read
	}
	answer := host.Get().TransportSend(wit.HttpRequest{
		Method:      req.Method,
		Path:        req.URL.RequestURI(),
		ContentType: req.Header.Get("Content-Type"),
		Body:        body,
	})
	if answer.IsErr {
		return refusal(req, answer.Err)
	}
	return response(req, int(answer.Ok.Status), answer.Ok.ContentType, answer.Ok.Body), nil
}

// refusal is the host's error as the apiserver's Status answer, or a Go error when there was
// no answer at all.
func refusal(req *http.Request, e wit.Error) (*http.Response, error) {
	err := guest.FromWIT(e)
	status, _ := guest.StatusOf(err)
	if status.Code == 0 {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	body, _ := json.Marshal(map[string]any{
		"kind":       "Status",
		"apiVersion": "v1",
		"status":     "Failure",
		"message":    status.Message,
		"reason":     status.Reason,
		"code":       status.Code,
	})
	return response(req, status.Code, "application/json", body), nil
}

func response(req *http.Request, code int, contentType string, body []byte) *http.Response {
	header := http.Header{}
	if contentType != "" {
		header.Set("Content-Type", contentType)
	}
	header.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
