//! Text for people on standard output and standard error: the one way the binary writes it
//! (`print!` and `eprint!` are denied in the crate). Two things hold for every line:
//!
//! - **Nothing panics on a stream that went away.** `println!` panics on `EPIPE`
//!   (`hostmax ... | head -1`) and on `EIO` (a terminal hung up when an ssh session dropped),
//!   and a panic would lose the `--json` report still to be written. [`print_stdout`] says
//!   once on stderr that standard output is gone and drops what it would have shown; the run
//!   goes on, writes its outputs and ends with its own exit code. A stderr that is gone is
//!   dropped silently (there is nowhere left to say so).
//! - **No control character from input data reaches the terminal** ([`escape_text`]): file
//!   names, host names and error texts of the system all pass through it, so a name holding
//!   ESC or BEL cannot move the cursor, clear the screen or forge a line.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io;
#[cfg(not(test))]
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to standard output failed: nothing more is tried there.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Writes `text` (its line breaks kept, every other control character escaped) to standard
/// output. When standard output is closed or fails, says so once on stderr and drops the
/// text, then and afterwards; never panics.
pub fn print_stdout(text: &str) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let text = escape_lines(text);
    // Unit tests print through the macros, which the test harness captures.
    #[cfg(test)]
    #[allow(clippy::print_stdout)]
    let written: io::Result<()> = {
        print!("{text}");
        Ok(())
    };
    #[cfg(not(test))]
    let written = {
        let mut out = io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    };
    if let Err(e) = written {
        if !STDOUT_GONE.swap(true, Ordering::Relaxed) {
            print_stderr(&format!("{}\n", stdout_gone_note(&e)));
        }
    }
}

/// What is said when standard output went away.
fn stdout_gone_note(e: &io::Error) -> String {
    let why = if e.raw_os_error() == Some(libc::EPIPE) {
        "closed".to_string()
    } else {
        format!("failing ({e})")
    };
    format!(
        "hostmax: standard output is {why}: the rest of what it would show is dropped (the output files and the exit code are not affected)"
    )
}

/// Writes `text` (its line breaks kept, every other control character escaped) to standard
/// error; a standard error that is gone is ignored, never a panic.
pub fn print_stderr(text: &str) {
    let text = escape_lines(text);
    #[cfg(test)]
    #[allow(clippy::print_stderr)]
    {
        eprint!("{text}");
    }
    #[cfg(not(test))]
    {
        let mut err = io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
    }
}

/// `eprintln!` that cannot panic and lets no control character of its arguments through:
/// one line on standard error ([`print_stderr`]).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::stdio::print_stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Text from input data (a report's host name, a device's path, the name it was given, an
/// error of the system naming a file) as a terminal may show it: every control character (C0
/// such as a newline, a carriage return or the ESC that starts an ANSI escape; DEL; C1 such as
/// CSI) written as an escape (`\n`, `\x1b`, `\u{9b}`), so a report read by `merge` or a file
/// named on the command line cannot clear the screen, move the cursor or forge a line. The
/// one escaping function of text that reaches a terminal: every line [`print_stdout`] and
/// [`print_stderr`] write passes through it.
pub fn escape_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A text made of lines for a terminal, each line passed through [`escape_text`]: whatever
/// input data reached it unescaped, only its own line breaks stay.
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && c.is_control()) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&escape_text(line));
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_line_breaks_kept() {
        assert_eq!(
            escape_text("a\x1b[2J\nb\r\t\x7f\u{9b}c"),
            r"a\x1b[2J\nb\r\t\x7f\u{9b}c"
        );
        assert_eq!(escape_lines("x\x1by\nz\x07"), "x\\x1by\nz\\x07");
        assert!(matches!(escape_lines("plain\ntext\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_closed_stdout_is_named_once() {
        let closed = io::Error::from_raw_os_error(libc::EPIPE);
        assert!(stdout_gone_note(&closed).contains("standard output is closed"));
        let hung_up = io::Error::from_raw_os_error(libc::EIO);
        assert!(stdout_gone_note(&hung_up).contains("failing (Input/output error"));
    }
}
