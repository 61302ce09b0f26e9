//! Where commands read input and write output: the process's stdio, or
//! in-memory buffers for tests and harnesses.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// The standard streams of one command run.
pub struct Io {
    stdin: Box<dyn Read + Send>,
    out: Box<dyn Write + Send>,
    err: Box<dyn Write + Send>,
    terminal: bool,
}

impl Io {
    /// The process's stdin, stdout and stderr.
    pub fn std() -> Io {
        use std::io::IsTerminal;
        Io {
            stdin: Box::new(std::io::stdin()),
            out: Box::new(std::io::stdout()),
            err: Box::new(std::io::stderr()),
            terminal: std::io::stdout().is_terminal(),
        }
    }

    /// Reads `stdin` from memory and captures stdout and stderr.
    pub fn captured(stdin: impl Into<Vec<u8>>) -> (Io, Captured) {
        let captured = Captured::default();
        let io = Io {
            stdin: Box::new(std::io::Cursor::new(stdin.into())),
            out: Box::new(SharedBuffer(captured.out.clone())),
            err: Box::new(SharedBuffer(captured.err.clone())),
            terminal: false,
        };
        (io, captured)
    }

    /// Whether stdout is the process's stdout and a terminal (for progress
    /// bars drawn in place); never for captured output.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// Writes to stdout and flushes (watch output appears as it happens).
    pub fn out(&mut self, text: &str) -> Result<()> {
        self.out.write_all(text.as_bytes()).and_then(|()| self.out.flush()).map_err(Error::Output)
    }

    /// Writes to stderr.
    pub fn err(&mut self, text: &str) -> Result<()> {
        self.err.write_all(text.as_bytes()).and_then(|()| self.err.flush()).map_err(Error::Output)
    }

    /// Reads all of stdin.
    pub fn read_stdin(&mut self) -> Result<String> {
        let mut text = String::new();
        self.stdin.read_to_string(&mut text).map_err(|e| Error::io("-", e))?;
        Ok(text)
    }
}

/// What a command wrote, when run with [`Io::captured`].
#[derive(Clone, Default)]
pub struct Captured {
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
}

impl Captured {
    /// Everything written to stdout so far.
    pub fn stdout(&self) -> String {
        text_of(&self.out)
    }

    /// Everything written to stderr so far.
    pub fn stderr(&self) -> String {
        text_of(&self.err)
    }
}

fn text_of(buffer: &Mutex<Vec<u8>>) -> String {
    let bytes = buffer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    String::from_utf8_lossy(&bytes).into_owned()
}

struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_output_and_serves_stdin() {
        let (mut io, captured) = Io::captured("input");
        io.out("hello\n").unwrap();
        io.err("oops\n").unwrap();
        assert_eq!(io.read_stdin().unwrap(), "input");
        assert_eq!(captured.stdout(), "hello\n");
        assert_eq!(captured.stderr(), "oops\n");
    }
}
