//! wasmop in pods on the test control plane's node: the image in the node's registry, and what
//! a test of the pods reads from the apiserver and from the node (their cgroups, their logs).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::api::ListParams;
use wasmop_envtest::{CGROUP_ROOT, ControlPlane, within};

/// Where deploy/test-cluster installs wasmop.
pub const NAMESPACE: &str = "wasmop-system";
/// The labels of wasmop's pods.
pub const SELECTOR: &str = "app.kubernetes.io/name=wasmop";
/// The reference deploy/test-cluster names: the image in the node's registry.
pub const IMAGE: &str = "10.213.0.1:5000/wasmop:dev";
/// How long a pod-level change may take on a busy 2-core machine.
pub const WAIT: Duration = Duration::from_secs(180);

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The image `make image` built; the test says how to get it rather than building it for minutes.
pub fn image() -> PathBuf {
    let archive = repo().join("target/image/wasmop.tar");
    assert!(
        archive.is_file(),
        "{} is missing: build it with `make image`",
        archive.display()
    );
    archive
}

/// A control plane with a node whose registry has the wasmop image, as [`IMAGE`].
pub async fn node_with_image() -> ControlPlane {
    let start = ControlPlane::start_with_node();
    let plane = within(Duration::from_secs(600), "the node", start)
        .await
        .unwrap();
    let node = plane.node().expect("started with a node");
    let pushed = node.push_image(&image(), "wasmop:dev").unwrap();
    assert_eq!(pushed, IMAGE);
    plane
}

/// Polls `check` every half second until it returns `Some`, or fails naming `what`.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not after {limit:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub fn ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

/// The wasmop pods, once exactly `count` exist, none terminating, all Ready.
pub async fn ready_pods(pods: &Api<Pod>, count: usize) -> Vec<Pod> {
    eventually(&format!("{count} Ready wasmop pods"), WAIT, || async {
        let list = pods
            .list(&ListParams::default().labels(SELECTOR))
            .await
            .ok()?;
        let live: Vec<Pod> = list
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        (live.len() == count && live.iter().all(ready)).then_some(live)
    })
    .await
}

/// Whether the metrics Service's endpoint at `ip` is ready, or `None` when it has none there.
pub async fn endpoint_ready(slices: &Api<EndpointSlice>, ip: &str) -> Option<bool> {
    let selector = ListParams::default().labels("kubernetes.io/service-name=wasmop-metrics");
    let list = slices.list(&selector).await.ok()?;
    let endpoint = list
        .items
        .into_iter()
        .flat_map(|slice| slice.endpoints.into_iter().flatten())
        .find(|e| e.addresses.iter().any(|a| a == ip))?;
    Some(endpoint.conditions.and_then(|c| c.ready).unwrap_or(false))
}

/// The pod whose host holds the Lease (its identity is `<pod>_<random>`).
pub async fn leader(leases: &Api<Lease>) -> Option<String> {
    let lease = leases.get_opt("wasmop-leader").await.ok()??;
    let holder = lease.spec?.holder_identity?;
    Some(
        holder
            .rsplit_once('_')
            .map_or(holder.clone(), |(pod, _)| pod.to_owned()),
    )
}

pub fn restarts_and_oom(pod: &Pod) -> (i32, bool) {
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.clone())
        .unwrap_or_default();
    let restarts = statuses.iter().map(|s| s.restart_count).sum();
    let oom = statuses.iter().any(|s| {
        let last = s.last_state.as_ref().and_then(|l| l.terminated.as_ref());
        last.is_some_and(|t| t.reason.as_deref() == Some("OOMKilled"))
    });
    (restarts, oom)
}

/// The cgroup of `pod`'s wasmop container in the `controller` hierarchy, on the node.
pub fn container_cgroup(pod: &Pod, controller: &str) -> PathBuf {
    let id = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|s| s.first())
        .and_then(|s| s.container_id.clone())
        .expect("a running container has an ID");
    let id = id.trim_start_matches("containerd://").to_owned();
    let hierarchy = Path::new("/sys/fs/cgroup")
        .join(controller)
        .join(CGROUP_ROOT);
    find_cgroup(&hierarchy, &id).expect("the container's cgroup")
}

/// How many processes the out-of-memory killer has killed in `pod`'s wasmop container.
pub fn oom_kills(pod: &Pod) -> u64 {
    let control = container_cgroup(pod, "memory").join("memory.oom_control");
    let control = std::fs::read_to_string(control).unwrap();
    control
        .lines()
        .find_map(|line| line.strip_prefix("oom_kill "))
        .map_or(0, |count| count.trim().parse().unwrap())
}

/// Kills every process of `pod`'s wasmop container with SIGKILL, from the node, as the OOM
/// killer or a crash would.
pub fn kill_container(pod: &Pod) {
    let procs = container_cgroup(pod, "pids").join("cgroup.procs");
    let pids = std::fs::read_to_string(&procs).unwrap();
    for pid in pids.lines() {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", pid])
            .status();
    }
}

pub fn find_cgroup(dir: &Path, id: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if entry.file_name().to_string_lossy().ends_with(id) {
            return Some(path);
        }
        if let Some(found) = find_cgroup(&path, id) {
            return Some(found);
        }
    }
    None
}

pub async fn logs(plane: &ControlPlane, pod: &str) -> String {
    plane
        .run_kubectl(&["logs", "-n", NAMESPACE, pod], None)
        .await
        .unwrap_or_default()
}

