//! `wasmop test`: runs a plugin against fixture files (or recordings) offline and prints each
//! difference; `--accept` writes the expectations that differ back into the files.

use std::path::Path;

use anyhow::Context;

use wasmop::config::TestArgs;
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
    let mut failed = 0;
    for file in &files {
        let passed = test_fixture(&tester, file, args.accept).await?;
        failed += usize::from(!passed);
    }
    let plugin = tester.plugin().name();
    println!("{plugin}: {} fixtures, {failed} failed", files.len());
    Ok(failed == 0)
}

/// Runs the fixture in `file`, printing its verdict and differences (a file that is no fixture
/// fails with what is wrong), and with `accept`, rewriting the expectations that differ in the
/// file's own text; whether it passed.
async fn test_fixture(tester: &Tester, file: &Path, accept: bool) -> anyhow::Result<bool> {
    let fixture = match Fixture::load(file) {
        Ok(fixture) => fixture,
        Err(error) => {
            println!("FAIL  {}", file.display());
            error
                .to_string()
                .lines()
                .for_each(|line| println!("        {line}"));
            return Ok(false);
        }
    };
    let checked = tester.check(&fixture).await;
    let name = fixture.name.clone();
    let name = name.unwrap_or_else(|| file.display().to_string());
    let verdict = if checked.passed() { "ok  " } else { "FAIL" };
    println!("{verdict}  {name} ({})", file.display());
    for difference in &checked.differences {
        println!("        {difference}");
    }
    if accept && !checked.passed() {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let expected = checked.accepted(&fixture.expect);
        let edited = wasmop::testing::accept(&text, &fixture.expect, &expected);
        let edited = edited.unwrap_or_else(|error| {
            println!("        written anew, its formatting not kept: {error}");
            let whole = Fixture {
                expect: expected,
                ..fixture
            };
            whole.to_yaml()
        });
        std::fs::write(file, edited).with_context(|| format!("rewriting {}", file.display()))?;
        println!(
            "        accepted: {} now expects what was done",
            file.display()
        );
    }
    Ok(checked.passed())
}
