//! The `--config` file: a YAML mapping from setting names (the flags' long names) to values.
//!
//! Settings not given as flags or environment variables become arguments, parsed by the same
//! parsers as flags, so a bad value gets the flag's message prefixed with the file. Each
//! `plugins` entry is a file or a mapping of `file` and that plugin's overrides of the plugin
//! limits. Unknown settings are errors: a typo must not silently fall back to a default.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::ArgMatches;
use clap::parser::ValueSource;
use serde_json::{Map, Value};

use super::environment;
use super::overrides::{self, OVERRIDES, PluginOverrides, clap_message};
use super::{ConfigError, SettingError};

/// What the file adds to the command line.
pub(super) struct Settings {
    /// Arguments for the settings the command line left unset.
    pub args: Vec<OsString>,
    /// Per-plugin overrides, by plugin file.
    pub overrides: Vec<(PathBuf, PluginOverrides)>,
}

/// Reads `path` and turns the settings `matches` left unset into arguments of `command`.
pub(super) fn read(
    path: &Path,
    command: &clap::Command,
    matches: &ArgMatches,
) -> Result<Settings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        file: path.to_owned(),
        source,
    })?;
    parse(&text, command, matches).map_err(|error| ConfigError::File {
        file: path.to_owned(),
        message: error.to_string(),
    })
}

/// A clap error about arguments that came from the file at `path`.
pub(super) fn clap_error(path: &Path, error: &clap::Error) -> ConfigError {
    ConfigError::File {
        file: path.to_owned(),
        message: clap_message(error),
    }
}

fn parse(
    text: &str,
    command: &clap::Command,
    matches: &ArgMatches,
) -> Result<Settings, SettingError> {
    let document = super::yaml(text)?;
    let Value::Object(settings) = document else {
        return Err(SettingError::shape(
            "a mapping of setting names to values",
            super::policy::kind_of(&document),
        ));
    };
    let mut out = Settings {
        args: Vec::new(),
        overrides: Vec::new(),
    };
    for (name, value) in &settings {
        let arg = command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(name.as_str()) || is_alias(arg, name))
            .filter(|arg| arg.get_id() != "config")
            .ok_or_else(|| unknown(name, command))?;
        let given = matches!(
            matches.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        );
        if given {
            continue;
        }
        if arg.get_id() == "plugins" {
            plugins(value, &mut out)?;
        } else {
            let long = arg.get_long().expect("settings have long names");
            let is_switch = matches!(arg.get_action(), clap::ArgAction::SetTrue);
            out.args.extend(arguments(long, value, is_switch)?);
        }
    }
    Ok(out)
}

fn is_alias(arg: &clap::Arg, name: &str) -> bool {
    arg.get_visible_aliases()
        .is_some_and(|aliases| aliases.contains(&name))
}

fn unknown(name: &str, command: &clap::Command) -> SettingError {
    let known: Vec<&str> = command
        .get_arguments()
        .filter(|arg| arg.get_id() != "config")
        .filter_map(|arg| {
            arg.get_visible_aliases()
                .and_then(|a| a.first().copied())
                .or(arg.get_long())
        })
        .collect();
    SettingError::Unknown {
        name: format!(" `{name}`"),
        known: known.join(", "),
    }
}

/// The arguments setting `long` to `value`.
fn arguments(long: &str, value: &Value, is_switch: bool) -> Result<Vec<OsString>, SettingError> {
    if is_switch {
        return match value {
            Value::Bool(true) => Ok(vec![format!("--{long}").into()]),
            Value::Bool(false) => Ok(Vec::new()),
            other => Err(SettingError::shape("true or false", other).at(long)),
        };
    }
    let values = match value {
        Value::Array(items) => items.iter().collect(),
        single => vec![single],
    };
    values
        .into_iter()
        .map(|value| scalar(value).map(|value| format!("--{long}={value}").into()))
        .collect::<Result<_, _>>()
        .map_err(|found| SettingError::shape("a value or a list of values", found).at(long))
}

/// The text of a scalar; the value itself as the error otherwise.
pub(super) fn scalar(value: &Value) -> Result<String, &Value> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        other => Err(other),
    }
}

/// `plugins`: files, or mappings of `file` and overrides.
fn plugins(value: &Value, out: &mut Settings) -> Result<(), SettingError> {
    let entries = match value {
        Value::Array(entries) => entries.iter().collect(),
        single => vec![single],
    };
    for (index, entry) in entries.into_iter().enumerate() {
        let (file, overrides) = match entry {
            Value::Object(fields) => plugin(index, fields)?,
            other => (
                scalar(other).map_err(|found| {
                    SettingError::shape("a file or a mapping with `file`", found)
                        .at(format!("plugins[{index}]"))
                })?,
                PluginOverrides::default(),
            ),
        };
        out.args.push(format!("--plugin={file}").into());
        out.overrides.push((PathBuf::from(file), overrides));
    }
    Ok(())
}

