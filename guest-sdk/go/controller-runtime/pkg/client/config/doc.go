// Package config gives a plugin the rest.Config of its own Kubernetes client, as
// controller-runtime's does from a kubeconfig or the pod's service account: inside wasmop its
// transport is the host (WIT `transport`), so clientsets, the dynamic client and discovery work
// unchanged and reach only what the plugin declared.
package config
