//! The host's imports run one way: the graph of its top-level modules (arrows from `crate::`
//! paths outside `#[cfg(test)]` code, doc links included) has no cycle, the engine is imported
//! only by what runs plugins, the offline test host by nothing of the running host, and the
//! contract crate depends on no runtime; inside `distribution`, `plugins` and `sources`, no two
//! files import each other either. A new arrow that breaks one of these fails here, naming
//! the modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The modules that may import `runtime`: those that run plugins.
const RUNS_PLUGINS: [&str; 7] = [
    "controller",
    "manager",
    "plugins",
    "record",
    "sources",
    "testing",
    "webhook",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The modules of folder `dir`: its files and folders, but the roots (`lib`, `main`, `mod`).
fn modules(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| match path.extension() {
            Some(ext) if ext == "rs" => path.file_stem().map(|s| s.to_string_lossy().into_owned()),
            None if path.is_dir() => path.file_name().map(|s| s.to_string_lossy().into_owned()),
            _ => None,
        })
        .filter(|name| !["lib", "main", "mod"].contains(&name.as_str()))
        .collect()
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The modules `text` names after `prefix` (`crate::`, say), alone or in a `use prefix{…}` group.
fn named(text: &str, prefix: &str) -> BTreeSet<String> {
    let ident = |rest: &str| -> String {
        rest.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices(prefix) {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find(';').unwrap_or(group.len());
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group[..end].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && !c.is_whitespace() => {
                        names.insert(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.insert(ident(rest));
        }
    }
    names
}

/// Arrows between the top-level modules of `src`, from code outside `#[cfg(test)]`.
fn graph(src: &Path) -> Graph {
    graph_of(src, "crate::")
}

/// Arrows between the modules of folder `dir`, whose path in the crate is `path` (`crate::` for
/// the crate's own folder): from code outside `#[cfg(test)]` that names a sibling after `path`,
/// or after `super::` in a file whose parent is `dir`'s module.
fn graph_of(dir: &Path, path: &str) -> Graph {
    let modules = modules(dir);
    let mut graph = Graph::new();
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    for file in files {
        let relative = file.strip_prefix(dir).unwrap();
        let first = relative.components().next().unwrap().as_os_str();
        let from = Path::new(first).with_extension("");
        let from = from.to_string_lossy().into_owned();
        if !modules.contains(&from) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut names = named(code, path);
        let child_of_dir = relative.components().count() == 1 || relative.ends_with("mod.rs");
        if path != "crate::" && child_of_dir && relative.components().count() <= 2 {
            names.extend(named(code, "super::"));
        }
        let to: Vec<String> = names
            .into_iter()
            .filter(|to| modules.contains(to) && *to != from)
            .collect();
        graph.entry(from).or_default().extend(to);
    }
    graph
}

/// Every cycle of `graph`, one line each.
fn cycles(graph: &Graph) -> Vec<String> {
    graph
        .keys()
        .filter_map(|module| cycle_through(graph, module))
        .map(|cycle| format!("{} -> {}", cycle.join(" -> "), cycle[0]))
        .collect()
}

/// A cycle through `start`, if any: the modules on it, `start` first.
fn cycle_through(graph: &Graph, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_owned(), vec![start.to_owned()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in graph.get(&at).into_iter().flatten() {
            if next == start {
                return Some(path);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

fn importers<'a>(graph: &'a Graph, module: &str) -> Vec<&'a str> {
    graph
        .iter()
        .filter(|(_, to)| to.contains(module))
        .map(|(from, _)| from.as_str())
        .collect()
}

#[test]
fn the_host_modules_form_no_cycle() {
    let graph = graph(&src());
    assert!(graph.len() > 10, "read too few modules: {graph:?}");
    let cycles = cycles(&graph);
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

/// The modules whose files must import one another one way too: where plugins come from, how
/// they are installed, and the sources that ask for installs.
const ONE_WAY_INSIDE: [&str; 3] = ["distribution", "plugins", "sources"];

#[test]
fn no_two_files_of_the_plugin_modules_import_each_other() {
    for module in ONE_WAY_INSIDE {
        let graph = graph_of(&src().join(module), &format!("crate::{module}::"));
        assert!(graph.len() > 2, "read too few files of {module}: {graph:?}");
        let cycles = cycles(&graph);
        assert!(
            cycles.is_empty(),
            "import cycles in {module}:\n{}",
            cycles.join("\n")
        );
    }
}

#[test]
fn only_what_runs_plugins_imports_the_runtime() {
    let graph = graph(&src());
    let outside: Vec<&str> = importers(&graph, "runtime")
        .into_iter()
        .filter(|from| !RUNS_PLUGINS.contains(from))
        .collect();
    assert!(outside.is_empty(), "runtime imported by {outside:?}");
}

#[test]
fn nothing_of_the_running_host_imports_the_offline_test_host() {
    let graph = graph(&src());
    let importers = importers(&graph, "testing");
    assert!(importers.is_empty(), "testing imported by {importers:?}");
}

#[test]
fn of_the_binary_only_the_test_subcommand_imports_the_offline_test_host() {
    let mut files = vec![src().join("main.rs")];
    rust_files(&src().join("commands"), &mut files);
    let importers: Vec<PathBuf> = files
        .into_iter()
        .filter(|file| !file.ends_with("commands/test.rs"))
        .filter(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            text.contains("wasmop::testing") || text.contains("crate::testing")
        })
        .collect();
    assert!(importers.is_empty(), "testing imported by {importers:?}");
}

#[test]
fn the_contract_depends_on_no_runtime() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("contract/Cargo.toml");
    let manifest = std::fs::read_to_string(manifest).unwrap();
    let dependencies = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap();
    for forbidden in ["wasmtime", "tokio", "kube =", "kube.", "hyper"] {
        let named = dependencies
            .lines()
            .any(|line| line.trim_start().starts_with(forbidden));
        assert!(
            !named,
            "the contract depends on {forbidden}:\n{dependencies}"
        );
    }
}

#[test]
fn the_checker_sees_arrows_and_cycles() {
    let code = "use crate::a::X;\nuse crate::{b::Y, c};\nfn f() { crate::d::g() }\n#[cfg(test)]\nuse crate::e;";
    let code = code.split("#[cfg(test)]").next().unwrap();
    let names: Vec<String> = named(code, "crate::").into_iter().collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
    let inside = "use super::a::X;\nuse super::{b, c::Y};\nuse crate::m::d;\nuse super::super::e;";
    let names: Vec<String> = named(inside, "super::").into_iter().collect();
    assert_eq!(names, ["a", "b", "c", "super"]);
    let names: Vec<String> = named(inside, "crate::m::").into_iter().collect();
    assert_eq!(names, ["d"]);
    let mut graph = Graph::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    assert_eq!(cycle_through(&graph, "a"), None);
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(cycle_through(&graph, "a").unwrap(), ["a", "b", "c"]);
}
