// Command wasmop-rbac prints the kubebuilder RBAC markers of a Go plugin, for the build to
// hand its controller-runtime layer, which declares exactly those permissions.
//
// It reads the packages of the plugin that its main package is or imports and that import
// controller-runtime themselves (where a controller's `// +kubebuilder:rbac:…` markers live),
// as `go list -deps` finds them for GOOS=wasip1, and prints the markers as base64 of a JSON
// array of {"at": "file:line", "marker": "groups=…,resources=…,verbs=…"}, or nothing when
// there are none.
//
//	wasmop-rbac PLUGIN_DIR
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: wasmop-rbac PLUGIN_DIR")
		os.Exit(2)
	}
	markers, err := pluginMarkers(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "wasmop-rbac: %v\n", err)
		os.Exit(1)
	}
	if len(markers) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "%d kubebuilder RBAC markers, from %s to %s\n", len(markers), markers[0].At, markers[len(markers)-1].At)
	data, err := json.Marshal(markers)
	if err != nil {
		fmt.Fprintf(os.Stderr, "wasmop-rbac: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(base64.StdEncoding.EncodeToString(data))
}
