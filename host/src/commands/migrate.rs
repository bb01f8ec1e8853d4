//! `wasmop migrate`: moves a cluster from the cluster-scoped `WasmReconciler` to the split
//! kinds. A CRD's scope cannot change, so every cluster-scoped `WasmReconciler` is first copied
//! to a `ClusterWasmReconciler` of the same name (spec, labels, annotations), and only when every
//! copy is there is the old CRD deleted and the namespaced one created. The new CRDs take the
//! old one's labels and annotations, so a Helm release that owned it owns them. Run again, it
//! finds nothing to move; stopped midway, it resumes (copies already made are kept as they are).

use std::time::Duration;

use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

use wasmop::config::MigrateArgs;

/// The namespaced `WasmReconciler`'s CRD.
const NAMESPACED: &str = include_str!("../../../deploy/crds/wasmreconciler.yaml");

/// The `ClusterWasmReconciler`'s CRD.
const CLUSTER: &str = include_str!("../../../deploy/crds/clusterwasmreconciler.yaml");

/// The name of the `WasmReconciler` CRD, before and after.
const OLD: &str = "wasmreconcilers.wasmop.dev";

/// How long each CRD may take to be established or deleted.
const WAIT: Duration = Duration::from_secs(120);

/// Migrates the cluster `args.kubeconfig` reaches, printing each step.
pub(crate) async fn migrate(args: MigrateArgs) -> anyhow::Result<()> {
    let (_, client) = super::connect(args.kubeconfig.as_deref()).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let old = crds
        .get_opt(OLD)
        .await
        .context("reading the WasmReconciler CRD")?;
    if old
        .as_ref()
        .is_some_and(|crd| crd.spec.scope == "Namespaced")
    {
        println!("WasmReconciler is already namespaced: nothing to migrate");
        return Ok(());
    }
    let metadata = old.as_ref().map(|crd| &crd.metadata);
    let labels = metadata.and_then(|m| m.labels.clone());
    let annotations = metadata.and_then(|m| m.annotations.clone());
    let carried = |mut crd: CustomResourceDefinition| {
        crd.metadata.labels = labels.clone();
        crd.metadata.annotations = annotations.clone();
        crd
    };
    apply(&crds, carried(serde_saphyr::from_str(CLUSTER)?)).await?;
    if old.is_some() {
        let copied = copy_all(&client).await?;
        println!("copied {copied} WasmReconcilers to ClusterWasmReconcilers");
        println!("deleting the cluster-scoped WasmReconciler CRD");
        crds.delete(OLD, &DeleteParams::default()).await?;
        wait(&crds, OLD, |crd| crd.is_none()).await?;
    }
    apply(&crds, carried(serde_saphyr::from_str(NAMESPACED)?)).await?;
    println!("WasmReconciler is namespaced; the cluster-wide objects are ClusterWasmReconcilers");
    Ok(())
}

/// Copies each cluster-scoped `WasmReconciler` to a `ClusterWasmReconciler` of its name unless
/// one is there; how many there are.
async fn copy_all(client: &kube::Client) -> anyhow::Result<usize> {
    let resource = |kind: &str, plural: &str| {
        let kind = GroupVersionKind::gvk("wasmop.dev", "v1alpha1", kind);
        ApiResource::from_gvk_with_plural(&kind, plural)
    };
    let from = resource("WasmReconciler", "wasmreconcilers");
    let to = resource("ClusterWasmReconciler", "clusterwasmreconcilers");
    let old: Api<DynamicObject> = Api::all_with(client.clone(), &from);
    let new: Api<DynamicObject> = Api::all_with(client.clone(), &to);
    let objects = old.list(&ListParams::default()).await?.items;
    for object in &objects {
        let name = object.metadata.name.clone().unwrap_or_default();
        if new.get_opt(&name).await?.is_some() {
            println!("  {name}: a ClusterWasmReconciler of that name is there; kept as it is");
            continue;
        }
        let copy = json!({
            "apiVersion": "wasmop.dev/v1alpha1",
            "kind": "ClusterWasmReconciler",
            "metadata": {
                "name": name,
                "labels": object.metadata.labels,
                "annotations": object.metadata.annotations,
            },
            "spec": object.data["spec"],
        });
        let copy: DynamicObject = serde_json::from_value(copy)?;
        new.create(&PostParams::default(), &copy)
            .await
            .with_context(|| format!("copying WasmReconciler {name}"))?;
        println!("  {name}: copied");
    }
    Ok(objects.len())
}

/// Creates or updates `crd` and waits until it is established.
async fn apply(
    crds: &Api<CustomResourceDefinition>,
    crd: CustomResourceDefinition,
) -> anyhow::Result<()> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    println!("applying the CRD {name}");
    let params = PatchParams::apply("wasmop-migrate").force();
    crds.patch(&name, &params, &Patch::Apply(&crd)).await?;
    wait(crds, &name, |crd| {
        let conditions = crd.and_then(|crd| crd.status.as_ref()?.conditions.clone());
        conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    })
    .await
}

/// Waits until the CRD `name` (absent: `None`) satisfies `done`.
async fn wait(
    crds: &Api<CustomResourceDefinition>,
    name: &str,
    done: impl Fn(Option<&CustomResourceDefinition>) -> bool,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let crd = crds.get_opt(name).await?;
        if done(crd.as_ref()) {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            let conditions = crd
                .and_then(|crd| crd.status?.conditions)
                .unwrap_or_default();
            let said: Vec<String> = conditions
                .iter()
                .filter(|c| c.status != "True")
                .map(|c| format!("{}: {}", c.type_, c.message.as_deref().unwrap_or_default()))
                .collect();
            anyhow::bail!(
                "the CRD {name} did not settle within {}s ({})",
                WAIT.as_secs(),
                said.join("; ")
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
