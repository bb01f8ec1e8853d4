//! Registries that attack the host: each serves a manifest the reference pins and then lies —
//! an endless or oversized answer, a blob that is not the one its digest names, a redirect to
//! another host that would carry the registry's credentials along. Hand-made, since a real
//! registry does none of this; what the host does with each is what the tests check.

use std::sync::{Arc, Mutex};

use oci_client::secrets::RegistryAuth;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;
use crate::distribution::digest;

/// What the hostile registry answers for a blob.
#[derive(Clone)]
enum Blob {
    /// These bytes.
    Bytes(Vec<u8>),
    /// Bytes without end.
    Endless,
    /// A redirect to this URL.
    Redirect(String),
}

/// A registry on `address` serving `manifest` for any manifest and `blob` for any blob, keeping
/// the `Authorization` headers it was sent; it asks for basic auth at `/v2/`.
struct Hostile {
    address: String,
    authorizations: Arc<Mutex<Vec<String>>>,
}

impl Hostile {
    async fn start(ip: &str, manifest: Vec<u8>, blob: Blob) -> Self {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let authorizations = Arc::new(Mutex::new(Vec::new()));
        let seen = authorizations.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (manifest, blob, seen) = (manifest.clone(), blob.clone(), seen.clone());
                tokio::spawn(answer(stream, manifest, blob, seen));
            }
        });
        Hostile {
            address,
            authorizations,
        }
    }

    fn authorizations(&self) -> Vec<String> {
        self.authorizations.lock().unwrap().clone()
    }
}

async fn answer(
    mut stream: TcpStream,
    manifest: Vec<u8>,
    blob: Blob,
    seen: Arc<Mutex<Vec<String>>>,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let authorization = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("authorization")
            .then(|| value.trim().to_owned())
    });
    let challenged = authorization.is_none();
    seen.lock().unwrap().extend(authorization);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let reply = |status: &str, headers: &str, body: &[u8]| {
        let mut reply = format!(
            "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n{headers}\r\n",
            body.len()
        )
        .into_bytes();
        reply.extend_from_slice(body);
        reply
    };
    if path == "/v2/" && challenged {
        let challenge = "www-authenticate: Basic realm=\"hostile\"\r\n";
        let _ = stream
            .write_all(&reply("401 Unauthorized", challenge, b""))
            .await;
        return;
    }
    let bytes = match (path.contains("/manifests/"), path.contains("/blobs/"), blob) {
        (true, _, _) => reply(
            "200 OK",
            "content-type: application/vnd.oci.image.manifest.v1+json\r\n",
            &manifest,
        ),
        (_, true, Blob::Bytes(bytes)) => reply("200 OK", "", &bytes),
        (_, true, Blob::Redirect(to)) => reply(
            "307 Temporary Redirect",
            &format!("location: {to}\r\n"),
            b"",
        ),
        (_, true, Blob::Endless) => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n")
                .await;
            let chunk = vec![0u8; 64 << 10];
            while stream.write_all(&chunk).await.is_ok() {}
            return;
        }
        _ => reply("200 OK", "", b"{}"),
    };
    let _ = stream.write_all(&bytes).await;
}

/// A Wasm artifact's manifest whose one layer is `layer`, padded to `size` bytes.
fn manifest(layer: &[u8], size: usize) -> Vec<u8> {
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": digest(b"{}"), "size": 2},
        "layers": [{"mediaType": LAYER_MEDIA_TYPE, "digest": digest(layer), "size": layer.len()}],
    });
    let mut bytes = serde_json::to_vec(&manifest).unwrap();
    bytes.resize(size.max(bytes.len()), b' ');
    bytes
}

fn policy() -> Ceiling {
    Ceiling {
        modules: wasmop_contract::ModuleSources {
            namespaces: None,
            private_addresses: true,
        },
        ..Ceiling::default()
    }
}

async fn pull(
    registry: &Hostile,
    manifest: &[u8],
    auth: &RegistryAuth,
) -> Result<Pulled, OciError> {
    let registries = Registries {
        plain_http: vec![registry.address.clone()],
        ..Registries::default()
    };
    let reference = format!("{}/team/webapp@{}", registry.address, digest(manifest));
    let reference = OciRef::parse(&reference).unwrap();
    registries
        .pull(&reference, auth, Some(&policy()), SignatureCheck::No)
        .await
}

const COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0 a component of a few bytes";

#[tokio::test]
async fn a_manifest_larger_than_the_cap_is_cut_off() {
    let oversized = manifest(COMPONENT, MAX_MANIFEST_BYTES * 2);
    let registry = Hostile::start(
        "127.0.0.1",
        oversized.clone(),
        Blob::Bytes(COMPONENT.to_vec()),
    )
    .await;
    let error = pull(&registry, &oversized, &RegistryAuth::Anonymous)
        .await
        .unwrap_err();
    println!("oversized manifest: {error}");
    assert!(
        matches!(error, OciError::Refused(_) | OciError::TooLarge(..)),
        "{error}"
    );
}

#[tokio::test]
async fn an_endless_blob_is_cut_off_at_the_size_its_manifest_gives() {
    let manifest = manifest(COMPONENT, 0);
    let registry = Hostile::start("127.0.0.1", manifest.clone(), Blob::Endless).await;
    let error = pull(&registry, &manifest, &RegistryAuth::Anonymous)
        .await
        .unwrap_err();
    println!("endless blob: {error}");
    assert!(
        matches!(error, OciError::TooLarge("component", _)),
        "{error}"
    );
}

