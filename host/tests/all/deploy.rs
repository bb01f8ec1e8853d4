//! The manifests under `deploy/` against the real apiserver: the kustomization is accepted by a
//! server-side dry run, the RBAC it grants is what the example plugins and secure metrics need
//! and no more, its metrics-reader role lets a scraper get `/metrics` and `/plugins` only, the
//! settings file it ships is one the binary accepts (metrics over HTTPS on 8443), its policy
//! admits the example plugins and refuses a greedy one, its webhooks component renders into
//! replicas that all serve webhooks and a leader allowed to configure them, and its sharded
//! overlay renders into three sharding replicas whose account may write the shard labels. Every
//! field of the WasmReconciler's spec has a description, and the book's table of the spec says
//! what the CRD (and so `kubectl explain`) says.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(120);
const ACCOUNT: &str = "system:serviceaccount:wasmop-system:wasmop";

fn deploy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// Runs kubectl; returns whether it succeeded and what it printed.
async fn kubectl(plane: &ControlPlane, args: &[&str]) -> anyhow::Result<(bool, String)> {
    let output = plane.kubectl().args(args).output().await?;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    Ok((output.status.success(), printed))
}

async fn can_i(
    plane: &ControlPlane,
    verb: &str,
    resource: &str,
    namespace: &str,
) -> anyhow::Result<bool> {
    let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
    let args = [
        "auth", "can-i", verb, resource, "-n", namespace, "--as", ACCOUNT,
    ];
    let mut kubectl = plane.kubectl();
    kubectl.args(args);
    if !subresource.is_empty() {
        kubectl.arg(format!("--subresource={subresource}"));
    }
    let output = kubectl.output().await?;
    Ok(String::from_utf8_lossy(&output.stdout).trim() == "yes")
}

#[test]
fn the_shipped_settings_are_valid() -> anyhow::Result<()> {
    let file = deploy().join("manager/wasmop.yaml");
    // The file names the policy where the pod mounts it; the flag points at the same file here.
    let policy = deploy().join("manager/policy.yaml");
    let cli = wasmop::config::Cli::load_from([
        "wasmop".as_ref(),
        "run".as_ref(),
        "--config".as_ref(),
        file.as_os_str(),
        "--policy".as_ref(),
        policy.as_os_str(),
    ])?;
    let wasmop::config::Command::Run(run) = cli.command else {
        panic!("run")
    };
    assert!(run.leader.leader_elect);
    assert!(run.wasm_reconcilers);
    assert_eq!(run.plugins.len(), 2);
    let sync = run.plugin_limits(std::path::Path::new("/plugins/configmap-sync.wasm"));
    assert_eq!(sync.max_concurrent_reconciles, Some(2));
    assert_eq!(run.ceiling.max_concurrent_reconciles, 16);
    assert!(
        run.ceiling
            .allow
            .as_ref()
            .is_some_and(|allow| allow.len() == 3)
    );
    let grace = run.graceful_shutdown_timeout.as_secs();
    let deployment = std::fs::read_to_string(deploy().join("manager/deployment.yaml"))?;
    assert!(
        deployment.contains(&format!("terminationGracePeriodSeconds: {}", grace + 5)),
        "the pod's grace period must outlast wasmop's ({grace} s)"
    );
    // Metrics over HTTPS on 8443, where the Deployment's `metrics` port and the Service point.
    assert_eq!(
        run.secure_serving(),
        Some(wasmop::http::SecureServing::default())
    );
    assert_eq!(run.metrics_bind_address.0.map(|a| a.port()), Some(8443));
    assert!(deployment.contains("containerPort: 8443"), "{deployment}");
    let service = std::fs::read_to_string(deploy().join("manager/service.yaml"))?;
    assert!(service.contains("port: 8443"), "{service}");
    Ok(())
}

/// Installs deploy/'s CRDs before a test's dry run of a kustomization holding them: the tests
/// share one control plane, and a dry run that finds a CRD missing fails with AlreadyExists when
/// another test installs it between the dry run's read and its create. can-i also resolves
/// resources through discovery, so the CRDs must be served.
/// The rows of the book's WasmReconciler spec table (`reference/crds.md`): field path, type,
/// description, with the HTML escapes mdBook needs undone.
fn book_spec_rows(book: &str) -> Vec<(String, String, String)> {
    let start = book
        .find("| field | type | description |")
        .expect("the book has the WasmReconciler spec table");
    book[start..]
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            let field = cells[0].trim_matches('`').to_owned();
            let description = cells[2].replace("&lt;", "<").replace("&gt;", ">");
            (field, cells[1].to_owned(), description)
        })
        .collect()
}

