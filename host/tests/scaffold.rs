//! `wasmop new`, as an author starts a plugin: for each language the folder it makes builds with
//! that language's `build` script, passes its own fixtures with `wasmop test`, and — loaded into
//! a running host — marks a real ConfigMap with its generation. A custom kind scaffolds to a
//! plugin that passes its fixtures too.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use wasmop_envtest::{shared, within};

/// Building the four components is the slow part.
const LIMIT: Duration = Duration::from_secs(900);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the checkout exists")
}

/// Runs `wasmop` with `args` in `dir`; returns what it printed, failing on a non-zero exit.
fn wasmop(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_wasmop"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "error")
        .output()?;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    anyhow::ensure!(
        output.status.success(),
        "wasmop {args:?} failed: {printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(printed)
}

/// Scaffolds `language` plugin `name` of `kind` in `parent`, builds it as its README says and
/// runs its fixtures; returns the component.
fn scaffold(parent: &Path, language: &str, name: &str, kind: &str) -> anyhow::Result<PathBuf> {
    eprintln!("[scaffold] {language}: {name} of {kind}");
    wasmop(parent, &["new", language, name, "--kind", kind])?;
    let folder = parent.join(name);
    let readme = std::fs::read_to_string(folder.join("README.md"))?;
    let build = readme
        .lines()
        .find(|line| line.contains("/build "))
        .and_then(|line| line.split('#').next())
        .ok_or_else(|| anyhow::anyhow!("no build step in {readme}"))?;
    let built = Command::new("bash")
        .args(["-c", build.trim()])
        .current_dir(&folder)
        .status()?;
    anyhow::ensure!(built.success(), "`{build}` failed");
    let suffix = match language {
        "rust" => "",
        "ts" => "-js",
        other => &format!("-{other}"),
    };
    let component = repo().join(format!("target/components/{name}{suffix}.wasm"));
    let component_arg = component.to_string_lossy().into_owned();
    let tested = wasmop(&folder, &["test", &component_arg, "fixtures/"])?;
    anyhow::ensure!(tested.contains(": 2 fixtures, 0 failed"), "{tested}");
    Ok(component)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_language_scaffolds_a_plugin_that_builds_passes_its_fixtures_and_runs() {
    within(LIMIT, "scaffolded plugins", async {
        let parent = tempfile::tempdir()?;
        let custom = scaffold(
            parent.path(),
            "rust",
            "scaffold-widgets",
            "example.wasmop.dev/v1/Widget",
        )?;
        assert!(custom.exists());
        let mut components = Vec::new();
        for language in ["rust", "python", "ts", "go"] {
            let name = format!("scaffold-{language}");
            components.push((
                name.clone(),
                scaffold(parent.path(), language, &name, "v1/ConfigMap")?,
            ));
        }

        let plane = shared().await?;
        let namespace = plane.create_namespace("scaffold").await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, &namespace);
        let mut host = common::host(plane);
        host.args(["--namespaces", &namespace]);
        host.args([
            "--health-probe-bind-address",
            "0",
            "--metrics-bind-address",
            "0",
        ]);
        for (_, component) in &components {
            host.arg("--plugin").arg(component);
        }
        let host = host.spawn()?;
        let config: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "scaffolded"}, "data": {"k": "v"}
        }))?;
        configmaps.create(&PostParams::default(), &config).await?;
        for (name, _) in &components {
            let annotation = format!("{name}.wasmop.dev/observed-generation");
            loop {
                let current = configmaps.get("scaffolded").await?;
                let annotations = current.metadata.annotations.unwrap_or_default();
                if annotations.contains_key(&annotation) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            eprintln!("[scaffold] {name} marked the ConfigMap in the cluster");
        }
        common::terminate(host).await
    })
    .await
    .unwrap();
}