/// Applies the WasmReconciler `name` whose spec is `spec` (YAML lines indented by two spaces).
pub async fn apply_reconciler(plane: &ControlPlane, name: &str, spec: &str) {
    apply_reconciler_of(plane, "ClusterWasmReconciler", name, spec).await
}

/// Applies the cluster-scoped `kind` object `name` whose spec is `spec` (as [`apply_reconciler`];
/// `WasmReconciler` on a host from before the split).
pub async fn apply_reconciler_of(plane: &ControlPlane, kind: &str, name: &str, spec: &str) {
    let object = format!(
        "apiVersion: wasmop.dev/v1alpha1\nkind: {kind}\nmetadata:\n  name: {name}\nspec:\n{spec}"
    );
    plane
        .run_kubectl(&["apply", "-f", "-"], Some(&object))
        .await
        .unwrap();
}

/// Installs wasmop with `kubectl apply -k overlay`; returns its pods' API and the two pods once
/// both are Ready.
pub async fn install(plane: &ControlPlane, overlay: &Path) -> (Api<Pod>, Vec<Pod>) {
    plane
        .run_kubectl(&["apply", "-k", &overlay.to_string_lossy()], None)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(plane.client().await.unwrap(), NAMESPACE);
    let ready = ready_pods(&pods, 2).await;
    (pods, ready)
}

/// The Secret cert-manager would write for the webhooks' Service: a CA of the test's own and a
/// serving certificate it signed for the Service in `namespace`, with the CA as `ca.crt` (the bundle the leader publishes).
fn webhook_secret(namespace: &str) -> String {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let names = vec![format!("wasmop-webhooks.{namespace}.svc")];
    let cert = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    serde_json::json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "wasmop-webhook-cert", "namespace": namespace},
        "stringData": {"tls.crt": cert.pem(), "tls.key": key.serialize_pem(), "ca.crt": ca_cert.pem()},
    })
    .to_string()
}

/// Puts the component `component` in a ConfigMap of [`NAMESPACE`] and applies a WasmReconciler
/// of the same name loading it from there, pinned by its digest.
pub async fn apply_module_reconciler(plane: &ControlPlane, component: &str) {
    apply_module_reconciler_of(plane, "ClusterWasmReconciler", component).await
}

/// As [`apply_module_reconciler`], as a cluster-scoped `kind` object.
pub async fn apply_module_reconciler_of(plane: &ControlPlane, kind: &str, component: &str) {
    let file = repo().join(format!("target/components/{component}.wasm"));
    let wasm = std::fs::read(file).unwrap();
    let sha256 = wasmop::distribution::digest(&wasm)
        .trim_start_matches("sha256:")
        .to_owned();
    let module: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": component, "namespace": NAMESPACE},
        "binaryData": {"module.wasm": k8s_openapi::ByteString(wasm)},
    }))
    .unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await.unwrap(), NAMESPACE);
    configmaps
        .create(&Default::default(), &module)
        .await
        .unwrap();
    let module = format!(
        "  module:\n    sha256: {sha256}\n    configMap: {{namespace: {NAMESPACE}, name: {component}, key: module.wasm}}\n"
    );
    apply_reconciler_of(plane, kind, component, &module).await;
}

/// Creates [`NAMESPACE`] with the webhooks' certificate Secret in it, as cert-manager would.
pub async fn namespace_with_webhook_secret(plane: &ControlPlane) {
    plane
        .run_kubectl(&["create", "namespace", NAMESPACE], None)
        .await
        .unwrap();
    plane
        .run_kubectl(&["apply", "-f", "-"], Some(&webhook_secret(NAMESPACE)))
        .await
        .unwrap();
}

/// Waits until the webhooks refuse a WebApp of 75 replicas in `apps`' namespace with the
/// plugin's message; returns the refusal.
pub async fn invalid_webapp_refused(apps: &Api<kube::api::DynamicObject>) -> kube::Error {
    let mut invalid = crate::common::webapp("too-many");
    invalid.data["spec"]["replicas"] = 75.into();
    eventually("the webhooks refusing an invalid WebApp", WAIT, || async {
        match apps.create(&Default::default(), &invalid).await {
            Err(error) if error.to_string().contains("must be between 0 and 50") => Some(error),
            Err(_) => None,
            Ok(_) => {
                let _ = apps.delete("too-many", &Default::default()).await;
                None
            }
        }
    })
    .await
}

/// Creates WebApp `name` in `namespace` and waits until the plugin has reconciled it.
pub async fn converge(plane: &ControlPlane, namespace: &str, name: &str) {
    let apps = crate::common::webapps(plane.client().await.unwrap(), namespace);
    apps.create(&Default::default(), &crate::common::webapp(name))
        .await
        .unwrap();
    converged(plane, namespace, name).await;
}

/// Waits until the plugin has reconciled WebApp `name` in `namespace`.
pub async fn converged(plane: &ControlPlane, namespace: &str, name: &str) {
    let apps = crate::common::webapps(plane.client().await.unwrap(), namespace);
    let what = format!("WebApp {name} converging");
    within(WAIT, &what, crate::common::converged(&apps, name))
        .await
        .unwrap();
}

/// Creates ConfigMap `name` in `namespace` and waits until guest-good has annotated it.
pub async fn seen_by_good(plane: &ControlPlane, namespace: &str, name: &str) {
    let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await.unwrap(), namespace);
    let what = format!("guest-good annotating ConfigMap {name}");
    within(WAIT, &what, crate::common::seen_by_good(&configmaps, name))
        .await
        .unwrap();
}
