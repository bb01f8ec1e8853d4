//! The book (`book/src`) and the README as a reader meets them: every link and anchor resolves,
//! every page is in the summary, every repository path a page names in code exists, every
//! command's options, every setting and every metric of the binary is in the reference (and the
//! reference names no setting the binary lacks), and every YAML and JSON sample parses — the
//! policy and config file samples as the host reads them. The tutorial's steps run in
//! `first_reconciler`, the CRD table is checked in `deploy`, the runbooks by tests/monitoring/test,
//! and `book/build` (in `make test`) fails on any warning mdBook gives.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::CommandFactory;

/// Where links to the repository's own files point, so they work on GitHub and in the built book.
const REPOSITORY: &str = "https://github.com/wasmop/wasmop/";
/// The top-level folders whose paths a page may name in code (`host/tests/all/book.rs`).
const ROOTS: [&str; 9] = [
    "host/",
    "tests/",
    "deploy/",
    "guest-sdk/",
    "plugins/",
    "wit/",
    "scripts/",
    "book/",
    ".ci/",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the checkout exists")
}

/// One page: its path in the checkout and its text, includes expanded.
struct Page {
    path: PathBuf,
    text: String,
}

/// Every page of the book, the README and SECURITY.md.
fn pages() -> Vec<Page> {
    let root = repo();
    let mut paths = vec![root.join("README.md"), root.join("SECURITY.md")];
    collect_markdown(&root.join("book/src"), &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a page reads");
            let text = expand_includes(&path, &text);
            Page { path, text }
        })
        .collect()
}

fn collect_markdown(dir: &Path, into: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("book/src lists")
        .map(|entry| entry.expect("an entry").path())
        .collect();
    entries.sort();
    for path in entries {
        // A link into the repository (design/results: the benchmarks' figures) holds no pages.
        if path.is_symlink() {
            continue;
        }
        if path.is_dir() {
            collect_markdown(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "md") {
            into.push(path);
        }
    }
}

/// `text` with each `{{#include FILE}}` (mdBook's, optionally `FILE:FROM:`) replaced by the file.
fn expand_includes(page: &Path, text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{#include ") {
        let end = rest[start..].find("}}").expect("an include closes") + start;
        let spec = &rest[start + "{{#include ".len()..end];
        let file = spec.split(':').next().unwrap_or(spec).trim();
        let included = page.parent().unwrap().join(file);
        let body = std::fs::read_to_string(&included)
            .unwrap_or_else(|error| panic!("{} includes {file}: {error}", page.display()));
        out.push_str(&rest[..start]);
        out.push_str(&body);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The text of each line outside fenced code blocks, with the info string of the fence it is in
/// (`None` outside one).
fn lines_with_fences(text: &str) -> Vec<(Option<&str>, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        if let Some(info) = line.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(info.trim()),
            };
            continue;
        }
        lines.push((fence, line));
    }
    lines
}

