//! The subcommands of the `wasmop` binary, one file each, and what they share: the connection
//! to the cluster.

pub(crate) mod new;
pub(crate) mod plugins;
pub(crate) mod rbac;
pub(crate) mod run;
pub(crate) mod test;

use std::path::Path;

use anyhow::Context;

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
