//! `wasmop new`: a plugin folder for one guest language — its build configuration, a reconciler
//! of the kind asked for that marks each object with the generation it last reconciled, and two
//! fixtures `wasmop test` passes out of the box. The folder is `NAME/` with the language's sources
//! under `NAME/<rust|python|js|go>/` and the fixtures under `NAME/fixtures/`; the language's
//! `build .`, run in `NAME/`, writes the component there too. The next steps name `wasmop` as the
//! shell would find it, or by its path when `PATH` does not lead to this binary. A custom kind
//! gets its CRD too, `NAME/crd.yaml`, the one source of its spec and status types in the
//! plugin's language ([`types`]), which [`generate`] writes again after the schema is edited.
//!
//! Invariants: the plugin's name is a DNS label (it names a component file, an annotation's
//! domain and a Python package); nothing is written over an existing folder.
//!
//! Imports: the contract only; never the runtime.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;
use wasmop_contract::boundary;
use wasmop_contract::object::GroupVersionKind;

mod types;

/// A guest language `wasmop new` scaffolds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Language {
    /// Rust, built for wasm32-wasip2 by `wasmop build`.
    Rust,
    /// Python, built with componentize-py by `wasmop build`.
    Python,
    /// TypeScript, built with componentize-js by `wasmop build`.
    Ts,
    /// Go, built by `wasmop build`.
    Go,
    /// Go against controller-runtime's API (`guest-sdk/go/controller-runtime`), built by
    /// `wasmop build`.
    GoControllerRuntime,
}

