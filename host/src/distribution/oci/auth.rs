//! Registry credentials from a `kubernetes.io/dockerconfigjson` Secret, as a kubelet reads an
//! image pull secret: the entry for the reference's registry (keys may carry a scheme or a path),
//! as a username and password (or `auth`, their base64) or a registry token. No error repeats a
//! credential or the Secret's content.

use base64::Engine;
use oci_client::secrets::RegistryAuth;
use serde_json::Value;

/// The Secret's `.dockerconfigjson` gives no credentials for the registry.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PullSecretError {
    /// It is not the JSON of a Docker config.
    #[error("the pull secret's .dockerconfigjson is not a Docker config")]
    Malformed,
    /// It has no entry for the registry.
    #[error("the pull secret has no credentials for {0}")]
    NoEntry(String),
    /// Its entry holds neither a username and password nor a registry token.
    #[error("the pull secret's entry for {0} holds no username and password or registry token")]
    Unusable(String),
}

/// The credentials `dockerconfigjson` holds for `registry` (`HOST[:PORT]`).
pub fn auth_from_dockerconfig(
    dockerconfigjson: &[u8],
    registry: &str,
) -> Result<RegistryAuth, PullSecretError> {
    let config: Value =
        serde_json::from_slice(dockerconfigjson).map_err(|_| PullSecretError::Malformed)?;
    let auths = config["auths"]
        .as_object()
        .ok_or(PullSecretError::Malformed)?;
    let entry = auths
        .iter()
        .find(|(key, _)| host_of(key) == registry || docker_hub(key, registry))
        .map(|(_, entry)| entry)
        .ok_or_else(|| PullSecretError::NoEntry(registry.to_owned()))?;
    let unusable = || PullSecretError::Unusable(registry.to_owned());
    let text = |key: &str| entry[key].as_str().filter(|s| !s.is_empty());
    if let Some(token) = text("registrytoken") {
        return Ok(RegistryAuth::Bearer(token.to_owned()));
    }
    if let (Some(user), Some(password)) = (text("username"), text("password")) {
        return Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()));
    }
    let decoded = text("auth")
        .and_then(|auth| base64::engine::general_purpose::STANDARD.decode(auth).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(unusable)?;
    let (user, password) = decoded.split_once(':').ok_or_else(unusable)?;
    Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()))
}

/// The `HOST[:PORT]` of a config key, which may be a URL.
fn host_of(key: &str) -> &str {
    let bare = key.split_once("://").map_or(key, |(_, rest)| rest);
    bare.split('/').next().unwrap_or(bare)
}

/// Whether `key` is Docker Hub's legacy key and `registry` Docker Hub.
fn docker_hub(key: &str, registry: &str) -> bool {
    registry == "index.docker.io" && host_of(key) == "index.docker.io"
        || registry == "docker.io" && host_of(key) == "index.docker.io"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(auth: RegistryAuth) -> (String, String) {
        match auth {
            RegistryAuth::Basic(user, password) => (user, password),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_entry_of_the_registry_gives_the_credentials() {
        let config = br#"{"auths":{
            "https://other.example/v1/":{"username":"u","password":"p"},
            "127.0.0.1:5000":{"auth":"YWxpY2U6czNjcjN0"},
            "https://tokens.example":{"registrytoken":"t0ken"}}}"#;
        let pair = |u: &str, p: &str| (u.to_owned(), p.to_owned());
        let local = auth_from_dockerconfig(config, "127.0.0.1:5000").unwrap();
        assert_eq!(basic(local), pair("alice", "s3cr3t"));
        let other = auth_from_dockerconfig(config, "other.example").unwrap();
        assert_eq!(basic(other), pair("u", "p"));
        let token = auth_from_dockerconfig(config, "tokens.example").unwrap();
        assert!(matches!(token, RegistryAuth::Bearer(t) if t == "t0ken"));
        let missing = auth_from_dockerconfig(config, "127.0.0.1:5001").unwrap_err();
        assert_eq!(missing, PullSecretError::NoEntry("127.0.0.1:5001".into()));
        let empty = br#"{"auths":{"r.example":{"auth":"bm9jb2xvbg=="}}}"#;
        let unusable = auth_from_dockerconfig(empty, "r.example").unwrap_err();
        assert!(!unusable.to_string().contains("nocolon"), "{unusable}");
        let malformed = auth_from_dockerconfig(b"password=hunter2", "r.example").unwrap_err();
        assert!(!malformed.to_string().contains("hunter2"), "{malformed}");
    }
}
