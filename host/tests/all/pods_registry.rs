//! Plugins from the node's registry in wasmop's pods (`deploy/test-cluster`, 256Mi each): the
//! Python, TypeScript and Go (controller-runtime API) `webapp`, whose compile does not fit that
//! limit (`pods.rs` sees it CompileKilled; the controller-runtime one compiles at 1.1 GiB),
//! pushed with their precompiled form by `wasmop push --precompile` of the image's own build and
//! signed by `wasmop sign` with a key the operator's policy trusts, load from the registry into
//! both replicas — no compile, no restart, no OOM kill — and converge a WebApp, one after the
//! other in place of the built-in Rust `webapp` (all four are named `webapp`); each pod's peak
//! memory while one loads is printed (the container's, page cache included, and the host's
//! resident set, which must stay under the limit). Needs root, the node's binaries and the
//! image: run with `make test-cluster`.
use crate::common;

use std::path::{Path, PathBuf};

use common::pods::{
    NAMESPACE, WAIT, apply_reconciler, container_cgroup, eventually, install, logs, name,
    node_with_image, oom_kills, repo, restarts_and_oom,
};
use k8s_openapi::api::core::v1::Pod;
use wasmop_envtest::{ControlPlane, REGISTRY_ADDRESS, within};

/// The plugins, by the WasmReconciler that loads each and its component's file.
const PLUGINS: [(&str, &str); 3] = [
    ("webapp-python", "webapp-python.wasm"),
    ("webapp-typescript", "webapp-js.wasm"),
    (
        "webapp-controller-runtime",
        "webapp-controller-runtime-go.wasm",
    ),
];

/// `deploy/test-cluster` without the built-in `webapp` and with a policy that trusts
/// `public_pem` for signatures, written into the control plane's directory; returns the
/// overlay's directory.
fn trusting_overlay(plane: &ControlPlane, public_pem: &str) -> PathBuf {
    let dir = plane.dir().join("trusting-overlay");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = std::fs::read_to_string(repo().join("deploy/manager/wasmop.yaml")).unwrap();
    let built_in = "  - /plugins/webapp.wasm\n";
    assert!(settings.contains(built_in), "{settings}");
    std::fs::write(dir.join("wasmop.yaml"), settings.replace(built_in, "")).unwrap();
    let base = repo().join("deploy/test-cluster").canonicalize().unwrap();
    let mut policy = std::fs::read_to_string(base.join("policy.yaml")).unwrap();
    policy.push_str("signatures:\n  keys:\n    release: |\n");
    for line in public_pem.lines() {
        policy.push_str(&format!("      {line}\n"));
    }
    std::fs::write(dir.join("policy.yaml"), policy).unwrap();
    let kustomization = format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: {NAMESPACE}\n\
         resources:\n  - {}\nconfigMapGenerator:\n  - name: wasmop-config\n    behavior: merge\n\
         \x20   files:\n      - wasmop.yaml\n      - policy.yaml\n",
        relative(&dir, &base).display()
    );
    std::fs::write(dir.join("kustomization.yaml"), kustomization).unwrap();
    dir
}

/// `to` from the directory `from` (both absolute): kustomize takes no absolute resource paths.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let up = from.components().skip(1).map(|_| "..");
    up.chain(to.strip_prefix("/").unwrap().to_str()).collect()
}

/// Pushes `file` with its precompiled form to the node's registry by the image's own build of
/// wasmop, signs it with `key`, and returns the reference pinned by digest.
fn push_signed(repository: &str, file: &str, key: &str) -> String {
    let wasmop = repo().join("target/release/wasmop");
    let component = repo().join("target/components").join(file);
    let to = format!("{REGISTRY_ADDRESS}/{repository}:v1");
    let plain = ["--registry-plain-http", REGISTRY_ADDRESS];
    let pushed = run(
        &wasmop,
        &[
            &["push", "--precompile"][..],
            &[&component.to_string_lossy(), &to],
            &plain,
        ]
        .concat(),
    );
    run(
        &wasmop,
        &[&["sign", "--key", key, &pushed][..], &plain].concat(),
    );
    pushed
}

