//! Failures a controller must ride out: writes that conflict with concurrent changes, and writes
//! the operator's RBAC forbids for a while. The failed writes are counted from what the apiserver
//! answered, in its audit log.

use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{converged, webapp};
use crate::subject::{Subject, eventually};

/// Edits made to a WebApp while the operator first reconciles it.
const EDITS: usize = 25;

/// HTTP 409: a write met a newer version of its object (reason `Conflict`) or an existing
/// object (`AlreadyExists`).
const CONFLICT: u16 = 409;
/// HTTP 403 Forbidden: RBAC refused the write.
const FORBIDDEN: u16 = 403;

/// A WebApp edited over and over while the operator adds its finalizer: the operator's writes that
/// meet a newer version fail with a conflict and are retried, it converges, and none of the
/// concurrent edits is lost.
pub async fn conflict_retry(subject: &Subject) -> anyhow::Result<()> {
    let conflicts = || -> anyhow::Result<usize> {
        let answered = subject.writes_answered(CONFLICT)?;
        Ok(answered.iter().filter(|e| e.reason == "Conflict").count())
    };
    let conflicts_before = conflicts()?;
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
        "concurrent edits lost by the operator's writes: {lost:?}"
    );
    let conflicts = conflicts()? - conflicts_before;
    println!(
        "[{}] conflict retry: {conflicts} writes answered 409 Conflict (each retried)",
        subject.name
    );
    subject
        .webapps
        .delete("busy", &DeleteParams::default())
        .await?;
    Ok(())
}

/// While the operator may not write Services, the WebApp gets its Deployment but no Service and
/// the apiserver answers the operator's Service writes 403 Forbidden; once RBAC allows it again,
/// the retries converge.
pub async fn forbidden_write(subject: &Subject) -> anyhow::Result<()> {
    let plane = subject.plane;
    subject
        .identity
        .grant_services(plane, &["get", "list", "watch"])
        .await?;
    let forbidden_services = || -> anyhow::Result<usize> {
        let forbidden = subject.writes_answered(FORBIDDEN)?;
        Ok(forbidden
            .iter()
            .filter(|e| e.resource == "services")
            .count())
    };
    let forbidden_before = forbidden_services()?;
    subject
        .webapps
        .create(&PostParams::default(), &webapp("locked", 1)?)
        .await?;
    eventually(
        "the Deployment, and a Service write answered 403 Forbidden",
        || async {
            let deployment = subject.deployments.get_opt("locked").await?;
            let refused = forbidden_services()? > forbidden_before;
            Ok((deployment.is_some() && refused).then_some(()))
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
