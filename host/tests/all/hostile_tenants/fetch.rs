//! Twenty tenants applying 50 MiB modules at once to one host with deploy/'s settings: the host
//! fetches and compiles them a few at a time (`--max-concurrent-installs`,
//! `--max-concurrent-compiles`), its peak RSS stays under the pod's 256 MiB limit, every module
//! loads, and the operator's own plugin, dropped into the plugin directory during the flood,
//! loads too.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use wasmop::plugins::{PluginState, PluginStatus};
use wasmop_envtest::{ControlPlane, within};

use crate::common;
use crate::common::logged::Logged;
use crate::common::scrape::{free_address, get, parse, value, wait_ready};

const LIMIT: Duration = Duration::from_secs(900);

/// Tenants applying a module each.
const TENANTS: usize = 20;

/// The size of each tenant's module.
const MODULE_BYTES: usize = 50 << 20;

/// The memory limit of deploy/'s manager container.
const POD_LIMIT: u64 = 256 << 20;

/// The plugin name of guest-good, which each tenant's copy replaces by one of the same length.
const NAME: &[u8] = b"guest-good";

/// The padding sent at a time.
const CHUNK: usize = 1 << 16;

/// How often the host's memory and gauges are sampled.
const SAMPLE: Duration = Duration::from_millis(200);

/// guest-good under a plugin name of its own, padded to [`MODULE_BYTES`] by a custom section of
/// one byte repeated (a distinct byte per tenant, so every digest differs); served without ever
/// being held whole by the test.
struct Padded {
    head: Vec<u8>,
    fill: Vec<u8>,
    padding: usize,
}

impl Padded {
    fn new(component: &[u8], tenant: usize) -> Self {
        let name = format!("guest-g{tenant:03}");
        assert_eq!(name.len(), NAME.len());
        let mut head = replaced(component, NAME, name.as_bytes());
        let section = b"padding";
        let padding = MODULE_BYTES - head.len() - 16;
        head.push(0);
        leb128(&mut head, 1 + section.len() + padding);
        leb128(&mut head, section.len());
        head.extend_from_slice(section);
        Padded {
            head,
            fill: vec![tenant as u8; CHUNK],
            padding,
        }
    }

    fn len(&self) -> usize {
        self.head.len() + self.padding
    }

    /// The chunks of the module, in order.
    fn chunks(&self) -> impl Iterator<Item = &[u8]> {
        let (whole, rest) = (self.padding / CHUNK, self.padding % CHUNK);
        std::iter::once(self.head.as_slice())
            .chain(std::iter::repeat_n(self.fill.as_slice(), whole))
            .chain(std::iter::once(&self.fill[..rest]))
    }

    fn sha256(&self) -> String {
        let mut hasher = Sha256::new();
        self.chunks().for_each(|chunk| hasher.update(chunk));
        hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    async fn send(&self, out: &mut (impl AsyncWrite + Unpin)) -> std::io::Result<()> {
        for chunk in self.chunks() {
            out.write_all(chunk).await?;
        }
        Ok(())
    }
}

fn replaced(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let mut at = 0;
    while let Some(found) = out[at..].windows(from.len()).position(|w| w == from) {
        out[at + found..at + found + from.len()].copy_from_slice(to);
        at += found + from.len();
    }
    assert!(
        at > 0,
        "the component names no {}",
        String::from_utf8_lossy(from)
    );
    out
}

fn leb128(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Serves module `/N` of `modules` on a loopback port; returns the port and the count of
/// modules sent whole.
async fn serve(modules: Arc<Vec<Padded>>) -> anyhow::Result<(u16, Arc<AtomicUsize>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let sent = Arc::new(AtomicUsize::new(0));
    let counted = sent.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (modules, counted) = (modules.clone(), counted.clone());
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let read = stream.read(&mut request).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&request[..read]);
                let path = request.split_whitespace().nth(1).unwrap_or_default();
                let Some(module) = path
                    .trim_start_matches('/')
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| modules.get(n))
                else {
                    let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\n\r\n").await;
                    return;
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    module.len()
                );
                if stream.write_all(head.as_bytes()).await.is_ok()
                    && module.send(&mut stream).await.is_ok()
                {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    });
    Ok((port, sent))
}