#[tokio::test]
async fn a_blob_that_is_not_its_digest_is_refused() {
    let manifest = manifest(COMPONENT, 0);
    let mut other = COMPONENT.to_vec();
    other[9] ^= 1;
    let sent = digest(&other);
    let registry = Hostile::start("127.0.0.1", manifest.clone(), Blob::Bytes(other)).await;
    let error = pull(&registry, &manifest, &RegistryAuth::Anonymous)
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, OciError::Digest { .. }), "{text}");
    let pinned = digest(COMPONENT);
    assert_eq!(
        text,
        format!("the component {pinned} does not match its digest: its bytes hash to {sent}")
    );
}

#[tokio::test]
async fn a_redirect_to_another_host_carries_no_credentials() {
    let manifest = manifest(COMPONENT, 0);
    let storage = Hostile::start("127.0.0.2", Vec::new(), Blob::Bytes(COMPONENT.to_vec())).await;
    let to = format!("http://{}/storage/blobs/component", storage.address);
    let registry = Hostile::start("127.0.0.1", manifest.clone(), Blob::Redirect(to)).await;
    let auth = RegistryAuth::Basic("alice".into(), "secret".into());
    let pulled = pull(&registry, &manifest, &auth).await.unwrap();
    assert_eq!(pulled.module, COMPONENT);
    assert!(
        registry
            .authorizations()
            .iter()
            .any(|a| a.starts_with("Basic ")),
        "the registry itself was sent the credentials: {:?}",
        registry.authorizations()
    );
    assert_eq!(storage.authorizations(), Vec::<String>::new());
}

#[tokio::test]
async fn an_unsigned_precompiled_layer_is_never_taken() {
    let engine = "wasmop-test/engine/x86_64-linux";
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": digest(b"{}"), "size": 2},
        "layers": [
            {"mediaType": LAYER_MEDIA_TYPE, "digest": digest(COMPONENT), "size": COMPONENT.len()},
            {"mediaType": PRECOMPILED_MEDIA_TYPE, "digest": digest(COMPONENT), "size": COMPONENT.len(),
             "annotations": {ENGINE_ANNOTATION: engine}},
        ],
    });
    let manifest = serde_json::to_vec(&manifest).unwrap();
    let registry = Hostile::start(
        "127.0.0.1",
        manifest.clone(),
        Blob::Bytes(COMPONENT.to_vec()),
    )
    .await;
    let registries = Registries {
        plain_http: vec![registry.address.clone()],
        engine: Some(engine.to_owned()),
        ..Registries::default()
    };
    let reference = format!("{}/team/webapp@{}", registry.address, digest(&manifest));
    let reference = OciRef::parse(&reference).unwrap();
    // Whether signatures are not checked at all or checked only for the precompiled layer (which
    // the registry answers with no signature manifest): the component loads, the layer does not.
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    let key = p256::ecdsa::SigningKey::from_slice(&[7; 32]).unwrap();
    let pem = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap();
    let trusted = [TrustedKey::from_pem("release", &pem).unwrap()];
    for check in [SignatureCheck::No, SignatureCheck::ForPrecompiled(&trusted)] {
        let pulled = registries
            .pull(&reference, &RegistryAuth::Anonymous, Some(&policy()), check)
            .await
            .unwrap();
        assert_eq!(pulled.module, COMPONENT);
        assert!(
            pulled.precompiled.is_none() && pulled.signed_by.is_none(),
            "native code taken without a signature ({check:?})"
        );
    }
}

/// The layer `blob` is pulled as, `COMPONENT`'s size and digest.
fn layer() -> OciDescriptor {
    OciDescriptor {
        media_type: PRECOMPILED_MEDIA_TYPE.to_owned(),
        digest: digest(COMPONENT),
        size: COMPONENT.len() as i64,
        ..OciDescriptor::default()
    }
}

/// Spools the layer from a registry serving `blob` into `dir`.
async fn spooled(blob: Blob, dir: &Path) -> Result<tempfile::NamedTempFile, OciError> {
    let registry = Hostile::start("127.0.0.1", Vec::new(), blob).await;
    let registries = Registries {
        plain_http: vec![registry.address.clone()],
        ..Registries::default()
    };
    let proxy = Proxy::start(policy()).await.unwrap();
    let client = registries.client(Some(&proxy)).unwrap();
    let reference = format!("{}/team/webapp@{}", registry.address, digest(b"m"));
    let reference = OciRef::parse(&reference).unwrap();
    let pull = Pull {
        client: &client,
        proxy: &proxy,
        reference: &reference,
        auth: &RegistryAuth::Anonymous,
    };
    pull.spooled(&layer(), "precompiled component", dir).await
}

#[tokio::test]
async fn a_spooled_layer_is_checked_as_a_held_one_and_leaves_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let file = spooled(Blob::Bytes(COMPONENT.to_vec()), dir.path())
        .await
        .unwrap();
    assert_eq!(std::fs::read(file.path()).unwrap(), COMPONENT);

    let mut other = COMPONENT.to_vec();
    other[9] ^= 1;
    let error = spooled(Blob::Bytes(other), dir.path()).await.unwrap_err();
    assert!(matches!(error, OciError::Digest { .. }), "{error}");
    let error = spooled(Blob::Endless, dir.path()).await.unwrap_err();
    assert!(matches!(error, OciError::TooLarge(..)), "{error}");

    drop(file);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "spooling left {left:?}");
}
