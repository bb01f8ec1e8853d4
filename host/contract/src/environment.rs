//! What a plugin's guests start with beside its module: the command-line arguments and
//! environment variables an operator's `main` would take (flags, feature gates, settings), given
//! by the operator's config file or a tenant's `WasmReconciler`. Every instance starts with them
//! (WASI `args` after the plugin's name as `argv[0]`, and `environ`), so they are bounded where
//! they enter: [`MAX_ENTRIES`] of each, [`MAX_BYTES`] in all, no NUL byte, and variable names
//! that are names.

/// The most arguments, and the most variables.
pub const MAX_ENTRIES: usize = 128;
/// The most bytes of arguments, names and values together: each instance copies them.
pub const MAX_BYTES: usize = 32 << 10;

/// A plugin's arguments and environment variables, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    args: Vec<String>,
    vars: Vec<(String, String)>,
}

/// Why an environment was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidEnvironment {
    /// More arguments or variables than [`MAX_ENTRIES`].
    #[error("{count} {what}, over the limit of {MAX_ENTRIES}")]
    TooMany {
        /// `arguments` or `variables`.
        what: &'static str,
        /// How many there were.
        count: usize,
    },
    /// More bytes than [`MAX_BYTES`].
    #[error("{0} bytes of arguments and variables, over the limit of {MAX_BYTES}")]
    TooLarge(usize),
    /// A NUL byte, which no C string (WASI's `argv` and `environ`) can carry.
    #[error("{0} holds a NUL byte")]
    Nul(String),
    /// A variable name that is not a letter or `_` followed by letters, digits or `_`.
    #[error("variable name {0:?} must be a letter or _ followed by letters, digits or _")]
    Name(String),
    /// The same variable twice.
    #[error("variable {0} is set twice")]
    Twice(String),
}

impl Environment {
    /// Checks `args` and `vars` (name, value) against the bounds.
    pub fn new(args: Vec<String>, vars: Vec<(String, String)>) -> Result<Self, InvalidEnvironment> {
        for (what, count) in [("arguments", args.len()), ("variables", vars.len())] {
            if count > MAX_ENTRIES {
                return Err(InvalidEnvironment::TooMany { what, count });
            }
        }
        let bytes = args.iter().map(String::len).sum::<usize>()
            + vars.iter().map(|(n, v)| n.len() + v.len()).sum::<usize>();
        if bytes > MAX_BYTES {
            return Err(InvalidEnvironment::TooLarge(bytes));
        }
        for (index, arg) in args.iter().enumerate() {
            if arg.contains('\0') {
                return Err(InvalidEnvironment::Nul(format!("argument {index}")));
            }
        }
        for (index, (name, value)) in vars.iter().enumerate() {
            if !is_name(name) {
                return Err(InvalidEnvironment::Name(
                    crate::boundary::cut(name).to_owned(),
                ));
            }
            if value.contains('\0') {
                return Err(InvalidEnvironment::Nul(format!("variable {name}")));
            }
            if vars[..index].iter().any(|(earlier, _)| earlier == name) {
                return Err(InvalidEnvironment::Twice(name.clone()));
            }
        }
        Ok(Environment { args, vars })
    }

    /// The arguments after `argv[0]`.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// The variables, as (name, value).
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// The controller of a module of several it selects ([`CONTROLLER_VARIABLE`]'s value).
    pub fn controller(&self) -> Option<&str> {
        let selected = self
            .vars
            .iter()
            .find(|(name, _)| name == CONTROLLER_VARIABLE);
        selected.map(|(_, value)| value.as_str())
    }

    /// This environment with `controller` selected: [`CONTROLLER_VARIABLE`] set to it, checked
    /// as every variable is (set already, it is set twice).
    pub fn selecting(&self, controller: &str) -> Result<Self, InvalidEnvironment> {
        let mut vars = self.vars.clone();
        vars.push((CONTROLLER_VARIABLE.to_owned(), controller.to_owned()));
        Environment::new(self.args.clone(), vars)
    }
}

/// The variable naming which of a module's controllers a plugin loaded from it runs (a module
/// built from an operator's setup of several; the Go SDK's controller-runtime layer reads it).
pub const CONTROLLER_VARIABLE: &str = "WASMOP_CONTROLLER";

/// `controller` as the end of the name of the plugin that runs it (`<module>-<label>`): lower
/// case, every character but a letter, digit or dash a dash — as the Go SDK names it.
pub fn controller_label(controller: &str) -> String {
    controller
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect()
}

/// Whether `name` is a portable environment variable name.
fn is_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn flags_and_variables_within_the_bounds_are_kept_in_order() {
        let args = vec!["--feature-gates=A=true".to_owned(), "-v=2".to_owned()];
        let env = Environment::new(args.clone(), vars(&[("LOG", "debug"), ("_X1", "")])).unwrap();
        assert_eq!(env.args(), args);
        assert_eq!(env.vars(), vars(&[("LOG", "debug"), ("_X1", "")]));
    }

    #[test]
    fn what_no_instance_could_start_with_or_afford_is_refused() {
        let refused = |args: Vec<String>, pairs: Vec<(String, String)>| {
            Environment::new(args, pairs).unwrap_err().to_string()
        };
        let many = vec![String::new(); MAX_ENTRIES + 1];
        assert!(refused(many, vec![]).contains("129 arguments"));
        let huge = vec!["x".repeat(MAX_BYTES + 1)];
        assert!(refused(huge, vec![]).contains("over the limit of 32768"));
        assert!(refused(vec!["a\0b".into()], vec![]).contains("argument 0 holds a NUL"));
        for name in ["1A", "A-B", "", "A=B", "é"] {
            let message = refused(vec![], vars(&[(name, "v")]));
            assert!(message.contains("must be a letter"), "{name}: {message}");
        }
        assert!(refused(vec![], vars(&[("A", "x\0")])).contains("variable A holds a NUL"));
        assert!(refused(vec![], vars(&[("A", "1"), ("A", "2")])).contains("A is set twice"));
    }

    #[test]
    fn selecting_a_controller_sets_its_variable_once() {
        let base = Environment::new(vec!["-v".into()], vars(&[("A", "1")])).unwrap();
        let selected = base.selecting("rayjob").unwrap();
        assert_eq!(selected.args(), ["-v"]);
        assert_eq!(
            selected.vars(),
            vars(&[("A", "1"), ("WASMOP_CONTROLLER", "rayjob")])
        );
        assert_eq!(selected.controller(), Some("rayjob"));
        assert_eq!(base.controller(), None);
        assert_eq!(controller_label("Secret_Keeper.v2"), "secret-keeper-v2");
        let twice = selected.selecting("raycluster").unwrap_err();
        assert!(matches!(twice, InvalidEnvironment::Twice(name) if name == CONTROLLER_VARIABLE));
    }
}
