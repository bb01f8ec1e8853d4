//! The two measurements taken of every operator, each in its own process started for it:
//! converging N WebApps created at once (on a control plane of the run's own), and starting
//! against a namespace whose cache it must fill with many ConfigMaps, with wasmop's compile
//! cache warm or empty. Every operator speaks as its own ServiceAccount, so the apiserver's
//! audit log tells its requests from the load generator's.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::ListParams;
use serde::Serialize;
use wasmop_envtest::{AuditEvent, ControlPlane};

use crate::comparator::{self, Comparator};
use crate::process::Operator;
use crate::profile::Profile;
use crate::{cgroup, load};

/// How long an operator's memory is left to settle before its idle size is read.
const SETTLE: Duration = Duration::from_secs(3);
/// How long an idle operator's CPU time is watched.
const IDLE_WINDOW: Duration = Duration::from_secs(5);
/// The ServiceAccount (in `default`) every operator runs as, bound to cluster-admin.
const OPERATOR: &str = "bench-operator";

/// The apiserver requests an operator made while WebApps converged.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Requests {
    /// Every request, reads and watches included.
    pub total: usize,
    /// Creates, updates, patches and deletes.
    pub writes: usize,
    /// Writes refused with 409 Conflict (a stale resourceVersion; not AlreadyExists).
    pub conflicts: usize,
    /// The requests by verb and resource, e.g. `patch webapps/status`.
    pub by_kind: BTreeMap<String, usize>,
}

impl Requests {
    /// Counts `event`.
    fn add(&mut self, event: &AuditEvent) {
        self.total += 1;
        self.writes += usize::from(event.is_write());
        self.conflicts += usize::from(event.reason == "Conflict");
        let mut kind = format!("{} {}", event.verb, event.resource);
        if !event.subresource.is_empty() {
            kind = format!("{kind}/{}", event.subresource);
        }
        *self.by_kind.entry(kind).or_default() += 1;
    }

    /// The requests of `self` not yet made at `before`.
    fn since(mut self, before: &Requests) -> Requests {
        self.total -= before.total;
        self.writes -= before.writes;
        self.conflicts -= before.conflicts;
        for (kind, count) in &before.by_kind {
            if let Some(now) = self.by_kind.get_mut(kind) {
                *now -= count;
            }
        }
        self.by_kind.retain(|_, count| *count > 0);
        self
    }
}

/// Whether a start finds wasmop's compile cache filled or empty; the other operators compile
/// nothing, so for them both are the same start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompileCache {
    /// Filled by an earlier start of the same plugin.
    Warm,
    /// Empty, as in a new pod with an `emptyDir` cache.
    Cold,
}

/// One convergence run.
#[derive(Debug, Clone, Serialize)]
pub struct Converge {
    /// The operator.
    pub comparator: String,
    /// WebApps created at once.
    pub webapps: usize,
    /// Seconds from the first create until every WebApp converged.
    pub seconds: f64,
    /// CPU seconds the operator spent meanwhile.
    pub cpu_seconds: f64,
    /// Its resident set before the WebApps came, in MiB.
    pub idle_rss: f64,
    /// Its resident set's high-water mark at the end, in MiB.
    pub peak_rss: f64,
    /// Its cgroup's memory before the WebApps came (with its children, page cache included),
    /// in MiB, where it had one.
    pub idle_pod: Option<f64>,
    /// Its cgroup's high-water mark at the end, in MiB, where it had one.
    pub peak_pod: Option<f64>,
    /// Its CPU use while idle before the WebApps came, in percent of one core, when measured.
    pub idle_cpu: Option<f64>,
    /// Its apiserver requests from the first create until every WebApp converged.
    pub requests: Requests,
}

/// One start against a pre-filled namespace.
#[derive(Debug, Clone, Serialize)]
pub struct Startup {
    /// The operator.
    pub comparator: String,
    /// ConfigMaps in the namespace it cached.
    pub objects: usize,
    /// Whether wasmop's compile cache was warm or empty.
    pub compile_cache: CompileCache,
    /// Seconds from the process start until a WebApp waiting for it converged.
    pub ready_seconds: f64,
    /// Resident set after settling, in MiB.
    pub rss: f64,
    /// The resident set's high-water mark by then, in MiB.
    pub peak: f64,
    /// Its cgroup's high-water mark by then (with its children, page cache included), in MiB,
    /// where it had one.
    pub peak_pod: Option<f64>,
}

/// A control plane of its own with the WebApp CRD installed, its admin client, and the
/// kubeconfig of the operators' own identity.
pub struct Cluster {
    plane: ControlPlane,
    client: kube::Client,
    operator: PathBuf,
}

