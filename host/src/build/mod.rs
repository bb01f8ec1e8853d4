//! `wasmop build`: a plugin's sources into a WebAssembly component, in every guest language, with
//! one command line. A plugin directory is a Rust crate or workspace, a Python package's folder, a
//! TypeScript/JavaScript project or a Go main package — or a folder made by `wasmop new`, which
//! stands for its language folder. Each language's toolchain does the compiling ([`rust`],
//! [`python`], [`js`], [`go`]); what every build shares is here: which plugins, where each
//! component goes, and the check that what was written is a valid component.
//!
//! Where a component goes: with plugin directories, into the working directory as
//! `<plugin>[-<language>].wasm`, as `go build` puts a binary; with none, every plugin of the
//! checkout into `<checkout>/target/components/` (what `make guests`, CI and the tests use);
//! with `-o FILE`, into FILE (one component). Progress goes to stderr; stdout has the path of each
//! component written, one per line.
//!
//! Invariants: every refusal of the command line (a missing directory, a folder holding no
//! plugin, `-o` with more than one component) comes before anything is built or written; a
//! component replaces its destination only once it has validated.
//!
//! Imports: `distribution` (to read a component's imports); nothing that runs plugins.

mod component;
mod go;
mod js;
mod python;
mod rust;
mod snapshot;
mod step;

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use snapshot::SnapshotError;
pub use step::{BuildError, NotLoadable};

/// A guest language, named as its folder in a plugin made by `wasmop new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Language {
    /// Rust: a crate or a cargo workspace of cdylibs, built for wasm32-wasip2.
    Rust,
    /// Python: a folder holding a package named after the plugin, built with componentize-py.
    Python,
    /// TypeScript or JavaScript: `src/index.ts` or `src/index.js`, built with componentize-js.
    Js,
    /// Go: a main package with its go.mod, built for wasip1 and made a component.
    Go,
}

impl Language {
    /// Every language, in the order the checkout's plugins are built.
    pub const ALL: [Language; 4] = [Language::Rust, Language::Python, Language::Js, Language::Go];

    /// Its folder's name in a plugin made by `wasmop new`, and its messages' prefix.
    pub fn folder(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::Js => "js",
            Language::Go => "go",
        }
    }

    /// The language whose sources `dir` holds, if any.
    fn of(dir: &Path) -> Option<Language> {
        let has = |file: &str| dir.join(file).exists();
        if has("Cargo.toml") {
            Some(Language::Rust)
        } else if has("go.mod") {
            Some(Language::Go)
        } else if has("src/index.ts") || has("src/index.js") {
            Some(Language::Js)
        } else if python::package_dir(dir).is_some() {
            Some(Language::Python)
        } else {
            None
        }
    }
}

/// What to build.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The plugin directories; none: every plugin of the checkout.
    pub dirs: Vec<PathBuf>,
    /// Only plugins of this language.
    pub language: Option<Language>,
    /// The file to write the one component to.
    pub output: Option<PathBuf>,
}

/// The checkout the build runs in: its guest SDKs and where toolchains and builds live.
#[derive(Debug, Clone)]
pub struct Checkout {
    /// The checkout's root.
    pub root: PathBuf,
}

impl Checkout {
    /// The checkout whose guest SDKs are `sdk` (`<checkout>/guest-sdk`).
    pub fn of_sdk(sdk: &Path) -> Self {
        Checkout {
            root: sdk.parent().unwrap_or(sdk).to_owned(),
        }
    }

    fn sdk(&self, language: Language) -> PathBuf {
        self.root.join("guest-sdk").join(language.folder())
    }

    fn target(&self) -> PathBuf {
        self.root.join("target")
    }
}

/// One plugin directory to build, and the name its components are given.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plugin {
    dir: PathBuf,
    name: String,
}

/// A component a language's toolchain wrote, the file name it is installed as, and how long
/// building its plugin took.
#[derive(Debug)]
struct Built {
    file: PathBuf,
    name: String,
    took: std::time::Duration,
}

/// Builds what `request` asks for in `checkout`; returns the components written, in order.
pub fn build(checkout: &Checkout, request: &Request) -> Result<Vec<PathBuf>, BuildError> {
    let started = Instant::now();
    let output = request.output.as_deref().map(absolute).transpose()?;
    let plan = plan(checkout, request)?;
    if let Some(output) = &output {
        check_output(output, &plan)?;
    }
    let place = |name: &str| match (&output, request.dirs.is_empty()) {
        (Some(output), _) => output.clone(),
        (None, false) => std::env::current_dir().unwrap_or_default().join(name),
        (None, true) => checkout.target().join("components").join(name),
    };
    let mut written = Vec::new();
    for (language, plugins) in plan {
        let mut done = |built: Built| {
            let destination = place(&built.name);
            component::install(language, &built, &destination)?;
            println!("{}", destination.display());
            written.push(destination);
            Ok(())
        };
        match language {
            Language::Rust => rust::build(checkout, &plugins, output.is_some(), &mut done)?,
            Language::Python => python::build(checkout, &plugins, &mut done)?,
            Language::Js => js::build(checkout, &plugins, &mut done)?,
            Language::Go => go::build(checkout, &plugins, &mut done)?,
        }
    }
    let seconds = started.elapsed().as_secs();
    eprintln!(
        "[build] built {} component(s) in {seconds} s",
        written.len()
    );
    Ok(written)
}

