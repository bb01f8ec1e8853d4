//! CPU profiles of the convergence runs, for `make bench-profile`: with `WASMOP_BENCH_PROFILE`
//! naming a directory, `perf record` samples each operator (499 Hz, call graphs) from the first
//! WebApp created until the last converged, and the samples become a flame graph,
//! `<operator>-<webapps>.svg` in that directory (`inferno-collapse-perf` and `inferno-flamegraph`
//! from the `inferno` crate). Plugin code is named from its compiled artifact, which wasmop maps
//! from an ELF file of the compile cache (`wasm[0]::function[N]`).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;
use tokio::process::{Child, Command};

/// The environment variable naming the directory profiles are written to.
pub const ENV: &str = "WASMOP_BENCH_PROFILE";
/// Samples per second.
const FREQUENCY: &str = "499";

/// A `perf record` attached to one operator.
pub struct Profile {
    perf: Child,
    data: PathBuf,
    svg: PathBuf,
    title: String,
}

impl Profile {
    /// Starts sampling process `pid` when profiling was asked for, naming the graph `name`.
    pub fn start(pid: u32, name: &str, title: &str) -> anyhow::Result<Option<Profile>> {
        let Some(dir) = std::env::var_os(ENV) else {
            return Ok(None);
        };
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir)?;
        let data = std::env::temp_dir().join(format!("wasmop-bench-{name}.perf.data"));
        let perf = Command::new("perf")
            .args([
                "record",
                "-q",
                "-g",
                "-F",
                FREQUENCY,
                "-p",
                &pid.to_string(),
                "-o",
            ])
            .arg(&data)
            .stdout(Stdio::null())
            .spawn()
            .context("starting perf record (is perf installed?)")?;
        Ok(Some(Profile {
            perf,
            data,
            svg: dir.join(format!("{name}.svg")),
            title: title.to_owned(),
        }))
    }

    /// Stops sampling and draws the flame graph.
    pub async fn finish(mut self) -> anyhow::Result<PathBuf> {
        let pid = self.perf.id().context("perf record exited early")?;
        Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .await?;
        self.perf.wait().await?;
        draw(&self.data, &self.svg, &self.title).await?;
        let _ = std::fs::remove_file(&self.data);
        eprintln!("    flame graph: {}", self.svg.display());
        Ok(self.svg)
    }
}

/// `perf script` of `data`, folded and drawn into `svg`.
async fn draw(data: &Path, svg: &Path, title: &str) -> anyhow::Result<()> {
    let script = Command::new("perf")
        .args(["script", "-i"])
        .arg(data)
        .stderr(Stdio::null())
        .output()
        .await
        .context("perf script")?;
    let folded = pipe(Command::new("inferno-collapse-perf"), script.stdout).await?;
    let mut graph = Command::new("inferno-flamegraph");
    graph.args(["--title", title, "--width", "1600"]);
    std::fs::write(svg, pipe(graph, folded).await?)?;
    Ok(())
}

/// Runs `command` with `input` on its stdin; returns its stdout.
async fn pipe(mut command: Command, input: Vec<u8>) -> anyhow::Result<Vec<u8>> {
    use tokio::io::AsyncWriteExt;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {command:?} (cargo install inferno)"))?;
    let mut stdin = child.stdin.take().context("a piped stdin")?;
    let writer = tokio::spawn(async move {
        stdin.write_all(&input).await?;
        stdin.shutdown().await
    });
    let out = child.wait_with_output().await?;
    writer.await??;
    anyhow::ensure!(out.status.success(), "{command:?} failed");
    Ok(out.stdout)
}
