//! Names come from who installed a plugin. In identity mode a tenant names its `WasmReconciler`
//! after a privileged plugin of the operator's whose file is not loaded yet: its module must run as
//! a tenant's account of its own, never as the operator plugin's, and when the operator's file
//! arrives the operator's plugin takes the name and the tenant's object says why it lost it.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use wasmop_envtest::{ControlPlane, within};

use crate::common;
use crate::common::reconcilers::{condition, status_until};
use crate::common::scrape::{free_address, plugins_until};

const LIMIT: Duration = Duration::from_secs(300);

/// The Degraded reason of `status`, if any.
fn degraded(status: &Value) -> &str {
    condition(status, "Degraded")["reason"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_never_takes_an_operator_plugins_name_or_identity() -> anyhow::Result<()> {
    within(LIMIT, "a tenant named after the operator's plugin", async {
        // WasmReconcilers are cluster-scoped: a plane of its own keeps other tests' hosts off them.
        let plane = &ControlPlane::start().await?;
        common::reconcilers::install_crd(plane).await?;
        let client = plane.client().await?;
        let identities = plane.create_namespace("names-ids").await?;
        let modules = plane.create_namespace("names-modules").await?;
        let work = plane.create_namespace("names-work").await?;
        // The operator's privileged plugin has its account and rights; its file is not there yet.
        let privileged = common::rbac(plane, "guest-good", &identities).await?;
        plane
            .run_kubectl(&["apply", "-f", "-"], Some(&privileged))
            .await?;
        let module = common::reconcilers::store_module(plane, &modules, "guest-good").await?;
        let policy = plane.dir().join(format!("{modules}-policy.yaml"));
        std::fs::write(&policy, format!("modules: {{namespaces: [{modules}]}}\n"))?;
        let plugin_dir = tempfile::tempdir()?;
        let mut audit = plane.audit_log();
        audit.read_new()?;
        let metrics = free_address();
        let _host = common::host(plane)
            .args(["--wasm-reconcilers", "--namespaces", &work])
            .args(["--plugin-identity-namespace", &identities])
            .arg("--plugin-dir")
            .arg(plugin_dir.path())
            .arg("--policy")
            .arg(&policy)
            .args([
                "--metrics-bind-address",
                &metrics,
                "--health-probe-bind-address",
                "0",
            ])
            .spawn()?;

        let api = common::reconcilers::api(client.clone());
        let squatter: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
            "metadata": {"name": "guest-good"}, "spec": {"module": module},
        }))?;
        api.create(&PostParams::default(), &squatter).await?;
        let refused = status_until(&api, "guest-good", |s| degraded(s) == "Forbidden").await?;
        let message = condition(&refused, "Degraded")["message"].to_string();
        assert!(
            message.contains("wasmop-reconciler-guest-good"),
            "{message}"
        );
        let operators = format!("system:serviceaccount:{identities}:wasmop-plugin-guest-good");
        let spoken = common::requests_by(&mut audit, &operators)?;
        assert!(
            spoken.is_empty(),
            "the tenant spoke as {operators}: {spoken:?}"
        );

        // Given rights of its own, the tenant's plugin runs, as its own account.
        let own =
            common::rbac_with(plane, "guest-good", &identities, &["--wasm-reconciler"]).await?;
        assert!(own.contains("wasmop-reconciler-guest-good"), "{own}");
        plane.run_kubectl(&["apply", "-f", "-"], Some(&own)).await?;
        let ready = |s: &Value| condition(s, "Ready")["status"] == "True";
        status_until(&api, "guest-good", ready).await?;
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &work);
        common::seen_by_good(&configmaps, "by-the-tenant").await?;
        let tenants = format!("system:serviceaccount:{identities}:wasmop-reconciler-guest-good");
        let written = |r: &str| r.starts_with("patch configmaps/by-the-tenant");
        let tenant_writes = common::requests_by_until(&mut audit, &tenants, written).await?;
        assert!(
            tenant_writes.iter().any(|r| written(r)),
            "the tenant's write as its own account: {tenant_writes:?}"
        );
        let spoken = common::requests_by(&mut audit, &operators)?;
        assert!(
            spoken.is_empty(),
            "the tenant spoke as {operators}: {spoken:?}"
        );

        // The operator's file arrives: its plugin takes the name, the tenant's is unloaded.
        common::publish("guest-good", plugin_dir.path(), "guest-good.wasm")?;
        let operator_source = plugin_dir
            .path()
            .join("guest-good.wasm")
            .display()
            .to_string();
        let lost = status_until(&api, "guest-good", |s| degraded(s) == "NameTaken").await?;
        let message = condition(&lost, "Degraded")["message"].to_string();
        assert!(message.contains(&operator_source), "{message}");
        let table = plugins_until(&metrics, |body| {
            let rows: Vec<Value> = serde_json::from_str(body).unwrap_or_default();
            rows.iter()
                .any(|r| r["source"] == operator_source.as_str() && r["state"] == "running")
        })
        .await?;
        let rows: Vec<Value> = serde_json::from_str(&table)?;
        let tenant_row = rows
            .iter()
            .find(|r| r["source"] == "clusterwasmreconciler/guest-good")
            .expect("the tenant's source is listed");
        assert!(tenant_row["digest"].is_null(), "{tenant_row}");
        common::seen_by_good(&configmaps, "by-the-operator").await?;
        let operator_writes = common::requests_by(&mut audit, &operators)?;
        assert!(
            operator_writes
                .iter()
                .any(|r| r.starts_with("patch configmaps/by-the-operator")),
            "the operator's plugin writes as its own account: {operator_writes:?}"
        );
        println!(
            "NAMES: the tenant's guest-good ran as {tenants} ({} requests), 0 as {operators} \
             before the operator's file came; then the operator's file took the name (tenant: \
             NameTaken) and wrote as {operators}",
            tenant_writes.len()
        );
        Ok(())
    })
    .await
}
