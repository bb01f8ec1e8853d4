//! The runtime options a plugin loads with: the operator's plugin limits (with the plugin's own
//! overrides applied) and the plugin's arguments and environment, as the runtime takes them.

use crate::config::PluginLimits;
use crate::runtime::{InstanceMode, PluginOptions};
use wasmop_contract::environment::Environment;

/// `limits` and `environment` as runtime options.
pub fn options(limits: &PluginLimits, environment: &Environment) -> PluginOptions {
    PluginOptions {
        memory_limit: limits.memory_limit,
        mode: match limits.warm_instances {
            0 => InstanceMode::Fresh,
            pool => InstanceMode::Warm {
                pool,
                max_uses: None,
            },
        },
        reconcile_timeout: limits.reconcile_timeout,
        max_concurrent_reconciles: limits.max_concurrent_reconciles,
        limits: limits.guest.limits(),
        max_instances: limits.max_instances,
        webhook_timeout: limits.webhook_timeout,
        failure_policy: limits.webhook_failure_policy,
        environment: environment.clone(),
        ..PluginOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::config::{Cli, Command};

    #[test]
    fn the_limits_become_the_options_a_plugin_loads_with() {
        let args = ["wasmop", "run", "--plugin=a.wasm", "--memory-limit=128Mi"];
        let args = args
            .into_iter()
            .chain(["--reconcile-timeout=5s", "--warm-instances=2"]);
        let Command::Run(run) = Cli::load_from(args).unwrap().command else {
            panic!("run")
        };
        let file = Path::new("a.wasm");
        assert_eq!(run.plugin_environment(file), Environment::default());
        let environment = Environment::new(vec!["-v=2".into()], vec![]).unwrap();
        let options = options(&run.plugin_limits(file), &environment);
        assert_eq!(options.environment, environment);
        assert_eq!(options.memory_limit, 128 << 20);
        assert_eq!(options.reconcile_timeout, Some(Duration::from_secs(5)));
        let warm = InstanceMode::Warm {
            pool: 2,
            max_uses: None,
        };
        assert_eq!(options.mode, warm);
        let fresh = PluginLimits {
            warm_instances: 0,
            ..run.limits
        };
        let fresh = super::options(&fresh, &Environment::default());
        assert_eq!(fresh.mode, InstanceMode::Fresh);
    }
}
