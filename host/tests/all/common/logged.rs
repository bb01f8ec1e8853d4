//! A `wasmop run` child whose log lines are kept, and echoed with its name, so a test can read
//! what it said (a lost Lease, a relist, a panic).

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};

/// A running host and its log so far.
pub struct Logged {
    /// Its name in the echoed lines.
    pub name: &'static str,
    /// The process.
    pub child: tokio::process::Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Logged {
    /// Spawns `command` with its stderr captured.
    pub fn spawn(name: &'static str, mut command: tokio::process::Command) -> anyhow::Result<Self> {
        let mut child = command.stderr(Stdio::piped()).spawn()?;
        let stderr = child.stderr.take().expect("piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                eprintln!("[{name}] {line}");
                sink.lock().unwrap().push(line);
            }
        });
        Ok(Logged { name, child, lines })
    }

    /// Every line it has written so far.
    pub fn log(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// How many of its lines contain `text`.
    pub fn count(&self, text: &str) -> usize {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(text))
            .count()
    }

    /// Fails unless the process still runs and has not panicked.
    pub fn assert_healthy(&mut self) -> anyhow::Result<()> {
        if let Some(exit) = self.child.try_wait()? {
            anyhow::bail!("{} exited with {exit}", self.name);
        }
        anyhow::ensure!(self.count("panicked") == 0, "{} panicked", self.name);
        Ok(())
    }
}
