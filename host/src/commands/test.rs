//! `wasmop test`: runs a plugin against fixture files (or recordings) offline and prints each
//! difference; `--accept` writes the expectations that differ back into the files.

use std::path::Path;

use anyhow::Context;

use serde_json::json;
use wasmop::config::{ReportFormat, TestArgs};
use wasmop::fixture::{Fixture, fixture_files};
use wasmop::record::Recorder;
use wasmop::runtime::RuntimeConfig;
use wasmop::testing::Tester;

/// Runs the plugin in `args.plugin` against every fixture `args.fixtures` names, printing each
/// one's verdict and differences (and with `--accept`, rewriting the expectations of those that
/// failed); false if any failed.
pub(crate) async fn test_plugin(args: TestArgs) -> anyhow::Result<bool> {
    let runtime = wasmop::runtime::Runtime::new(RuntimeConfig::default())?;
    let tester = Tester::load(&runtime, &args.plugin).await?;
    let mut paths = args.fixtures.clone();
    if let Some(dir) = &args.replay {
        let folder = Recorder::folder(dir, tester.plugin().name());
        anyhow::ensure!(
            folder.is_dir(),
            "no recordings of plugin {} in {} ({} is not a folder)",
            tester.plugin().name(),
            dir.display(),
            folder.display()
        );
        paths.push(folder);
    }
    let files = fixture_files(&paths)?;
    anyhow::ensure!(!files.is_empty(), "no fixture files in {paths:?}");
    let report = Report(args.format);
    let (mut failed, mut accepted) = (0, 0);
    for file in &files {
        match test_fixture(&tester, file, args.accept, report).await? {
            Verdict::Passed => {}
            Verdict::Failed => failed += 1,
            Verdict::Accepted => accepted += 1,
        }
    }
    report.summary(tester.plugin().name(), files.len(), failed, accepted);
    Ok(failed == 0)
}

/// What became of one fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// The plugin did what it expects.
    Passed,
    /// It did not (or the file is no fixture).
    Failed,
    /// It did not, and `--accept` rewrote it to expect what was done: the run still succeeds.
    Accepted,
}

/// Prints results as [`ReportFormat`] says.
#[derive(Debug, Clone, Copy)]
struct Report(ReportFormat);

impl Report {
    /// One fixture's verdict and its differences (and notes, such as an accepted rewrite).
    fn fixture(self, file: &Path, name: Option<&str>, passed: bool, differences: &[String]) {
        match self.0 {
            ReportFormat::Text => {
                let verdict = if passed { "ok  " } else { "FAIL" };
                match name {
                    Some(name) => println!("{verdict}  {name} ({})", file.display()),
                    None => println!("{verdict}  {}", file.display()),
                }
                differences
                    .iter()
                    .flat_map(|difference| difference.lines())
                    .for_each(|line| println!("        {line}"));
            }
            ReportFormat::Json => {
                let line = json!({
                    "file": file.display().to_string(),
                    "name": name,
                    "passed": passed,
                    "differences": differences,
                });
                println!("{line}");
            }
        }
    }

    /// The run's totals.
    fn summary(self, plugin: &str, fixtures: usize, failed: usize, accepted: usize) {
        match self.0 {
            ReportFormat::Text if accepted > 0 => println!(
                "{plugin}: {fixtures} fixtures, {failed} failed, {accepted} accepted (rewritten)"
            ),
            ReportFormat::Text => println!("{plugin}: {fixtures} fixtures, {failed} failed"),
            ReportFormat::Json => {
                let line = json!({
                    "plugin": plugin,
                    "fixtures": fixtures,
                    "failed": failed,
                    "accepted": accepted,
                });
                println!("{line}");
            }
        }
    }
}

/// Runs the fixture in `file`, printing its verdict and differences (a file that is no fixture
/// fails with what is wrong), and with `accept`, rewriting the expectations that differ in the
/// file's own text.
async fn test_fixture(
    tester: &Tester,
    file: &Path,
    accept: bool,
    report: Report,
) -> anyhow::Result<Verdict> {
    let fixture = match Fixture::load(file) {
        Ok(fixture) => fixture,
        Err(error) => {
            report.fixture(file, None, false, &[error.to_string()]);
            return Ok(Verdict::Failed);
        }
    };
    let checked = tester.check(&fixture).await;
    let shown = fixture.name.clone();
    let shown = shown.unwrap_or_else(|| file.display().to_string());
    let mut notes: Vec<String> = checked.differences.iter().map(|d| d.to_string()).collect();
    if accept && !checked.passed() {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let expected = checked.accepted(&fixture.expect);
        let edited = wasmop::testing::accept(&text, &fixture.expect, &expected);
        let edited = edited.unwrap_or_else(|error| {
            notes.push(format!("written anew, its formatting not kept: {error}"));
            let whole = Fixture {
                expect: expected,
                ..fixture
            };
            whole.to_yaml()
        });
        std::fs::write(file, edited).with_context(|| format!("rewriting {}", file.display()))?;
        notes.push(format!(
            "accepted: {} now expects what was done",
            file.display()
        ));
        report.fixture(file, Some(&shown), false, &notes);
        return Ok(Verdict::Accepted);
    }
    report.fixture(file, Some(&shown), checked.passed(), &notes);
    Ok(if checked.passed() {
        Verdict::Passed
    } else {
        Verdict::Failed
    })
}
