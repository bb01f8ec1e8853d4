package config

import (
	"k8s.io/client-go/rest"
	"wasmop.dev/guest/transport"
)

// Host is the apiserver address a plugin's rest.Config names. Its requests never go to it: the
// host's transport (transport.RoundTripper) sends each to the apiserver the host talks to, so a URL
// built on it (a proxy path, say) reaches the same place.
const Host = "https://apiserver.wasmop.invalid"

// GetConfig is the rest.Config of the plugin's own Kubernetes client: typed clientsets, the
// dynamic client and discovery built from it send every request through the host, which
// checks it against the plugin's declared permissions and sends it as the plugin. Bodies are
// JSON, which the host reads (a client set to protobuf or CBOR is refused). Client-side
// throttling is off (QPS -1): the host paces the plugin's apiserver requests at its write rate.
func GetConfig() (*rest.Config, error) {
	return &rest.Config{
		Host:      Host,
		Transport: transport.RoundTripper{},
		UserAgent: "wasmop-plugin",
		QPS:       -1,
		ContentConfig: rest.ContentConfig{
			ContentType:        "application/json",
			AcceptContentTypes: "application/json",
		},
	}, nil
}

// GetConfigOrDie is GetConfig, which does not fail inside a plugin.
func GetConfigOrDie() *rest.Config {
	config, _ := GetConfig()
	return config
}

// GetConfigWithContext is GetConfig: a plugin has no kubeconfig contexts, only the host's
// apiserver.
func GetConfigWithContext(string) (*rest.Config, error) {
	return GetConfig()
}