/// The controllers a `plugins` entry runs, each a plugin of its own: names as controller-runtime
/// gives them (letters, digits, `.`, `_`, `-`; at most 63), each once.
fn controllers(names: Vec<String>) -> Result<Vec<String>, SettingError> {
    for (index, name) in names.iter().enumerate() {
        let valid = (1..=63).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !valid {
            return Err(SettingError::Refused(format!(
                "{name:?} is not a controller's name (letters, digits, `.`, `_` and `-`, at most 63)"
            )));
        }
        if names[..index].contains(name) {
            return Err(SettingError::Refused(format!(
                "controller {name} is listed twice"
            )));
        }
    }
    Ok(names)
}

/// One `plugins` mapping.
fn plugin(
    index: usize,
    fields: &Map<String, Value>,
) -> Result<(String, PluginOverrides), SettingError> {
    let field = |key: &str, value: &Value| {
        scalar(value).map_err(|found| {
            SettingError::shape("a value", found).at(format!("plugins[{index}].{key}"))
        })
    };
    let mut file = None;
    let mut overrides = PluginOverrides::default();
    overrides.read_environment(fields, &format!("plugins[{index}]"))?;
    for (key, value) in fields {
        if environment::KEYS.contains(&key.as_str()) {
            continue;
        }
        let at = |error: SettingError| error.at(format!("plugins[{index}].{key}"));
        if let ("controllers", Value::Array(items)) = (key.as_str(), value) {
            let names = items.iter().map(|name| field(key, name));
            let names = controllers(names.collect::<Result<_, _>>()?).map_err(at)?;
            overrides.set_controllers(names);
            continue;
        }
        let text = field(key, value)?;
        match key.as_str() {
            "file" => file = Some(text),
            "controllers" => {
                let names = text.split(',').map(|name| name.trim().to_owned());
                overrides.set_controllers(controllers(names.collect()).map_err(at)?)
            }
            setting if OVERRIDES.iter().any(|(flag, _)| *flag == setting) => {
                overrides.set(setting, &text).map_err(at)?
            }
            _ => {
                return Err(at(SettingError::Unknown {
                    name: String::new(),
                    known: format!("file, controllers, args, env, {}", overrides::overrides()),
                }));
            }
        }
    }
    let file = file.ok_or_else(|| SettingError::Missing("file").at(format!("plugins[{index}]")))?;
    Ok((file, overrides))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::{Cli, Command, RunArgs};
    use super::*;

    fn with_file(yaml: &str, flags: &[&str]) -> Result<RunArgs, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wasmop.yaml");
        std::fs::write(&path, yaml).unwrap();
        let config = format!("--config={}", path.display());
        let args = [&["wasmop", "run", config.as_str()], flags].concat();
        let Command::Run(run) = Cli::load_from(args)?.command else {
            panic!("run")
        };
        Ok(run)
    }

    #[test]
    fn the_file_sets_what_flags_leave_unset_under_the_same_names() {
        let yaml = "
leader-elect: true
leader-election-id: team-lease
leader-election-lease-duration: 20s
namespaces: [team-a, team-b]
memory-limit: 32Mi
metrics-bind-address: '0'
plugins:
  - a.wasm
  - file: b.wasm
    memory-limit: 256Mi
    reconcile-timeout: 5s
    max-concurrent-reconciles: 4
    args: [--feature-gates=A=true]
    env: [{name: LOG_LEVEL, value: debug}]
";
        let run = with_file(yaml, &["--leader-election-id=from-flag"]).unwrap();
        assert!(run.leader.leader_elect);
        assert_eq!(run.leader.leader_election_id, "from-flag");
        assert_eq!(
            run.leader.leader_election_lease_duration,
            Duration::from_secs(20)
        );
        assert_eq!(run.namespaces, ["team-a", "team-b"]);
        assert_eq!(run.metrics_bind_address.0, None);
        assert_eq!(
            run.plugins,
            [PathBuf::from("a.wasm"), PathBuf::from("b.wasm")]
        );
        let a = run.plugin_limits(Path::new("a.wasm"));
        assert_eq!(a.memory_limit, 32 << 20);
        assert_eq!(a.reconcile_timeout, None);
        let b = run.plugin_limits(Path::new("b.wasm"));
        assert_eq!(b.memory_limit, 256 << 20);
        assert_eq!(b.reconcile_timeout, Some(Duration::from_secs(5)));
        assert_eq!(b.max_concurrent_reconciles, Some(4));
        let env = run.plugin_environment(Path::new("b.wasm"));
        assert_eq!(env.args(), ["--feature-gates=A=true"]);
        assert_eq!(env.vars(), [("LOG_LEVEL".into(), "debug".into())]);
        assert!(
            run.plugin_environment(Path::new("a.wasm"))
                .args()
                .is_empty()
        );
    }

    #[test]
    fn sharding_and_warm_standby_take_leader_election_from_the_file_and_need_it() {
        let flags = ["--sharding", "--warm-standby"];
        let run = with_file("leader-elect: true\nplugins: [a.wasm]\n", &flags).unwrap();
        assert!(run.leader.sharding && run.leader.warm_standby);
        for flag in flags {
            let refused = with_file("plugins: [a.wasm]\n", &[flag]).unwrap_err();
            let setting = flag.trim_start_matches('-');
            assert!(
                refused.to_string().contains(setting)
                    && refused.to_string().contains("needs --leader-elect"),
                "{refused}"
            );
        }
    }

    #[test]
    fn an_entry_lists_the_controllers_of_a_module_each_run_as_a_plugin() {
        let run = with_file(
            "plugins:\n- {file: k.wasm, controllers: [raycluster, ray_job]}\n",
            &[],
        );
        let run = run.unwrap();
        let controllers = run.plugin_controllers(std::path::Path::new("k.wasm"));
        assert_eq!(controllers, ["raycluster", "ray_job"]);
        assert!(
            run.plugin_controllers(std::path::Path::new("other.wasm"))
                .is_empty()
        );
        let scalar = with_file("plugins:\n- {file: k.wasm, controllers: 'a, b'}\n", &[]);
        let scalar = scalar
            .unwrap()
            .plugin_controllers(std::path::Path::new("k.wasm"));
        assert_eq!(
            scalar,
            ["a", "b"],
            "a comma-separated scalar lists them too"
        );
        for (listed, why) in [
            ("[a, a]", "controller a is listed twice"),
            ("['a b']", "is not a controller's name"),
            ("['']", "is not a controller's name"),
            ("['a,b']", "\"a,b\" is not a controller's name"),
        ] {
            let yaml = format!("plugins:\n- {{file: k.wasm, controllers: {listed}}}\n");
            let refused = with_file(&yaml, &[]).unwrap_err().to_string();
            assert!(refused.contains(why), "{listed}: {refused}");
            assert!(refused.contains("plugins[0].controllers"), "{refused}");
        }
    }

    #[test]
    fn plugins_given_as_flags_replace_the_files_list() {
        let run = with_file("plugins: [a.wasm, b.wasm]\n", &["--plugin=c.wasm"]).unwrap();
        assert_eq!(run.plugins, [PathBuf::from("c.wasm")]);
    }

    #[test]
    fn mistakes_in_the_file_name_the_file_and_the_setting() {
        let message = |yaml: &str| with_file(yaml, &[]).unwrap_err().to_string();
        let error = message("plugins: [a.wasm]\nleader-elect-id: x\n");
        assert!(error.contains("wasmop.yaml"), "{error}");
        assert!(
            error.contains("unknown setting `leader-elect-id`"),
            "{error}"
        );
        assert!(error.contains("leader-election-id"), "{error}");
        let error = message("plugins: [a.wasm]\nleader-election-retry-period: 2\n");
        assert!(error.contains("--leader-election-retry-period"), "{error}");
        assert!(error.contains("needs a unit"), "{error}");
        let error = message("plugins: [{file: a.wasm, memory-limit: 1Tb}]\n");
        assert!(error.contains("`plugins[0].memory-limit`"), "{error}");
        let error = message("plugins: [{memory-limit: 1Mi}]\n");
        assert!(
            error.contains("`plugins[0]`: a mapping needs `file`"),
            "{error}"
        );
        let error = message("plugins: [{file: a.wasm, memory-limit: 2Gi}]\n");
        assert!(error.contains("`memory-limit`"), "{error}");
        let error = message("plugins: [a.wasm]\nleader-elect: yes please\n");
        assert!(
            error.contains("`leader-elect`: expected true or false"),
            "{error}"
        );
        let error = message("- a\n- b\n");
        assert!(error.contains("expected a mapping"), "{error}");
        let error = message("plugins: [a.wasm\n");
        assert!(error.contains("not valid YAML"), "{error}");
    }

    #[test]
    fn a_missing_file_is_reported_with_its_path() {
        let args = ["wasmop", "run", "--config=/nonexistent/wasmop.yaml"];
        let error = Cli::load_from(args).unwrap_err().to_string();
        assert!(error.contains("/nonexistent/wasmop.yaml"), "{error}");
    }
}
