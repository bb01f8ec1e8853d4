//! `wasmop test`, as a plugin author runs it: the real component against fixture files, with no
//! cluster. webapp passes its fixtures — one set, `plugins/webapp/fixtures`, for the webapp of
//! every language (each SDK's unit tests run the same files in-process); its 0.2.0 build differs from them in the `applied-by`
//! stamp and nothing else; a guest writing what it did not declare is refused before anything
//! is written, as in a cluster; `--accept` makes a failing fixture expect what was done, changing
//! only the lines that differ; a malformed fixture fails alone, named with what is wrong; and a
//! host recorded (`wasmop run --record`) on a real control plane over objects that existed before
//! it started — owned ones left by an earlier run and someone else's — replays (`wasmop test
//! --replay`) without a difference.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::logged::Logged;
use wasmop_envtest::{shared_by, within};

/// The webapp plugin's fixtures, which its build in every language passes.
fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/webapp/fixtures")
}

/// Runs `wasmop test` with `args`.
fn wasmop_test(args: &[&Path]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
        .arg("test")
        .args(args)
        .env("RUST_LOG", "error")
        .output()
        .expect("wasmop runs")
}

/// Writes `text` as fixture `name` in `dir`; returns its path.
fn fixture_file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("the temporary folder takes files");
    path
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn webapp_passes_its_own_fixtures() {
    let output = wasmop_test(&[&common::component("webapp"), &fixtures()]);
    let text = stdout(&output);
    assert!(output.status.success(), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("ok  ")).count(),
        9,
        "{text}"
    );
    assert!(text.ends_with("webapp: 9 fixtures, 0 failed\n"), "{text}");
}

/// `wasmop run` of webapp over `namespace` of `plane`, recording into `record` when given.
fn webapp_host(
    plane: &wasmop_envtest::ControlPlane,
    namespace: &str,
    record: Option<&Path>,
) -> anyhow::Result<Logged> {
    let mut command = common::host(plane);
    command
        .arg("--plugin")
        .arg(common::component("webapp"))
        .args(["--namespaces", namespace])
        .args([
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ]);
    let name = match record {
        Some(record) => {
            command.arg("--record").arg(record);
            "recorded"
        }
        None => "first",
    };
    Logged::spawn(name, command)
}

/// A WebApp named `name` as `kubectl apply` takes it.
fn webapp_manifest(name: &str) -> String {
    format!(
        "apiVersion: example.wasmop.dev/v1alpha1\nkind: WebApp\nmetadata: {{name: {name}}}\n\
         spec: {{image: nginx:1.27, replicas: 1, port: 8080}}\n"
    )
}

