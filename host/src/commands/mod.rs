//! The subcommands of the `wasmop` binary, one file each, and what they share: the connection
//! to the cluster.

pub(crate) mod build;
pub(crate) mod migrate;
pub(crate) mod new;
pub(crate) mod plugins;
pub(crate) mod pull;
pub(crate) mod push;
pub(crate) mod rbac;
pub(crate) mod run;
pub(crate) mod sign;
pub(crate) mod test;

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use oci_client::secrets::RegistryAuth;
use wasmop::config::{Compiler, CredentialArgs, RegistryArgs};
use wasmop::distribution::oci::{Registries, Store};
use wasmop::runtime::Backend;

/// The guest SDKs: `sdk` when given, else the checkout this binary was built from.
pub(crate) fn guest_sdk(sdk: Option<std::path::PathBuf>) -> anyhow::Result<std::path::PathBuf> {
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk");
    let sdk = sdk.unwrap_or(built_from);
    sdk.canonicalize().with_context(|| {
        format!(
            "the guest SDKs are not at {} (give --sdk <checkout>/guest-sdk)",
            sdk.display()
        )
    })
}

/// The runtime's backend for the command line's `--compiler`.
pub(crate) fn backend(compiler: Compiler) -> Backend {
    match compiler {
        Compiler::Winch => Backend::Winch,
        Compiler::Cranelift => Backend::Cranelift,
    }
}

/// The kubeconfig given, else in-cluster configuration or the default kubeconfig.
pub(crate) async fn connect(
    kubeconfig: Option<&Path>,
) -> anyhow::Result<(kube::Config, kube::Client)> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig given and none found")?,
    };
    let client = kube::Client::try_from(config.clone())?;
    Ok((config, client))
}

/// How registries are reached, as `args` say, keeping pulled components in `store`.
pub(crate) async fn registries(
    args: &RegistryArgs,
    store: Option<Store>,
) -> anyhow::Result<Registries> {
    let mut ca_pem = Vec::new();
    if let Some(file) = &args.registry_ca_file {
        let pem = tokio::fs::read(file)
            .await
            .with_context(|| format!("reading --registry-ca-file {}", file.display()))?;
        ca_pem.push(pem);
    }
    Ok(Registries {
        plain_http: args.registry_plain_http.clone(),
        ca_pem,
        store,
        engine: None,
    })
}

/// The credentials `args` give: anonymous without a user; the password from stdin with
/// `--password-stdin`, else from `WASMOP_REGISTRY_PASSWORD`.
pub(crate) fn credentials(args: &CredentialArgs) -> anyhow::Result<RegistryAuth> {
    let Some(user) = &args.username else {
        return Ok(RegistryAuth::Anonymous);
    };
    let password = match args.password_stdin {
        true => {
            let mut password = String::new();
            std::io::stdin()
                .read_to_string(&mut password)
                .context("reading the password from stdin")?;
            password.trim_end_matches(['\r', '\n']).to_owned()
        }
        false => std::env::var("WASMOP_REGISTRY_PASSWORD")
            .context("--username needs --password-stdin or WASMOP_REGISTRY_PASSWORD")?,
    };
    Ok(RegistryAuth::Basic(user.clone(), password))
}
