//! The harness against itself: a real apiserver, a real kubectl, isolation and no orphans.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, ensure};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use wasmop_envtest::{ControlPlane, kubernetes_version, process_running, shared, within};

const LIMIT: Duration = Duration::from_secs(300);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

async fn widgets(plane: &ControlPlane, namespace: &str) -> anyhow::Result<Api<DynamicObject>> {
    plane.install_crds(&[fixture("widgets-crd.yaml")]).await?;
    let gvk = GroupVersionKind::gvk("envtest.wasmop.dev", "v1", "Widget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    Ok(Api::namespaced_with(
        plane.client().await?,
        namespace,
        &resource,
    ))
}

fn widget(name: &str, size: i64) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "envtest.wasmop.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
    }))?)
}

#[tokio::test]
async fn custom_objects_are_created_listed_watched_and_guarded_by_resource_version()
-> anyhow::Result<()> {
    within(LIMIT, "the custom object round trip", async {
        let plane = shared().await?;
        let namespace = plane.create_namespace("crud").await?;
        let api = widgets(plane, &namespace).await?;

        let first = api
            .create(&PostParams::default(), &widget("first", 1)?)
            .await?;
        let list = api.list(&Default::default()).await?;
        ensure!(list.items.len() == 1, "listed {} widgets", list.items.len());
        let list_version = list
            .metadata
            .resource_version
            .context("list has a resourceVersion")?;

        let mut events = api
            .watch(&WatchParams::default(), &list_version)
            .await?
            .boxed();
        api.create(&PostParams::default(), &widget("second", 2)?)
            .await?;
        match events.try_next().await?.context("the watch ended")? {
            WatchEvent::Added(object) => ensure!(object.metadata.name.as_deref() == Some("second")),
            other => anyhow::bail!("expected Added(second), got {other:?}"),
        }

        let mut fresh = first.clone();
        fresh.data["spec"]["size"] = json!(10);
        api.replace("first", &PostParams::default(), &fresh).await?;
        let mut stale = first;
        stale.data["spec"]["size"] = json!(20);
        match api.replace("first", &PostParams::default(), &stale).await {
            Err(kube::Error::Api(status)) if status.code == 409 => {
                ensure!(status.reason == "Conflict", "reason {}", status.reason)
            }
            other => anyhow::bail!("a stale update must be refused with 409, got {other:?}"),
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn kubectl_at_the_apiserver_version_applies_gets_and_deletes() -> anyhow::Result<()> {
    within(LIMIT, "kubectl apply/get/delete", async {
        let plane = shared().await?;
        let namespace = plane.create_namespace("kubectl").await?;
        let api = widgets(plane, &namespace).await?;

        let version = kubectl_json(plane, &["version", "-o", "json"]).await?;
        for side in ["clientVersion", "serverVersion"] {
            ensure!(
                version[side]["gitVersion"] == kubernetes_version(),
                "{side}: {version}"
            );
        }

        let manifest = fixture("widget.yaml");
        let manifest = manifest.to_str().context("fixture path is UTF-8")?;
        kubectl(plane, &["apply", "-n", &namespace, "-f", manifest]).await?;
        let object = kubectl_json(
            plane,
            &[
                "get",
                "widget",
                "from-kubectl",
                "-n",
                &namespace,
                "-o",
                "json",
            ],
        )
        .await?;
        ensure!(object["spec"]["size"] == 3, "kubectl get returned {object}");
        ensure!(api.get("from-kubectl").await?.data["spec"]["size"] == 3);

        kubectl(
            plane,
            &["delete", "widget", "from-kubectl", "-n", &namespace],
        )
        .await?;
        ensure!(
            api.get_opt("from-kubectl").await?.is_none(),
            "the widget survived kubectl delete"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn service_account_tokens_are_minted_and_rbac_applies_to_them() -> anyhow::Result<()> {
    within(LIMIT, "a service-account token round trip", async {
        let plane = shared().await?;
        let namespace = plane.create_namespace("tokens").await?;
        let token = service_account_token(plane, &namespace, "robot").await?;
        let token = format!("--token={token}");

        let whoami = kubectl_json(plane, &["auth", "whoami", "-o", "json", &token]).await?;
        let user = &whoami["status"]["userInfo"]["username"];
        ensure!(
            *user == format!("system:serviceaccount:{namespace}:robot"),
            "{whoami}"
        );

        let denied = plane
            .kubectl()
            .args(["get", "configmaps", "-n", &namespace, &token])
            .output()
            .await?;
        ensure!(
            !denied.status.success(),
            "RBAC let an unprivileged service account list configmaps"
        );
        let stderr = String::from_utf8_lossy(&denied.stderr);
        ensure!(
            stderr.contains("forbidden"),
            "expected a Forbidden error, got: {stderr}"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_audit_log_records_who_made_each_request_and_its_answer() -> anyhow::Result<()> {
    within(LIMIT, "a request found in the audit log", async {
        let plane = shared().await?;
        let namespace = plane.create_namespace("audit").await?;
        let token = service_account_token(plane, &namespace, "auditor").await?;
        let kubeconfig = plane.kubeconfig_for("auditor", &token)?;
        let client = plane.client_from(&kubeconfig).await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(client, &namespace);
        let mut log = plane.audit_log();
        let configmap = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some("forbidden".into()),
                ..Default::default()
            },
            ..ConfigMap::default()
        };
        let denied = configmaps.create(&PostParams::default(), &configmap).await;
        ensure!(
            matches!(&denied, Err(kube::Error::Api(status)) if status.code == 403),
            "expected 403 Forbidden, got {denied:?}"
        );

        let user = format!("system:serviceaccount:{namespace}:auditor");
        let mut seen = Vec::new();
        let event = loop {
            seen.extend(log.read_new()?);
            if let Some(event) = seen.iter().find(|e| e.user == user) {
                break event.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        ensure!(
            (event.verb.as_str(), event.code) == ("create", Some(403)),
            "{event:?}"
        );
        ensure!(
            (event.resource.as_str(), event.namespace.as_str()) == ("configmaps", &namespace),
            "{event:?}"
        );
        ensure!(event.stage == "ResponseComplete", "{event:?}");
        ensure!(
            event.stage_timestamp <= k8s_openapi::jiff::Timestamp::now(),
            "{event:?}"
        );
        let everything = plane.audit()?;
        ensure!(
            everything.len() >= seen.len() && everything.contains(&event),
            "audit() reads the whole log"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn two_control_planes_run_side_by_side_and_stop_on_drop() -> anyhow::Result<()> {
    within(LIMIT, "two control planes starting in parallel", async {
        let (a, b) = tokio::join!(ControlPlane::start(), ControlPlane::start());
        let (a, b) = (a?, b?);
        ensure!(
            a.server_url() != b.server_url(),
            "both planes serve {}",
            a.server_url()
        );
        ensure!(a.pids() != b.pids());

        let only_in_a = a.create_namespace("only-in-a").await?;
        let namespaces_of_b: Api<Namespace> = Api::all(b.client().await?);
        ensure!(
            namespaces_of_b.get_opt(&only_in_a).await?.is_none(),
            "b sees a's namespace"
        );

        for plane in [a, b] {
            let (pids, dir) = (plane.pids(), plane.dir().to_owned());
            drop(plane);
            ensure!(
                pids.iter().all(|pid| !process_running(*pid)),
                "a server outlived drop"
            );
            ensure!(!dir.exists(), "{} outlived drop", dir.display());
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_panicking_test_stops_its_control_plane() -> anyhow::Result<()> {
    within(LIMIT, "a control plane owned by a panicking task", async {
        let (report, started) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let plane = ControlPlane::start().await.expect("control plane starts");
            report
                .send((plane.pids(), plane.dir().to_owned()))
                .expect("receiver waits");
            panic!("a test fails while its control plane runs");
        });
        let (pids, dir) = started.await?;
        ensure!(
            task.await.is_err_and(|e| e.is_panic()),
            "the task was meant to panic"
        );
        ensure!(
            pids.iter().all(|pid| !process_running(*pid)),
            "a server outlived the panic"
        );
        ensure!(!dir.exists(), "{} outlived the panic", dir.display());
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_killed_owner_leaves_no_server_or_directory_behind() -> anyhow::Result<()> {
    within(LIMIT, "a control plane whose owner was killed", async {
        let state = tempfile::tempdir()?;
        let mut owner = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop-envtest"))
            .arg("serve")
            .env("WASMOP_DEV_DIR", state.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = owner.stdout.take().context("stdout is piped")?;
        let ready = BufReader::new(stdout)
            .lines()
            .next_line()
            .await?
            .context("no ready line")?;
        let field = |key: &str| {
            ready
                .split(' ')
                .find_map(|kv| kv.strip_prefix(key))
                .map(str::to_owned)
        };
        let dir = PathBuf::from(field("dir=").context("ready line names the dir")?);
        let pids: Vec<u32> = ["etcd-pid=", "apiserver-pid="]
            .iter()
            .map(|key| {
                field(key)
                    .context("ready line names the pids")?
                    .parse()
                    .context("a pid")
            })
            .collect::<anyhow::Result<_>>()?;
        ensure!(
            pids.iter().all(|pid| process_running(*pid)),
            "servers not running: {ready}"
        );

        owner.start_kill()?;
        owner.wait().await?;
        for _ in 0..200 {
            if pids.iter().all(|pid| !process_running(*pid)) && !dir.exists() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        anyhow::bail!(
            "20 s after SIGKILL of their owner: pids {pids:?} running or {} still there",
            dir.display()
        )
    })
    .await
}

/// Creates ServiceAccount `name` in `namespace` and returns a token for it.
async fn service_account_token(
    plane: &ControlPlane,
    namespace: &str,
    name: &str,
) -> anyhow::Result<String> {
    kubectl(plane, &["create", "serviceaccount", name, "-n", namespace]).await?;
    let token = kubectl(plane, &["create", "token", name, "-n", namespace]).await?;
    Ok(token.trim().to_owned())
}

async fn kubectl(plane: &ControlPlane, args: &[&str]) -> anyhow::Result<String> {
    let output = plane.kubectl().args(args).output().await?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(
        output.status.success(),
        "kubectl {} failed: {stderr}",
        args.join(" ")
    );
    Ok(String::from_utf8(output.stdout)?)
}

async fn kubectl_json(plane: &ControlPlane, args: &[&str]) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::from_str(&kubectl(plane, args).await?)?)
}
