package guest

import (
	"strings"

	"wasmop.dev/guest/internal/wit"
)

// Kind is a group, version and kind; the core group is "".
type Kind struct {
	Group, Version, Kind string
}

// Well-known kinds.
var (
	// ConfigMap is core/v1 ConfigMap.
	ConfigMap = Kind{"", "v1", "ConfigMap"}
	// Secret is core/v1 Secret.
	Secret = Kind{"", "v1", "Secret"}
	// Service is core/v1 Service.
	Service = Kind{"", "v1", "Service"}
	// Pod is core/v1 Pod.
	Pod = Kind{"", "v1", "Pod"}
	// Deployment is apps/v1 Deployment.
	Deployment = Kind{"apps", "v1", "Deployment"}
	// StatefulSet is apps/v1 StatefulSet.
	StatefulSet = Kind{"apps", "v1", "StatefulSet"}
)

// APIVersion is the kind's apiVersion field: `v1` or `group/version`.
func (k Kind) APIVersion() string {
	if k.Group == "" {
		return k.Version
	}
	return k.Group + "/" + k.Version
}

// String is `Kind.version.group`, or `Kind.version` in the core group.
func (k Kind) String() string {
	return strings.TrimSuffix(k.Kind+"."+k.Version+"."+k.Group, ".")
}

// KindOf parses an apiVersion and kind.
func KindOf(apiVersion, kind string) Kind {
	group, version, found := strings.Cut(apiVersion, "/")
	if !found {
		return Kind{"", apiVersion, kind}
	}
	return Kind{group, version, kind}
}

// WIT is the kind as the host's interfaces take it; for the SDK's own packages.
func (k Kind) WIT() wit.Gvk {
	return wit.Gvk{Group: k.Group, Version: k.Version, Kind: k.Kind}
}