/// The anchor mdBook (and GitHub) give a heading: lower case, markup and punctuation dropped,
/// spaces as dashes.
fn slug(heading: &str) -> String {
    let mut text = heading.replace('`', "");
    while let (Some(open), Some(mid)) = (text.find('['), text.find("](")) {
        let Some(close) = text[mid..].find(')').map(|at| at + mid) else {
            break;
        };
        text = format!(
            "{}{}{}",
            &text[..open],
            &text[open + 1..mid],
            &text[close + 1..]
        );
    }
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings.
fn anchors(text: &str) -> BTreeSet<String> {
    lines_with_fences(text)
        .into_iter()
        .filter(|(fence, _)| fence.is_none())
        .filter_map(|(_, line)| {
            let hashes = line.chars().take_while(|c| *c == '#').count();
            (1..=6)
                .contains(&hashes)
                .then(|| line[hashes..].strip_prefix(' '))
                .flatten()
                .map(slug)
        })
        .collect()
}

/// The targets of a page's markdown links, outside code.
fn links(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for (fence, line) in lines_with_fences(text) {
        if fence.is_some() {
            continue;
        }
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    targets
}

fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join("")
}

/// Why a link from `page` to `target` does not resolve, if it does not.
fn broken(page: &Path, target: &str) -> Option<String> {
    let (file, anchor) = match target.split_once('#') {
        Some((file, anchor)) => (file, Some(anchor)),
        None => (target, None),
    };
    let path = if let Some(inside) = file.strip_prefix(REPOSITORY) {
        if inside.is_empty() {
            return None;
        }
        let Some(inside) = inside
            .strip_prefix("blob/main/")
            .or_else(|| inside.strip_prefix("tree/main/"))
        else {
            return Some("a repository link not to blob/main/ or tree/main/".into());
        };
        repo().join(inside)
    } else if file.starts_with("http://") || file.starts_with("https://") {
        return None;
    } else if file.is_empty() {
        page.to_owned()
    } else {
        page.parent().unwrap().join(file)
    };
    if !path.exists() {
        return Some(format!("{} does not exist", path.display()));
    }
    let anchor = anchor?;
    if path.extension().is_none_or(|ext| ext != "md") {
        return None;
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let text = expand_includes(&path, &text);
    (!anchors(&text).contains(anchor))
        .then(|| format!("{} has no heading #{anchor}", path.display()))
}

#[test]
fn every_link_and_anchor_of_the_book_and_the_readme_resolves() {
    let pages = pages();
    assert!(pages.len() > 30, "the book has its pages");
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in &pages {
        for target in links(&page.text) {
            checked += 1;
            if let Some(why) = broken(&page.path, &target) {
                failures.push(format!("{}: ({target}): {why}", page.path.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found");
    assert!(
        failures.is_empty(),
        "broken links:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_page_is_in_the_summary() {
    let src = repo().join("book/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    let mut files = Vec::new();
    collect_markdown(&src, &mut files);
    let orphans: Vec<String> = files
        .iter()
        .map(|file| file.strip_prefix(&src).unwrap().display().to_string())
        .filter(|file| file != "SUMMARY.md" && !listed.contains(file))
        .collect();
    assert!(orphans.is_empty(), "pages not in SUMMARY.md: {orphans:?}");
}

/// The repository paths a page names in code spans and code blocks.
fn named_paths(text: &str) -> BTreeSet<String> {
    text.split(|c: char| c == '`' || c.is_whitespace() || "()\"',;=".contains(c))
        .map(|token| token.trim_end_matches([':', '.']))
        .filter(|token| ROOTS.iter().any(|root| token.starts_with(root)))
        .filter(|token| !token.contains(['*', '<', '>', '|', '{', '}', '…', '$', '[']))
        .map(|token| token.split('#').next().unwrap().to_owned())
        .collect()
}

#[test]
fn every_repository_path_a_page_names_exists() {
    let root = repo();
    let mut missing = Vec::new();
    for page in pages() {
        for path in named_paths(&page.text) {
            if !root.join(&path).exists() && !generated(&path) {
                missing.push(format!("{}: {path}", page.path.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths named but absent:\n{}",
        missing.join("\n")
    );
}

/// Paths that exist once something is built or run, not in a checkout.
fn generated(path: &str) -> bool {
    path.starts_with("tests/bench/results/flamegraphs") || path.contains("/target/")
}

/// The long options of a subcommand of `wasmop`, without `--help`.
fn options(command: &clap::Command) -> Vec<String> {
    command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .filter_map(|arg| arg.get_long())
        .filter(|long| *long != "help")
        .map(|long| format!("--{long}"))
        .collect()
}

fn book_page(page: &str) -> String {
    std::fs::read_to_string(repo().join("book/src").join(page)).unwrap()
}

fn documents(text: &str, option: &str) -> bool {
    text.contains(&format!("`{option}`")) || text.contains(&format!("`{option} "))
}

#[test]
fn every_setting_of_wasmop_run_is_in_the_reference_and_no_other() {
    let cli = wasmop::config::Cli::command();
    let run = cli.find_subcommand("run").expect("wasmop run");
    let settings = options(run);
    assert!(settings.len() > 40, "run's settings: {settings:?}");
    let page = book_page("reference/configuration.md");
    let undocumented: Vec<&String> = settings.iter().filter(|o| !documents(&page, o)).collect();
    assert!(
        undocumented.is_empty(),
        "settings not in reference/configuration.md: {undocumented:?}"
    );
    let stale: Vec<String> = page
        .lines()
        .filter(|line| line.starts_with("| `--"))
        .flat_map(|line| line.split('|').nth(1).unwrap_or_default().split('`'))
        .filter_map(|cell| cell.split_whitespace().next())
        .filter(|option| option.starts_with("--") && !settings.iter().any(|s| s == option))
        .map(str::to_owned)
        .collect();
    assert!(
        stale.is_empty(),
        "reference/configuration.md documents settings wasmop lacks: {stale:?}"
    );
}

#[test]
fn every_command_and_its_options_are_in_the_reference() {
    let cli = wasmop::config::Cli::command();
    let page = book_page("reference/commands.md");
    let mut missing = Vec::new();
    let mut seen = 0;
    for command in cli.get_subcommands().filter(|c| !c.is_hide_set()) {
        let name = command.get_name();
        if name == "run" {
            continue;
        }
        seen += 1;
        let heading = format!("## wasmop {name}\n");
        let Some(start) = page.find(&heading) else {
            missing.push(format!("the section {heading:?}"));
            continue;
        };
        let section = &page[start + heading.len()..];
        let section = &section[..section.find("\n## ").unwrap_or(section.len())];
        for option in options(command) {
            if !documents(section, &option) {
                missing.push(format!("wasmop {name} {option}"));
            }
        }
    }
    assert!(seen >= 9, "the commands: {seen}");
    assert!(
        missing.is_empty(),
        "not in reference/commands.md: {missing:?}"
    );
}

/// The metric names the host's source registers: string literals of its families' prefixes.
fn metric_names(path: &Path, into: &mut BTreeSet<String>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            metric_names(&entry.unwrap().path(), into);
        }
        return;
    }
    let text = std::fs::read_to_string(path).unwrap();
    for literal in text.split('"').skip(1).step_by(2) {
        let is_name = literal.chars().all(|c| c.is_ascii_lowercase() || c == '_');
        let prefixed = literal.starts_with("wasmop_") || literal.starts_with("controller_runtime_");
        if is_name && prefixed {
            into.insert(literal.to_owned());
        }
    }
}

#[test]
fn every_metric_the_host_registers_is_in_the_reference() {
    let mut names = BTreeSet::new();
    metric_names(&repo().join("host/src/metrics.rs"), &mut names);
    for part in [
        "cache",
        "controller",
        "http",
        "plugins",
        "runtime",
        "sources",
        "webhook",
        "shard",
    ] {
        metric_names(&repo().join("host/src").join(part), &mut names);
    }
    assert!(names.len() > 20, "the metrics found: {names:?}");
    let page = book_page("reference/metrics.md");
    let missing: Vec<&String> = names
        .iter()
        .filter(|name| !page.contains(name.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "metrics not in reference/metrics.md: {missing:?}"
    );
}

/// The fenced blocks of a page whose info string starts with `language`.
fn blocks(text: &str, language: &str) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    let mut open = false;
    for (fence, line) in lines_with_fences(text) {
        match fence {
            Some(info) if info.split_whitespace().next() == Some(language) => {
                if !open {
                    blocks.push(String::new());
                    open = true;
                }
                let block = blocks.last_mut().unwrap();
                block.push_str(line);
                block.push('\n');
            }
            _ => open = false,
        }
    }
    blocks
}

#[test]
fn every_yaml_and_json_sample_parses() {
    let mut parsed = 0;
    for page in pages() {
        for block in blocks(&page.text, "yaml") {
            if let Err(error) = serde_saphyr::from_str::<serde_json::Value>(&block) {
                panic!(
                    "{}: a YAML sample does not parse ({error}):\n{block}",
                    page.path.display()
                );
            }
            parsed += 1;
        }
        for block in blocks(&page.text, "json") {
            for line in block.lines() {
                if let Err(error) = serde_json::from_str::<serde_json::Value>(line) {
                    panic!(
                        "{}: a JSON sample does not parse ({error}):\n{line}",
                        page.path.display()
                    );
                }
            }
            parsed += 1;
        }
    }
    assert!(parsed >= 10, "samples parsed: {parsed}");
}

#[test]
fn the_policy_samples_are_policies_the_host_reads() {
    let samples = blocks(&book_page("reference/policy.md"), "yaml");
    assert!(!samples.is_empty(), "reference/policy.md has a sample");
    for sample in samples {
        if let Err(error) = wasmop::config::parse_policy(&sample) {
            panic!("reference/policy.md: the host refuses the sample ({error}):\n{sample}");
        }
    }
}

#[test]
fn the_config_file_sample_is_one_the_host_reads() {
    let page = book_page("reference/configuration.md");
    let samples = blocks(&page, "yaml");
    let sample = samples
        .iter()
        .find(|sample| sample.contains("leader-elect"))
        .expect("reference/configuration.md has a config file sample");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wasmop.yaml");
    std::fs::write(&file, sample).unwrap();
    let args = ["wasmop", "run", "--config", file.to_str().unwrap()];
    if let Err(error) = wasmop::config::Cli::load_from(args) {
        panic!("the host refuses the config file sample ({error}):\n{sample}");
    }
}

#[test]
fn the_slug_of_a_heading_is_mdbooks() {
    assert_eq!(
        slug("A plugin's arguments and environment"),
        "a-plugins-arguments-and-environment"
    );
    assert_eq!(slug("`wasmop build`"), "wasmop-build");
    assert_eq!(slug("20,000 WebApps"), "20000-webapps");
    assert_eq!(
        slug("wasmop beside controller-runtime, kube-rs"),
        "wasmop-beside-controller-runtime-kube-rs"
    );
}

#[test]
fn the_testing_guides_fixtures_are_fixtures_and_its_webhook_fixtures_pass() {
    let page = book_page("guides/testing.md");
    let samples: Vec<String> = blocks(&page, "yaml")
        .into_iter()
        .filter(|sample| sample.contains("\nexpect:"))
        .collect();
    assert!(samples.len() >= 4, "the guide's fixtures: {samples:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut webhooks = 0;
    for (index, sample) in samples.iter().enumerate() {
        if let Err(error) = wasmop::fixture::Fixture::parse(sample) {
            panic!("guides/testing.md: a sample is no fixture ({error}):\n{sample}");
        }
        let webhook = ["validate:", "default:", "convert:"]
            .iter()
            .any(|call| sample.contains(&format!("\n{call}")));
        if webhook {
            std::fs::write(dir.path().join(format!("{index}.yaml")), sample).unwrap();
            webhooks += 1;
        }
    }
    assert_eq!(webhooks, 3, "the guide's webhook fixtures");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wasmop"))
        .arg("test")
        .arg(crate::common::component("webapp"))
        .arg(dir.path())
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the guide's webhook fixtures against webapp:\n{text}"
    );
}
