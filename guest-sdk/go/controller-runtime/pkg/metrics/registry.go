// Package metrics is controller-runtime's metrics registry for wasmop guests. A plugin's own
// collectors register and record here as they do in a controller-runtime program, so code that
// keeps metrics runs unchanged; the host does not scrape the guest, so they stay inside it. The
// host exports each plugin's reconcile, queue and webhook metrics under controller-runtime's
// names itself.
package metrics

import "github.com/prometheus/client_golang/prometheus"

// RegistererGatherer is a Prometheus registry: a Registerer and a Gatherer.
type RegistererGatherer interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// Registry is the plugin's registry.
var Registry RegistererGatherer = prometheus.NewRegistry()