impl Cluster {
    /// Starts a control plane, installs the CRD of the checkout at `repo` and makes the
    /// operators' identity.
    pub async fn start(repo: &Path) -> anyhow::Result<Cluster> {
        let plane = ControlPlane::start().await?;
        plane
            .install_crds(&[repo.join("deploy/crds/webapp.yaml")])
            .await?;
        let client = plane.client().await?;
        let operator = operator_identity(&plane).await?;
        Ok(Cluster {
            plane,
            client,
            operator,
        })
    }

    /// The requests the operators' identity has made so far.
    fn requests(&self) -> anyhow::Result<Requests> {
        let user = format!("system:serviceaccount:default:{OPERATOR}");
        let mut requests = Requests::default();
        // A watch is logged when it starts and again when it ends: count it once.
        let counted = |e: &&AuditEvent| {
            e.user == user && (e.stage == "ResponseStarted") == (e.verb == "watch")
        };
        for event in self.plane.audit()?.iter().filter(counted) {
            requests.add(event);
        }
        Ok(requests)
    }

    /// Stops the control plane and removes its files.
    pub async fn stop(self) -> anyhow::Result<()> {
        tokio::task::spawn_blocking(move || drop(self.plane)).await?;
        Ok(())
    }

    async fn create_probe(&self, namespace: &str) -> anyhow::Result<()> {
        let apps = load::webapps(&self.client, namespace);
        let mut probe = load::webapp(0);
        probe["metadata"]["name"] = "probe".into();
        apps.create(&Default::default(), &serde_json::from_value(probe)?)
            .await?;
        Ok(())
    }

    /// Adds the ConfigMaps numbered `range` to `namespace`, for the operators to cache.
    pub async fn prefill(&self, namespace: &str, range: Range<usize>) -> anyhow::Result<()> {
        let started = Instant::now();
        let count = range.len();
        load::create_all(
            &Api::<ConfigMap>::namespaced(self.client.clone(), namespace),
            range,
            load::configmap,
        )
        .await?;
        eprintln!(
            "  created {count} ConfigMaps in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// The mean size of the ConfigMaps of `namespace` as JSON without managedFields, as the
    /// operators cache them, in bytes.
    pub async fn json_bytes(&self, namespace: &str) -> anyhow::Result<f64> {
        let listed = Api::<ConfigMap>::namespaced(self.client.clone(), namespace)
            .list(&ListParams::default().limit(100))
            .await?
            .items;
        anyhow::ensure!(!listed.is_empty(), "{namespace} has no ConfigMaps");
        let mut bytes = 0;
        for mut configmap in listed.iter().cloned() {
            configmap.metadata.managed_fields = None;
            bytes += serde_json::to_vec(&configmap)?.len();
        }
        Ok(bytes as f64 / listed.len() as f64)
    }

    /// Installs the CRDs in `files` and waits until the apiserver serves them.
    pub async fn install_crds(&self, files: &[PathBuf]) -> anyhow::Result<()> {
        self.plane.install_crds(files).await?;
        Ok(())
    }

    /// Its admin client.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The kubeconfig of the operators' own identity.
    pub fn operator_kubeconfig(&self) -> &Path {
        &self.operator
    }

    /// Its admin kubeconfig.
    pub fn kubeconfig(&self) -> &Path {
        self.plane.kubeconfig_path()
    }

    /// A new namespace named after `prefix`.
    pub async fn namespace(&self, prefix: &str) -> anyhow::Result<String> {
        Ok(self.plane.create_namespace(prefix).await?)
    }
}

/// Makes the ServiceAccount the operators run as, bound to cluster-admin, and returns a
/// kubeconfig speaking as it.
async fn operator_identity(plane: &ControlPlane) -> anyhow::Result<PathBuf> {
    let account = ["-n", "default"];
    plane
        .run_kubectl(
            &[&["create", "serviceaccount", OPERATOR][..], &account].concat(),
            None,
        )
        .await?;
    let subject = format!("default:{OPERATOR}");
    plane
        .run_kubectl(
            &[
                "create",
                "clusterrolebinding",
                OPERATOR,
                "--clusterrole",
                "cluster-admin",
                "--serviceaccount",
                &subject,
            ],
            None,
        )
        .await?;
    let token = plane
        .run_kubectl(
            &[
                &["create", "token", OPERATOR, "--duration", "24h"][..],
                &account,
            ]
            .concat(),
            None,
        )
        .await?;
    Ok(plane.kubeconfig_for(OPERATOR, token.trim())?)
}

/// Where the operators come from, where their logs go and where wasmop keeps compiled plugins.
pub struct Bench<'a> {
    /// The checkout, for the operators' programs and the CRD.
    pub repo: &'a Path,
    /// Where operator logs are written.
    pub logs: &'a Path,
    /// wasmop's compile cache for warm starts, filled by the first of them.
    pub compile_cache: &'a Path,
}

impl Bench<'_> {
    /// Starts `comparator` watching `namespace` of `cluster` and waits until the WebApp `probe`
    /// (created before) has converged; returns it and how long that took.
    async fn start(
        &self,
        cluster: &Cluster,
        comparator: Comparator,
        namespace: &str,
        compile_cache: &Path,
    ) -> anyhow::Result<(Operator, Duration)> {
        let mut command = comparator.command(self.repo, &cluster.operator, namespace)?;
        command.env("WASMOP_COMPILE_CACHE", compile_cache);
        let log = self
            .logs
            .join(format!("{}-{namespace}.log", comparator.key()));
        let mut files = comparator::files_of(&command);
        files.push(compile_cache.to_owned());
        cgroup::evict(&files);
        let name = format!("{}-{namespace}", comparator.key());
        let started = Instant::now();
        let operator = Operator::start(command, &log, &name)?;
        load::wait_converged(&cluster.client, namespace, 1)
            .await
            .map_err(|e| {
                e.context(format!(
                    "{} did not become ready (log: {})",
                    comparator.name,
                    log.display()
                ))
            })?;
        Ok((operator, started.elapsed()))
    }

