//! `--metrics-secure` on the real control plane: the `wasmop` binary, running as the operator's
//! ServiceAccount with `deploy/`'s RBAC, serves `/metrics` and `/plugins` over HTTPS (with the
//! certificate in `--metrics-cert-dir`) only to callers the apiserver authenticates and RBAC
//! lets get them (`deploy/`'s `wasmop-metrics-reader`), while the plain probe listener answers
//! probes without a token and nothing else. Decisions are cached: a burst of scrapes costs the
//! apiserver one TokenReview, not one each.

use crate::common;

use std::time::Duration;

use common::account;
use common::scrape::{free_address, get, parse, value};
use common::tls::{connector, get_tls, write_certificates};
use wasmop_envtest::{ControlPlane, shared_by, within};

const LIMIT: Duration = Duration::from_secs(180);

/// TokenReviews the apiserver has answered since it started, from its own `/metrics`.
async fn token_reviews(plane: &ControlPlane) -> anyhow::Result<f64> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = plane.client().await?.request_text(request).await?;
    let count = text
        .lines()
        .filter(|line| line.starts_with("apiserver_request_total{"))
        .filter(|line| line.contains(r#"resource="tokenreviews""#))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    Ok(count)
}

#[tokio::test]
async fn metrics_answer_only_callers_rbac_lets_read_them() -> anyhow::Result<()> {
    within(LIMIT, "scraping a secure wasmop", async {
        let plane = &shared_by(module_path!()).await?;
        common::install_webapp_crd(plane).await?;
        // deploy/'s RBAC: the operator's account and the wasmop-metrics-reader ClusterRole.
        let operator = account::kubeconfig(plane).await?;
        let namespace = plane.create_namespace("secure-metrics").await?;
        let reader = account::metrics_reader(plane, &namespace, "reader").await?;
        let create = ["create", "serviceaccount", "stranger", "-n", &namespace];
        plane.run_kubectl(&create, None).await?;
        let stranger = account::service_token(plane, &namespace, "stranger").await?;

        let certs = tempfile::tempdir()?;
        let tls = connector(write_certificates(certs.path())?)?;
        let (metrics, probes) = (free_address(), free_address());
        let host = common::host_as(&operator)
            .arg("--plugin")
            .arg(common::component("webapp"))
            .args(["--metrics-bind-address", &metrics])
            .args(["--health-probe-bind-address", &probes])
            .arg("--metrics-secure")
            .arg("--metrics-cert-dir")
            .arg(certs.path())
            .spawn()?;

        // The probes stay plain and open; the probe listener serves nothing else.
        common::scrape::wait_ready(&probes).await;
        assert_eq!(get(&probes, "/healthz").await?.0, 200);
        assert_eq!(get(&probes, "/metrics").await?.0, 404);
        assert_eq!(get(&probes, "/plugins").await?.0, 404);

        // The metrics listener speaks only HTTPS.
        let plain = get(&metrics, "/metrics").await;
        assert!(plain.is_err(), "plain HTTP was answered: {plain:?}");

        for path in ["/metrics", "/plugins"] {
            let (status, body) = get_tls(&tls, &metrics, path, None).await?;
            assert_eq!(status, 401, "{path} without a token: {body}");
            let (status, body) = get_tls(&tls, &metrics, path, Some("not-a-token")).await?;
            assert_eq!(status, 401, "{path} with a bad token: {body}");
            let (status, body) = get_tls(&tls, &metrics, path, Some(&stranger)).await?;
            assert_eq!(status, 403, "{path} as an unbound account: {body}");
            assert!(body.contains(&format!("{namespace}:stranger")), "{body}");
        }
        let (status, text) = get_tls(&tls, &metrics, "/metrics", Some(&reader)).await?;
        assert_eq!(status, 200, "{text}");
        let info = value(&parse(&text), "wasmop_plugin_info", &[("plugin", "webapp")]);
        assert_eq!(info, Some(1.0), "{text}");
        let (status, plugins) = get_tls(&tls, &metrics, "/plugins", Some(&reader)).await?;
        assert_eq!(status, 200, "{plugins}");
        let plugins: serde_json::Value = serde_json::from_str(&plugins)?;
        assert!(plugins.to_string().contains("webapp"), "{plugins}");

        // Within the decision TTL, further scrapes are answered without asking the apiserver
        // again: uncached, 10 scrapes would cost 10 TokenReviews. Allowed: one should the TTL
        // end meanwhile, one should the apiserver count the last review above late.
        let before = token_reviews(plane).await?;
        assert!(before >= 1.0, "the apiserver counted no review above");
        for _ in 0..10 {
            let (status, _) = get_tls(&tls, &metrics, "/metrics", Some(&reader)).await?;
            assert_eq!(status, 200);
        }
        let reviews = token_reviews(plane).await? - before;
        assert!(reviews <= 2.0, "10 scrapes cost {reviews} TokenReviews");

        common::terminate(host).await
    })
    .await
}
