//! An operator under measurement: a child process whose CPU time and memory are read from
//! `/proc/<pid>` — its CPU time with that of the children it has reaped (wasmop's compile
//! workers) — and, where the machine allows, from a memory cgroup of its own that holds it and
//! every process it starts; stopped with SIGTERM like a Pod, and killed if it does not stop.

use std::time::Duration;

use anyhow::Context;
use tokio::process::{Child, Command};

use crate::cgroup::Group;

/// How long a stopped operator may take to exit before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(20);

/// What `/proc` says about a process at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// User plus system CPU time since it started, its reaped children's included.
    pub cpu: Duration,
    /// Resident set size, in MiB.
    pub rss: f64,
    /// The resident set's high-water mark since it started, in MiB.
    pub peak: f64,
    /// The file-backed part of the resident set (program, libraries, mapped files), in MiB.
    pub file_rss: f64,
    /// Its proportional set size: the resident set with each page shared with other processes
    /// (the same program's text, say) divided among them, in MiB; summed over processes, shared
    /// pages count once.
    pub pss: f64,
    /// Its cgroup's memory now and its high-water mark — the process and its children, page
    /// cache included, as a Pod's limit counts them — in MiB, where it has a cgroup.
    pub pod: Option<(f64, f64)>,
}

/// A running operator.
pub struct Operator {
    child: Child,
    pid: u32,
    ticks_per_second: u64,
    group: Option<Group>,
}

impl Operator {
    /// Starts `command`, its output going to `log`, in a memory cgroup named `name` where one
    /// can be made.
    pub fn start(
        mut command: Command,
        log: &std::path::Path,
        name: &str,
    ) -> anyhow::Result<Operator> {
        let group = Group::make(name);
        if let Some(group) = &group {
            command = group.wrap(&command);
        }
        let file = std::fs::File::create(log)?;
        let child = command
            .stdout(file.try_clone()?)
            .stderr(file)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {command:?}"))?;
        let pid = child.id().context("the operator exited at once")?;
        Ok(Operator {
            child,
            pid,
            ticks_per_second: clock_ticks(),
            group,
        })
    }

    /// Its process ID.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its CPU time and memory now; fails if it has exited.
    pub fn sample(&mut self) -> anyhow::Result<Sample> {
        if let Some(status) = self.child.try_wait()? {
            anyhow::bail!("the operator exited ({status})");
        }
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid))?;
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))?;
        let rollup = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", self.pid))?;
        // Fields after the parenthesised command name; utime, stime, cutime and cstime are the
        // 14th to 17th.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .context("a /proc stat line")?
            .1
            .split_whitespace()
            .collect();
        let ticks = fields[11..15]
            .iter()
            .map(|f| f.parse::<u64>())
            .sum::<Result<u64, _>>()?;
        Ok(Sample {
            cpu: Duration::from_secs_f64(ticks as f64 / self.ticks_per_second as f64),
            rss: kib_field(&status, "VmRSS:") / 1024.0,
            peak: kib_field(&status, "VmHWM:") / 1024.0,
            file_rss: kib_field(&status, "RssFile:") / 1024.0,
            pss: kib_field(&rollup, "Pss:") / 1024.0,
            pod: self.group.as_ref().map(Group::memory).transpose()?,
        })
    }

    /// Kills it with SIGKILL, as a crashing node would, and waits until it is gone.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        self.child.kill().await?;
        Ok(())
    }

    /// Sends SIGTERM and waits for it to exit, killing it after the grace period.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .await;
        if tokio::time::timeout(STOP_GRACE, self.child.wait())
            .await
            .is_err()
        {
            self.child.kill().await?;
        }
        Ok(())
    }
}

fn kib_field(status: &str, name: &str) -> f64 {
    status
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0)
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`), 100 where it cannot be asked.
fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
        .unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kib_fields_as_written_by_the_kernel() {
        let status = "Name:\tx\nVmHWM:\t  20480 kB\nVmRSS:\t   10240 kB\n";
        assert_eq!(kib_field(status, "VmRSS:"), 10240.0);
        assert_eq!(kib_field(status, "VmHWM:"), 20480.0);
        assert_eq!(kib_field(status, "VmSwap:"), 0.0);
    }

    #[tokio::test]
    async fn a_busy_process_shows_cpu_time_and_memory() -> anyhow::Result<()> {
        let log = tempfile_path();
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 30",
        ]);
        let mut operator = Operator::start(command, &log, "process-test")?;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let sample = operator.sample()?;
        assert!(sample.cpu > Duration::ZERO, "{sample:?}");
        assert!(sample.rss > 0.0 && sample.peak >= sample.rss, "{sample:?}");
        assert!(sample.pss > 0.0 && sample.pss <= sample.rss, "{sample:?}");
        if let Some((now, peak)) = sample.pod {
            assert!(now > 0.0 && peak >= now, "{sample:?}");
        }
        operator.stop().await?;
        Ok(())
    }

    fn tempfile_path() -> std::path::PathBuf {
        std::env::temp_dir().join(format!("wasmop-bench-process-{}.log", std::process::id()))
    }
}
