//! `wasmop new`, as an author starts a plugin, one test per language (and Go against
//! controller-runtime's API): the next steps it prints run as printed on a machine where `wasmop`
//! is not on `PATH` — the language's `build .` writes the component into the plugin's folder and
//! it passes its own fixtures with `wasmop test` — and, loaded into a running host, it marks a
//! real ConfigMap with its generation. A custom kind scaffolds to a plugin that passes its
//! fixtures too, and `build -o FILE` writes it where asked; its crd.yaml, which the apiserver
//! takes, is the one source of its spec and status types in every language (`wasmop generate`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use wasmop_envtest::{shared_by, within};

/// Building a component is the slow part.
const LIMIT: Duration = Duration::from_secs(900);

/// Runs `command` in `dir` on a `PATH` without wasmop; returns what it printed, failing on a
/// non-zero exit.
fn run(mut command: Command, dir: &Path) -> anyhow::Result<String> {
    let output = command
        .current_dir(dir)
        .env("PATH", path_without_wasmop())
        .env("RUST_LOG", "error")
        .output()?;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    anyhow::ensure!(
        output.status.success(),
        "{command:?} failed: {printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(printed)
}

/// Runs `wasmop` with `args` in `dir`.
fn wasmop(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wasmop"));
    command.args(args);
    run(command, dir)
}

/// Runs `script` with bash in `dir`.
fn bash(dir: &Path, script: &str) -> anyhow::Result<String> {
    let mut command = Command::new("bash");
    command.args(["-c", &format!("set -euo pipefail\n{script}")]);
    run(command, dir)
}

/// The next steps `wasmop new` printed, one command a line, without the last one (`wasmop run`,
/// which runs until stopped).
fn next_steps(printed: &str) -> anyhow::Result<Vec<String>> {
    let (_, next) = printed
        .split_once("\nnext:\n")
        .ok_or_else(|| anyhow::anyhow!("no next steps in {printed}"))?;
    let mut steps: Vec<String> = next
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(|line| line.trim().to_owned())
        .collect();
    let last = steps.pop().unwrap_or_default();
    anyhow::ensure!(last.contains(" run --plugin "), "{printed}");
    Ok(steps)
}

/// `PATH` without the folders holding a `wasmop`, as on a machine where it is not installed.
fn path_without_wasmop() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept = std::env::split_paths(&path).filter(|dir| !dir.join("wasmop").exists());
    std::env::join_paths(kept).expect("PATH's folders join again")
}

/// Scaffolds `language` plugin `name` of `kind` in `parent` and follows the next steps `wasmop
/// new` printed — build it with `build .` and run its fixtures — on a `PATH` without wasmop;
/// returns the component, which the build wrote into the plugin's folder.
fn scaffold(parent: &Path, language: &str, name: &str, kind: &str) -> anyhow::Result<PathBuf> {
    eprintln!("[scaffold] {language}: {name} of {kind}");
    let printed = wasmop(parent, &["new", language, name, "--kind", kind])?;
    let steps = next_steps(&printed)?;
    anyhow::ensure!(
        steps.iter().any(|step| step.ends_with(" build .")),
        "{printed}"
    );
    let tested = bash(parent, &steps.join("\n"))?;
    anyhow::ensure!(tested.contains(": 2 fixtures, 0 failed"), "{tested}");
    let suffix = match language {
        "rust" => "",
        "ts" => "-js",
        "go-controller-runtime" => "-go",
        other => &format!("-{other}"),
    };
    let component = parent.join(name).join(format!("{name}{suffix}.wasm"));
    anyhow::ensure!(component.is_file(), "no {}", component.display());
    Ok(component)
}

#[test]
fn a_custom_kind_scaffolds_a_plugin_that_passes_its_fixtures_and_builds_where_asked() {
    let parent = tempfile::tempdir().unwrap();
    let custom = scaffold(
        parent.path(),
        "rust",
        "scaffold-widgets",
        "example.wasmop.dev/v1/Widget",
    )
    .unwrap();
    let elsewhere = parent.path().join("elsewhere/widgets.wasm");
    let built = bash(
        &parent.path().join("scaffold-widgets/rust"),
        &format!(
            "{} build -o {} .",
            env!("CARGO_BIN_EXE_wasmop"),
            elsewhere.display()
        ),
    )
    .unwrap();
    assert!(elsewhere.is_file(), "-o wrote no {}", elsewhere.display());
    assert_eq!(
        std::fs::read(&elsewhere).unwrap(),
        std::fs::read(&custom).unwrap()
    );
    let path = elsewhere.display().to_string();
    assert_eq!(
        built.lines().collect::<Vec<_>>(),
        [path.as_str()],
        "stdout: the path"
    );
}

