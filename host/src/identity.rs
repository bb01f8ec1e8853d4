//! Plugin identities: with `--plugin-identity-namespace`, each plugin's apiserver writes, events
//! and access reviews are sent impersonating its own ServiceAccount, `wasmop-plugin-<name>`, so
//! Kubernetes RBAC checks every plugin on its own and the audit log names it. The shared informer
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

/// The ServiceAccount name of plugin `plugin`.
pub fn account(plugin: &str) -> String {
    format!("wasmop-plugin-{plugin}")
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

    /// The user plugin `plugin` speaks as.
    pub fn user(&self, plugin: &str) -> String {
        user(&self.namespace, &account(plugin))
    }

    /// A client that impersonates plugin `plugin`'s ServiceAccount.
    pub fn client(&self, plugin: &str) -> Result<kube::Client, kube::Error> {
        let mut config = self.config.clone();
        config.auth_info.impersonate = Some(self.user(plugin));
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
            identities.user("webapp"),
            "system:serviceaccount:wasmop-system:wasmop-plugin-webapp"
        );
    }
}