/// A size field (`VmRSS:`, `VmHWM:`) of process `pid`, in bytes; 0 once it is gone.
fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok());
    kib.unwrap_or(0) * 1024
}

/// The resident memory of `pid` and its children (the compile workers) now.
fn pod_rss(pid: u32) -> u64 {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"));
    let children = children.unwrap_or_default();
    let children = children.split_whitespace().filter_map(|c| c.parse().ok());
    status_bytes(pid, "VmRSS:") + children.map(|c| status_bytes(c, "VmRSS:")).sum::<u64>()
}

/// The `(reason, message)` of a WasmReconciler's `Ready` or `Degraded` condition once true.
fn verdict(status: &Value) -> Option<(String, String)> {
    let conditions = status["conditions"].as_array()?;
    let decided = conditions
        .iter()
        .find(|c| (c["type"] == "Degraded" || c["type"] == "Ready") && c["status"] == "True")?;
    let text = |field: &str| decided[field].as_str().unwrap_or_default().to_owned();
    Some((text("reason"), text("message")))
}

/// The highest values seen while sampling.
#[derive(Debug, Default)]
struct Peaks {
    pod_rss: u64,
    installs_running: f64,
    installs_waiting: f64,
    compiles_running: f64,
    compiles_waiting: f64,
}

impl Peaks {
    async fn sample(&mut self, pid: u32, metrics: &str) {
        self.pod_rss = self.pod_rss.max(pod_rss(pid));
        let Ok((200, text)) = get(metrics, "/metrics").await else {
            return;
        };
        let samples = parse(&text);
        let seen = |name: &str, labels: &[(&str, &str)]| value(&samples, name, labels);
        let peak = |old: &mut f64, new: Option<f64>| *old = old.max(new.unwrap_or(0.0));
        let running = seen("wasmop_wasmreconciler_installs_running", &[]);
        peak(&mut self.installs_running, running);
        let waiting = seen("wasmop_wasmreconciler_installs_waiting", &[]);
        peak(&mut self.installs_waiting, waiting);
        peak(
            &mut self.compiles_running,
            seen("wasmop_compiles_running", &[]),
        );
        let waiting = seen("wasmop_compiles_waiting", &[("asker", "tenant")]);
        peak(&mut self.compiles_waiting, waiting);
    }
}

