//! The conformance suite for `webapp` plugins: the same scenarios, run against the `webapp`
//! written in each guest language, on a real control plane through the whole host (informers,
//! queue, workers, Wasm runtime, client). A new language is conformant when its component passes
//! [`run`]; `tests/webapp.rs` lists the languages.
//!
//! Each language gets its own namespace, its own manager watching only that namespace, and its
//! own identity (a ServiceAccount bound to a copy of the operator's ClusterRole from `deploy/`),
//! so languages run side by side and the forbidden-write scenario narrows only its own RBAC.

mod identity;
mod scenarios;
mod subject;

use std::path::PathBuf;
use std::time::Instant;

pub use subject::Subject;

/// A guest language and the component its `webapp` builds to.
#[derive(Debug, Clone, Copy)]
pub struct Language {
    /// The language's short name (`rust`, `python`, …); names its namespace and identity.
    pub name: &'static str,
    /// The component's file name under `target/components/`.
    pub component: &'static str,
}

impl Language {
    /// The built component; fails naming the build command when it is missing.
    pub fn component_path(&self) -> anyhow::Result<PathBuf> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/components")
            .join(self.component);
        anyhow::ensure!(
            path.exists(),
            "{} is missing: build the {} guests first (`make guests`)",
            path.display(),
            self.name
        );
        Ok(path)
    }
}

/// Runs every scenario against `language`'s webapp, in order, printing each as it passes.
pub async fn run(language: Language) -> anyhow::Result<()> {
    let started = Instant::now();
    let subject = Subject::start(language).await?;
    for (name, scenario) in scenarios::ALL {
        let began = Instant::now();
        scenario(&subject)
            .await
            .map_err(|e| e.context(format!("{}: scenario `{name}`", language.name)))?;
        println!(
            "[{}] {name}: ok in {:.1} s",
            language.name,
            began.elapsed().as_secs_f64()
        );
    }
    subject.stop().await?;
    println!(
        "[{}] conformant in {:.1} s",
        language.name,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
