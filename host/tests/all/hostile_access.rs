//! Attacks on what the host sends the apiserver for someone else, on the real control plane, each
//! printing what it measured:
//!
//! - anyone who reaches the secure metrics listener floods `/metrics` with made-up bearer tokens:
//!   the TokenReviews the apiserver receives (its audit log) stay within the host's review rate,
//!   the rest are answered 429 with `Retry-After`, and a scraper RBAC allows is still served;
//! - a plugin running as its own identity loses its ClusterRoleBinding: within the review TTL
//!   (plus slack) its cache reads are refused as `forbidden`, naming the identity, while the host
//!   and another plugin carry on; once the binding is back, its reads return.

use crate::common;

use std::time::Duration;

use common::account;
use common::logged::Logged;
use common::scrape::{free_address, get, parse, value, wait_ready};
use common::tls::{connector, request, write_certificates};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio::time::Instant;
use wasmop::contract::REVIEW_TTL;
use wasmop::http::auth::{DECISION_TTL, REVIEW_RATE};
use wasmop_envtest::{shared_by, within};

const LIMIT: Duration = Duration::from_secs(300);

/// How long the flood of made-up tokens lasts: past the review burst, into the rate.
const FLOOD_FOR: Duration = Duration::from_secs(4);

/// Requests of the flood in flight at once.
const FLOOD_CONCURRENCY: usize = 16;

/// How long past the review TTL a revocation or a restoration may take to show on a busy
/// machine: the review itself, the apiserver's RBAC informer, the log.
const SLACK: Duration = Duration::from_secs(20);

