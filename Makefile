# The two commands a person needs: `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

.PHONY: book help demo demo-plane demo-plugins demo-cluster test test-build test-binaries comparators toolchains wasmop-binary test-cluster test-operators bench bench-large bench-profile fuzz soak guests control-plane image down install docs

help:
	@echo "make demo   a local control plane with wasmop running the example plugins"
	@echo "make demo-cluster  wasmop in two pods on the test control plane's node (root)"
	@echo "make test   everything CI runs: unit and integration tests against a real apiserver"
	@echo "make test-cluster  the tests that need a node: pods, the image, wasmop in pods (root)"
	@echo "make test-operators  published controller-runtime operators' own envtest suites with wasmop in the manager's place (tests/operators)"
	@echo "make image  the wasmop image as a docker-archive, built without a daemon: target/image/wasmop.tar"
	@echo "make bench  benchmarks: dispatch against the bare wasmtime floor, webapp per guest language, wasmop beside controller-runtime, kube-rs and kopf, N operators in one host beside N processes"
	@echo "make bench-profile  flame graphs of wasmop and kube-rs converging 5,000 WebApps (perf), into tests/bench/results/flamegraphs/"
	@echo "make bench-large  20,000 WebApps for wasmop, kube-rs and controller-runtime, and one replica beside three sharding ones (about 45 minutes)"
	@echo "make soak   half an hour of churn, hot swaps and a failover on 1,000 WebApps: memory and convergence checked"
	@echo "make fuzz   the parsers of guest, apiserver and operator input fuzzed, FUZZ_SECONDS (default 30) per target"
	@echo "make down   stop the demo's control plane"
	@echo "make install  wasmop on your PATH (cargo install --path host, into ~/.cargo/bin)"
	@echo "make docs   the book (book/), into target/docs/book/, and each guest SDK's API reference, into target/docs/<rust|go|python|ts>/"

guests: toolchains wasmop-binary
	target/debug/wasmop build

# Each guest language's toolchain, installed under the checkout on first use.
toolchains:
	@guest-sdk/rust/install-toolchain
	@guest-sdk/python/install-toolchain
	@guest-sdk/js/install-toolchain
	@guest-sdk/go/install-toolchain

# Cargo resolves features once per command: `cargo test --workspace` turns on what the
# dev-dependencies ask for (tokio's test clock), and a plain `cargo build --bin wasmop` does not,
# so each compiled the host and everything above tokio (kube, hyper, wasmtime-wasi) again.
# `--examples` asks for the dev-dependencies' features (the workspace has no examples to build):
# the binaries below share every crate with the test build.
AS_TESTED := --workspace --examples

# The host binary, which builds the guests and which the tests run.
wasmop-binary:
	cargo build $(AS_TESTED) --bin wasmop

# The compatibility corpus: each operator's controller compiled unchanged into a plugin, and its
# own envtest suite run with wasmop where its manager was (tests/operators/README.md).
test-operators:
	@tests/k8s/build.sh >/dev/null
	@$(MAKE) --no-print-directory wasmop-binary
	tests/operators/run external-secrets
	tests/operators/run kuberay
	tests/operators/run kueue
	tests/operators/run jobset

control-plane:
	@tests/k8s/build.sh >/dev/null
	@tests/k8s/build.sh --controller-manager >/dev/null
	@tests/k8s/build.sh --registry >/dev/null
	@tests/k8s/build.sh --tools >/dev/null

# What `make test` runs against, built while the control plane's Go tools build beside it, and
# the guests beside the test binaries once the host binary is built: each keeps the two cores
# busy through the others' serial stretches (links, the largest crates, the guest toolchains).
# The book is built here too, so a page mdBook warns about fails the run early.
test-build: guests test-binaries comparators book

test-binaries: wasmop-binary
	cargo test --workspace --no-run
	cargo test --manifest-path plugins/Cargo.toml --no-run

comparators: test-binaries
	@echo "[test] the benchmark's comparators, for the conformance suite (tests/conformance/tests/comparators.rs)"
	tests/bench/controller-runtime/build
	cargo build $(AS_TESTED) --bin webapp-kube-rs
	tests/bench/kopf/install

test:
	@$(MAKE) --no-print-directory -j3 control-plane test-build
	@mkdir -p target
	@# Integration tests mostly wait on apiservers: four at a time keep two cores busy (the one
	@# integration binary in CI on this machine kind: 284 s at 4, 427 s at the default 2).
	set -o pipefail; { RUST_TEST_THREADS=$${RUST_TEST_THREADS:-4} cargo test --workspace && cargo test --manifest-path plugins/Cargo.toml; } 2>&1 | tee target/test-output.log
	@awk '/^test result:/ {p += $$4; f += $$6} END {printf "wasmop: %d passed, %d failed\n", p, f}' target/test-output.log
	deploy/helm/render --check
	tests/monitoring/test
	tests/k8s/progress-test
	deploy/demo-test
	guest-sdk/docs go python ts
	guest-sdk/python/test
	guest-sdk/python/test-cli-test
	guest-sdk/js/test
	guest-sdk/go/test
	tests/operators/run external-secrets
	tests/operators/run kuberay

