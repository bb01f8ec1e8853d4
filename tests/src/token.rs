//! The token service of a [`crate::Registry`] started with [`crate::RegistryAuth::Token`]: the
//! Docker registry token protocol, as Docker Hub, GHCR and Harbor speak it. A client the
//! registry turns away (`401`, `WWW-Authenticate: Bearer realm=…,service=…,scope=…`) asks
//! [`TokenService::realm`] for a token with HTTP basic auth; the service answers the one user with
//! an ES256 JWT granting the scopes asked for, and anyone else with `401`. The registry verifies
//! each token against the service's self-signed certificate ([`TokenService::certificate_pem`],
//! sent in the token's `x5c` header), its issuer and its audience.
//!
//! The service answers on a loopback port from a thread of its own, one request per connection,
//! until it is dropped.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::DecodePrivateKey;

use crate::Error;
use crate::certs::random_hex;

/// The registry's name in the tokens' audience (its `auth.token.service`).
pub(crate) const SERVICE: &str = "wasmop-envtest-registry";
/// The tokens' issuer (the registry's `auth.token.issuer`).
pub(crate) const ISSUER: &str = "wasmop-envtest-token";
/// How long a token is good for.
const LIFETIME: Duration = Duration::from_secs(300);
/// The most a request's head may be.
const MAX_HEAD: usize = 16 << 10;

/// A running token service; dropping it stops it.
#[derive(Debug)]
pub(crate) struct TokenService {
    address: String,
    certificate_pem: String,
    issuer: Arc<Issuer>,
    stopped: Arc<AtomicBool>,
}

/// What signs tokens, and the one user it grants them to.
struct Issuer {
    key: SigningKey,
    certificate_der: Vec<u8>,
    user: String,
    password: String,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer").field("user", &self.user).finish()
    }
}

impl TokenService {
    /// Starts a service that grants tokens to `user` with `password`.
    pub(crate) fn start(user: &str, password: &str) -> Result<Self, Error> {
        let certified = rcgen::generate_simple_self_signed(vec![ISSUER.to_owned()])?;
        let der = certified.signing_key.serialize_der();
        let key = SigningKey::from_pkcs8_der(&der).map_err(|e| Error::Io {
            context: "reading the token service's key".to_owned(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(Error::io("binding the token service's port"))?;
        let address = listener
            .local_addr()
            .map_err(Error::io("reading the token service's port"))?
            .to_string();
        let issuer = Arc::new(Issuer {
            key,
            certificate_der: certified.cert.der().to_vec(),
            user: user.to_owned(),
            password: password.to_owned(),
        });
        let stopped = Arc::new(AtomicBool::new(false));
        let (serving, stop) = (issuer.clone(), stopped.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(stream) = stream {
                    let _ = serving.answer(stream);
                }
            }
        });
        Ok(TokenService {
            address,
            certificate_pem: certified.cert.pem(),
            issuer,
            stopped,
        })
    }

    /// Where clients ask for tokens: `http://127.0.0.1:<port>/token`.
    pub(crate) fn realm(&self) -> String {
        format!("http://{}/token", self.address)
    }

    /// The certificate whose key signs the tokens, for the registry's `rootcertbundle`.
    pub(crate) fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }

    /// A token granting `actions` (e.g. `pull`) on `repository`, as the service would answer.
    pub(crate) fn token(&self, repository: &str, actions: &[&str]) -> Result<String, Error> {
        let access = serde_json::json!([{
            "type": "repository", "name": repository, "actions": actions,
        }]);
        self.issuer.sign(access)
    }
}

impl Drop for TokenService {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(&self.address);
    }
}

