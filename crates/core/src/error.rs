//! The one error type of the library. Every variant maps to exit code 2 in the binary:
//! usage or input errors, never a verdict about a kernel.

use std::fmt;

/// A usage or input error with a one-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Arguments that do not fit together (negative ε, unknown op, ...).
    Usage(String),
    /// Input data that cannot be judged (malformed .npy, shape mismatch, d = 0, ...).
    Input(String),
    /// A file or library that cannot be read, written or loaded.
    Io(String),
}

impl Error {
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }
    pub fn input(msg: impl Into<String>) -> Self {
        Error::Input(msg.into())
    }
    pub fn io(msg: impl Into<String>) -> Self {
        Error::Io(msg.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, always: newlines in wrapped messages are flattened.
        let (kind, msg) = match self {
            Error::Usage(m) => ("usage error", m),
            Error::Input(m) => ("input error", m),
            Error::Io(m) => ("io error", m),
        };
        write!(f, "{kind}: {}", msg.replace('\n', " "))
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;