bench: control-plane guests
	cargo bench -p wasmop --bench queue
	cargo bench -p wasmop --bench dispatch
	cargo bench -p wasmop --bench languages
	cargo build --release -p wasmop -p webapp-kube-rs -p wasmop-bench
	tests/bench/controller-runtime/build
	tests/bench/kopf/install
	target/release/wasmop-bench
	target/release/wasmop-bench consolidation
	target/release/wasmop-bench admission
	target/release/wasmop-bench wake
	tests/bench/chart

# Not part of `make bench`: the per-object slope at 20,000 WebApps (once each; results in
# tests/bench/results/large/) and the sharding benchmark over 5,000.
bench-large: control-plane guests
	cargo build --release -p wasmop -p webapp-kube-rs -p wasmop-bench
	tests/bench/controller-runtime/build
	time target/release/wasmop-bench --converge-only --sizes 20000 --repeats 1 \
	  --only controller-runtime,kube-rs,wasmop-rust --out tests/bench/results/large
	time target/release/wasmop-bench shards --out tests/bench/results/large
	tests/bench/chart tests/bench/results/large

# Flame graphs of the operators converging 5,000 WebApps (perf record at 499 Hz), drawn with
# inferno (installed with cargo on first use).
bench-profile: control-plane guests
	cargo build --release -p wasmop -p webapp-kube-rs -p wasmop-bench
	command -v inferno-flamegraph >/dev/null || cargo install --locked inferno --no-default-features --features cli
	WASMOP_BENCH_PROFILE=tests/bench/results/flamegraphs target/release/wasmop-bench --converge-only \
	  --sizes 5000 --repeats 1 --only kube-rs,wasmop-rust --out target/bench/profile

# `make test` runs each fuzz target (host/src/fuzz/) for a quarter of a second; this runs them for
# FUZZ_SECONDS each and prints the inputs each tried and the seed that reproduces its run
# (WASMOP_FUZZ_SEED).
FUZZ_SECONDS ?= 30

fuzz:
	WASMOP_FUZZ_SECONDS=$(FUZZ_SECONDS) cargo test -p wasmop --lib fuzz:: -- --nocapture

# Not part of `make test`: two replicas under churn for 30 minutes; prints the leader's median RSS
# over the first and last five minutes and the WebApps left unconverged, and fails on growth
# above 10 % or any left. `SOAK_ARGS="--minutes 5"` shortens it.
soak: control-plane guests
	cargo build -p wasmop -p wasmop-bench
	target/debug/wasmop-bench soak $(SOAK_ARGS)

# The image: the release binary, the libraries it links and the built-in plugins, assembled
# reproducibly with no daemon or registry (deploy/image/build).
image: guests
	cargo build --release --bin wasmop
	deploy/image/build

demo-cluster: image
	deploy/test-cluster/up

# Not part of `make test` (root, and minutes to build the kubelet and the release image): a node
# for the test control plane (tests/tests/node.rs).
test-cluster: image
	tests/k8s/build.sh --node >/dev/null
	cargo test -p wasmop-envtest --features node --test node
	cargo test -p wasmop --features cluster-tests --test all -- pods:: pods_registry:: pods_chart::

# What the demo runs and nothing more: the apiserver, etcd and kubectl, built beside the host,
# then the two Rust plugins it loads (deploy/demo builds the control plane's launcher).
DEMO_PLUGINS := webapp configmap-sync

demo:
	@$(MAKE) --no-print-directory -j2 demo-plane demo-plugins
	deploy/demo

demo-plane:
	@tests/k8s/build.sh >/dev/null

demo-plugins: wasmop-binary
	@guest-sdk/rust/install-toolchain
	@for plugin in $(DEMO_PLUGINS); do \
	  target/debug/wasmop build --language rust plugins/$$plugin -o target/components/$$plugin.wasm || exit 1; \
	done

down:
	tests/control-plane down

install:
	cargo install --locked --path host

# The book, with mdBook (installed on first use; book/build).
book:
	book/build

# The book, and each guest SDK's API reference, generated by its language's standard tool
# (guest-sdk/docs).
docs: book
	@guest-sdk/python/install-toolchain
	@guest-sdk/js/install-toolchain
	guest-sdk/docs