/// A plugin could not be scaffolded.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// The name cannot name a plugin.
    #[error(
        "plugin name {0:?}: a plugin's name is a DNS label: 1-40 lowercase letters, digits and '-', starting with a letter"
    )]
    Name(String),
    /// The kind is not GROUP/VERSION/KIND.
    #[error("kind {0:?}: expected GROUP/VERSION/KIND (v1/ConfigMap for the core group)")]
    Kind(String),
    /// The folder exists.
    #[error("{0} already exists")]
    Exists(PathBuf),
    /// A file of the guest SDKs could not be read.
    #[error("reading {path} of the guest SDKs: {source}")]
    Sdk {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A plugin folder's `crd.yaml` is not a CRD whose types can be generated.
    #[error("{path}: {problem}")]
    Crd {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The kind a scaffolded plugin reconciles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrimaryKind(GroupVersionKind);

impl PrimaryKind {
    /// Parses `GROUP/VERSION/KIND`, or `VERSION/KIND` for the core group; the kind is checked as
    /// a guest's kinds are, and starts with a capital (it names a Python class).
    pub fn parse(text: &str) -> Result<Self, ScaffoldError> {
        let parts: Vec<&str> = text.split('/').collect();
        let (group, version, kind) = match parts.as_slice() {
            [version, kind] => ("", *version, *kind),
            [group, version, kind] => (*group, *version, *kind),
            _ => return Err(ScaffoldError::Kind(text.to_owned())),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let capital = kind.starts_with(|c: char| c.is_ascii_uppercase());
        if !capital || boundary::kind(&gvk).is_err() {
            return Err(ScaffoldError::Kind(text.to_owned()));
        }
        Ok(PrimaryKind(gvk))
    }

    /// The `k8s_openapi` type of a built-in kind (the core group, groups without a dot and
    /// `*.k8s.io`), by the crate's module layout.
    fn builtin_rust_type(&self) -> Option<String> {
        let PrimaryKind(gvk) = self;
        let module = match gvk.group.as_str() {
            "" => "core".to_owned(),
            group if !group.contains('.') => group.to_owned(),
            group => group.strip_suffix(".k8s.io")?.split('.').next()?.to_owned(),
        };
        Some(format!(
            "wasmop_guest::k8s_openapi::api::{module}::{}::{}",
            gvk.version, gvk.kind
        ))
    }
}

/// What `wasmop new` made.
#[derive(Debug)]
pub struct Created {
    /// The plugin's folder.
    pub folder: PathBuf,
    /// Every file written, in order.
    pub files: Vec<PathBuf>,
    /// The command that builds it, run in `folder`.
    pub build: String,
    /// The component the build writes, relative to `folder`.
    pub component: PathBuf,
}

/// Writes a `language` plugin named `name` reconciling `kind` into `parent/name`, built against
/// the guest SDKs in `sdk` (a checkout's `guest-sdk`); its README runs wasmop as `wasmop` (a
/// command, see [`wasmop_command`]).
pub fn create(
    language: Language,
    name: &str,
    kind: &PrimaryKind,
    parent: &Path,
    sdk: &Path,
    wasmop: &str,
) -> Result<Created, ScaffoldError> {
    check_name(name)?;
    let folder = parent.join(name);
    if folder.exists() {
        return Err(ScaffoldError::Exists(folder));
    }
    let values = Values::new(name, kind, sdk);
    let (sources, built_as) = sources(language, kind, sdk)?;
    let directory = match language {
        Language::Rust => "rust",
        Language::Python => "python",
        Language::Ts => "js",
        Language::Go | Language::GoControllerRuntime => "go",
    };
    let component = PathBuf::from(format!("{name}{built_as}.wasm"));
    let build = build_command(wasmop, sdk);
    let mut files = Vec::new();
    let readme = include_str!("templates/readme.md")
        .replace("@LANGUAGE@", language_name(language))
        .replace("@BUILD@", &build)
        .replace("@WASMOP@", wasmop)
        .replace("@HOST@", &host_crate(sdk).display().to_string())
        .replace("@COMPONENT@", &component.display().to_string());
    let mut all = vec![
        ("README.md".to_owned(), readme),
        (
            "fixtures/observes-its-generation.yaml".to_owned(),
            include_str!("templates/fixture-observes.yaml").to_owned(),
        ),
        (
            "fixtures/leaves-an-observed-one-alone.yaml".to_owned(),
            include_str!("templates/fixture-unchanged.yaml").to_owned(),
        ),
    ];
    all.extend(
        sources
            .into_iter()
            .map(|(path, text)| (format!("{directory}/{path}"), text)),
    );
    let all: Vec<(String, String)> = all
        .into_iter()
        .map(|(path, text)| (path.replace("@MODULE@", &values.module), values.fill(&text)))
        .collect();
    let custom = kind.builtin_rust_type().is_none();
    let crd = custom.then(|| values.fill(include_str!("templates/crd.yaml")));
    let target = types_target(directory, &folder.join(directory), &values.module);
    let generated = match &crd {
        Some(crd) => generated(crd, &folder.join("crd.yaml"), target.into_iter().collect())?,
        None => Vec::new(),
    };
    let crd = crd.map(|crd| (folder.join("crd.yaml"), crd));
    let all = all
        .into_iter()
        .map(|(path, text)| (folder.join(path), text));
    for (path, text) in crd.into_iter().chain(all).chain(generated) {
        write(&path, &text)?;
        files.push(path);
    }
    Ok(Created {
        folder,
        files,
        build,
        component,
    })
}

/// What `wasmop generate` did to one file of types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The file.
    pub path: PathBuf,
    /// Whether its text changed (with `check`: would change).
    pub changed: bool,
}

/// Writes the spec and status types of the custom resource in `folder/crd.yaml` (a plugin
/// folder `wasmop new` made) for each language folder it holds, or with `check` writes nothing
/// and says which would change.
pub fn generate(folder: &Path, check: bool) -> Result<Vec<Generated>, ScaffoldError> {
    let path = folder.join("crd.yaml");
    let crd = std::fs::read_to_string(&path).map_err(|source| ScaffoldError::Read {
        path: path.clone(),
        source,
    })?;
    let targets = LANGUAGE_FOLDERS.iter().filter_map(|directory| {
        let root = folder.join(directory);
        let module = python_package(&root).unwrap_or_default();
        root.is_dir()
            .then(|| types_target(directory, &root, &module))
            .flatten()
    });
    let targets: Vec<_> = targets.collect();
    if targets.is_empty() {
        return Err(ScaffoldError::Crd {
            path,
            problem: "no language folder (rust, python, js, go) beside it".into(),
        });
    }
    let mut done = Vec::new();
    for (file, text) in generated(&crd, &path, targets)? {
        let changed = std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str());
        if changed && !check {
            write(&file, &text)?;
        }
        done.push(Generated {
            path: file,
            changed,
        });
    }
    Ok(done)
}

/// Generates one language's types from a kind's name and its schema.
type Generator = fn(&str, &Value) -> String;

/// The language folders of a plugin folder, by name.
const LANGUAGE_FOLDERS: [&str; 4] = ["rust", "python", "js", "go"];

/// Where the generated types of the language folder `directory` (at `root`) go, and what
/// generates them; `module` names a Python plugin's package.
fn types_target(directory: &str, root: &Path, module: &str) -> Option<(PathBuf, Generator)> {
    let (file, generator): (PathBuf, Generator) = match directory {
        "rust" => (root.join("src/types.rs"), types::rust),
        "js" => (root.join("src/types.ts"), types::typescript),
        "go" => (root.join("types.go"), types::go),
        "python" => (root.join(module).join("types.py"), types::python),
        _ => return None,
    };
    Some((file, generator))
}

/// The package of a Python plugin folder: its one folder holding an `__init__.py`.
fn python_package(root: &Path) -> Option<String> {
    let entries = std::fs::read_dir(root).ok()?;
    entries
        .filter_map(Result::ok)
        .find(|entry| entry.path().join("__init__.py").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
}

/// The types generated from the CRD text `crd` (read from `path`) into each of `targets`.
fn generated(
    crd: &str,
    path: &Path,
    targets: Vec<(PathBuf, Generator)>,
) -> Result<Written, ScaffoldError> {
    let problem = |problem: &str| ScaffoldError::Crd {
        path: path.to_owned(),
        problem: problem.to_owned(),
    };
    let crd: Value = serde_saphyr::from_str(crd).map_err(|e| problem(&e.to_string()))?;
    let kind = crd.pointer("/spec/names/kind").and_then(Value::as_str);
    let kind = kind.ok_or_else(|| problem("no spec.names.kind"))?;
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    let versions = versions.ok_or_else(|| problem("no spec.versions"))?;
    let stored = versions
        .iter()
        .find(|v| v["storage"] == true)
        .or(versions.first());
    let schema = stored.and_then(|v| v.pointer("/schema/openAPIV3Schema"));
    let schema = schema.ok_or_else(|| problem("no openAPIV3Schema in its stored version"))?;
    Ok(targets
        .into_iter()
        .map(|(file, generate)| (file, generate(kind, schema)))
        .collect())
}

/// Files to write: their paths and texts.
type Written = Vec<(PathBuf, String)>;

/// Source files: paths under the language's folder, and their texts.
type Files = Vec<(String, String)>;

/// The language's source files and the suffix its build gives the component's name.
fn sources(
    language: Language,
    kind: &PrimaryKind,
    sdk: &Path,
) -> Result<(Files, &'static str), ScaffoldError> {
    let file = |path: &str, text: &str| (path.to_owned(), text.to_owned());
    Ok(match language {
        Language::Rust => {
            let primary = match kind.builtin_rust_type() {
                Some(path) => format!("use {path} as Primary;"),
                None => include_str!("templates/rust-custom.rs")
                    .trim_end()
                    .to_owned(),
            };
            let lib = include_str!("templates/rust-lib.rs").replace("@PRIMARY@", &primary);
            let cargo = include_str!("templates/rust-Cargo.toml");
            (
                vec![file("Cargo.toml", cargo), file("src/lib.rs", &lib)],
                "",
            )
        }
        Language::Python => {
            let init = include_str!("templates/python-init.py");
            (vec![file("@MODULE@/__init__.py", init)], "-python")
        }
        Language::Ts => {
            let index = include_str!("templates/ts-index.ts");
            let tsconfig = include_str!("templates/ts-tsconfig.json");
            let files = vec![file("src/index.ts", index), file("tsconfig.json", tsconfig)];
            (files, "-js")
        }
        Language::Go => {
            let main = include_str!("templates/go-main.go");
            let module = include_str!("templates/go-mod");
            (vec![file("main.go", main), file("go.mod", module)], "-go")
        }
        Language::GoControllerRuntime => {
            let main = include_str!("templates/go-cr-main.go");
            let (module, sums) = controller_runtime_module(sdk)?;
            let files = vec![
                file("main.go", main),
                file("go.mod", &module),
                file("go.sum", &sums),
            ];
            (files, "-go")
        }
    })
}

/// The go.mod and go.sum of a plugin against the SDK's controller-runtime module: that module's
/// requirements (so the plugin builds offline with the versions the SDK was tested with), plus
/// the module itself and the guest SDK replaced by their folders.
fn controller_runtime_module(sdk: &Path) -> Result<(String, String), ScaffoldError> {
    let read = |name: &str| {
        let path = sdk.join("go/controller-runtime").join(name);
        std::fs::read_to_string(&path).map_err(|source| ScaffoldError::Sdk { path, source })
    };
    let requirements: String = read("go.mod")?
        .lines()
        .skip_while(|line| !line.starts_with("require"))
        .take_while(|line| !line.starts_with("replace"))
        .map(|line| format!("{line}\n"))
        .collect();
    let module = format!(
        "module @MODULE@\n\ngo 1.26.0\n\nrequire sigs.k8s.io/controller-runtime v0.0.0\n\n{}\nreplace (\n\tsigs.k8s.io/controller-runtime => @SDK@/go/controller-runtime\n\twasmop.dev/guest => @SDK@/go\n)\n",
        requirements.trim_end()
    );
    Ok((module, read("go.sum")?))
}

fn language_name(language: Language) -> &'static str {
    match language {
        Language::Rust => "Rust",
        Language::Python => "Python",
        Language::Ts => "TypeScript",
        Language::Go => "Go",
        Language::GoControllerRuntime => "Go (controller-runtime's API)",
    }
}

/// The placeholders of the templates and what they stand for.
struct Values {
    pairs: Vec<(&'static str, String)>,
    module: String,
}

impl Values {
    fn new(name: &str, kind: &PrimaryKind, sdk: &Path) -> Self {
        let module = name.replace('-', "_");
        let pairs = vec![
            ("@NAME@", name.to_owned()),
            ("@MODULE@", module.clone()),
            ("@KIND@", kind.0.kind.clone()),
            ("@GROUP@", kind.0.group.clone()),
            ("@VERSION@", kind.0.version.clone()),
            ("@API_VERSION@", kind.0.api_version()),
            ("@PLURAL@", format!("{}s", kind.0.kind.to_lowercase())),
            ("@SINGULAR@", kind.0.kind.to_lowercase()),
            ("@RBAC_GROUP@", rbac_group(&kind.0.group).to_owned()),
            ("@SDK@", sdk.display().to_string()),
        ];
        Values { pairs, module }
    }

    fn fill(&self, template: &str) -> String {
        self.pairs
            .iter()
            .fold(template.to_owned(), |text, (key, value)| {
                text.replace(key, value)
            })
    }
}

/// A group as kubebuilder's RBAC markers write it: `core` for the core group.
fn rbac_group(group: &str) -> &str {
    match group {
        "" => "core",
        group => group,
    }
}

/// The host crate of the checkout whose guest SDKs are `sdk`: what `cargo install --path` takes.
pub fn host_crate(sdk: &Path) -> PathBuf {
    sdk.parent().unwrap_or(sdk).join("host")
}

/// How a user runs the binary at `exe`: `wasmop` when the first `wasmop` on `path` (a `PATH`
/// value) is that binary, else its absolute path.
pub fn wasmop_command(exe: &Path, path: Option<&OsStr>) -> String {
    let same = |candidate: &Path| candidate.canonicalize().ok() == exe.canonicalize().ok();
    let first = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("wasmop"))
        .find(|candidate| candidate.is_file());
    match first {
        Some(found) if same(&found) => "wasmop".to_owned(),
        _ => exe.display().to_string(),
    }
}

/// How the plugin is built: `wasmop build .`, naming the guest SDKs unless they are the ones
/// `wasmop build` finds by itself (the checkout the binary was built from).
fn build_command(wasmop: &str, sdk: &Path) -> String {
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk");
    match own.canonicalize().ok().as_deref() == Some(sdk) {
        true => format!("{wasmop} build ."),
        false => format!("{wasmop} build --sdk {} .", sdk.display()),
    }
}

/// Refuses a name that is not a DNS label of at most 40 characters starting with a letter.
fn check_name(name: &str) -> Result<(), ScaffoldError> {
    let letter = name.starts_with(|c: char| c.is_ascii_lowercase());
    match letter && name.len() <= 40 && boundary::dns_label(name) {
        true => Ok(()),
        false => Err(ScaffoldError::Name(name.to_owned())),
    }
}

fn write(path: &Path, text: &str) -> Result<(), ScaffoldError> {
    let failed = |source| ScaffoldError::Write {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    std::fs::write(path, text).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_with_and_without_a_group() {
        let core = PrimaryKind::parse("v1/ConfigMap").unwrap();
        assert_eq!(core.0.api_version(), "v1");
        let custom = PrimaryKind::parse("example.wasmop.dev/v1alpha1/WebApp").unwrap();
        assert_eq!(custom.0.api_version(), "example.wasmop.dev/v1alpha1");
        for bad in [
            "ConfigMap",
            "v1/configMap",
            "a/b/c/D",
            "ex ample/v1/X",
            "v1/Config-Map",
        ] {
            assert!(PrimaryKind::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn built_in_kinds_use_k8s_openapi_types_and_custom_ones_a_struct_of_their_own() {
        let rust = |text: &str| PrimaryKind::parse(text).unwrap().builtin_rust_type();
        let core = rust("v1/ConfigMap").unwrap();
        assert_eq!(core, "wasmop_guest::k8s_openapi::api::core::v1::ConfigMap");
        let apps = rust("apps/v1/Deployment").unwrap();
        assert_eq!(apps, "wasmop_guest::k8s_openapi::api::apps::v1::Deployment");
        let rbac = rust("rbac.authorization.k8s.io/v1/Role").unwrap();
        assert_eq!(rbac, "wasmop_guest::k8s_openapi::api::rbac::v1::Role");
        assert_eq!(rust("example.wasmop.dev/v1/Widget"), None);
    }

    #[test]
    fn wasmop_is_named_by_its_path_unless_path_finds_this_binary_first() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("build/wasmop");
        let installed = dir.path().join("bin");
        let other = dir.path().join("other");
        for folder in [exe.parent().unwrap(), &installed, &other] {
            std::fs::create_dir_all(folder).unwrap();
        }
        std::fs::write(&exe, "binary").unwrap();
        std::os::unix::fs::symlink(&exe, installed.join("wasmop")).unwrap();
        std::fs::write(other.join("wasmop"), "another binary").unwrap();
        let path = |dirs: &[&Path]| std::env::join_paths(dirs).unwrap();
        let by_path = exe.display().to_string();
        assert_eq!(wasmop_command(&exe, None), by_path);
        let without = path(&[dir.path()]);
        assert_eq!(wasmop_command(&exe, Some(&without)), by_path);
        let with = path(&[dir.path(), &installed]);
        assert_eq!(wasmop_command(&exe, Some(&with)), "wasmop");
        let shadowed = path(&[&other, &installed]);
        assert_eq!(wasmop_command(&exe, Some(&shadowed)), by_path);
    }

    #[test]
    fn names_are_dns_labels() {
        for good in ["hello", "web-app2"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Hello",
            "2web",
            "web-",
            "web_app",
            "../x",
            &"a".repeat(41),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_plugin_folder_has_its_sources_fixtures_and_readme_filled_in() {
        let parent = tempfile::tempdir().unwrap();
        let kind = PrimaryKind::parse("example.wasmop.dev/v1/Widget").unwrap();
        let sdk = Path::new("/opt/wasmop/guest-sdk");
        let created = create(
            Language::Python,
            "my-widgets",
            &kind,
            parent.path(),
            sdk,
            "/opt/wasmop/target/debug/wasmop",
        )
        .unwrap();
        let init = created.folder.join("python/my_widgets/__init__.py");
        assert!(created.files.contains(&init));
        let text = std::fs::read_to_string(&init).unwrap();
        assert!(
            text.contains("class Widget(Object, group=\"example.wasmop.dev\", version=\"v1\")")
        );
        let placeholders = [
            "@NAME@",
            "@MODULE@",
            "@KIND@",
            "@GROUP@",
            "@VERSION@",
            "@SDK@",
        ];
        assert!(!placeholders.iter().any(|p| text.contains(p)), "{text}");
        let fixture = created.folder.join("fixtures/observes-its-generation.yaml");
        let fixture = std::fs::read_to_string(fixture).unwrap();
        assert!(fixture.contains("my-widgets.wasmop.dev/observed-generation: \"3\""));
        assert_eq!(created.component, Path::new("my-widgets-python.wasm"));
        let build = "/opt/wasmop/target/debug/wasmop build --sdk /opt/wasmop/guest-sdk .";
        assert_eq!(created.build, build);
        let readme = std::fs::read_to_string(created.folder.join("README.md")).unwrap();
        let test = "/opt/wasmop/target/debug/wasmop test my-widgets-python.wasm fixtures/";
        assert!(readme.contains(test), "{readme}");
        let push = "/opt/wasmop/target/debug/wasmop push my-widgets-python.wasm registry.example.com/team/my-widgets:v1";
        assert!(readme.contains(push), "{readme}");
        assert!(readme.contains("metadata: {name: my-widgets}"), "{readme}");
        let again = create(
            Language::Python,
            "my-widgets",
            &kind,
            parent.path(),
            sdk,
            "wasmop",
        );
        assert!(matches!(again, Err(ScaffoldError::Exists(_))));
    }
}