    /// Converges `count` WebApps created at once, on a control plane started for this run alone
    /// so that every run meets the same empty apiserver; with `idle_cpu`, first watches the idle
    /// operator's CPU use for a few seconds.
    pub async fn converge(
        &self,
        comparator: Comparator,
        count: usize,
        idle_cpu: bool,
    ) -> anyhow::Result<Converge> {
        let cluster = Cluster::start(self.repo).await?;
        let namespace = cluster
            .namespace(&format!("{}-{count}", comparator.key()))
            .await?;
        cluster.create_probe(&namespace).await?;
        let (mut operator, _) = self
            .start(&cluster, comparator, &namespace, self.compile_cache)
            .await?;
        tokio::time::sleep(SETTLE).await;
        let mut idle = operator.sample()?;
        let idle_cpu = if idle_cpu {
            tokio::time::sleep(IDLE_WINDOW).await;
            let after = operator.sample()?;
            let percent = 100.0 * (after.cpu - idle.cpu).as_secs_f64() / IDLE_WINDOW.as_secs_f64();
            idle = after;
            Some(percent)
        } else {
            None
        };
        let before = cluster.requests()?;
        let name = format!("{}-{count}", comparator.key());
        let title = format!("{} converging {count} WebApps", comparator.name);
        let profile = Profile::start(operator.pid(), &name, &title)?;
        let started = Instant::now();
        load::create_all(
            &load::webapps(&cluster.client, &namespace),
            1..count + 1,
            load::webapp,
        )
        .await?;
        load::wait_converged(&cluster.client, &namespace, count + 1).await?;
        let seconds = started.elapsed().as_secs_f64();
        let end = operator.sample()?;
        if let Some(profile) = profile {
            profile.finish().await?;
        }
        // The audit log is written in batches a few tens of milliseconds apart.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = cluster.requests()?;
        operator.stop().await?;
        cluster.stop().await?;
        Ok(Converge {
            comparator: comparator.name.to_owned(),
            webapps: count,
            seconds,
            cpu_seconds: (end.cpu - idle.cpu).as_secs_f64(),
            idle_rss: idle.rss,
            peak_rss: end.peak,
            idle_pod: idle.pod.map(|(now, _)| now),
            peak_pod: end.pod.map(|(_, peak)| peak),
            idle_cpu,
            requests: after.since(&before),
        })
    }

    /// Starts `comparator` against the pre-filled `namespace` of `cluster` with one WebApp
    /// waiting.
    pub async fn startup(
        &self,
        cluster: &Cluster,
        comparator: Comparator,
        namespace: &str,
        (objects, compile_cache): (usize, CompileCache),
    ) -> anyhow::Result<Startup> {
        cluster.create_probe(namespace).await?;
        let empty = self
            .logs
            .join(format!("compile-cache-{}-{namespace}", comparator.key()));
        let cache = match compile_cache {
            CompileCache::Warm => self.compile_cache,
            CompileCache::Cold => {
                let _ = std::fs::remove_dir_all(&empty);
                &empty
            }
        };
        let (mut operator, ready) = self.start(cluster, comparator, namespace, cache).await?;
        tokio::time::sleep(SETTLE).await;
        let settled = operator.sample()?;
        operator.stop().await?;
        let _ = std::fs::remove_dir_all(&empty);
        load::clear(&cluster.client, namespace).await?;
        Ok(Startup {
            comparator: comparator.name.to_owned(),
            objects,
            compile_cache,
            ready_seconds: ready.as_secs_f64(),
            rss: settled.rss,
            peak: settled.peak,
            peak_pod: settled.pod.map(|(_, peak)| peak),
        })
    }
}
