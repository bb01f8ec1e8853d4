//! Why a pull or push failed, said without repeating what a registry sent: its status, its
//! error codes, or what the host found wrong — never a body, a URL's query or a credential.

use std::time::Duration;

use oci_client::errors::{DigestError, OciDistributionError, OciErrorCode};

use super::proxy::Proxy;

/// The most of a digest an error shows: `sha256:` and 64 hex digits (a manifest may say more).
const SHOWN_DIGEST_CHARS: usize = 71;

/// Why a connection failed, when no answer came.
pub(super) const NOT_CONNECTED: &str = "could not be connected to";

/// [`NOT_CONNECTED`] for a registry reached over HTTPS, with how to reach one serving plain HTTP.
pub(super) const NOT_CONNECTED_OVER_HTTPS: &str = "could not be connected to over HTTPS (a \
    registry that serves plain HTTP must be named in --registry-plain-http or \
    WASMOP_REGISTRY_PLAIN_HTTP)";

/// A pull or push failed.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The reference is not one the host pulls.
    #[error("the OCI reference is invalid: {0}")]
    Reference(&'static str),
    /// A connection went to an address the operator's policy does not allow.
    #[error("{0}")]
    Refused(String),
    /// The registry could not be reached, or did not answer in time.
    #[error("the registry {0}")]
    Unreachable(&'static str),
    /// The registry answered an error.
    #[error("the registry {0}")]
    Registry(String),
    /// The registry has no manifest (or repository) of that name.
    #[error("the registry has no such manifest")]
    NotFound,
    /// The reference's tag names another manifest than its digest pins.
    #[error("the tag {0} no longer names the pinned digest: pin the new digest, or drop the tag")]
    TagMoved(String),
    /// The manifest or component is larger than the host takes.
    #[error("the {0} is larger than {1} bytes")]
    TooLarge(&'static str, usize),
    /// A manifest or blob is not what its digest names.
    #[error("the {what} {expected} does not match its digest: {found}")]
    Digest {
        /// Which: the manifest, the component, a precompiled component, a blob.
        what: &'static str,
        /// The digest it was asked for by (at most a sha256 digest's length of it).
        expected: String,
        /// What came instead: its own digest, or its size when that is already wrong.
        found: String,
    },
    /// The manifest is not a Wasm artifact the host loads.
    #[error("not a Wasm component artifact: {0}")]
    Layout(&'static str),
    /// What would be pushed is not a component.
    #[error("not a WebAssembly component")]
    NotAComponent,
    /// The pull did not end in time.
    #[error("the pull did not end within {0:?}")]
    Timeout(Duration),
    /// The policy asks for a signature and the registry holds none of the pinned digest.
    #[error(
        "{digest} is not signed (no cosign signature in its repository); it must be signed by one of the keys {keys}"
    )]
    Unsigned {
        /// The pinned digest.
        digest: String,
        /// The keys it must be signed by.
        keys: String,
    },
    /// The pinned digest's signatures are by none of the keys the policy trusts.
    #[error("none of the {found} signature(s) of {digest} is by one of the keys {keys}")]
    Untrusted {
        /// The pinned digest.
        digest: String,
        /// The keys it must be signed by.
        keys: String,
        /// How many signatures were found.
        found: usize,
    },
    /// A blob could not be written to its temporary file (which blob, and why).
    #[error("writing the pulled {0} to a temporary file: {1}")]
    Spool(&'static str, String),
    /// The client could not be set up.
    #[error("setting up the registry client: {0}")]
    Client(String),
}

impl OciError {
    /// The `what` asked for by the digest `expected` (a manifest's word, cut to a digest's
    /// length) came as `found`, the host's own words, says.
    pub(super) fn digest(what: &'static str, expected: &str, found: String) -> Self {
        OciError::Digest {
            what,
            expected: expected.chars().take(SHOWN_DIGEST_CHARS).collect(),
            found,
        }
    }

    /// The error, a digest mismatch naming `what` where the client could only say a blob.
    pub(super) fn about(self, what: &'static str) -> Self {
        match self {
            OciError::Digest {
                expected, found, ..
            } => OciError::Digest {
                what,
                expected,
                found,
            },
            error => error,
        }
    }

    /// What `error` says that is safe to show; a refusal by the `proxy` the pull went through
    /// explains a failed connection.
    pub(super) fn registry(error: OciDistributionError, proxy: Option<&Proxy>) -> Self {
        if let Some(refusal) = proxy.and_then(Proxy::refusal) {
            return refusal;
        }
        if proxy.is_some_and(Proxy::unreachable) {
            return OciError::Unreachable(NOT_CONNECTED);
        }
        use OciDistributionError as E;
        let said = match error {
            E::UnauthorizedError { .. } | E::ServerError { code: 401, .. } => {
                "refused the credentials (401 Unauthorized)".to_owned()
            }
            E::AuthenticationFailure(_) | E::RegistryTokenDecodeError(_) => {
                "gave no token for the credentials (its token service refused them)".to_owned()
            }
            E::ImageManifestNotFoundError(_) | E::ServerError { code: 404, .. } => {
                return OciError::NotFound;
            }
            E::RegistryError { envelope, .. }
                if !envelope.errors.is_empty() && envelope.errors.iter().all(unknown) =>
            {
                return OciError::NotFound;
            }
            E::ServerError { code, .. } => format!("answered {code}"),
            E::RegistryError { envelope, .. } => {
                let codes: Vec<String> = envelope.errors.iter().map(|e| code(&e.code)).collect();
                format!("answered {}", codes.join(", "))
            }
            E::DigestError(DigestError::VerificationError { expected, actual }) => {
                return OciError::digest("blob", &expected, format!("its bytes hash to {actual}"));
            }
            E::DigestError(_) => "sent a digest the host cannot check".to_owned(),
            E::RequestError(e) if e.is_timeout() => {
                return OciError::Unreachable("did not answer in time");
            }
            E::RequestError(e) if e.is_connect() => {
                return OciError::Unreachable(NOT_CONNECTED);
            }
            E::RequestError(e) if e.is_redirect() => "redirected too often".to_owned(),
            E::RequestError(_) | E::IoError(_) => "connection failed".to_owned(),
            _ => "sent an answer that breaks the distribution spec".to_owned(),
        };
        OciError::Registry(said)
    }
}

/// Whether `error` says the manifest or repository does not exist.
fn unknown(error: &oci_client::errors::OciError) -> bool {
    matches!(
        error.code,
        OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown
    )
}

/// An error code the spec defines, by name; anything else is not repeated.
fn code(code: &OciErrorCode) -> String {
    match code {
        OciErrorCode::Other(_) => "an unknown error code".to_owned(),
        known => format!("{known:?}"),
    }
}