/// A Deployment named `name` that nobody's plugin made, selecting its pods as webapp would (a
/// selector is immutable).
fn foreign_deployment(name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n  \
         selector: {{matchLabels: {{app.kubernetes.io/name: {name}}}}}\n  template:\n    \
         metadata: {{labels: {{app.kubernetes.io/name: {name}}}}}\n    \
         spec: {{containers: [{{name: web, image: nginx:1.26}}]}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_over_objects_older_than_the_host_replays_alike() -> anyhow::Result<()> {
    within(
        Duration::from_secs(240),
        "recording over existing objects",
        async {
            let plane = &shared_by(module_path!()).await?;
            common::install_webapp_crd(plane).await?;
            let namespace = plane.create_namespace("replay").await?;
            let apps = common::webapps(plane.client().await?, &namespace);
            let apply = |manifest: String| {
                let namespace = namespace.clone();
                async move {
                    let args = ["apply", "-n", namespace.as_str(), "-f", "-"];
                    plane.run_kubectl(&args, Some(&manifest)).await
                }
            };
            // A first run leaves `kept` converged: its Deployment, Service and marker ConfigMap exist
            // before the recorded run starts.
            apply(webapp_manifest("kept")).await?;
            let first = webapp_host(plane, &namespace, None)?;
            common::converged(&apps, "kept").await?;
            common::terminate(first.child).await?;
            // While no host runs, someone else's Deployment appears, then a WebApp of its name.
            apply(foreign_deployment("adopt")).await?;
            apply(webapp_manifest("adopt")).await?;

            let recorded = tempfile::tempdir()?;
            let host = webapp_host(plane, &namespace, Some(recorded.path()))?;
            common::converged(&apps, "kept").await?;
            common::converged(&apps, "adopt").await?;
            let folder = recorded.path().join("webapp");
            let ends = |name: &str| format!("-{namespace}-{name}.yaml");
            loop {
                let files: Vec<String> = std::fs::read_dir(&folder)
                    .map(|entries| {
                        let names = entries.flatten().map(|e| e.file_name());
                        names.map(|n| n.to_string_lossy().into_owned()).collect()
                    })
                    .unwrap_or_default();
                if ["kept", "adopt"]
                    .iter()
                    .all(|n| files.iter().any(|f| f.ends_with(&ends(n))))
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            common::terminate(host.child).await?;

            let files = wasmop::fixture::fixture_files(std::slice::from_ref(&folder))?;
            let mut read = Vec::new();
            for file in &files {
                read.extend(wasmop::fixture::Fixture::load(file)?.objects);
            }
            let recorded_as = |kind: &str, name: &str| {
                read.iter()
                    .filter(|o| o["kind"] == kind && o["metadata"]["name"] == name)
                    .map(|o| o["apiVersion"].as_str().unwrap_or_default().to_owned())
                    .next()
            };
            println!(
                "{} reconciles recorded, {} objects read",
                files.len(),
                read.len()
            );
            assert_eq!(
                recorded_as("Deployment", "kept").as_deref(),
                Some("apps/v1"),
                "the owned Deployment listed at start"
            );
            assert_eq!(
                recorded_as("Service", "kept").as_deref(),
                Some("v1"),
                "the owned Service listed at start"
            );
            assert_eq!(
                recorded_as("Deployment", "adopt").as_deref(),
                Some("apps/v1"),
                "the foreign Deployment"
            );

            let component = common::component("webapp");
            let output = wasmop_test(&[Path::new("--replay"), recorded.path(), &component]);
            let text = stdout(&output);
            println!("replayed: {}", text.lines().last().unwrap_or_default());
            assert!(output.status.success(), "{text}");
            assert!(
                text.ends_with(&format!("webapp: {} fixtures, 0 failed\n", files.len())),
                "{text}"
            );
            Ok(())
        },
    )
    .await
}

#[test]
fn every_languages_webapp_passes_the_same_fixtures() {
    for language in ["python", "js", "go"] {
        let component = common::component(&format!("webapp-{language}"));
        let output = wasmop_test(&[&component, &fixtures()]);
        let text = stdout(&output);
        assert!(output.status.success(), "{language}: {text}");
        assert!(text.ends_with("webapp: 9 fixtures, 0 failed\n"), "{text}");
    }
}

#[test]
fn the_next_version_differs_in_its_applied_by_stamp_and_its_replica_limit() {
    let output = wasmop_test(&[&common::component("webapp-v2"), &fixtures()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let differences: Vec<&str> = text.lines().filter(|l| l.starts_with("        ")).collect();
    let stamp = "at /metadata/annotations/example.wasmop.dev~1applied-by: \
                 expected \"webapp/0.1.0\", sent \"webapp/0.2.0\"";
    let deployment = "write 0 `apply apps/v1 Deployment shop/web`: ";
    let service = "write 1 `apply v1 Service shop/web`: ";
    let changes = "/metadata/annotations/example.wasmop.dev~1applied-by \
                   from \"webapp/0.1.0\" to \"webapp/0.2.0\"";
    let unexpected = "sent, not expected; against the cached object it changes:";
    assert_eq!(
        differences,
        [
            // Converged under 0.1.0, its Deployment and Service carry the old stamp: 0.2.0
            // applies both again, changing nothing but the stamp.
            format!("        {deployment}{unexpected}"),
            format!("        {deployment}{changes}"),
            format!("        {service}{unexpected}"),
            format!("        {service}{changes}"),
            format!("        write 2 `apply apps/v1 Deployment shop/web`: {stamp}"),
            format!("        write 3 `apply v1 Service shop/web`: {stamp}"),
            // 0.2.0's validating webhook admits up to 100 replicas.
            "        allowed: expected false, answered true".to_owned(),
            "        message: expected \"spec.replicas must be between 0 and 50, not 75\", answered none".to_owned(),
        ],
        "{text}"
    );
    assert!(text.ends_with("webapp: 9 fixtures, 3 failed\n"), "{text}");
}

#[test]
fn a_json_report_has_a_line_per_fixture_and_the_totals_last() {
    let mut args: Vec<&Path> = vec![Path::new("--format"), Path::new("json")];
    let v2 = common::component("webapp-v2");
    let fixtures = fixtures();
    args.extend([v2.as_path(), fixtures.as_path()]);
    let output = wasmop_test(&args);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let lines: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    let (totals, fixtures) = lines.split_last().expect("lines");
    assert_eq!(
        *totals,
        serde_json::json!({"plugin": "webapp", "fixtures": 9, "failed": 3, "accepted": 0})
    );
    assert_eq!(fixtures.len(), 9);
    let failed: Vec<&serde_json::Value> =
        fixtures.iter().filter(|f| f["passed"] == false).collect();
    assert_eq!(failed.len(), 3);
    for fixture in failed {
        let differences = fixture["differences"].as_array().unwrap();
        let webhook = fixture["file"].as_str().unwrap().contains("webhook-");
        let expected = if webhook {
            "allowed: expected false"
        } else {
            "applied-by"
        };
        assert!(
            differences
                .iter()
                .any(|d| d.as_str().unwrap().contains(expected)),
            "{fixture}"
        );
        assert!(fixture["file"].as_str().unwrap().ends_with(".yaml"));
    }
}

#[test]
fn an_undeclared_write_is_refused_before_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let text = "request: {namespace: shop, name: stolen}\nexpect: {outcome: done}\n";
    let fixture = fixture_file(&dir, "secret.yaml", text);
    let output = wasmop_test(&[&common::component("guest-undeclared-write"), &fixture]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let differences: Vec<&str> = text.lines().filter(|l| l.starts_with("        ")).collect();
    assert_eq!(differences.len(), 1, "{text}");
    assert!(
        differences[0].starts_with("        outcome: expected `done`, got `error`")
            && differences[0].contains("guest-undeclared-write")
            && differences[0].contains("Secret"),
        "{text}"
    );
}

#[test]
fn accept_rewrites_a_failing_fixture_to_what_was_sent() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("new.yaml");
    let original = std::fs::read_to_string(fixtures().join("new.yaml")).unwrap();
    let (head, _) = original.split_once("expect:").unwrap();
    std::fs::write(&fixture, head).unwrap();
    let webapp = common::component("webapp");

    let mut accept = std::process::Command::new(env!("CARGO_BIN_EXE_wasmop"));
    accept.args(["test", "--accept"]).arg(&webapp).arg(&fixture);
    let accepted = accept.env("RUST_LOG", "error").output().unwrap();
    let text = stdout(&accepted);
    assert!(accepted.status.success(), "{text}");
    assert!(text.contains("now expects what was done"), "{text}");
    assert!(
        text.ends_with("webapp: 1 fixtures, 0 failed, 1 accepted (rewritten)\n"),
        "{text}"
    );

    let rerun = wasmop_test(&[&webapp, &fixture]);
    assert!(rerun.status.success(), "{}", stdout(&rerun));
    let rewritten = std::fs::read_to_string(&fixture).unwrap();
    let verbs: Vec<&str> = rewritten
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- verb: "))
        .collect();
    let expected = ["update", "create", "apply", "apply", "merge-patch"];
    assert_eq!(verbs, expected, "{rewritten}");
}

#[test]
fn a_malformed_fixture_fails_alone_named_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let text = "request: {namespace: shop, name: web}\nexpct: {}\n";
    fixture_file(&dir, "a-typo.yaml", text);
    fixture_file(&dir, "b-broken.yaml", "request: {name: [\n");
    let gone = std::fs::read_to_string(fixtures().join("gone.yaml")).unwrap();
    fixture_file(&dir, "c-gone.yaml", &gone);
    let output = wasmop_test(&[&common::component("webapp"), dir.path()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let at = |file: &str| lines.iter().position(|l| l.ends_with(file)).expect(file);
    let (typo, broken) = (at("a-typo.yaml"), at("b-broken.yaml"));
    assert!(
        lines[typo].starts_with("FAIL  ") && lines[typo + 1].contains("expct"),
        "{text}"
    );
    assert!(lines[broken].starts_with("FAIL  "), "{text}");
    assert!(lines[broken + 1].contains("not valid YAML"), "{text}");
    let gone = at("c-gone.yaml)");
    assert!(lines[gone].starts_with("ok  "), "{text}");
    assert!(text.ends_with("webapp: 3 fixtures, 2 failed\n"), "{text}");
}

#[test]
fn accept_changes_only_the_lines_that_differ() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(fixtures().join("new.yaml")).unwrap();
    let authored = format!("# Written by hand: keep this.\n{original}");
    let fixture = fixture_file(&dir, "new.yaml", &authored);
    let mut accept = std::process::Command::new(env!("CARGO_BIN_EXE_wasmop"));
    accept.args(["test", "--accept"]);
    let accepted = accept
        .arg(common::component("webapp-v2"))
        .arg(&fixture)
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    assert!(accepted.status.success(), "{}", stdout(&accepted));
    let rewritten = std::fs::read_to_string(&fixture).unwrap();
    let (before, after): (Vec<&str>, Vec<&str>) =
        (authored.lines().collect(), rewritten.lines().collect());
    assert_eq!(before.len(), after.len(), "{rewritten}");
    let changed: Vec<(&&str, &&str)> = before.iter().zip(&after).filter(|(b, a)| b != a).collect();
    assert_eq!(changed.len(), 2, "{rewritten}");
    for (was, now) in changed {
        assert_eq!(was.replace("webapp/0.1.0", "webapp/0.2.0"), **now);
    }
}

#[test]
fn a_user_error_is_one_line_of_causes_without_a_backtrace() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.wasm");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
        .arg("test")
        .arg(&missing)
        .arg(fixtures())
        .env("RUST_BACKTRACE", "1")
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains("missing.wasm"),
        "{stderr}"
    );
}

#[test]
fn a_webhook_fixture_is_answered_as_the_apiserver_would_have_it_answered() {
    let dir = tempfile::tempdir().unwrap();
    let object = "{apiVersion: example.wasmop.dev/v1alpha1, kind: WebApp, \
                  metadata: {namespace: shop, name: web}, spec: {image: nginx, replicas: 60}}";
    // A delete: webapp validates creates and updates only, so the apiserver would not ask.
    let delete = format!(
        "validate: {{operation: DELETE, oldObject: {object}}}\nexpect: {{allowed: true}}\n"
    );
    fixture_file(&dir, "a-delete.yaml", &delete);
    // Stated nothing: a test that cannot fail fails, and --accept fills it in.
    fixture_file(
        &dir,
        "b-unstated.yaml",
        &format!("validate: {{object: {object}}}\n"),
    );
    let output = wasmop_test(&[&common::component("webapp"), dir.path()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("plugin webapp declares no validate webhook for example.wasmop.dev/v1alpha1 WebApp DELETE: the apiserver would not call it"),
        "{text}"
    );
    assert!(
        text.contains("expects nothing: state its allowed, message, warnings"),
        "{text}"
    );
    let accepted = std::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
        .args(["test", "--accept"])
        .arg(common::component("webapp"))
        .arg(dir.path().join("b-unstated.yaml"))
        .output()
        .unwrap();
    assert!(accepted.status.success(), "{}", stdout(&accepted));
    let rewritten = std::fs::read_to_string(dir.path().join("b-unstated.yaml")).unwrap();
    assert_eq!(
        rewritten,
        format!(
            "validate: {{object: {object}}}\nexpect:\n  allowed: false\n  message: \"spec.replicas must be between 0 and 50, not 60\"\n"
        )
    );
    // A plugin that serves no webhooks.
    let output = wasmop_test(&[
        &common::component("configmap-sync"),
        &dir.path().join("b-unstated.yaml"),
    ]);
    assert!(
        stdout(&output).contains("plugin configmap-sync serves no webhooks"),
        "{}",
        stdout(&output)
    );
}
