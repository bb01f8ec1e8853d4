//! Every language's `webapp` plugin against the conformance scenarios, and the benchmarks'
//! controller-runtime `webapp` compiled unchanged as a plugin. A new language adds one line here
//! once its component builds. The Rust plugin's run is recorded (`--record`): replayed
//! offline, 0.1.0 does again exactly what it did, and the 0.2.0 test build differs in its
//! `applied-by` stamp alone — the check to run before hot-loading an upgrade.

use std::path::Path;

use wasmop::fixture::{Fixture, fixture_files};
use wasmop::record::Recorder;
use wasmop::runtime::{Runtime, RuntimeConfig};
use wasmop::testing::{Checked, Tester};
use wasmop_conformance::{Language, Operator, run, run_recording};

macro_rules! conformance {
    ($($test:ident: $name:literal => $component:literal;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() -> anyhow::Result<()> {
            run(Operator::Wasmop(Language { name: $name, component: $component })).await
        }
    )*};
}

conformance! {
    python: "python" => "webapp-python.wasm";
    js: "js" => "webapp-js.wasm";
    go: "go" => "webapp-go.wasm";
    go_controller_runtime: "go-controller-runtime" => "webapp-controller-runtime-go.wasm";
}

/// The recorded fixtures under `dir` that `component` fails, with their differences; and how
/// many fixtures there were.
async fn replay(
    dir: &Path,
    component: &'static str,
) -> anyhow::Result<(Vec<(String, Checked)>, usize)> {
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let language = Language {
        name: "rust",
        component,
    };
    let tester = Tester::load(&runtime, &language.component_path()?).await?;
    let folder = Recorder::folder(dir, tester.plugin().name());
    let files = fixture_files(&[folder])?;
    let mut failed = Vec::new();
    for file in &files {
        let checked = tester.check(&Fixture::load(file)?).await;
        if !checked.passed() {
            failed.push((file.display().to_string(), checked));
        }
    }
    Ok((failed, files.len()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust() -> anyhow::Result<()> {
    let recorded = tempfile::tempdir()?;
    let rust = Language {
        name: "rust",
        component: "webapp.wasm",
    };
    run_recording(Operator::Wasmop(rust), Some(recorded.path())).await?;

    let (failed, count) = replay(recorded.path(), "webapp.wasm").await?;
    assert!(count > 20, "only {count} reconciles recorded");
    assert!(failed.is_empty(), "0.1.0 replayed differently: {failed:#?}");
    println!("[rust] {count} recorded reconciles replayed by 0.1.0 alike");

    let (failed, _) = replay(recorded.path(), "webapp-v2.wasm").await?;
    assert!(!failed.is_empty(), "0.2.0 replayed every reconcile alike");
    for (file, checked) in &failed {
        for difference in &checked.differences {
            let stamp = difference.contains("applied-by")
                && difference.contains("\"webapp/0.1.0\"")
                && difference.contains("\"webapp/0.2.0\"");
            let explained =
                difference.ends_with("sent, not expected; against the cached object it changes:");
            assert!(stamp || explained, "{file}: {difference}");
        }
    }
    println!(
        "[rust] 0.2.0 replayed {} of {count} reconciles differently, each in its applied-by stamp alone",
        failed.len()
    );
    Ok(())
}
