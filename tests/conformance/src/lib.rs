//! The conformance suite for the `webapp` operator: the same scenarios, run on a real control
//! plane against the `webapp` plugin written in each guest language (through the whole host:
//! informers, queue, workers, Wasm runtime, client) and against the benchmark's comparators, the
//! same operator written for other frameworks and run as their own processes. An operator is
//! conformant when it passes [`run`]; `tests/webapp.rs` lists the languages and
//! `tests/comparators.rs` the other frameworks.
//!
//! Each subject gets its own namespace, its own identity (a ServiceAccount bound to a copy of the
//! operator's ClusterRole from `deploy/`) and watches only its namespace, so subjects run side by
//! side and the forbidden-write scenario narrows only its own RBAC. What a subject's failures were
//! is read from the apiserver's audit log, the same way for every subject.

mod identity;
mod scenarios;
mod subject;

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use subject::Subject;

/// An operator implementing the `webapp` behaviour.
#[derive(Debug, Clone, Copy)]
pub enum Operator {
    /// wasmop, in this process, running one language's `webapp` plugin.
    Wasmop(Language),
    /// Another framework's `webapp` operator, run as its own process.
    Program(Program),
}

impl Operator {
    /// Its short name (`rust`, `controller-runtime`, …); names its namespace and identity.
    pub fn name(&self) -> &'static str {
        match self {
            Operator::Wasmop(language) => language.name,
            Operator::Program(program) => program.name,
        }
    }
}

/// A guest language and the component its `webapp` builds to.
#[derive(Debug, Clone, Copy)]
pub struct Language {
    /// The language's short name (`rust`, `python`, …).
    pub name: &'static str,
    /// The component's file name under `target/components/`.
    pub component: &'static str,
}

impl Language {
    /// The built component; fails naming the build command when it is missing.
    pub fn component_path(&self) -> anyhow::Result<PathBuf> {
        let path = repo_file("target/components").join(self.component);
        anyhow::ensure!(
            path.exists(),
            "{} is missing: build the {} guests first (`make guests`)",
            path.display(),
            self.name
        );
        Ok(path)
    }
}

/// A `webapp` operator built as a program of its own. It is started with `KUBECONFIG` naming a
/// kubeconfig for its identity and `WEBAPP_NAMESPACE` naming the namespace to watch, as the
/// benchmark starts it.
#[derive(Debug, Clone, Copy)]
pub struct Program {
    /// Its short name (`controller-runtime`, `kube-rs`, `kopf`); also names its log.
    pub name: &'static str,
    /// The executable, relative to the repository.
    pub executable: &'static str,
    /// A script the executable runs, relative to the repository, if any.
    pub script: Option<&'static str>,
    /// The command that builds (or installs) the executable, named when it is missing.
    pub build: &'static str,
    /// The field manager of its server-side applies.
    pub field_manager: &'static str,
}

impl Program {
    /// The executable and its arguments; fails naming the build command when a file is missing.
    pub fn command(&self) -> anyhow::Result<(PathBuf, Vec<String>)> {
        let executable = repo_file(self.executable);
        anyhow::ensure!(
            executable.exists(),
            "{} is missing: build the {} operator first (`{}`)",
            executable.display(),
            self.name,
            self.build
        );
        let mut args = Vec::new();
        if let Some(script) = self.script {
            let script = repo_file(script);
            anyhow::ensure!(
                script.exists(),
                "{} is missing: the {} operator is not written yet",
                script.display(),
                self.name
            );
            args.push(script.display().to_string());
        }
        Ok((executable, args))
    }
}

/// `path`, relative to the repository's root.
fn repo_file(path: &str) -> PathBuf {
    let conformance = Path::new(env!("CARGO_MANIFEST_DIR"));
    conformance
        .ancestors()
        .nth(2)
        .unwrap_or(conformance)
        .join(path)
}

/// Runs every scenario against `operator`, in order, printing each as it passes.
pub async fn run(operator: Operator) -> anyhow::Result<()> {
    run_recording(operator, None).await
}

/// Runs every scenario against `operator` as [`run`] does; a wasmop plugin's reconciles are
/// recorded as fixtures under `record` when given (`wasmop run --record`).
pub async fn run_recording(operator: Operator, record: Option<&Path>) -> anyhow::Result<()> {
    let started = Instant::now();
    let name = operator.name();
    let subject = Subject::start(operator, record).await?;
    for (scenario, check) in scenarios::ALL {
        let began = Instant::now();
        if let Err(error) = check(&subject).await {
            let context = format!("{name}: scenario `{scenario}`{}", subject.diagnosis());
            return Err(error.context(context));
        }
        println!(
            "[{name}] {scenario}: ok in {:.1} s",
            began.elapsed().as_secs_f64()
        );
    }
    subject.stop().await?;
    println!(
        "[{name}] conformant in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