fn run(program: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new(program)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// The host process of `pod`'s container (not a compile worker), seen from the node.
fn host_pid(pod: &Pod) -> String {
    let procs = container_cgroup(pod, "pids").join("cgroup.procs");
    let pids = std::fs::read_to_string(procs).unwrap();
    pids.lines()
        .find(|pid| {
            let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let command = String::from_utf8_lossy(&command);
            command.starts_with("/usr/local/bin/wasmop\0") && !command.contains("compile-worker")
        })
        .expect("the container runs wasmop")
        .to_owned()
}

/// Starts measuring `pod`'s peaks afresh: its container's cgroup and its host's resident set.
fn reset_peaks(pod: &Pod) {
    let usage = container_cgroup(pod, "memory").join("memory.max_usage_in_bytes");
    std::fs::write(usage, "0").unwrap();
    std::fs::write(format!("/proc/{}/clear_refs", host_pid(pod)), "5").unwrap();
}

/// `pod`'s peaks since [`reset_peaks`], in MiB: its container's memory (what the 256Mi limit
/// counts, page cache included) and its host process's resident set (VmHWM).
fn peaks(pod: &Pod) -> (u64, u64) {
    let usage = container_cgroup(pod, "memory").join("memory.max_usage_in_bytes");
    let container: u64 = std::fs::read_to_string(usage)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", host_pid(pod))).unwrap();
    let resident_kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in kB");
    (container >> 20, resident_kib >> 10)
}

async fn condition(plane: &ControlPlane, reconciler: &str, kind: &str) -> Option<String> {
    let path = format!("jsonpath={{.status.conditions[?(@.type=='{kind}')].status}}");
    let args = ["get", "clusterwasmreconciler", reconciler, "-o", &path];
    plane.run_kubectl(&args, None).await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn precompiled_plugins_load_from_the_registry_into_both_pods_within_their_limit() {
    let plane = node_with_image().await;
    let keys = plane.dir().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let (private, public) = common::keys::key_pair(&keys, "release", 0x2a).unwrap();
    let public_pem = std::fs::read_to_string(public).unwrap();
    let overlay = trusting_overlay(&plane, &public_pem);
    let (pods, replicas) = install(&plane, &overlay).await;
    let namespace = plane.create_namespace("registry").await.unwrap();
    let apps = common::webapps(plane.client().await.unwrap(), &namespace);

    for (reconciler, file) in PLUGINS {
        let reference = push_signed(reconciler, file, &private);
        for pod in &replicas {
            reset_peaks(pod);
        }
        let spec = format!("  module:\n    oci:\n      reference: {reference}\n");
        apply_reconciler(&plane, reconciler, &spec).await;
        eventually(&format!("{reconciler} Ready"), WAIT, || async {
            (condition(&plane, reconciler, "Ready").await.as_deref() == Some("True")).then_some(())
        })
        .await;
        let source = format!("clusterwasmreconciler/{reconciler}");
        for pod in &replicas {
            let pod_name = name(pod);
            let logged = eventually(
                &format!("{reconciler} installed in {pod_name}"),
                WAIT,
                || async {
                    let logs = logs(&plane, &pod_name).await;
                    let has = |text: &str| {
                        logs.lines()
                            .any(|l| l.contains(text) && l.contains(&source))
                    };
                    (has("plugin installed")).then_some(has("signed precompiled layer"))
                },
            )
            .await;
            assert!(
                logged,
                "{pod_name} loaded {reconciler} without its precompiled layer"
            );
            let now = pods.get(&pod_name).await.unwrap();
            assert_eq!(
                restarts_and_oom(&now),
                (0, false),
                "{pod_name} restarted loading {reconciler}"
            );
            assert_eq!(oom_kills(pod), 0, "the OOM killer acted in {pod_name}");
            // The container's count includes page cache (the layer written, the code mapped),
            // which the kernel reclaims at the limit: what must hold is that nothing was killed
            // and the host's own resident set stayed under the limit.
            let (container, resident) = peaks(pod);
            eprintln!(
                "[pods] {reconciler} ({file}) from {reference} in {pod_name}: container peak {container} MiB of 256 (page cache included), host resident peak {resident} MiB"
            );
            assert!(resident < 256, "{pod_name}'s host peaked at {resident} MiB");
        }
        let app = format!("from-{reconciler}");
        apps.create(&Default::default(), &common::webapp(&app))
            .await
            .unwrap();
        within(
            WAIT,
            &format!("{app} converging"),
            common::converged(&apps, &app),
        )
        .await
        .unwrap();
        plane
            .run_kubectl(&["delete", "clusterwasmreconciler", reconciler], None)
            .await
            .unwrap();
        for pod in &replicas {
            let pod_name = name(pod);
            eventually(
                &format!("{reconciler} unloaded in {pod_name}"),
                WAIT,
                || async {
                    let logs = logs(&plane, &pod_name).await;
                    let mut lines = logs.lines();
                    lines
                        .any(|l| l.contains("plugin unloaded") && l.contains(&source))
                        .then_some(())
                },
            )
            .await;
        }
    }
}
