//! What `wasmop plugins`, `/plugins` and a WasmReconciler's status show of one source, and
//! which of them `/readyz` waits for.

use crate::http::ReadyRequires;

/// How a tenant's source (a namespaced `WasmReconciler`) is named: the prefix, then
/// `namespace/name`.
pub const TENANT_SOURCE_PREFIX: &str = "wasmreconciler/";

/// What `wasmop plugins` shows for one source.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginStatus {
    /// Where the plugin comes from.
    pub source: String,
    /// Its name, once a version has loaded.
    pub name: Option<String>,
    /// The loaded version.
    pub version: Option<String>,
    /// The loaded module's digest (`sha256:…`).
    pub digest: Option<String>,
    /// Whether it runs.
    pub state: PluginState,
    /// Keys waiting in its queue.
    pub queue_depth: usize,
    /// Reconciles since its controller started.
    pub reconciles: u64,
    /// The last failure to load or upgrade, until a version loads.
    pub last_error: Option<String>,
    /// Why the running controller does not see one of its kinds now (a watch failing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// Whether a source's plugin runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginState {
    /// Its controller runs (on the leader).
    Running,
    /// Its informers are syncing before its controller starts.
    Starting,
    /// Loaded and ready to run (on a follower, or before the Lease is won).
    Loaded,
    /// No version has loaded, or its controller could not start.
    Failed,
}

/// Why the host is not ready with these `statuses`: the first source `requires` names that
/// neither runs nor is loaded.
pub(super) fn waiting_for(requires: ReadyRequires, statuses: &[PluginStatus]) -> Option<String> {
    let mut waited = statuses.iter().filter(|status| match requires {
        ReadyRequires::Operator => !status.source.starts_with(TENANT_SOURCE_PREFIX),
        ReadyRequires::All => true,
        ReadyRequires::None => false,
    });
    let status = waited.find(|s| !matches!(s.state, PluginState::Running | PluginState::Loaded))?;
    let plugin = match &status.name {
        Some(name) => format!("plugin {name} ({})", status.source),
        None => format!("plugin {}", status.source),
    };
    Some(match (status.state, &status.last_error) {
        (PluginState::Starting, _) => format!("{plugin} is starting: its informers are syncing"),
        (_, Some(error)) => format!("{plugin} failed: {error}"),
        _ => format!("{plugin} has not loaded"),
    })
}

/// `statuses` as the table `wasmop plugins` prints.
pub fn table(statuses: &[PluginStatus]) -> String {
    let header = [
        "NAME",
        "VERSION",
        "STATE",
        "QUEUE",
        "RECONCILES",
        "DIGEST",
        "SOURCE",
        "LAST ERROR",
    ];
    let rows: Vec<[String; 8]> = statuses
        .iter()
        .map(|s| {
            let digest = s.digest.as_deref().unwrap_or("-");
            [
                s.name.clone().unwrap_or_else(|| "-".into()),
                s.version.clone().unwrap_or_else(|| "-".into()),
                format!("{:?}", s.state).to_lowercase(),
                s.queue_depth.to_string(),
                s.reconciles.to_string(),
                digest.chars().take(19).collect(),
                s.source.clone(),
                s.last_error
                    .clone()
                    .or_else(|| s.degraded.clone())
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        padded.join("  ").trim_end().to_owned() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in &rows {
        out += &line(row.iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(
        source: &str,
        name: Option<&str>,
        state: PluginState,
        error: Option<&str>,
    ) -> PluginStatus {
        PluginStatus {
            source: source.into(),
            name: name.map(str::to_owned),
            version: None,
            digest: None,
            state,
            queue_depth: 0,
            reconciles: 0,
            last_error: error.map(str::to_owned),
            degraded: None,
        }
    }

    #[test]
    fn readiness_waits_for_the_operators_plugins_and_a_tenants_only_when_told() {
        let running = status(
            "/plugins/webapp.wasm",
            Some("webapp"),
            PluginState::Running,
            None,
        );
        let standby = status("oci://registry/x:1", Some("x"), PluginState::Loaded, None);
        let tenant = status(
            "wasmreconciler/team-a/bad",
            None,
            PluginState::Failed,
            Some("not a component"),
        );
        let healthy = [running.clone(), standby, tenant];
        assert_eq!(waiting_for(ReadyRequires::Operator, &healthy), None);
        assert_eq!(
            waiting_for(ReadyRequires::All, &healthy).as_deref(),
            Some("plugin wasmreconciler/team-a/bad failed: not a component")
        );

        let unserved = "caches not synced: coordination.k8s.io/v1beta1 Lease is not served";
        let failed = status(
            "/plugins/lease.wasm",
            Some("lease"),
            PluginState::Failed,
            Some(unserved),
        );
        let syncing = status(
            "clusterwasmreconciler/db",
            Some("db"),
            PluginState::Starting,
            None,
        );
        assert_eq!(
            waiting_for(ReadyRequires::Operator, &[running.clone(), failed.clone()]).as_deref(),
            Some(format!("plugin lease (/plugins/lease.wasm) failed: {unserved}").as_str())
        );
        assert_eq!(
            waiting_for(ReadyRequires::Operator, std::slice::from_ref(&syncing)).as_deref(),
            Some("plugin db (clusterwasmreconciler/db) is starting: its informers are syncing")
        );
        assert_eq!(waiting_for(ReadyRequires::None, &[failed, syncing]), None);
    }

    #[test]
    fn the_table_aligns_columns_and_shortens_digests() {
        let status = PluginStatus {
            source: "/plugins/webapp.wasm".into(),
            name: Some("webapp".into()),
            version: Some("0.2.0".into()),
            digest: Some(format!("sha256:{}", "ab".repeat(32))),
            state: PluginState::Running,
            queue_depth: 3,
            reconciles: 120,
            last_error: None,
            degraded: None,
        };
        let failed = PluginStatus {
            source: "/plugins/broken.wasm".into(),
            name: None,
            version: None,
            digest: None,
            state: PluginState::Failed,
            queue_depth: 0,
            reconciles: 0,
            last_error: Some("plugin /plugins/broken.wasm is not a component".into()),
            degraded: None,
        };
        let table = table(&[status, failed]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        assert!(lines[0].starts_with("NAME    VERSION  STATE"), "{table}");
        assert!(
            lines[1].starts_with("webapp  0.2.0    running  3"),
            "{table}"
        );
        assert!(lines[1].contains("sha256:abababababab "), "{table}");
        assert!(lines[2].ends_with("is not a component"), "{table}");
        let column = |line: &str| line.find("/plugins/");
        assert_eq!(column(lines[1]), column(lines[2]), "{table}");
    }
}
