//! Follows the book's tutorial, "Write your first reconciler", every guide as a reader would: a guide's
//! shell steps and files become one bash script run in an empty folder against a control plane of
//! its own, with `WASMOP` set to this checkout. A guide passes when
//! its script succeeds (its own last steps wait for the greeting and list the plugin), the
//! ConfigMap it created carries its language's greeting, and `wasmop plugins` showed `hello`
//! running.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use wasmop_envtest::ControlPlane;

use common::scrape::free_address;

/// How long one guide may take: building its toolchain's component and compiling it in a debug
/// host are the slow steps.
const GUIDE_LIMIT: Duration = Duration::from_secs(900);
/// The annotation every guide's plugin writes.
const GREETING: &str = "hello.wasmop.dev/greeting";

/// One language's guide as a script.
struct Guide {
    language: String,
    script: String,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the checkout exists")
}

/// The tutorial's guides, in the order of the book's summary: each page of `book/src/tutorial/`
/// titled with its language.
fn guides() -> Vec<Guide> {
    let tutorial = repo().join("book/src/tutorial");
    let summary = std::fs::read_to_string(repo().join("book/src/SUMMARY.md"))
        .expect("the book has a summary");
    summary
        .lines()
        .filter_map(|line| line.split_once("](tutorial/")?.1.strip_suffix(".md)"))
        .filter(|page| !matches!(*page, "README" | "ship"))
        .map(|page| {
            let text = std::fs::read_to_string(tutorial.join(format!("{page}.md")))
                .expect("the summary's page exists");
            let (title, body) = text.split_once('\n').unwrap_or((&text, ""));
            Guide {
                language: title.trim_start_matches("# ").trim().to_owned(),
                script: script(body),
            }
        })
        .collect()
}

/// The bash script a guide's fenced blocks make: `sh` blocks run as they are, a block whose info
/// string names `file=PATH` writes PATH, anything else is prose.
fn script(body: &str) -> String {
    let mut script = String::from("set -euo pipefail\n");
    let mut lines = body.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        let block = block.join("\n");
        if info.trim() == "sh" {
            script.push_str(&block);
            script.push('\n');
        } else if let Some(file) = info
            .split_whitespace()
            .find_map(|w| w.strip_prefix("file="))
        {
            script.push_str(&format!(
                "mkdir -p \"$(dirname '{file}')\"\ncat > '{file}' <<'WASMOP_GUIDE_EOF'\n{block}\nWASMOP_GUIDE_EOF\n"
            ));
        }
    }
    script
}

/// Runs `guide` in an empty folder; returns what it printed. Whatever it left running in the
/// background (the host) is stopped.
async fn follow(plane: &ControlPlane, guide: &Guide) -> anyhow::Result<String> {
    let folder = tempfile::tempdir()?;
    let output = folder.path().join("guide.log");
    let kubectl = plane.binaries().kubectl();
    let path = format!(
        "{}:{}",
        kubectl.parent().expect("kubectl is in a folder").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let address = free_address();
    let mut child = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(&guide.script)
        .current_dir(folder.path())
        .env("WASMOP", repo())
        .env("KUBECONFIG", plane.kubeconfig_path())
        .env("PATH", path)
        .env("WASMOP_HEALTH_PROBE_BIND_ADDRESS", &address)
        .env("WASMOP_ADDRESS", &address)
        .env("WASMOP_METRICS_BIND_ADDRESS", "0")
        .stdout(std::fs::File::create(&output)?)
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()?;
    let group = child.id().expect("the guide started");
    let finished = tokio::time::timeout(GUIDE_LIMIT, child.wait()).await;
    let _ = std::process::Command::new("kill")
        .args(["-TERM", "--", &format!("-{group}")])
        .status();
    let printed = std::fs::read_to_string(&output)?;
    let status = finished.map_err(|_| anyhow::anyhow!("still running after {GUIDE_LIMIT:?}"))??;
    anyhow::ensure!(
        status.success(),
        "the guide failed ({status}); it printed:\n{printed}"
    );
    Ok(printed)
}

/// The tutorial's guide for `language`, followed against a control plane of its own (each guide's
/// plugin is `hello`, marking every ConfigMap).
async fn follows_the_guide(language: &str) -> anyhow::Result<()> {
    let guide = guides()
        .into_iter()
        .find(|guide| guide.language == language)
        .ok_or_else(|| anyhow::anyhow!("the tutorial has no {language} guide"))?;
    let plane = ControlPlane::start().await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, "default");
    eprintln!("[first reconciler] following the {language} guide");
    let printed = follow(&plane, &guide)
        .await
        .map_err(|e| e.context(format!("the {language} guide")))?;
    let name = format!("hello-{}", language.to_lowercase());
    let greeted = configmaps.get(&name).await?.metadata.annotations;
    let greeting = greeted.as_ref().and_then(|a| a.get(GREETING));
    let want = format!("Hello, World, from {language}!");
    assert_eq!(greeting, Some(&want), "the {language} guide's ConfigMap");
    assert!(
        printed
            .lines()
            .any(|l| l.starts_with("hello ") && l.contains("running")),
        "the {language} guide's `wasmop plugins` shows hello running:\n{printed}"
    );
    Ok(())
}

#[test]
fn the_tutorial_guides_every_language() {
    let guides = guides();
    let languages: Vec<&str> = guides.iter().map(|g| g.language.as_str()).collect();
    assert_eq!(languages, ["Rust", "Python", "TypeScript", "Go"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_guide_gets_from_an_empty_folder_to_a_running_plugin() -> anyhow::Result<()> {
    follows_the_guide("Rust").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_guide_gets_from_an_empty_folder_to_a_running_plugin() -> anyhow::Result<()> {
    follows_the_guide("Python").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_guide_gets_from_an_empty_folder_to_a_running_plugin() -> anyhow::Result<()>
{
    follows_the_guide("TypeScript").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_go_guide_gets_from_an_empty_folder_to_a_running_plugin() -> anyhow::Result<()> {
    follows_the_guide("Go").await
}
