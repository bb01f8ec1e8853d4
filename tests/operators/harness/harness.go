// Package harness starts the wasmop host where a published operator's envtest suite started its
// manager (tests/operators): `$WASMOP run` with the plugin `$WASMOP_PLUGIN` against the suite's
// apiserver, its log to `$WASMOP_LOG`. It needs nothing beyond the standard library, so every
// suite's module can use it whatever versions the operator pins.
package harness

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ReadyTimeout is how long Start waits for the host to report ready.
const ReadyTimeout = 3 * time.Minute

// Start runs the host with the plugin, given the environment env (as the host's config file gives
// a plugin what an operator's pod would), as the user kubeconfig names, until ctx ends; it
// returns once the host answers /readyz with 200 (the plugin loaded, its caches synced).
func Start(ctx context.Context, kubeconfig []byte, env map[string]string) error {
	dir, err := os.MkdirTemp("", "wasmop-suite")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return err
	}
	config := filepath.Join(dir, "wasmop.yaml")
	if err := os.WriteFile(config, []byte(hostConfig(os.Getenv("WASMOP_PLUGIN"), env)), 0o600); err != nil {
		return err
	}
	logFile, err := os.Create(os.Getenv("WASMOP_LOG"))
	if err != nil {
		return err
	}
	probe, err := freeAddress()
	if err != nil {
		return err
	}
	host := exec.Command(os.Getenv("WASMOP"), "run", "--kubeconfig", path, "--config", config,
		"--metrics-bind-address", "0", "--health-probe-bind-address", probe)
	host.Stdout, host.Stderr = logFile, logFile
	host.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := host.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- host.Wait() }()
	go func() {
		<-ctx.Done()
		_ = host.Process.Signal(syscall.SIGTERM)
	}()
	return awaitReady(probe, exited)
}

// hostConfig is the host's config file: the one plugin, with its environment in name order.
func hostConfig(plugin string, env map[string]string) string {
	var config strings.Builder
	fmt.Fprintf(&config, "plugins:\n- file: %s\n", strconv.Quote(plugin))
	names := make([]string, 0, len(env))
	for name := range env {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) > 0 {
		config.WriteString("  env:\n")
	}
	for _, name := range names {
		fmt.Fprintf(&config, "  - {name: %s, value: %s}\n", strconv.Quote(name), strconv.Quote(env[name]))
	}
	return config.String()
}

// awaitReady polls the host's readiness until it answers 200, the host exits or time runs out.
func awaitReady(probe string, exited <-chan error) error {
	deadline := time.Now().Add(ReadyTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("the host exited before it was ready (%v); see $WASMOP_LOG", err)
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
	return fmt.Errorf("the host was not ready within %s; see $WASMOP_LOG", ReadyTimeout)
}

// Kubeconfig is a kubeconfig for the apiserver at server, trusting ca, as the user of the client
// certificate cert and key: what an envtest suite's rest.Config holds.
func Kubeconfig(server string, ca, cert, key []byte) []byte {
	encode := base64.StdEncoding.EncodeToString
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster: {server: %s, certificate-authority-data: %s}
users:
- name: envtest
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: envtest
  context: {cluster: envtest, user: envtest}
current-context: envtest
`, strconv.Quote(server), encode(ca), encode(cert), encode(key)))
}

// freeAddress is a loopback address with a port nothing listens on.
func freeAddress() (string, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer listener.Close()
	return "127.0.0.1:" + strconv.Itoa(listener.Addr().(*net.TCPAddr).Port), nil
}
