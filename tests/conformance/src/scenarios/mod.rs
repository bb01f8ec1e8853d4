//! The scenarios, in the order they run: a WebApp's life from creation to deletion, then the
//! failures a controller must ride out. Each states what a user would check with kubectl.

mod failures;
mod lifecycle;

use std::future::Future;
use std::pin::Pin;

use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::subject::{Subject, eventually};

/// A scenario run against one subject.
pub type Scenario =
    for<'a> fn(&'a Subject) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + 'a>>;

/// Every scenario with its name, in order.
pub const ALL: &[(&str, Scenario)] = &[
    ("create", |s| Box::pin(lifecycle::create(s))),
    ("status follows the Deployment", |s| {
        Box::pin(lifecycle::ready(s))
    }),
    ("scale", |s| Box::pin(lifecycle::scale(s))),
    ("owned objects deleted or changed", |s| {
        Box::pin(lifecycle::owned_restored(s))
    }),
    ("finalizer", |s| Box::pin(lifecycle::finalizer(s))),
    ("conflict retry", |s| Box::pin(failures::conflict_retry(s))),
    ("forbidden write", |s| {
        Box::pin(failures::forbidden_write(s))
    }),
];

/// The WebApp the scenarios ask for, named `name`.
fn webapp(name: &str, replicas: i64) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "example.wasmop.dev/v1alpha1", "kind": "WebApp",
        "metadata": {"name": name},
        "spec": {"image": "nginx:1.27", "replicas": replicas, "port": 8080},
    }))?)
}

/// Waits until WebApp `name`'s status has observed its current generation; returns the WebApp.
async fn converged(subject: &Subject, name: &str) -> anyhow::Result<DynamicObject> {
    eventually(
        &format!("WebApp {name} to observe its generation"),
        || async {
            let app = subject.webapps.get(name).await?;
            let observed = app.data["status"]["observedGeneration"].as_i64();
            Ok((observed.is_some() && observed == app.metadata.generation).then_some(app))
        },
    )
    .await
}

/// The WebApp's condition of `type_`.
fn condition<'a>(app: &'a DynamicObject, type_: &str) -> &'a Value {
    app.data["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}