/// Whether the probe listener at `probes` lists plugin `name` as running.
async fn running(probes: &str, name: &str) -> bool {
    let Ok((200, body)) = get(probes, "/plugins").await else {
        return false;
    };
    let statuses: Vec<PluginStatus> = serde_json::from_str(&body).unwrap_or_default();
    statuses
        .iter()
        .any(|s| s.name.as_deref() == Some(name) && s.state == PluginState::Running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_tenants_applying_50_mib_modules_at_once_stay_under_the_pod_limit()
-> anyhow::Result<()> {
    within(LIMIT, "the module flood", async {
        // WasmReconcilers are cluster-scoped: a plane of its own keeps other tests' hosts off them.
        let plane = &ControlPlane::start().await?;
        common::reconcilers::install_crd(plane).await?;
        let namespace = plane.create_namespace("fetch-flood").await?;
        let component = std::fs::read(common::component("guest-good"))?;
        let modules: Vec<Padded> = (0..TENANTS).map(|n| Padded::new(&component, n)).collect();
        let pins: Vec<String> = modules.iter().map(Padded::sha256).collect();
        let (port, sent) = serve(Arc::new(modules)).await?;

        let deployed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/manager/policy.yaml");
        let policy = plane.dir().join("fetch-flood-policy.yaml");
        let text = std::fs::read_to_string(deployed)?;
        std::fs::write(&policy, text + "modules: {private-addresses: true}\n")?;
        let (plugin_dir, cache) = (tempfile::tempdir()?, tempfile::tempdir()?);
        let (metrics, probes) = (free_address(), free_address());
        let mut command = common::host(plane);
        // deploy/manager/wasmop.yaml's limits, with this test's namespace, ports and directories.
        command
            .args(["--wasm-reconcilers", "--namespaces", &namespace, "--policy"])
            .arg(&policy)
            .args(["--guest-memory-budget", "128Mi", "--memory-limit", "32Mi"])
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", &probes])
            .arg("--plugin-dir")
            .arg(plugin_dir.path())
            .env("WASMOP_COMPILE_CACHE", cache.path());
        let mut host = Logged::spawn("fetch-flood", command)?;
        let pid = host.child.id().expect("running");
        wait_ready(&probes).await;

        let api = common::reconcilers::api(plane.client().await?);
        let started = Instant::now();
        let creates = pins.iter().enumerate().map(|(n, pin)| {
            let object: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
                "metadata": {"name": format!("fetch-flood-{n:02}")},
                "spec": {
                    "module": {"url": format!("http://127.0.0.1:{port}/{n}"), "sha256": pin},
                    // 20 tenants and the operator's plugin within deploy/'s 128Mi budget.
                    "memoryLimit": "4608Ki",
                },
            }))
            .expect("an object");
            let api = api.clone();
            async move { api.create(&PostParams::default(), &object).await }
        });
        futures::future::try_join_all(creates).await?;
        common::publish("guest-slow", plugin_dir.path(), "slow.wasm")?;

        let mut peaks = Peaks::default();
        let mut operator_loaded = None;
        let verdicts = loop {
            peaks.sample(pid, &metrics).await;
            if operator_loaded.is_none() && running(&probes, "guest-slow").await {
                let loaded = tenants_loaded(&api).await?;
                operator_loaded = Some((started.elapsed(), loaded));
            }
            let verdicts = verdicts(&api).await?;
            if verdicts.iter().all(Option::is_some) && operator_loaded.is_some() {
                break verdicts;
            }
            host.assert_healthy()?;
            tokio::time::sleep(SAMPLE).await;
        };
        let elapsed = started.elapsed();
        let loaded = verdicts.iter().flatten().filter(|v| v.0 == "Loaded").count();
        let peak = status_bytes(pid, "VmHWM:");
        let (operator_after, loaded_then) = operator_loaded.expect("loaded");
        eprintln!(
            "FETCH: {TENANTS} tenants x {} MiB: peak RSS {} MiB (with compile workers, sampled: \
             {} MiB), {loaded} of them loaded in {:.0} s; installs running at most {}, waiting at most {}; \
             compiles running at most {}, tenants' waiting at most {}; the operator's plugin \
             loaded after {:.0} s, with {loaded_then} tenants loaded; modules sent whole: {}",
            MODULE_BYTES >> 20,
            peak >> 20,
            peaks.pod_rss >> 20,
            elapsed.as_secs_f64(),
            peaks.installs_running,
            peaks.installs_waiting,
            peaks.compiles_running,
            peaks.compiles_waiting,
            operator_after.as_secs_f64(),
            sent.load(Ordering::SeqCst),
        );
        let failed: Vec<_> = verdicts.iter().flatten().filter(|v| v.0 != "Loaded").collect();
        assert!(failed.is_empty(), "not loaded: {failed:?}");
        assert!(peak < POD_LIMIT, "peak RSS {} MiB", peak >> 20);
        assert!(peaks.installs_running <= 2.0, "{peaks:?}");
        assert!(peaks.compiles_running <= 1.0, "{peaks:?}");
        for n in 0..TENANTS {
            api.delete(&format!("fetch-flood-{n:02}"), &Default::default())
                .await?;
        }
        common::terminate(host.child).await?;
        Ok(())
    })
    .await
}

/// Each tenant's verdict so far.
async fn verdicts(api: &Api<DynamicObject>) -> anyhow::Result<Vec<Option<(String, String)>>> {
    let mut verdicts = Vec::new();
    for n in 0..TENANTS {
        let status = api.get(&format!("fetch-flood-{n:02}")).await?.data["status"].clone();
        verdicts.push(verdict(&status));
    }
    Ok(verdicts)
}

/// How many tenants' modules have loaded so far.
async fn tenants_loaded(api: &Api<DynamicObject>) -> anyhow::Result<usize> {
    let verdicts = verdicts(api).await?;
    Ok(verdicts
        .iter()
        .flatten()
        .filter(|v| v.0 == "Loaded")
        .count())
}
