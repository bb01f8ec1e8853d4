//! Failures a controller must ride out: writes that conflict with concurrent changes, and writes
//! the operator's RBAC forbids for a while.

use std::sync::atomic::Ordering;

use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{converged, webapp};
use crate::subject::{Subject, eventually};

/// Edits made to a WebApp while the plugin first reconciles it.
const EDITS: usize = 25;

/// A WebApp edited over and over while the plugin adds its finalizer: the plugin's writes that
/// meet a newer version fail with a conflict and are retried, it converges, and none of the
/// concurrent edits is lost.
pub async fn conflict_retry(subject: &Subject) -> anyhow::Result<()> {
    let errors_before = subject.stats().error.load(Ordering::Relaxed);
    subject
        .webapps
        .create(&PostParams::default(), &webapp("busy", 1)?)
        .await?;
    for edit in 0..EDITS {
        let annotate = json!({"metadata": {"annotations": {format!("conformance.wasmop.dev/edit-{edit}"): "kept"}}});
        subject
            .webapps
            .patch("busy", &PatchParams::default(), &Patch::Merge(&annotate))
            .await?;
    }
    let app = converged(subject, "busy").await?;
    let app = eventually("the finalizer on the busy WebApp", || async {
        let app = subject.webapps.get("busy").await?;
        Ok(app
            .finalizers()
            .iter()
            .any(|f| f == "example.wasmop.dev/cleanup")
            .then_some(app))
    })
    .await
    .unwrap_or(app);
    let annotations = app.annotations();
    let lost: Vec<usize> = (0..EDITS)
        .filter(|edit| !annotations.contains_key(&format!("conformance.wasmop.dev/edit-{edit}")))
        .collect();
    anyhow::ensure!(
        lost.is_empty(),
        "concurrent edits lost by the plugin's writes: {lost:?}"
    );
    let retried = subject.stats().error.load(Ordering::Relaxed) - errors_before;
    println!(
        "[{}] conflict retry: {retried} reconciles failed and were retried",
        subject.language.name
    );
    subject
        .webapps
        .delete("busy", &DeleteParams::default())
        .await?;
    Ok(())
}

/// While the operator may not write Services, the WebApp gets its Deployment but no Service and
/// the failures are counted as reconcile errors; once RBAC allows it again, the retries converge.
pub async fn forbidden_write(subject: &Subject) -> anyhow::Result<()> {
    let plane = subject.plane;
    subject
        .identity
        .grant_services(plane, &["get", "list", "watch"])
        .await?;
    let errors_before = subject.stats().error.load(Ordering::Relaxed);
    subject
        .webapps
        .create(&PostParams::default(), &webapp("locked", 1)?)
        .await?;
    eventually(
        "the Deployment, and a reconcile failing on the Service",
        || async {
            let deployment = subject.deployments.get_opt("locked").await?;
            let failed = subject.stats().error.load(Ordering::Relaxed) > errors_before;
            Ok((deployment.is_some() && failed).then_some(()))
        },
    )
    .await?;
    let service = subject.services.get_opt("locked").await?;
    subject
        .identity
        .grant_services(
            plane,
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        )
        .await?;
    anyhow::ensure!(
        service.is_none(),
        "a Service was written while RBAC forbade it"
    );
    converged(subject, "locked").await?;
    eventually("the Service once RBAC allows it", || async {
        Ok(subject.services.get_opt("locked").await?.map(drop))
    })
    .await
}
