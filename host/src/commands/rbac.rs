//! `wasmop rbac`: the RBAC a plugin's own identity needs, printed as YAML documents.

use anyhow::Context;

use wasmop::config::RbacArgs;
use wasmop::runtime::RuntimeConfig;
use wasmop_contract::object::shown;

use super::connect;

/// Prints the RBAC of the plugin in `args.plugin`'s own identity, as YAML documents.
pub(crate) async fn print_rbac(args: RbacArgs) -> anyhow::Result<()> {
    let runtime = wasmop::runtime::Runtime::new(RuntimeConfig::default())?;
    let registration = &runtime.describe(&args.plugin).await?;
    let kinds = registration
        .cached_kinds()
        .chain(registration.permissions.iter().map(|p| &p.kind));
    let mut plurals = std::collections::HashMap::new();
    let client = match &args.kubeconfig {
        Some(path) => Some(connect(Some(path)).await?.1),
        None => None,
    };
    for kind in kinds {
        let plural = match &client {
            Some(client) => {
                wasmop::cache::discover(client, kind)
                    .await
                    .with_context(|| format!("looking up {}", shown(kind)))?
                    .0
                    .plural
            }
            None => kube::core::ApiResource::from_gvk(kind).plural,
        };
        plurals.insert(kind.clone(), plural);
    }
    let placement = wasmop::rbac::Placement {
        operator_namespace: args
            .operator_namespace
            .unwrap_or_else(|| args.namespace.clone()),
        namespace: args.namespace,
        operator: args.operator,
        installer: wasmop::identity::Installer::of(args.wasm_reconciler, None),
    };
    let manifests = wasmop::rbac::manifests(registration, &placement, |kind| plurals[kind].clone());
    if client.is_none() {
        println!("# Resource names guessed from kind names; --kubeconfig looks them up.");
    }
    for manifest in manifests {
        println!("---\n{}", serde_saphyr::to_string(&manifest)?.trim_end());
    }
    Ok(())
}