/// The fields under `schema` (an openAPIV3Schema object) as path, type, description; a field
/// without a description has an empty one.
fn crd_fields(schema: &serde_json::Value, prefix: &str, rows: &mut Vec<(String, String, String)>) {
    let Some(properties) = schema["properties"].as_object() else {
        return;
    };
    for (name, field) in properties {
        let path = match prefix {
            "" => name.clone(),
            _ => format!("{prefix}.{name}"),
        };
        let description = field["description"].as_str().unwrap_or_default();
        let description = description.split_whitespace().collect::<Vec<_>>().join(" ");
        let kind = field["type"].as_str().unwrap_or_default().to_owned();
        rows.push((path.clone(), kind, description));
        crd_fields(field, &path, rows);
    }
}

#[test]
fn every_wasmreconciler_spec_field_is_described_and_the_book_says_the_same() -> anyhow::Result<()> {
    let crd = std::fs::read_to_string(deploy().join("crds/wasmreconciler.yaml"))?;
    let crd: serde_json::Value = serde_saphyr::from_str(&crd)?;
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let mut fields = Vec::new();
    crd_fields(spec, "", &mut fields);
    assert!(fields.len() > 10, "the spec's fields: {fields:?}");
    let undescribed: Vec<&str> = fields
        .iter()
        .filter(|(_, _, description)| description.is_empty())
        .map(|(path, _, _)| path.as_str())
        .collect();
    assert!(
        undescribed.is_empty(),
        "spec fields without a description: {undescribed:?}"
    );
    // A ClusterWasmReconciler has the same fields.
    let cluster = std::fs::read_to_string(deploy().join("crds/clusterwasmreconciler.yaml"))?;
    let cluster: serde_json::Value = serde_saphyr::from_str(&cluster)?;
    let mut cluster_fields = Vec::new();
    let cluster = &cluster["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    crd_fields(&cluster["spec"], "", &mut cluster_fields);
    let paths = |fields: &[(String, String, String)]| {
        let mut paths: Vec<String> = fields.iter().map(|(path, _, _)| path.clone()).collect();
        paths.sort();
        paths
    };
    assert_eq!(paths(&fields), paths(&cluster_fields));
    let book = std::fs::read_to_string(deploy().join("../book/src/reference/crds.md"))?;
    let mut table = book_spec_rows(&book);
    fields.sort();
    table.sort();
    for (crd, book) in fields.iter().zip(&table) {
        assert_eq!(
            crd, book,
            "the CRD's field (left) and the book's row (right)"
        );
    }
    assert_eq!(
        fields.len(),
        table.len(),
        "the CRD's fields and the book's rows"
    );
    Ok(())
}

async fn install_crds(plane: &ControlPlane) -> anyhow::Result<()> {
    let crds = deploy().join("crds");
    plane
        .install_crds(&[
            crds.join("webapp.yaml"),
            crds.join("wasmreconciler.yaml"),
            crds.join("clusterwasmreconciler.yaml"),
        ])
        .await?;
    Ok(())
}

/// Applies deploy/'s RBAC (manager/rbac.yaml) once, before a test's dry run of a kustomization
/// holding it: for the same reason as [`install_crds`], a dry run racing a real create of one of
/// its objects fails with AlreadyExists, and so do two tests creating it at once.
async fn install_rbac(plane: &ControlPlane) -> anyhow::Result<()> {
    static APPLIED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    APPLIED
        .get_or_try_init(|| async {
            let rbac = deploy().join("manager/rbac.yaml");
            let rbac = rbac.to_str().expect("a UTF-8 path");
            let (ok, printed) =
                kubectl(plane, &["apply", "-n", "wasmop-system", "-f", rbac]).await?;
            anyhow::ensure!(ok, "{printed}");
            Ok(())
        })
        .await?;
    Ok(())
}

#[tokio::test]
async fn the_kustomization_applies_and_grants_least_privilege() -> anyhow::Result<()> {
    within(LIMIT, "deploy/ on the real apiserver", async {
        let plane = &shared_by(module_path!()).await?;
        let deploy = deploy();
        let deploy = deploy.to_str().expect("a UTF-8 path");
        // A dry run creates nothing, so the namespace its objects live in must exist already.
        kubectl(plane, &["create", "namespace", "wasmop-system"]).await?;
        install_crds(plane).await?;
        install_rbac(plane).await?;
        let (ok, printed) = kubectl(plane, &["apply", "--dry-run=server", "-k", deploy]).await?;
        assert!(ok, "{printed}");
        for object in [
            "deployment.apps/wasmop",
            "serviceaccount/wasmop",
            "clusterrole.rbac.authorization.k8s.io/wasmop",
            "clusterrole.rbac.authorization.k8s.io/wasmop-metrics-reader",
            "role.rbac.authorization.k8s.io/wasmop-leader-election",
            "service/wasmop-metrics",
            "configmap/wasmop-config-",
            "customresourcedefinition.apiextensions.k8s.io/webapps.example.wasmop.dev",
            "customresourcedefinition.apiextensions.k8s.io/wasmreconcilers.wasmop.dev",
            "customresourcedefinition.apiextensions.k8s.io/clusterwasmreconcilers.wasmop.dev",
        ] {
            assert!(printed.contains(object), "{object} missing from\n{printed}");
        }

        for (verb, resource, namespace) in [
            ("watch", "webapps.example.wasmop.dev", "shop"),
            ("patch", "webapps.example.wasmop.dev/status", "shop"),
            ("create", "deployments.apps", "shop"),
            ("delete", "services", "shop"),
            ("create", "configmaps", "shop"),
            ("list", "namespaces", "default"),
            ("create", "events.events.k8s.io", "shop"),
            ("update", "leases.coordination.k8s.io", "wasmop-system"),
            ("watch", "wasmreconcilers.wasmop.dev", "default"),
            ("patch", "wasmreconcilers.wasmop.dev/status", "default"),
            ("watch", "clusterwasmreconcilers.wasmop.dev", "default"),
            (
                "patch",
                "clusterwasmreconcilers.wasmop.dev/status",
                "default",
            ),
            ("create", "tokenreviews", "default"),
            ("create", "subjectaccessreviews", "default"),
        ] {
            assert!(
                can_i(plane, verb, resource, namespace).await?,
                "cannot {verb} {resource} in {namespace}"
            );
        }
        for (verb, resource, namespace) in [
            ("update", "leases.coordination.k8s.io", "default"),
            ("get", "secrets", "shop"),
            ("delete", "namespaces", "default"),
            ("create", "pods", "shop"),
            ("update", "wasmreconcilers.wasmop.dev", "default"),
            ("update", "clusterwasmreconcilers.wasmop.dev", "default"),
            ("delete", "tokenreviews", "default"),
        ] {
            assert!(
                !can_i(plane, verb, resource, namespace).await?,
                "may {verb} {resource} in {namespace}"
            );
        }

        // wasmop-metrics-reader lets whoever it is bound to get /metrics and /plugins, no more;
        // the operator itself is not a reader.
        let bind = [
            "create",
            "clusterrolebinding",
            "wasmop-metrics-scraper",
            "--clusterrole=wasmop-metrics-reader",
            "--user=metrics-scraper",
        ];
        let (ok, printed) = kubectl(plane, &bind).await?;
        assert!(ok, "{printed}");
        for (who, verb, url, allowed) in [
            ("metrics-scraper", "get", "/metrics", true),
            ("metrics-scraper", "get", "/plugins", true),
            ("metrics-scraper", "post", "/metrics", false),
            ("metrics-scraper", "get", "/debug/pprof", false),
            (ACCOUNT, "get", "/metrics", false),
        ] {
            let (_, printed) = kubectl(plane, &["auth", "can-i", verb, url, "--as", who]).await?;
            let answer = printed.lines().next().unwrap_or_default().trim();
            assert_eq!(answer == "yes", allowed, "{who} {verb} {url}: {printed}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_shipped_policy_admits_the_examples_and_refuses_more() -> anyhow::Result<()> {
    let policy = deploy().join("manager/policy.yaml");
    let cli = wasmop::config::Cli::load_from([
        "wasmop".as_ref(),
        "run".as_ref(),
        "--plugin=unused.wasm".as_ref(),
        "--policy".as_ref(),
        policy.as_os_str(),
    ])?;
    let wasmop::config::Command::Run(run) = cli.command else {
        panic!("run")
    };
    let runtime = wasmop::runtime::Runtime::new(wasmop::runtime::RuntimeConfig {
        ceiling: run.ceiling,
        ..Default::default()
    })?;
    let host = wasmop::testing::MemoryHost::new();
    let load = |name: &str| {
        let host = host.clone();
        let file = common::component(name);
        let runtime = &runtime;
        async move {
            let options = wasmop::runtime::PluginOptions::default();
            runtime.load(&file, options, |_| host.services()).await
        }
    };
    for example in ["webapp", "configmap-sync"] {
        load(example)
            .await
            .map_err(|e| anyhow::anyhow!("{example}: {e}"))?;
    }
    // guest-undeclared-write declares ConfigMap create only: allowed. guest-greedy asks for
    // u32::MAX workers and Secret reads: refused, saying why.
    load("guest-undeclared-write").await?;
    let refused = load("guest-greedy")
        .await
        .err()
        .expect("guest-greedy is refused");
    assert!(refused.to_string().contains("ceiling of 16"), "{refused}");
    Ok(())
}

#[tokio::test]
async fn the_identities_overlay_applies_and_matches_wasmop_rbac() -> anyhow::Result<()> {
    within(LIMIT, "deploy/identities on the real apiserver", async {
        let plane = &shared_by(module_path!()).await?;
        let overlay = deploy().join("identities");
        for plugin in ["webapp", "configmap-sync"] {
            let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
                .arg("rbac")
                .arg(common::component(plugin))
                .env("WASMOP_COMPILE_CACHE", common::compile_cache())
                .env_remove("WASMOP_KUBECONFIG")
                .output()
                .await?;
            assert!(output.status.success(), "wasmop rbac {plugin}");
            let without_comments = |text: &str| -> Vec<String> {
                let lines = text.lines().filter(|line| !line.starts_with('#'));
                lines.map(str::to_owned).collect()
            };
            let shipped = std::fs::read_to_string(overlay.join(format!("{plugin}.yaml")))?;
            assert_eq!(
                without_comments(&shipped),
                without_comments(&String::from_utf8(output.stdout)?),
                "deploy/identities/{plugin}.yaml is not `wasmop rbac` of the plugin any more"
            );
        }
        let _ = kubectl(plane, &["create", "namespace", "wasmop-system"]).await?;
        install_crds(plane).await?;
        install_rbac(plane).await?;
        let overlay = overlay.to_str().expect("a UTF-8 path");
        let (ok, printed) = kubectl(plane, &["apply", "--dry-run=server", "-k", overlay]).await?;
        assert!(ok, "{printed}");
        for object in [
            "serviceaccount/wasmop-plugin-webapp",
            "clusterrole.rbac.authorization.k8s.io/wasmop-plugin-configmap-sync:wasmop-system",
            "rolebinding.rbac.authorization.k8s.io/wasmop-plugin-webapp-impersonator",
            "deployment.apps/wasmop",
        ] {
            assert!(printed.contains(object), "{object} missing from\n{printed}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_webhooks_component_renders_and_lets_the_leader_configure_webhooks()
-> anyhow::Result<()> {
    within(LIMIT, "deploy/webhooks on the real apiserver", async {
        let plane = &shared_by(module_path!()).await?;
        // Beside deploy/, in the checkout itself: target/ may be a link to elsewhere.
        let checkout = deploy().join("..");
        let folder = tempfile::Builder::new()
            .prefix(".test-overlay-")
            .tempdir_in(&checkout)?;
        std::fs::write(
            folder.path().join("kustomization.yaml"),
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             resources: [../deploy]\ncomponents: [../deploy/webhooks]\n",
        )?;
        let overlay = folder.path().to_str().expect("a UTF-8 path");
        let (ok, rendered) = kubectl(plane, &["kustomize", overlay]).await?;
        assert!(ok, "{rendered}");
        for expected in [
            "- --config=/etc/wasmop/wasmop.yaml",
            "- --webhook-service=wasmop-system/wasmop-webhooks",
            "- --webhook-cert-dir=/var/run/wasmop/webhook-certs",
            "containerPort: 9443",
            "secretName: wasmop-webhook-cert",
            "- wasmop-webhooks.wasmop-system.svc",
            "targetPort: webhooks",
        ] {
            assert!(
                rendered.contains(expected),
                "{expected} missing from\n{rendered}"
            );
        }

        let rbac = deploy().join("webhooks/rbac.yaml");
        let rbac = rbac.to_str().expect("a UTF-8 path");
        let (ok, printed) = kubectl(plane, &["apply", "-f", rbac]).await?;
        assert!(ok, "{printed}");
        for (verb, resource, allowed) in [
            (
                "patch",
                "validatingwebhookconfigurations.admissionregistration.k8s.io",
                true,
            ),
            (
                "delete",
                "mutatingwebhookconfigurations.admissionregistration.k8s.io",
                true,
            ),
            (
                "patch",
                "customresourcedefinitions.apiextensions.k8s.io",
                true,
            ),
            (
                "delete",
                "customresourcedefinitions.apiextensions.k8s.io",
                false,
            ),
            (
                "create",
                "customresourcedefinitions.apiextensions.k8s.io",
                false,
            ),
        ] {
            let may = can_i(plane, verb, resource, "default").await?;
            assert_eq!(may, allowed, "{verb} {resource}");
        }
        Ok(())
    })
    .await
}

/// The environment variable `wasmop run` reads `--sharding` from.
fn sharding_env() -> String {
    use clap::CommandFactory;
    let cli = wasmop::config::Cli::command();
    let run = cli.find_subcommand("run").expect("wasmop run");
    let sharding = run
        .get_arguments()
        .find(|arg| arg.get_long() == Some("sharding"));
    let sharding = sharding.expect("wasmop run --sharding");
    let env = sharding
        .get_env()
        .expect("--sharding has an environment variable");
    env.to_string_lossy().into_owned()
}

#[tokio::test]
async fn the_sharded_overlay_runs_three_sharding_replicas_allowed_to_label() -> anyhow::Result<()> {
    within(LIMIT, "deploy/sharded on the real apiserver", async {
        let plane = &shared_by(module_path!()).await?;
        let overlay = deploy().join("sharded");
        let overlay = overlay.to_str().expect("a UTF-8 path");
        let (ok, rendered) = kubectl(plane, &["kustomize", overlay]).await?;
        assert!(ok, "{rendered}");
        let deployment = rendered
            .split("\n---\n")
            .find(|doc| doc.contains("\nkind: Deployment\n"))
            .unwrap_or_else(|| panic!("no Deployment in\n{rendered}"));
        let deployment: k8s_openapi::api::apps::v1::Deployment =
            serde_saphyr::from_str(deployment)?;
        let spec = deployment.spec;
        assert_eq!(spec.replicas, Some(3));
        let pod = spec.template.spec.expect("a pod spec");
        let container = pod.containers.iter().find(|c| c.name == "wasmop");
        let container = container.expect("the wasmop container");
        let name = sharding_env();
        let sharding = container.env.iter().flatten().find(|var| var.name == name);
        assert_eq!(
            sharding.and_then(|var| var.value.as_deref()),
            Some("true"),
            "{name} in {:?}",
            container.env
        );
        // The binary takes the pods' settings (their arguments, environment and settings
        // file) and gets as far as connecting to the cluster.
        let manager = deploy().join("manager");
        let manager = manager.to_str().expect("a UTF-8 path");
        let mut wasmop = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop"));
        wasmop.env_clear();
        for arg in container.args.iter().flatten() {
            wasmop.arg(arg.replace("/etc/wasmop", manager));
        }
        wasmop.arg(format!("--policy={manager}/policy.yaml"));
        for var in container.env.iter().flatten() {
            if let Some(value) = &var.value {
                wasmop.env(&var.name, value);
            }
        }
        let missing = plane.dir().join("no-kubeconfig");
        let output = wasmop.env("WASMOP_KUBECONFIG", &missing).output().await?;
        let printed = String::from_utf8_lossy(&output.stderr);
        assert!(
            printed.contains(&format!("reading kubeconfig {}", missing.display())),
            "the pods' settings are refused: {printed}"
        );

        let _ = kubectl(plane, &["create", "namespace", "wasmop-system"]).await?;
        install_crds(plane).await?;
        install_rbac(plane).await?;
        let (ok, printed) = kubectl(plane, &["apply", "--dry-run=server", "-k", overlay]).await?;
        assert!(ok, "{printed}");
        assert!(printed.contains("deployment.apps/wasmop"), "{printed}");

        // The overlay's RBAC is the base's: member Leases in the host's namespace, and patch
        // (the shard labels) on every primary and owned kind of the example plugins.
        for (verb, resource, namespace, allowed) in [
            ("list", "leases.coordination.k8s.io", "wasmop-system", true),
            ("watch", "leases.coordination.k8s.io", "wasmop-system", true),
            (
                "create",
                "leases.coordination.k8s.io",
                "wasmop-system",
                true,
            ),
            ("list", "leases.coordination.k8s.io", "shop", false),
            ("patch", "webapps.example.wasmop.dev", "shop", true),
            ("patch", "deployments.apps", "shop", true),
            ("patch", "services", "shop", true),
            ("patch", "configmaps", "shop", true),
            ("patch", "namespaces", "default", false),
        ] {
            let may = can_i(plane, verb, resource, namespace).await?;
            assert_eq!(may, allowed, "{verb} {resource} in {namespace}");
        }
        Ok(())
    })
    .await
}