#[tokio::test]
async fn made_up_tokens_cost_the_apiserver_no_more_than_the_review_rate() -> anyhow::Result<()> {
    within(LIMIT, "flooding /metrics with made-up tokens", async {
        let plane = &shared_by(module_path!()).await?;
        let operator = account::kubeconfig(plane).await?;
        let operator_user = format!("system:serviceaccount:{}:wasmop", account::NAMESPACE);
        let namespace = plane.create_namespace("hostile-access").await?;
        let reader = account::metrics_reader(plane, &namespace, "reader").await?;

        let certs = tempfile::tempdir()?;
        let tls = connector(write_certificates(certs.path())?)?;
        let (metrics, probes) = (free_address(), free_address());
        let mut command = common::host_as(&operator);
        command
            .arg("--plugin")
            .arg(common::component("guest-good"))
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", &probes])
            .args(["--namespaces", &namespace])
            .arg("--metrics-secure")
            .arg("--metrics-cert-dir")
            .arg(certs.path());
        let mut host = Logged::spawn("host", command)?;
        wait_ready(&probes).await;
        let primed = request(&tls, &metrics, "/metrics", Some(&reader)).await?;
        assert_eq!(primed.status, 200, "{}", primed.body);

        let mut audit = plane.audit_log();
        audit.read_new()?;
        let started = Instant::now();
        let flood = futures::stream::iter(0..)
            .take_while(|_| std::future::ready(started.elapsed() < FLOOD_FOR))
            .map(|n| {
                let (tls, metrics) = (&tls, &metrics);
                async move {
                    let token = format!("made-up-{n}-{}", "x".repeat(40));
                    request(tls, metrics, "/metrics", Some(&token)).await
                }
            })
            .buffer_unordered(FLOOD_CONCURRENCY);
        let replies: Vec<_> = flood.collect().await;
        let flooded_for = started.elapsed();
        let sent = replies.len();
        let (mut unauthorized, mut throttled, mut other) = (0, 0, Vec::new());
        for reply in replies {
            let reply = reply?;
            match reply.status {
                401 => unauthorized += 1,
                429 => {
                    assert!(reply.retry_after.is_some(), "a 429 without Retry-After");
                    throttled += 1;
                }
                status => other.push(status),
            }
        }
        assert!(
            other.is_empty(),
            "unexpected answers to made-up tokens: {other:?}"
        );
        // The scraper reviewed before the flood is still answered while its decision lives.
        let during = request(&tls, &metrics, "/metrics", Some(&reader)).await?;
        let window = started.elapsed();
        if window + Duration::from_secs(1) < DECISION_TTL {
            assert_eq!(during.status, 200, "{}", during.body);
        }

        // Every review the flood cost is a TokenReview from the operator; wait until the audit
        // log has caught up with the last answer (it lags by tens of milliseconds).
        let mut reviews = 0;
        let mut quiet = 0;
        while quiet < 3 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let new = audit
                .read_new()?
                .into_iter()
                .filter(|e| e.resource == "tokenreviews" && e.user == operator_user)
                .count();
            quiet = if new == 0 { quiet + 1 } else { 0 };
            reviews += new;
        }
        // The bucket bounds every review from the flood's start to the last request; the primed
        // scrape's own review may land in the audit log late, hence one more.
        let allowed =
            f64::from(REVIEW_RATE.burst) + REVIEW_RATE.per_second * window.as_secs_f64() + 1.0;
        println!(
            "ATTACK made-up tokens: {sent} sent in {:.1} s, {unauthorized} answered 401 after a \
             review, {throttled} answered 429 unreviewed; the apiserver received {reviews} \
             TokenReviews (the rate allows {allowed:.0}); a reviewed scraper meanwhile: {}",
            flooded_for.as_secs_f64(),
            during.status,
        );
        assert!(throttled > 0, "no request was throttled");
        assert!(
            reviews as f64 <= allowed,
            "{reviews} TokenReviews for {sent} made-up tokens in {window:?}"
        );
        assert!(
            reviews >= unauthorized,
            "{reviews} reviews but {unauthorized} 401s"
        );

        // A scraper told to wait is served once it has waited.
        let served = loop {
            let reply = request(&tls, &metrics, "/metrics", Some(&reader)).await?;
            match (reply.status, reply.retry_after) {
                (429, Some(seconds)) => tokio::time::sleep(Duration::from_secs(seconds)).await,
                _ => break reply,
            }
        };
        assert_eq!(served.status, 200, "{}", served.body);
        let samples = parse(&served.body);
        let refused = value(
            &samples,
            "wasmop_http_review_refusals_total",
            &[("reason", "rate")],
        )
        .unwrap_or(0.0)
            + value(
                &samples,
                "wasmop_http_review_refusals_total",
                &[("reason", "concurrency")],
            )
            .unwrap_or(0.0);
        assert!(
            refused >= f64::from(throttled),
            "{refused} counted, {throttled} refused"
        );
        host.assert_healthy()?;
        common::terminate(host.child).await
    })
    .await
}

/// Waits until `host` has logged a line containing `text`; the time it took.
async fn logged(host: &Logged, text: &str, since: Instant) -> Duration {
    while host.count(text) == 0 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    since.elapsed()
}

/// Creates ConfigMap `name` with `data`.
async fn create(
    configmaps: &Api<ConfigMap>,
    name: &str,
    data: serde_json::Value,
) -> anyhow::Result<()> {
    let object = serde_json::from_value(json!({"metadata": {"name": name}, "data": data}))?;
    configmaps.create(&PostParams::default(), &object).await?;
    Ok(())
}

