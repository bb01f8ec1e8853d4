//! Talking to a running `wasmop` binary over HTTP: probes and Prometheus scrapes.

use std::collections::HashMap;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Status code and body of `GET path` on `address`.
pub async fn get(address: &str, path: &str) -> anyhow::Result<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response.split_once("\r\n\r\n").context("no header end")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .context("no status")?
        .parse()?;
    Ok((status, body.to_owned()))
}

/// Waits until the host at `probes` answers `/readyz` with 200.
pub async fn wait_ready(probes: &str) {
    loop {
        if let Ok((200, _)) = get(probes, "/readyz").await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Polls `/plugins` of the host whose metrics listen on `metrics` until `done` holds of it.
pub async fn plugins_until(metrics: &str, done: impl Fn(&str) -> bool) -> anyhow::Result<String> {
    loop {
        if let Ok((200, body)) = get(metrics, "/plugins").await
            && done(&body)
        {
            return Ok(body);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// A loopback address nothing listens on right now.
pub fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("bound").to_string()
}

/// Sample values by metric name, each with its labels.
pub type Samples = HashMap<String, Vec<(HashMap<String, String>, f64)>>;

/// `text` without the `process_*` families, which change on their own (CPU, resident memory).
pub fn without_process(text: &str) -> String {
    text.lines()
        .filter(|l| !l.contains("process_"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The samples of a scrape's text, by metric name.
pub fn parse(text: &str) -> Samples {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text format");
    let mut samples = Samples::new();
    for sample in scrape.samples {
        let value = match sample.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
            prometheus_parse::Value::Summary(_) => continue,
        };
        let labels = sample
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        samples
            .entry(sample.metric)
            .or_default()
            .push((labels, value));
    }
    samples
}

/// The value of `name` whose labels include `want`.
pub fn value(samples: &Samples, name: &str, want: &[(&str, &str)]) -> Option<f64> {
    samples.get(name)?.iter().find_map(|(labels, v)| {
        want.iter()
            .all(|(k, w)| labels.get(*k).map(String::as_str) == Some(*w))
            .then_some(*v)
    })
}
