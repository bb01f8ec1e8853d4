//! One operator under test: its namespace, identity and running operator (a wasmop manager in this
//! process, or a program of its own), what the apiserver answered its writes, and the objects the
//! scenarios read and write (as the cluster's admin, like a user with kubectl).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DynamicObject, GroupVersionKind};
use kube::core::ApiResource;
use wasmop::cache::Namespaces;
use wasmop::manager::{Manager, ManagerOptions};
use wasmop::record::Recorder;
use wasmop::runtime::PluginOptions;
use wasmop_envtest::{AuditEvent, AuditLog, ControlPlane, Supervised, shared};

use crate::identity::Identity;
use crate::{Operator, repo_file};

/// How long any one expectation may take to hold.
const EVENTUALLY: Duration = Duration::from_secs(60);
/// The field manager of the `webapp` plugin's writes under wasmop.
const WASMOP_MANAGER: &str = "wasmop/webapp";

/// A running `webapp` operator and handles on what it manages.
pub struct Subject {
    /// The operator's short name.
    pub name: &'static str,
    /// The field manager its server-side applies are recorded under.
    pub field_manager: &'static str,
    /// The control plane.
    pub plane: &'static ControlPlane,
    /// The namespace the operator watches.
    pub namespace: String,
    /// The operator's identity, whose RBAC scenarios may narrow.
    pub identity: Identity,
    /// WebApps in the namespace.
    pub webapps: Api<DynamicObject>,
    /// Deployments in the namespace.
    pub deployments: Api<Deployment>,
    /// Services in the namespace.
    pub services: Api<Service>,
    /// ConfigMaps in the namespace.
    pub configmaps: Api<ConfigMap>,
    running: Running,
    audit: Mutex<Audit>,
}

/// The operator itself.
enum Running {
    /// A manager in this process (boxed: it is large).
    Wasmop(Box<Manager>),
    /// A process of its own, stopped with its handle.
    Program(Supervised),
}

/// The audit log read so far, and the writes in it by the subject's identity.
struct Audit {
    log: AuditLog,
    writes: Vec<AuditEvent>,
}

impl Subject {
    /// Starts `operator` in a fresh namespace, as its own identity, watching only that namespace;
    /// a wasmop plugin's reconciles are recorded as fixtures under `record` when given.
    pub async fn start(operator: Operator, record: Option<&Path>) -> anyhow::Result<Subject> {
        let name = operator.name();
        // What runs the operator: the component, or the executable and its arguments. Missing
        // files fail here, before any server starts.
        let (file, args) = match operator {
            Operator::Wasmop(language) => (language.component_path()?, Vec::new()),
            Operator::Program(program) => program.command()?,
        };
        let plane = shared().await?;
        plane
            .install_crds(&[repo_file("deploy/crds/webapp.yaml")])
            .await?;
        let namespace = plane
            .create_namespace(&format!("conformance-{name}"))
            .await?;
        let identity = Identity::create(plane, name, &namespace).await?;
        let (running, field_manager) = match operator {
            Operator::Wasmop(_) => {
                let mut options = ManagerOptions {
                    namespaces: Namespaces::Only(vec![namespace.clone()]),
                    ..ManagerOptions::default()
                };
                options.runtime.wrap = record.map(|dir| Arc::new(Recorder::new(dir)) as _);
                let client = plane.client_from(&identity.kubeconfig).await?;
                let mut manager = Manager::new(client, options)?;
                manager.add_plugin(&file, PluginOptions::default()).await?;
                (Running::Wasmop(Box::new(manager)), WASMOP_MANAGER)
            }
            Operator::Program(program) => {
                let process = spawn(name, &file, &args, &identity.kubeconfig, &namespace)?;
                (Running::Program(process), program.field_manager)
            }
        };
        let admin = plane.client().await?;
        let kind = GroupVersionKind::gvk("example.wasmop.dev", "v1alpha1", "WebApp");
        let webapps = ApiResource::from_gvk_with_plural(&kind, "webapps");
        Ok(Subject {
            name,
            field_manager,
            plane,
            webapps: Api::namespaced_with(admin.clone(), &namespace, &webapps),
            deployments: Api::namespaced(admin.clone(), &namespace),
            services: Api::namespaced(admin.clone(), &namespace),
            configmaps: Api::namespaced(admin, &namespace),
            namespace,
            identity,
            running,
            audit: Mutex::new(Audit {
                log: plane.audit_log(),
                writes: Vec::new(),
            }),
        })
    }

    /// The operator's writes the apiserver has answered with `code` so far, oldest first, as its
    /// audit log records them (a few tens of milliseconds after each answer).
    pub fn writes_answered(&self, code: u16) -> anyhow::Result<Vec<AuditEvent>> {
        let mut audit = self.audit.lock().unwrap_or_else(|e| e.into_inner());
        let new = audit.log.read_new()?;
        let user = &self.identity.user;
        audit
            .writes
            .extend(new.into_iter().filter(|e| e.user == *user && e.is_write()));
        Ok(audit
            .writes
            .iter()
            .filter(|e| e.code == Some(code))
            .cloned()
            .collect())
    }

    /// For a failure message: where a program's output is, and whether it has exited.
    pub(crate) fn diagnosis(&self) -> String {
        match &self.running {
            Running::Wasmop(_) => String::new(),
            Running::Program(process) if process.running() => {
                format!(" (its output: {})", process.log().display())
            }
            Running::Program(process) => format!(
                " (it exited; its output: {}, ending:\n{})",
                process.log().display(),
                process.log_tail(20)
            ),
        }
    }

    /// Stops the operator.
    pub async fn stop(self) -> anyhow::Result<()> {
        match self.running {
            Running::Wasmop(manager) => (*manager).stop().await?,
            Running::Program(mut process) => process.stop(),
        }
        Ok(())
    }
}

/// Starts `executable args…` with `KUBECONFIG` set to `kubeconfig` and `WEBAPP_NAMESPACE` to
/// `namespace`, its output in `target/conformance/<name>.log`.
fn spawn(
    name: &'static str,
    executable: &Path,
    args: &[String],
    kubeconfig: &Path,
    namespace: &str,
) -> anyhow::Result<Supervised> {
    let dir = repo_file("target/conformance");
    let scratch = dir.join(format!("{name}.run"));
    std::fs::create_dir_all(&scratch)?;
    let kubeconfig = kubeconfig.display().to_string();
    let env = [
        ("KUBECONFIG", kubeconfig.as_str()),
        ("WEBAPP_NAMESPACE", namespace),
    ];
    let log = dir.join(format!("{name}.log"));
    let process = Supervised::spawn(name, executable, args, &env, &scratch, log)?;
    println!(
        "[{name}] started {} (pid {}), its output in {}",
        executable.display(),
        process.pid(),
        process.log().display()
    );
    Ok(process)
}

/// Polls `probe` until it returns `Some`, failing after a minute with `what`.
pub async fn eventually<T, F>(what: &str, mut probe: impl FnMut() -> F) -> anyhow::Result<T>
where
    F: Future<Output = anyhow::Result<Option<T>>>,
{
    let poll = async {
        loop {
            if let Some(value) = probe().await? {
                return Ok(value);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(EVENTUALLY, poll)
        .await
        .map_err(|_| anyhow::anyhow!("timed out after {EVENTUALLY:?} waiting for {what}"))?
}
