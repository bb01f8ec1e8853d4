//! The registry against real HTTP: anonymous over plain HTTP, and over TLS (trusting only its CA)
//! with htpasswd, where only the right password gets in.

use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, ensure};
use base64::Engine;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use wasmop_envtest::{Registry, RegistryAuth, within};

/// Generous for a first build of the binaries; a built registry starts in a fraction of a second.
const LIMIT: Duration = Duration::from_secs(1800);

/// The status code of `GET /v2/`, over TLS trusting only `ca_file` when given, with HTTP basic
/// auth when `credentials` are given.
async fn v2_status(
    address: &str,
    ca_file: Option<&Path>,
    credentials: Option<(&str, &str)>,
) -> anyhow::Result<u16> {
    let authorization = credentials
        .map(|(user, password)| {
            let token =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            format!("Authorization: Basic {token}\r\n")
        })
        .unwrap_or_default();
    let request =
        format!("GET /v2/ HTTP/1.1\r\nHost: {address}\r\n{authorization}Connection: close\r\n\r\n");
    let tcp = TcpStream::connect(address).await?;
    let Some(ca_file) = ca_file else {
        return status(tcp, &request).await;
    };
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(ca_file)?)?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::IpAddress(Ipv4Addr::LOCALHOST.into());
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await?;
    status(tls, &request).await
}

async fn status(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    request: &str,
) -> anyhow::Result<u16> {
    stream.write_all(request.as_bytes()).await?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).await?;
    let code = line.split(' ').nth(1).context("an HTTP status line")?;
    code.parse()
        .with_context(|| format!("status line {line:?}"))
}

#[tokio::test]
async fn an_anonymous_registry_answers_anyone_over_plain_http() -> anyhow::Result<()> {
    within(LIMIT, "the anonymous registry", async {
        let mut registry = Registry::start(RegistryAuth::Anonymous).await?;
        ensure!(!registry.is_tls() && registry.ca_pem().is_none() && registry.ca_file().is_none());
        ensure!(registry.credentials().is_none() && registry.dockerconfigjson().is_none());
        ensure!(registry.address().starts_with("127.0.0.1:"));
        let status = v2_status(registry.address(), None, None).await?;
        ensure!(
            status == 200,
            "GET /v2/ answered {status}: {}",
            registry.log_tail(20)
        );

        registry.stop();
        ensure!(
            TcpStream::connect(registry.address()).await.is_err(),
            "the registry still listens after stop"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_htpasswd_registry_over_tls_lets_in_only_the_right_password() -> anyhow::Result<()> {
    within(LIMIT, "the htpasswd registry", async {
        let auth = RegistryAuth::Htpasswd {
            user: "wasmop".to_owned(),
            password: "s3cret-pass".to_owned(),
        };
        let registry = Registry::start(auth).await?;
        ensure!(registry.is_tls());
        ensure!(registry.credentials() == Some(("wasmop", "s3cret-pass")));
        let ca_file = registry.ca_file().context("a TLS registry has a CA file")?;
        let ca_pem = std::fs::read_to_string(ca_file)?;
        ensure!(registry.ca_pem() == Some(ca_pem.as_str()));
        let address = registry.address();

        let anonymous = v2_status(address, Some(ca_file), None).await?;
        ensure!(anonymous == 401, "without credentials: {anonymous}");
        let right = v2_status(address, Some(ca_file), Some(("wasmop", "s3cret-pass"))).await?;
        ensure!(
            right == 200,
            "right password: {right}: {}",
            registry.log_tail(20)
        );
        let wrong = v2_status(address, Some(ca_file), Some(("wasmop", "guess"))).await?;
        ensure!(wrong == 401, "wrong password: {wrong}");

        let config: serde_json::Value = serde_json::from_str(
            &registry
                .dockerconfigjson()
                .context("an htpasswd registry has a docker config")?,
        )?;
        let entry = &config["auths"][address];
        ensure!(entry["username"] == "wasmop" && entry["password"] == "s3cret-pass");
        let auth = base64::engine::general_purpose::STANDARD
            .decode(entry["auth"].as_str().context("auth is a string")?)?;
        ensure!(auth == b"wasmop:s3cret-pass");

        // The CA file belongs to the registry: gone, with the process, once it is dropped.
        let ca_file = ca_file.to_owned();
        drop(registry);
        ensure!(
            !ca_file.exists(),
            "{} outlived the registry",
            ca_file.display()
        );
        Ok(())
    })
    .await
}

/// `tests/control-plane up --registry` then `env`: the registry's address, and that it serves
/// plain HTTP (for wasmop's `--registry-plain-http`), so no command needs the flag.
#[tokio::test]
async fn the_launcher_exports_its_registry_as_one_spoken_to_over_plain_http() -> anyhow::Result<()>
{
    let dev = tempfile::tempdir()?;
    let launcher = |command: &str| {
        let mut launcher = tokio::process::Command::new(env!("CARGO_BIN_EXE_wasmop-envtest"));
        launcher.env("WASMOP_DEV_DIR", dev.path()).arg(command);
        launcher
    };
    let up = launcher("up").arg("--registry").status();
    ensure!(within(LIMIT, "the launcher", up).await?.success());
    let env = String::from_utf8(launcher("env").output().await?.stdout)?;
    ensure!(launcher("down").status().await?.success(), "down: {env}");
    let exported = |name: &str| {
        env.lines()
            .find_map(|line| line.strip_prefix(&format!("export {name}=")))
            .map(str::to_owned)
    };
    let registry = exported("WASMOP_REGISTRY").context("WASMOP_REGISTRY")?;
    let plain_http = exported("WASMOP_REGISTRY_PLAIN_HTTP");
    assert_eq!(plain_http.as_ref(), Some(&registry), "{env}");
    Ok(())
}