impl Issuer {
    /// Reads one request and answers it: a token for the user, `401` for anyone else.
    fn answer(&self, stream: TcpStream) -> std::io::Result<()> {
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let (mut target, mut authorization, mut read) = (String::new(), None, 0);
        let mut line = String::new();
        while reader.read_line(&mut line)? > 2 && read < MAX_HEAD {
            read += line.len();
            let trimmed = line.trim_end();
            if target.is_empty() {
                target = trimmed.split(' ').nth(1).unwrap_or_default().to_owned();
            } else if let Some((name, value)) = trimmed.split_once(':')
                && name.eq_ignore_ascii_case("authorization")
            {
                authorization = Some(value.trim().to_owned());
            }
            line.clear();
        }
        let (status, body) = match self.grant(&target, authorization.as_deref()) {
            Some(token) => (
                "200 OK",
                serde_json::json!({
                    "token": token, "access_token": token, "expires_in": LIFETIME.as_secs(),
                }),
            ),
            None => (
                "401 Unauthorized",
                serde_json::json!({"details": "unauthorized"}),
            ),
        };
        let body = body.to_string();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    /// The token for a request to `target` (`/token?service=…&scope=…`) carrying
    /// `authorization`, when that is the user's basic credentials.
    fn grant(&self, target: &str, authorization: Option<&str>) -> Option<String> {
        let expected = STANDARD.encode(format!("{}:{}", self.user, self.password));
        if authorization? != format!("Basic {expected}") {
            return None;
        }
        let query = target.split_once('?').map_or("", |(_, query)| query);
        let access: Vec<serde_json::Value> = form_urlencoded::parse(query.as_bytes())
            .filter(|(name, _)| name == "scope")
            .filter_map(|(_, value)| scope(&value))
            .collect();
        self.sign(serde_json::Value::from(access)).ok()
    }

    /// An ES256 JWT for the user granting `access`, its certificate in the `x5c` header.
    fn sign(&self, access: serde_json::Value) -> Result<String, Error> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let header = serde_json::json!({
            "typ": "JWT", "alg": "ES256", "x5c": [STANDARD.encode(&self.certificate_der)],
        });
        let claims = serde_json::json!({
            "iss": ISSUER, "sub": self.user, "aud": SERVICE, "exp": now + LIFETIME.as_secs(),
            "nbf": now - 10, "iat": now, "jti": random_hex(8)?, "access": access,
        });
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature: Signature = self.key.sign(signed.as_bytes());
        Ok(format!(
            "{signed}.{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        ))
    }
}

/// The access a `scope` parameter asks for (`repository:NAME:pull,push`).
fn scope(scope: &str) -> Option<serde_json::Value> {
    let (kind, rest) = scope.split_once(':')?;
    let (name, actions) = rest.rsplit_once(':')?;
    let actions: Vec<&str> = actions.split(',').collect();
    Some(serde_json::json!({"type": kind, "name": name, "actions": actions}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_names_the_repository_and_its_actions() {
        let access = scope("repository:private/good:pull,push").unwrap();
        assert_eq!(access["type"], "repository");
        assert_eq!(access["name"], "private/good");
        assert_eq!(access["actions"], serde_json::json!(["pull", "push"]));
        assert!(scope("nonsense").is_none());
    }

    #[test]
    fn only_the_user_gets_a_token_and_it_is_an_es256_jwt_of_the_scope() {
        let service = TokenService::start("alice", "wonderland").unwrap();
        let target = "/token?service=wasmop-envtest-registry&scope=repository%3Aa%2Fb%3Apull";
        let basic = |credentials: &str| format!("Basic {}", STANDARD.encode(credentials));
        assert!(service.issuer.grant(target, None).is_none());
        let wrong = basic("alice:looking-glass");
        assert!(service.issuer.grant(target, Some(&wrong)).is_none());
        let token = service
            .issuer
            .grant(target, Some(&basic("alice:wonderland")))
            .unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["aud"], SERVICE);
        assert_eq!(claims["access"][0]["name"], "a/b");
        let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        use p256::ecdsa::signature::Verifier;
        let signed = format!("{}.{}", parts[0], parts[1]);
        assert!(
            service
                .issuer
                .key
                .verifying_key()
                .verify(signed.as_bytes(), &signature)
                .is_ok()
        );
    }
}
