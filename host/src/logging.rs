//! The host's log output: one event, one line, whatever text a guest put in it.
//!
//! `tracing`'s formatter writes each event into one buffer and hands it to the writer in one
//! `write`; a guest's log message, stdout line or error text lands in that buffer verbatim in the
//! text format. [`OneLine`] escapes every line break and control character of the buffer but its
//! final newline, so no guest text can end the host's line and start one of its own (a forged
//! line naming another plugin), nor rewrite the terminal. The JSON format already escapes them;
//! the writer leaves its lines as they are.

use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

/// Writes each event as exactly one line to the inner writer, escaping the breaks inside it.
#[derive(Debug, Clone, Copy)]
pub struct OneLine<M> {
    inner: M,
    /// Whether the formatter colours its output (the escape character is then the host's own).
    ansi: bool,
}

impl<M> OneLine<M> {
    /// Escapes what `inner` is given; `ansi` keeps the escape character for the formatter's colours.
    pub fn new(inner: M, ansi: bool) -> Self {
        OneLine { inner, ansi }
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for OneLine<M> {
    type Writer = LineWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter {
            inner: self.inner.make_writer(),
            ansi: self.ansi,
        }
    }
}

/// One event's writer: see [`OneLine`].
pub struct LineWriter<W> {
    inner: W,
    ansi: bool,
}

impl<W: Write> Write for LineWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write_all(&one_line(buf, self.ansi))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// `event` with every line break and control character but a final newline escaped (`\n`, `\r`,
/// `\u001b`: escapes JSON reads too, as they can only be inside a string there), so it prints as
/// one line; `ansi` keeps the escape character.
pub fn one_line(event: &[u8], ansi: bool) -> Vec<u8> {
    let text = String::from_utf8_lossy(event);
    let (body, newline) = match text.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (&*text, ""),
    };
    if !body.chars().any(|c| breaks(c, ansi)) {
        return event.to_vec();
    }
    let mut line = String::with_capacity(body.len() + 16);
    for c in body.chars() {
        match c {
            '\n' => line.push_str("\\n"),
            '\r' => line.push_str("\\r"),
            c if breaks(c, ansi) => line.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => line.push(c),
        }
    }
    line.push_str(newline);
    line.into_bytes()
}

/// Whether `c` could end a line or move the cursor: control characters (a tab aside, and the
/// escape character when the host colours its own output) and Unicode's line and paragraph
/// separators.
fn breaks(c: char, ansi: bool) -> bool {
    match c {
        '\t' => false,
        '\u{1b}' => !ansi,
        '\u{2028}' | '\u{2029}' => true,
        c => c.is_control(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(text: &str, ansi: bool) -> String {
        String::from_utf8(one_line(text.as_bytes(), ansi)).unwrap()
    }

    #[test]
    fn a_forged_line_stays_inside_the_line_that_carried_it() {
        let event = "INFO plugin=evil hello\n2026-01-01T00:00:00Z ERROR plugin=webapp deleted\n";
        let line = escaped(event, false);
        assert_eq!(line.lines().count(), 1);
        assert_eq!(
            line,
            "INFO plugin=evil hello\\n2026-01-01T00:00:00Z ERROR plugin=webapp deleted\n"
        );
    }

    #[test]
    fn returns_separators_and_terminal_escapes_are_escaped() {
        let line = escaped("a\rb\u{2028}c\u{85}d\u{1b}[2Ke\u{0}\n", false);
        assert_eq!(line, "a\\rb\\u2028c\\u0085d\\u001b[2Ke\\u0000\n");
        assert_eq!(
            escaped("\u{1b}[32mINFO\u{1b}[0m x\ty\n", true),
            "\u{1b}[32mINFO\u{1b}[0m x\ty\n"
        );
    }

    #[test]
    fn an_escaped_json_line_stays_json() {
        let event = "{\"message\":\"a\u{2028}b\u{85}\"}\n";
        let line = escaped(event, false);
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["message"], "a\u{2028}b\u{85}");
    }

    #[test]
    fn a_clean_line_is_written_as_it_came() {
        assert_eq!(
            escaped("{\"message\":\"a\\nb\"}\n", false),
            "{\"message\":\"a\\nb\"}\n"
        );
        assert_eq!(escaped("no newline", false), "no newline");
    }

    #[test]
    fn the_writer_writes_one_line_per_event() {
        let mut out = LineWriter {
            inner: Vec::new(),
            ansi: false,
        };
        out.write_all(b"one\ntwo\n").unwrap();
        out.write_all(b"three\n").unwrap();
        assert_eq!(String::from_utf8(out.inner).unwrap(), "one\\ntwo\nthree\n");
    }
}
