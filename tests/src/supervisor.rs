//! Running a server so that it cannot outlive the process that started it.
//!
//! Each server runs under `sh` whose stdin is a pipe from this process. The shell starts the
//! server in the background, reports its pid, and waits; a watcher reads the pipe and, when it
//! closes (this process dropped the handle, panicked, or was killed), stops the server with
//! SIGTERM and, after a grace period, SIGKILL. Once the server has exited and the pipe is closed,
//! the shell removes the directory it was given (logs survive until then, for error reports).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::Error;

const SCRIPT: &str = r#"
dir=$1; log=$2; shift 2
exec 3<&0
"$@" >"$log" 2>&1 </dev/null 3<&- &
pid=$!
echo "$pid"
(
  read -r _ <&3
  kill -TERM "$pid" 2>/dev/null
  i=0
  while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null
) &
watcher=$!
exec 3<&-
wait "$pid" 2>/dev/null
wait "$watcher"
rm -rf "$dir"
"#;

/// A server (or an operator under test) tied to the lifetime of this handle and of this process.
#[derive(Debug)]
pub struct Supervised {
    name: &'static str,
    pid: u32,
    log: PathBuf,
    shell: Child,
    lifeline: Option<ChildStdin>,
}

impl Supervised {
    /// Starts `program args…` with `env` added to its environment and its output in `log`;
    /// `dir` is removed once it has exited.
    pub fn spawn(
        name: &'static str,
        program: &Path,
        args: &[String],
        env: &[(&str, &str)],
        dir: &Path,
        log: PathBuf,
    ) -> Result<Self, Error> {
        let mut shell = Command::new("sh")
            .arg("-c")
            .arg(SCRIPT)
            .arg("wasmop-supervisor")
            .arg(dir)
            .arg(&log)
            .arg(program)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(Error::io(format!("starting {name} under sh")))?;
        let lifeline = shell.stdin.take();
        let mut first_line = String::new();
        let stdout = shell.stdout.take().expect("stdout is piped");
        BufReader::new(stdout)
            .read_line(&mut first_line)
            .map_err(Error::io(format!("reading the pid of {name}")))?;
        let pid = first_line.trim().parse().map_err(|_| Error::Io {
            context: format!("starting {name}"),
            source: std::io::Error::other(format!("supervisor printed {first_line:?}, not a pid")),
        })?;
        Ok(Supervised {
            name,
            pid,
            log,
            shell,
            lifeline,
        })
    }

    /// The file holding the server's stdout and stderr.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The server's own pid (not the supervising shell's).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the server is still running.
    pub fn running(&self) -> bool {
        process_running(self.pid)
    }

    /// The error that describes this server having exited.
    pub fn exited_error(&self) -> Error {
        Error::Exited {
            name: self.name,
            log: self.log.clone(),
            log_tail: self.log_tail(30),
        }
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Stops the server and waits until it and its supervisor have exited.
    pub fn stop(&mut self) {
        drop(self.lifeline.take());
        let _ = self.shell.wait();
    }
}

/// Whether `pid` names a live (not zombie) process.
pub fn process_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_the_handle_stops_the_server_and_removes_the_dir() {
        let dir = tempfile::tempdir().unwrap().keep();
        let log = dir.join("sleep.log");
        let server =
            Supervised::spawn("sleep", Path::new("sleep"), &["600".into()], &[], &dir, log)
                .unwrap();
        let pid = server.pid();
        assert!(server.running());
        drop(server);
        assert!(!process_running(pid), "server {pid} outlived its handle");
        assert!(!dir.exists(), "{} was not removed", dir.display());
    }

    #[test]
    fn a_server_that_exits_is_reported_with_its_log() {
        let dir = tempfile::tempdir().unwrap().keep();
        let args = [
            "-c".to_owned(),
            "echo listen: address already in use; exit 3".to_owned(),
        ];
        let server =
            Supervised::spawn("sh", Path::new("sh"), &args, &[], &dir, dir.join("sh.log")).unwrap();
        while server.running() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let error = server.exited_error();
        assert!(error.is_port_clash(), "{error}");
        assert!(
            dir.exists(),
            "the log must survive until the handle is dropped"
        );
        drop(server);
        assert!(!dir.exists(), "{} was not removed", dir.display());
    }
}
