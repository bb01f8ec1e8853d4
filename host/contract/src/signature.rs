//! Who may sign modules: the public keys the operator trusts, by name, and whether every
//! module must carry a signature by one of them.
//!
//! Keys are ECDSA P-256 public keys in PEM (`-----BEGIN PUBLIC KEY-----`), what `cosign
//! generate-key-pair` and `openssl ec -pubout` write; a signature is ASN.1 DER over the SHA-256 of
//! the signed bytes, as cosign makes it. What is signed, and where signatures are found, is the
//! distribution's business; this module only answers whether a key signed some bytes.

use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;

use crate::boundary::cut;

/// What is wrong with a trusted key, or with the keys a module names: neither quotes a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A key's PEM is no ECDSA P-256 public key.
    #[error("key `{0}` is not an ECDSA P-256 public key in PEM (BEGIN PUBLIC KEY)")]
    NotP256(String),
    /// A module names a key the policy does not trust (the names the policy has, or `none`).
    #[error("the operator's policy trusts no key named `{0}` (signatures.keys: {1})")]
    Untrusted(String, String),
}

/// A public key the operator trusts to sign modules, under the name policies refer to it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    name: String,
    key: VerifyingKey,
}

impl TrustedKey {
    /// The key `name` from its PEM; the error says what is wrong without quoting it.
    pub fn from_pem(name: &str, pem: &str) -> Result<Self, KeyError> {
        let key = VerifyingKey::from_public_key_pem(pem.trim())
            .map_err(|_| KeyError::NotP256(cut(name).to_owned()))?;
        Ok(TrustedKey {
            name: name.to_owned(),
            key,
        })
    }

    /// The name policies and statuses call it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key itself, as its uncompressed SEC1 point: what tells it apart whatever its name.
    pub fn public_point(&self) -> Vec<u8> {
        self.key.to_encoded_point(false).as_bytes().to_vec()
    }

    /// Whether `signature` (ASN.1 DER) is this key's signature of `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        Signature::from_der(signature).is_ok_and(|s| self.key.verify(message, &s).is_ok())
    }
}

/// What the operator's policy says of signatures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signatures {
    /// The keys modules may be signed with.
    pub keys: Vec<TrustedKey>,
    /// Whether every module from a registry must be signed by one of them.
    pub require: bool,
}

impl Signatures {
    /// The keys a module's signature is checked against when it names `narrowed` (none: the
    /// policy's all), or `None` when it need not be signed; an error names a key the policy does
    /// not trust.
    pub fn keys_for(&self, narrowed: &[String]) -> Result<Option<Vec<TrustedKey>>, KeyError> {
        if narrowed.is_empty() {
            return Ok(self.require.then(|| self.keys.clone()));
        }
        narrowed
            .iter()
            .map(|name| {
                self.keys
                    .iter()
                    .find(|k| k.name == *name)
                    .cloned()
                    .ok_or_else(|| untrusted(name, &self.keys))
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }
}

fn untrusted(name: &str, keys: &[TrustedKey]) -> KeyError {
    let known = match keys.is_empty() {
        true => "none".to_owned(),
        false => names(keys),
    };
    KeyError::Untrusted(cut(name).to_owned(), known)
}

/// The names of `keys`, for a message.
pub fn names(keys: &[TrustedKey]) -> String {
    let names: Vec<&str> = keys.iter().map(TrustedKey::name).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer;
    use p256::pkcs8::{EncodePublicKey, LineEnding};

    fn pair(seed: u8) -> (SigningKey, String) {
        let signing = SigningKey::from_slice(&[seed; 32]).unwrap();
        let pem = signing
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        (signing, pem)
    }

    #[test]
    fn a_key_verifies_its_own_signature_and_no_other() {
        let (signing, pem) = pair(7);
        let (other, _) = pair(9);
        let key = TrustedKey::from_pem("release", &pem).unwrap();
        let signature: Signature = signing.sign(b"payload");
        let der = signature.to_der();
        assert!(key.verifies(b"payload", der.as_bytes()));
        assert!(!key.verifies(b"payloaD", der.as_bytes()));
        let forged: Signature = other.sign(b"payload");
        assert!(!key.verifies(b"payload", forged.to_der().as_bytes()));
        assert!(!key.verifies(b"payload", b"not der"));
    }

    #[test]
    fn a_key_that_is_not_p256_pem_is_refused_without_being_quoted() {
        let error =
            TrustedKey::from_pem("ops", "-----BEGIN PUBLIC KEY-----\nc2VjcmV0\n").unwrap_err();
        assert_eq!(error, KeyError::NotP256("ops".into()));
        assert!(!error.to_string().contains("c2VjcmV0"), "{error}");
    }

    #[test]
    fn a_module_narrows_to_named_keys_and_must_be_signed_when_it_names_any() {
        let keys = vec![
            TrustedKey::from_pem("release", &pair(1).1).unwrap(),
            TrustedKey::from_pem("ops", &pair(2).1).unwrap(),
        ];
        let optional = Signatures {
            keys: keys.clone(),
            require: false,
        };
        assert_eq!(optional.keys_for(&[]), Ok(None));
        let only_ops = optional.keys_for(&["ops".into()]).unwrap().unwrap();
        assert_eq!(names(&only_ops), "ops");
        let required = Signatures {
            keys,
            require: true,
        };
        assert_eq!(
            names(&required.keys_for(&[]).unwrap().unwrap()),
            "release, ops"
        );
        let error = required.keys_for(&["dev".into()]).unwrap_err();
        assert_eq!(
            error,
            KeyError::Untrusted("dev".into(), "release, ops".into())
        );
    }
}
