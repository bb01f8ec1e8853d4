//! A group of `wasmop run --leader-elect` replicas in one namespace, as the `shards` benchmark
//! starts them: each speaks as the operators' identity, logs every reconcile's start and end, and
//! serves its metrics on a port of its own; and what the benchmark reads of them — the shard
//! label's owners, a metric, the times in a log.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use kube::Api;
use kube::api::{DynamicObject, ListParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::process::Operator;

/// The election's Lease name, so the shard label is `shard.wasmop.dev/<LEASE>`.
pub const LEASE: &str = "bench";
/// The member and leader Leases' duration.
pub const LEASE_DURATION: Duration = Duration::from_secs(6);

/// How the replicas of a group run.
pub struct Group {
    /// The `wasmop` binary.
    pub wasmop: PathBuf,
    /// The component they run.
    pub plugin: PathBuf,
    /// The operators' kubeconfig.
    pub kubeconfig: PathBuf,
    /// The namespace they watch and elect in.
    pub namespace: String,
    /// Where their logs go.
    pub logs: PathBuf,
    /// `--sharding`.
    pub sharding: bool,
    /// `--warm-standby`.
    pub warm_standby: bool,
}

/// One running replica.
pub struct Replica {
    /// Its name, also its election identity.
    pub name: String,
    /// Its process.
    pub operator: Operator,
    /// Its metrics address.
    pub metrics: String,
    /// Its log.
    pub log: PathBuf,
}

impl Group {
    /// Starts replica `name`.
    pub fn start(&self, name: &str) -> anyhow::Result<Replica> {
        let metrics = free_address()?;
        let mut command = tokio::process::Command::new(&self.wasmop);
        command
            .env("POD_NAME", name)
            .env("RUST_LOG", "info,wasmop::controller::workers=debug")
            .args(["run", "--kubeconfig"])
            .arg(&self.kubeconfig)
            .arg("--plugin")
            .arg(&self.plugin)
            .args(["--namespaces", &self.namespace, "--leader-elect"])
            .args(["--leader-election-namespace", &self.namespace])
            .args(["--leader-election-id", LEASE])
            .arg("--leader-election-lease-duration")
            .arg(format!("{}s", LEASE_DURATION.as_secs()))
            .args(["--leader-election-renew-deadline", "4s"])
            .args(["--leader-election-retry-period", "1s"])
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", "0"]);
        if self.sharding {
            command.arg("--sharding");
        }
        if self.warm_standby {
            command.arg("--warm-standby");
        }
        let log = self
            .logs
            .join(format!("shards-{}-{name}.log", self.namespace));
        Ok(Replica {
            name: name.to_owned(),
            operator: Operator::start(command, &log, &format!("shards-{name}"))?,
            metrics,
            log,
        })
    }
}

impl Replica {
    /// The sum of `metric`'s samples whose labels include every one of `labels` (`name="value"`),
    /// if it answers.
    pub async fn metric(&self, metric: &str, labels: &[&str]) -> Option<f64> {
        scrape(&self.metrics, metric, labels).await
    }
}

/// The sum of `metric`'s samples at `address` whose labels include every one of `labels`
/// (`name="value"`), if it answers.
pub async fn scrape(address: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    let text = get(address, "/metrics").await.ok()?;
    let values = text.lines().filter_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let matches = match series.strip_prefix(metric)? {
            "" => labels.is_empty(),
            rest => rest.starts_with('{') && labels.iter().all(|l| rest.contains(l)),
        };
        matches.then(|| value.parse::<f64>().ok()).flatten()
    });
    Some(values.sum())
}

/// An address on loopback no one listens on now.
pub fn free_address() -> anyhow::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.to_string())
}

/// The body of a plain HTTP GET of `path` from `address`.
async fn get(address: &str, path: &str) -> anyhow::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (_, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("no HTTP response from {address}"))?;
    Ok(body.to_owned())
}

/// How many WebApps each member owns by the shard label (`None`: not labelled).
pub async fn owners(apps: &Api<DynamicObject>) -> anyhow::Result<BTreeMap<Option<String>, usize>> {
    let label = format!("shard.wasmop.dev/{LEASE}");
    let mut owners = BTreeMap::new();
    for app in apps.list_metadata(&ListParams::default()).await?.items {
        let owner = app.metadata.labels.and_then(|mut l| l.remove(&label));
        *owners.entry(owner).or_default() += 1;
    }
    Ok(owners)
}

/// Waits until every WebApp is labelled and exactly `members` members own them.
pub async fn assigned_to(apps: &Api<DynamicObject>, members: usize) -> anyhow::Result<()> {
    loop {
        let owners = owners(apps).await?;
        if !owners.contains_key(&None) && owners.len() == members {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Seconds since midnight UTC of a log line's RFC 3339 stamp (`2026-12-03T10:00:00.000001Z`).
pub fn seconds_of_day(stamp: &str) -> Option<f64> {
    let time = stamp.split_once('T')?.1.trim_end_matches('Z');
    let mut parts = time.split(':');
    let hours: f64 = parts.next()?.parse().ok()?;
    let minutes: f64 = parts.next()?.parse().ok()?;
    let seconds: f64 = parts.next()?.parse().ok()?;
    Some(hours * 3600.0 + minutes * 60.0 + seconds)
}

/// Seconds since midnight UTC now, on the clock the logs are stamped with.
pub fn now_of_day() -> f64 {
    let since = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    since.as_secs_f64() % 86_400.0
}

/// The stamp of the first line of `log` at or after `after` (seconds of the day) containing
/// `needle`, in seconds of the day.
pub fn first_after(log: &Path, needle: &str, after: f64) -> Option<f64> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines()
        .filter(|line| line.contains(needle))
        .filter_map(|line| seconds_of_day(line.split_whitespace().next()?))
        .find(|&time| time >= after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_stamps_read_as_seconds_of_the_day() {
        assert_eq!(seconds_of_day("2026-12-03T01:02:03.500000Z"), Some(3723.5));
        assert_eq!(seconds_of_day("INFO"), None);
    }
}
