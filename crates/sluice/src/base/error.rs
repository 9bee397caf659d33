//! The one error type of the engine.
//!
//! Every fallible public function returns [`Result`]. Bytes from disk or from an input file never
//! cause a panic: they produce [`Error::Corruption`] naming the file and the byte offset.

use std::fmt;
use std::path::PathBuf;

/// Result alias used throughout Sluice.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in Sluice.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error, with the file it concerns when known.
    Io {
        /// The file the operation touched, if any.
        path: Option<PathBuf>,
        /// The underlying error.
        source: std::io::Error,
    },
    /// On-disk bytes failed validation (checksum, magic, bounds, encoding).
    Corruption {
        /// The file holding the bad bytes.
        file: PathBuf,
        /// Byte offset in that file where the problem starts.
        offset: u64,
        /// What was expected and what was found.
        reason: String,
    },
    /// A caller passed something that cannot be honoured (bad option, bad argument).
    InvalidArgument(String),
    /// Keys were added out of order to a writer that requires strictly increasing keys.
    KeyOrder {
        /// The key that came before (hex-escaped in `Display`).
        previous: Vec<u8>,
        /// The offending key.
        key: Vec<u8>,
    },
    /// The feature exists in the format but this build does not support it.
    NotSupported(String),
    /// A background write or sync failed earlier; the Db refuses writes from then on (reads
    /// still work). Reopen it to recover: the next open trusts only what is on disk.
    Poisoned(String),
}

impl Error {
    /// Builds an [`Error::Corruption`].
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: Some(path.into()),
            source,
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}

/// Renders bytes as printable ASCII where possible, `\xNN` elsewhere (for error messages).
pub fn escape_bytes(b: &[u8]) -> String {
    b.escape_ascii().to_string()
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io {
                path: Some(p),
                source,
            } => write!(f, "I/O error on {}: {source}", p.display()),
            Error::Io { path: None, source } => write!(f, "I/O error: {source}"),
            Error::Corruption {
                file,
                offset,
                reason,
            } => write!(
                f,
                "corruption in {} at offset {offset}: {reason}",
                file.display()
            ),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::KeyOrder { previous, key } => write!(
                f,
                "keys must be strictly increasing: \"{}\" does not sort after \"{}\"",
                escape_bytes(key),
                escape_bytes(previous)
            ),
            Error::NotSupported(m) => write!(f, "not supported: {m}"),
            Error::Poisoned(m) => write!(
                f,
                "database is read-only after a background failure (reopen it): {m}"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Self {
        Error::Io { path: None, source }
    }
}

/// Errors are not `Clone` (they may hold an `io::Error`); rebuild an equivalent one.
pub(crate) fn clone_error(e: &Error) -> Error {
    match e {
        Error::Io { path, source } => Error::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        Error::Corruption {
            file,
            offset,
            reason,
        } => Error::Corruption {
            file: file.clone(),
            offset: *offset,
            reason: reason.clone(),
        },
        Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
        Error::KeyOrder { previous, key } => Error::KeyOrder {
            previous: previous.clone(),
            key: key.clone(),
        },
        Error::NotSupported(m) => Error::NotSupported(m.clone()),
        Error::Poisoned(m) => Error::Poisoned(m.clone()),
    }
}
