//! Plugin identities: with `--plugin-identity-namespace`, each plugin's apiserver writes, events
//! and access reviews are sent impersonating its own ServiceAccount, so Kubernetes RBAC checks
//! every plugin on its own and the audit log names it: `wasmop-plugin-<name>` for the operator's
//! plugins (files, the plugin directory), `wasmop-reconciler-<name>` for a tenant's (a
//! `ClusterWasmReconciler`'s in the identity namespace, a namespaced `WasmReconciler`'s in the
//! object's own namespace), so no tenant ever speaks as an operator's plugin or another
//! namespace's, whatever it is named. The shared informer
//! cache still lists and watches as the operator, so each identity's reads are reviewed again
//! while its plugin lives ([`wasmop_contract::Rights`]). `wasmop rbac` prints what each identity
//! needs.
//!
//! Imports: nothing of the host; `rbac` and the plugin loader build on it.

/// Where plugin identities live, and the connection settings to speak as them.
#[derive(Clone)]
pub struct Identities {
    config: kube::Config,
    namespace: String,
}

impl std::fmt::Debug for Identities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identities")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// Who installed a plugin, which decides the account it speaks as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installer<'a> {
    /// The operator: a `--plugin` file or the plugin directory.
    Operator,
    /// A tenant: a `ClusterWasmReconciler`.
    Tenant,
    /// A namespace's tenant: a `WasmReconciler` in this namespace.
    Namespace(&'a str),
}

impl<'a> Installer<'a> {
    /// A tenant when `tenant` (of namespace `home`, if given), else the operator.
    pub fn of(tenant: bool, home: Option<&'a str>) -> Self {
        match (tenant, home) {
            (true, Some(namespace)) => Installer::Namespace(namespace),
            (true, None) => Installer::Tenant,
            (false, _) => Installer::Operator,
        }
    }
}

/// The ServiceAccount name of plugin `plugin` installed by `installer`.
pub fn account(plugin: &str, installer: Installer) -> String {
    match installer {
        Installer::Operator => format!("wasmop-plugin-{plugin}"),
        Installer::Tenant | Installer::Namespace(_) => format!("wasmop-reconciler-{plugin}"),
    }
}

/// The Kubernetes user name of the ServiceAccount `account` in `namespace`.
pub fn user(namespace: &str, account: &str) -> String {
    format!("system:serviceaccount:{namespace}:{account}")
}

impl Identities {
    /// Identities in `namespace`, reached with the operator's own connection settings `config`.
    pub fn new(config: kube::Config, namespace: String) -> Self {
        Identities { config, namespace }
    }

    /// The user plugin `plugin`, installed by `installer`, speaks as.
    pub fn user(&self, plugin: &str, installer: Installer) -> String {
        let namespace = match installer {
            Installer::Namespace(namespace) => namespace,
            Installer::Operator | Installer::Tenant => &self.namespace,
        };
        user(namespace, &account(plugin, installer))
    }

    /// A client that impersonates the ServiceAccount of plugin `plugin` installed by `installer`.
    pub fn client(&self, plugin: &str, installer: Installer) -> Result<kube::Client, kube::Error> {
        let mut config = self.config.clone();
        config.auth_info.impersonate = Some(self.user(plugin, installer));
        config.auth_info.impersonate_groups = None;
        kube::Client::try_from(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_plugin_speaks_as_its_own_service_account() {
        let config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
        let identities = Identities::new(config, "wasmop-system".to_owned());
        assert_eq!(
            identities.user("webapp", Installer::Operator),
            "system:serviceaccount:wasmop-system:wasmop-plugin-webapp"
        );
        assert_eq!(
            identities.user("webapp", Installer::Tenant),
            "system:serviceaccount:wasmop-system:wasmop-reconciler-webapp"
        );
        assert_eq!(
            identities.user("webapp", Installer::Namespace("team-a")),
            "system:serviceaccount:team-a:wasmop-reconciler-webapp"
        );
    }
}