/// The plugins to build, by language, in [`Language::ALL`]'s order.
fn plan(
    checkout: &Checkout,
    request: &Request,
) -> Result<Vec<(Language, Vec<Plugin>)>, BuildError> {
    let mut plan: Vec<(Language, Vec<Plugin>)> = Vec::new();
    let mut add = |language: Language, plugin: Plugin| match plan
        .iter_mut()
        .find(|(planned, _)| *planned == language)
    {
        Some((_, plugins)) => plugins.push(plugin),
        None => plan.push((language, vec![plugin])),
    };
    if request.dirs.is_empty() {
        for language in Language::ALL {
            if request.language.is_none_or(|only| only == language) {
                for dir in checkout_plugins(checkout, language) {
                    add(language, plugin(&dir)?);
                }
            }
        }
    } else {
        for dir in &request.dirs {
            let (language, dir) = plugin_dir(dir, request.language)?;
            add(language, plugin(&dir)?);
        }
    }
    plan.sort_by_key(|(language, _)| *language);
    match plan.is_empty() {
        true => Err(BuildError::Nothing),
        false => Ok(plan),
    }
}

/// The checkout's own plugins of `language`: the `plugins/` and `tests/guests/` workspaces for
/// Rust, every `plugins/*/<language>` and `tests/guests/*/<language>` folder otherwise.
fn checkout_plugins(checkout: &Checkout, language: Language) -> Vec<PathBuf> {
    if language == Language::Rust {
        return vec![
            checkout.root.join("plugins"),
            checkout.root.join("tests/guests"),
        ];
    }
    let mut dirs: Vec<PathBuf> = ["plugins", "tests/guests"]
        .into_iter()
        .flat_map(|folder| {
            std::fs::read_dir(checkout.root.join(folder))
                .into_iter()
                .flatten()
        })
        .flatten()
        .map(|entry| entry.path().join(language.folder()))
        .filter(|dir| dir.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// `dir` as an absolute plugin directory and its language: a folder made by `wasmop new` stands
/// for its language folder (`only`'s, when it holds several).
fn plugin_dir(dir: &Path, only: Option<Language>) -> Result<(Language, PathBuf), BuildError> {
    let dir = absolute(dir)?;
    if !dir.is_dir() {
        return Err(BuildError::NoDir(dir));
    }
    let wanted = |language: Language| only.is_none_or(|only| only == language);
    if let Some(language) = Language::of(&dir).filter(|language| wanted(*language)) {
        return Ok((language, dir));
    }
    let inside: Vec<(Language, PathBuf)> = Language::ALL
        .into_iter()
        .filter(|language| wanted(*language))
        .map(|language| (language, dir.join(language.folder())))
        .filter(|(language, inner)| Language::of(inner) == Some(*language))
        .collect();
    match inside.as_slice() {
        [(language, inner)] => Ok((*language, inner.clone())),
        [] => Err(BuildError::NoPlugin { dir, only }),
        _ => Err(BuildError::Several(dir)),
    }
}

/// The plugin in `dir`, named after the directory (its parent's, when the directory is named after
/// its language: `plugins/webapp/go` is `webapp`).
fn plugin(dir: &Path) -> Result<Plugin, BuildError> {
    let file_name = |dir: &Path| {
        dir.file_name()
            .map(|name| name.to_string_lossy().into_owned())
    };
    let mut name = file_name(dir).unwrap_or_default();
    if Language::ALL
        .iter()
        .any(|language| language.folder() == name)
    {
        name = dir.parent().and_then(file_name).unwrap_or_default();
    }
    let first = name.starts_with(|c: char| c.is_ascii_alphanumeric());
    let rest = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    match first && rest {
        true => Ok(Plugin {
            dir: dir.to_owned(),
            name,
        }),
        false => Err(BuildError::Unnamed(dir.to_owned())),
    }
}

/// Refuses `-o` unless the plan builds one component, and a directory as its file.
fn check_output(output: &Path, plan: &[(Language, Vec<Plugin>)]) -> Result<(), BuildError> {
    let plugins: usize = plan.iter().map(|(_, plugins)| plugins.len()).sum();
    if plugins != 1 {
        return Err(BuildError::OutputNeedsOne);
    }
    match output.is_dir() {
        true => Err(BuildError::OutputIsDir(output.to_owned())),
        false => Ok(()),
    }
}

/// `path` made absolute against the working directory (without resolving links).
fn absolute(path: &Path) -> Result<PathBuf, BuildError> {
    std::path::absolute(path).map_err(|source| BuildError::Io {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests;