/// Waits until ConfigMap `name` carries annotation `key`.
async fn annotated(configmaps: &Api<ConfigMap>, name: &str, key: &str) -> anyhow::Result<()> {
    loop {
        let annotations = configmaps.get(name).await?.metadata.annotations;
        if annotations.is_some_and(|a| a.contains_key(key)) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_revoked_identity_stops_reading_within_the_review_ttl() -> anyhow::Result<()> {
    within(LIMIT, "revoking a plugin identity's reads", async {
        let plane = &shared_by(module_path!()).await?;
        let home = plane.create_namespace("revoked-identities").await?;
        let apps = plane.create_namespace("revoked-apps").await?;
        let good = common::rbac(plane, "guest-good", &home).await?;
        let slow = common::rbac(plane, "guest-slow", &home).await?;
        for manifests in [&good, &slow] {
            plane
                .run_kubectl(&["apply", "-f", "-"], Some(manifests))
                .await?;
        }
        let user = format!("system:serviceaccount:{home}:wasmop-plugin-guest-good");
        let metrics = free_address();
        let mut command = common::host(plane);
        command
            .arg("--plugin")
            .arg(common::component("guest-good"))
            .arg("--plugin")
            .arg(common::component("guest-slow"))
            .args(["--plugin-identity-namespace", &home, "--namespaces", &apps])
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", "0"]);
        let mut host = Logged::spawn("host", command)?;
        let configmaps: Api<ConfigMap> = Api::namespaced(plane.client().await?, &apps);
        create(&configmaps, "before", json!({})).await?;
        annotated(&configmaps, "before", "guest-good.wasmop.dev/seen").await?;

        // The binding that grants guest-good's reads (and writes) goes.
        let binding = format!("clusterrolebinding/wasmop-plugin-guest-good:{home}");
        let revoked = Instant::now();
        plane.run_kubectl(&["delete", &binding], None).await?;
        let refused_after = logged(&host, "its cache reads of those are refused", revoked).await;
        assert!(
            refused_after <= REVIEW_TTL + SLACK,
            "reads were refused {refused_after:?} after the revocation"
        );

        // Its guest now reads forbidden, named after the identity, and sends nothing.
        let mut audit = plane.audit_log();
        audit.read_new()?;
        let refusal = format!("the apiserver no longer lets its identity {user} read it");
        let before = host.count(&refusal);
        create(&configmaps, "while-revoked", json!({})).await?;
        let shown = Instant::now();
        while host.count(&refusal) == before {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let shown_after = shown.elapsed();
        // Meanwhile another plugin, with its identity intact, carries on.
        create(&configmaps, "slow-while-revoked", json!({"sleep-ms": "1"})).await?;
        annotated(
            &configmaps,
            "slow-while-revoked",
            "guest-slow.wasmop.dev/finished",
        )
        .await?;
        let cached = configmaps.get("while-revoked").await?.metadata.annotations;
        assert!(
            !cached.is_some_and(|a| a.contains_key("guest-good.wasmop.dev/seen")),
            "guest-good annotated a ConfigMap while its reads were revoked"
        );
        let patches = audit
            .read_new()?
            .into_iter()
            .filter(|e| e.resource == "configmaps" && e.name == "while-revoked")
            .filter(|e| e.is_write() && e.verb != "create")
            .count();
        assert_eq!(
            patches, 0,
            "guest-good's writes of while-revoked reached the apiserver"
        );
        let (status, text) = get(&metrics, "/metrics").await?;
        assert_eq!(status, 200);
        let counted = value(
            &parse(&text),
            "wasmop_plugin_refusals_total",
            &[("plugin", "guest-good"), ("reason", "revoked")],
        )
        .unwrap_or(0.0);
        assert!(counted >= 1.0, "no revoked read was counted");

        // The binding comes back: so do the reads.
        let restored = Instant::now();
        plane
            .run_kubectl(&["apply", "-f", "-"], Some(&good))
            .await?;
        let restored_after = logged(&host, "cache reads restored", restored).await;
        assert!(
            restored_after <= REVIEW_TTL + SLACK,
            "reads came back {restored_after:?} after the binding"
        );
        create(&configmaps, "after", json!({})).await?;
        annotated(&configmaps, "after", "guest-good.wasmop.dev/seen").await?;
        println!(
            "ATTACK revoked identity: reads refused {:.1} s after its ClusterRoleBinding was \
             deleted (review TTL {} s), a read refused as forbidden {:.1} s after a new \
             ConfigMap, {counted} revoked reads counted, 0 writes sent; guest-slow carried on; \
             reads back {:.1} s after the binding returned",
            refused_after.as_secs_f64(),
            REVIEW_TTL.as_secs(),
            shown_after.as_secs_f64(),
            restored_after.as_secs_f64(),
        );
        host.assert_healthy()?;
        common::terminate(host.child).await
    })
    .await
}
