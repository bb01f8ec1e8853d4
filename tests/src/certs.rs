//! Credentials generated afresh for every control plane: a CA, the apiserver's serving
//! certificate, the service-account signing key, and the admin's bearer token; and for a TLS
//! [`Registry`](crate::Registry), a CA and its serving certificate.

use std::io::Read;
use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};

use crate::Error;

/// The admin user's name in the token file; it belongs to `system:masters`.
pub(crate) const ADMIN_USER: &str = "wasmop-admin";

/// Paths of the credential files an apiserver is started with.
pub(crate) struct CertFiles {
    /// PEM of the CA that signed the serving certificate.
    pub ca_pem: String,
    /// The admin's bearer token.
    pub admin_token: String,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub service_account_key: PathBuf,
    pub service_account_public_key: PathBuf,
    pub token_file: PathBuf,
}

/// A fresh CA and a serving certificate it signed, all PEM.
pub(crate) struct Serving {
    /// The CA's certificate, for clients to trust.
    pub ca_pem: String,
    /// The serving certificate.
    pub cert_pem: String,
    /// The serving certificate's private key.
    pub key_pem: String,
}

/// Generates a CA and a serving certificate named `common_name` for the DNS names and IP
/// addresses in `names`.
pub(crate) fn serving(common_name: &str, names: Vec<String>) -> Result<Serving, Error> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "wasmop-envtest-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);

    let serving_key = KeyPair::generate()?;
    let mut serving_params = CertificateParams::new(names)?;
    serving_params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    let serving_cert = serving_params.signed_by(&serving_key, &issuer)?;
    Ok(Serving {
        ca_pem: ca_cert.pem(),
        cert_pem: serving_cert.pem(),
        key_pem: serving_key.serialize_pem(),
    })
}

/// Generates every credential and writes it into `dir`; the serving certificate names `host`
/// (the address the apiserver listens on) besides loopback.
pub(crate) fn generate(dir: &Path, host: &str) -> Result<CertFiles, Error> {
    let mut names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "kubernetes.default.svc".to_owned(),
    ];
    if !names.iter().any(|name| name == host) {
        names.push(host.to_owned());
    }
    let serving = serving("kube-apiserver", names)?;

    let admin_token = random_hex(32)?;
    let files = CertFiles {
        ca_pem: serving.ca_pem,
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        service_account_key: dir.join("service-account.key"),
        service_account_public_key: dir.join("service-account.pub"),
        token_file: dir.join("tokens.csv"),
        admin_token,
    };
    write(&files.serving_cert, &serving.cert_pem)?;
    write(&files.serving_key, &serving.key_pem)?;
    let service_account_key = KeyPair::generate()?;
    write(
        &files.service_account_key,
        &service_account_key.serialize_pem(),
    )?;
    write(
        &files.service_account_public_key,
        &service_account_key.public_key_pem(),
    )?;
    let token_line = format!(
        "{},{ADMIN_USER},{ADMIN_USER},system:masters\n",
        files.admin_token
    );
    write(&files.token_file, &token_line)?;
    Ok(files)
}

/// `bytes` random bytes from the kernel, hex-encoded.
pub(crate) fn random_hex(bytes: usize) -> Result<String, Error> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(Error::io("reading /dev/urandom"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `contents` to `path`.
pub(crate) fn write(path: &Path, contents: &str) -> Result<(), Error> {
    std::fs::write(path, contents).map_err(Error::io(format!("writing {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_credential_file() {
        let dir = tempfile::tempdir().unwrap();
        let files = generate(dir.path(), "10.0.0.1").unwrap();
        for path in [
            &files.serving_cert,
            &files.serving_key,
            &files.service_account_key,
        ] {
            let pem = std::fs::read_to_string(path).unwrap();
            assert!(
                pem.starts_with("-----BEGIN "),
                "{} is not PEM",
                path.display()
            );
        }
        let tokens = std::fs::read_to_string(&files.token_file).unwrap();
        assert!(tokens.starts_with(&files.admin_token));
        assert!(tokens.trim_end().ends_with(",system:masters"));
        assert!(files.ca_pem.contains("BEGIN CERTIFICATE"));
    }

    #[test]
    fn random_hex_differs_between_calls() {
        let (a, b) = (random_hex(16).unwrap(), random_hex(16).unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