#[tokio::test]
async fn a_custom_kinds_crd_is_the_one_source_of_its_types_in_every_language() {
    within(LIMIT, "types generated from crd.yaml", async {
        let parent = tempfile::tempdir()?;
        let kind = "example.wasmop.dev/v1/Gadget";
        let folders = [
            ("rust", "rust/src/types.rs"),
            ("python", "python/gadgets_python/types.py"),
            ("ts", "js/src/types.ts"),
            ("go", "go/types.go"),
        ];
        let plane = shared_by(module_path!()).await?;
        for (language, types) in folders {
            let name = format!("gadgets-{language}");
            wasmop(parent.path(), &["new", language, &name, "--kind", kind])?;
            let folder = parent.path().join(&name);
            let generated = std::fs::read_to_string(folder.join(types))?;
            assert!(generated.contains("GadgetSpec") && generated.contains("GadgetStatusConditions"), "{generated}");
            assert!(wasmop(&folder, &["generate", "--check"])?.contains("1 types files match crd.yaml"));
            // The apiserver takes the CRD as written.
            let crd = folder.join("crd.yaml");
            let crd = crd.to_str().expect("a UTF-8 path");
            let applied = plane.kubectl().args(["apply", "--dry-run=server", "-f", crd]).output().await?;
            assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));

            // A field added to the schema: the types are stale until generated again.
            let edited = std::fs::read_to_string(crd)?.replace(
                "                message: {type: string, description: A message to show.}\n",
                "                message: {type: string, description: A message to show.}\n                image: {type: string, description: The image to run.}\n",
            );
            std::fs::write(crd, edited)?;
            let mut check = Command::new(env!("CARGO_BIN_EXE_wasmop"));
            check.args(["generate", "--check"]).current_dir(&folder);
            let stale = check.output()?;
            let said = String::from_utf8_lossy(&stale.stderr);
            assert_eq!(stale.status.code(), Some(1), "{said}");
            assert!(said.contains("not what crd.yaml generates") && said.contains(types), "{said}");
            let printed = wasmop(&folder, &["generate"])?;
            assert!(printed.starts_with("generated "), "{printed}");
            let generated = std::fs::read_to_string(folder.join(types))?;
            assert!(generated.contains("The image to run."), "{generated}");
            assert!(wasmop(&folder, &["generate", "--check"])?.contains("match crd.yaml"));
        }
        // The Rust plugin builds with its new field and passes its fixtures.
        let rust = parent.path().join("gadgets-rust");
        let built = bash(&rust, &format!("{} build .", env!("CARGO_BIN_EXE_wasmop")))?;
        assert!(built.trim_end().ends_with("gadgets-rust.wasm"), "{built}");
        let tested = wasmop(&rust, &["test", "gadgets-rust.wasm", "fixtures/"])?;
        assert!(tested.contains(": 2 fixtures, 0 failed"), "{tested}");
        anyhow::Ok(())
    })
    .await
    .unwrap();
}

/// Scaffolds a `language` plugin of ConfigMaps, follows its next steps, and loads it into a host
/// on a namespace of its own: it marks a real ConfigMap with its generation.
async fn scaffolds_and_runs(language: &str) {
    within(LIMIT, "a scaffolded plugin", async {
        let parent = tempfile::tempdir()?;
        let name = format!("scaffold-{language}");
        let component = scaffold(parent.path(), language, &name, "v1/ConfigMap")?;

        let plane = &shared_by(module_path!()).await?;
        let namespace = plane.create_namespace(&name).await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, &namespace);
        let mut host = common::host(plane);
        host.args(["--namespaces", &namespace])
            .args(common::NO_PORTS);
        let host = host.arg("--plugin").arg(&component).spawn()?;
        let config: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "scaffolded"}, "data": {"k": "v"}
        }))?;
        configmaps.create(&PostParams::default(), &config).await?;
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
        common::terminate(host).await
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_plugin_scaffolds_builds_passes_its_fixtures_and_runs() {
    scaffolds_and_runs("rust").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_plugin_scaffolds_builds_passes_its_fixtures_and_runs() {
    scaffolds_and_runs("python").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_plugin_scaffolds_builds_passes_its_fixtures_and_runs() {
    scaffolds_and_runs("ts").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_plugin_scaffolds_builds_passes_its_fixtures_and_runs() {
    scaffolds_and_runs("go").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_runtime_plugin_scaffolds_builds_passes_its_fixtures_and_runs() {
    scaffolds_and_runs("go-controller-runtime").await;
}
