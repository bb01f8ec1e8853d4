package ray

// Added to the operator's test package by ../../run: starts the wasmop host that replaces the
// suite's manager.

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"

	. "github.com/onsi/gomega"
)

// startWasmop runs `$WASMOP run` with the plugin $WASMOP_PLUGIN against the suite's apiserver, as
// a user of system:masters (what the suite's manager ran as), its log to $WASMOP_LOG, until ctx
// ends; it returns once the host reports ready (the plugin loaded and the caches synced). The
// plugin's environment, in the host's config file, holds what the suite set in its own process
// for the manager: RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV=10.
func startWasmop(ctx context.Context, cfg *rest.Config) {
	user, err := testEnv.AddUser(envtest.User{Name: "wasmop", Groups: []string{"system:masters"}}, cfg)
	Expect(err).ToNot(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	Expect(err).ToNot(HaveOccurred())
	dir, err := os.MkdirTemp("", "wasmop-suite")
	Expect(err).ToNot(HaveOccurred())
	path := filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	logFile, err := os.Create(os.Getenv("WASMOP_LOG"))
	Expect(err).ToNot(HaveOccurred())

	config := filepath.Join(dir, "wasmop.yaml")
	plugins := "plugins:\n- file: " + os.Getenv("WASMOP_PLUGIN") + "\n  env: [{name: " +
		utils.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV + ", value: \"10\"}]\n"
	Expect(os.WriteFile(config, []byte(plugins), 0o600)).To(Succeed())
	probe := freeAddress()
	host := exec.Command(os.Getenv("WASMOP"), "run", "--kubeconfig", path, "--config", config,
		"--metrics-bind-address", "0", "--health-probe-bind-address", probe)
	host.Stdout, host.Stderr = logFile, logFile
	host.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	Expect(host.Start()).To(Succeed())
	go func() {
		<-ctx.Done()
		_ = host.Process.Signal(syscall.SIGTERM)
	}()
	Eventually(func() (int, error) {
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Equal(http.StatusOK))
}

// freeAddress is a loopback address with a port nothing listens on.
func freeAddress() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).ToNot(HaveOccurred())
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
