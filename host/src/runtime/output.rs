//! Guest stdout and stderr, written line by line to `tracing` under the plugin's name, at once
//! in the guest's call (so in its reconcile's span), not by a task of its own.
//!
//! The last lines of stderr are kept per instance so a trap can be reported with what the guest
//! printed just before it (a Rust guest prints its panic message there, then traps). Lines are
//! cut at [`MAX_LINE`] bytes and the kept tail at [`KEPT`] bytes, so a guest cannot grow host
//! memory by writing without newlines.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// The longest line passed to the log; longer output is split.
pub(crate) const MAX_LINE: usize = 4096;
/// How much recent stderr is kept for error reports.
pub(crate) const KEPT: usize = 2048;

/// Which stream a guest wrote to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// One guest instance's stdout or stderr.
#[derive(Clone)]
pub(crate) struct GuestOutput {
    plugin: Arc<str>,
    stream: Stream,
    state: Arc<Mutex<Lines>>,
}

#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
    kept: String,
}

impl GuestOutput {
    /// An output stream of `plugin`'s guest.
    pub(crate) fn new(plugin: Arc<str>, stream: Stream) -> Self {
        GuestOutput {
            plugin,
            stream,
            state: Arc::default(),
        }
    }

    /// The most recent output (at most [`KEPT`] bytes), including an unfinished last line.
    pub(crate) fn recent(&self) -> String {
        let lines = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut recent = lines.kept.clone();
        recent.push_str(&String::from_utf8_lossy(&lines.partial));
        recent.trim_end().to_owned()
    }

    /// Forgets what was kept, e.g. before a warm instance's next reconcile.
    pub(crate) fn clear(&self) {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .kept
            .clear();
    }

    fn write(&self, bytes: &[u8]) {
        let mut lines = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for &byte in bytes {
            if byte == b'\n' || lines.partial.len() >= MAX_LINE {
                let line = String::from_utf8_lossy(&lines.partial).into_owned();
                lines.partial.clear();
                self.emit(&line);
                lines.keep(&line);
            }
            if byte != b'\n' {
                lines.partial.push(byte);
            }
        }
    }

    fn emit(&self, line: &str) {
        match self.stream {
            Stream::Stdout => tracing::info!(plugin = %self.plugin, stream = "stdout", "{line}"),
            Stream::Stderr => tracing::warn!(plugin = %self.plugin, stream = "stderr", "{line}"),
        }
    }
}

impl Lines {
    fn keep(&mut self, line: &str) {
        self.kept.push_str(line);
        self.kept.push('\n');
        if self.kept.len() > KEPT {
            let mut cut = self.kept.len() - KEPT;
            while !self.kept.is_char_boundary(cut) {
                cut += 1;
            }
            self.kept.drain(..cut);
        }
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        GuestOutput::write(self, &bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(MAX_LINE)
    }
}

#[async_trait::async_trait]
impl Pollable for GuestOutput {
    async fn ready(&mut self) {}
}

impl AsyncWrite for GuestOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.write(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_tail_of_what_was_written() {
        let out = GuestOutput::new("p".into(), Stream::Stderr);
        out.write(b"first line\nsecond ");
        out.write(b"line\nunfinished");
        assert_eq!(out.recent(), "first line\nsecond line\nunfinished");
        out.clear();
        assert_eq!(out.recent(), "unfinished");
    }

    #[test]
    fn bounds_memory_for_output_without_newlines() {
        let out = GuestOutput::new("p".into(), Stream::Stdout);
        out.write(&vec![b'x'; 10 * MAX_LINE]);
        let state = out.state.lock().unwrap();
        assert!(state.partial.len() <= MAX_LINE);
        assert!(state.kept.len() <= KEPT);
    }
}
