//! [`ImportError`]: everything an import, scan or get can fail with, structured so that the
//! CLI, the bindings and the tests can match on it (the Python package maps each variant to an
//! exception class). Messages are worded for a library user: an option is named by its
//! [`crate::ImportOptions`] field (the CLI adds its flag names), a bad row by file, line,
//! column and value.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::schema::SchemaError;

/// Where a row is: file and 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowPlace {
    /// The input file as given.
    pub file: String,
    /// The line the row starts on.
    pub line: u64,
}

impl fmt::Display for RowPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A row (or record boundary) that cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRow {
    /// Where it is.
    pub place: RowPlace,
    /// The column, when one column is at fault.
    pub column: Option<String>,
    /// The offending value as written (lossy UTF-8, cut at 100 characters), when there is one.
    pub value: Option<String>,
    /// What is wrong: `"x" is not an INT`, `expected 3 fields, found 2`, ….
    pub reason: String,
}

impl fmt::Display for BadRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.column {
            Some(c) => write!(f, "{}: column {c}: {}", self.place, self.reason),
            None => write!(f, "{}: {}", self.place, self.reason),
        }
    }
}

/// Where the other row holding a duplicated key or unique value is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OtherRow {
    /// An earlier row of the input (`None`: its place is no longer known).
    Input(Option<RowPlace>),
    /// A row already stored: for a duplicate key the table's name (`already in table t`),
    /// for a unique violation that row's primary key (`existing row (7) has it`).
    Stored(String),
}

/// Everything an import, scan or get can fail with.
#[derive(Debug)]
#[non_exhaustive]
pub enum ImportError {
    /// The schema does not parse or is not supported (names the clause, line and column).
    Schema(SchemaError),
    /// An option outside its range; `option` is the [`crate::ImportOptions`] field.
    InvalidOption {
        /// The field, e.g. `threads`.
        option: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// A wrong argument: no input files, an input that is a directory, an unknown table,
    /// index or column, a key or bound that does not fit its column, a table stored with a
    /// different definition.
    InvalidArgument(String),
    /// The stored catalog or a stored row does not decode.
    Catalog(String),
    /// A bad row or bad file structure.
    BadRow(BadRow),
    /// A primary key that another row also has.
    DuplicateKey {
        /// The row refused.
        place: RowPlace,
        /// The key, shown as its column values: `(5)`.
        key: String,
        /// The row that keeps it.
        other: OtherRow,
    },
    /// A unique index value that another row also has.
    UniqueViolation {
        /// The row refused.
        place: RowPlace,
        /// The index.
        index: String,
        /// The value, shown: `column email: "a@x"`.
        value: String,
        /// The row that has it.
        other: OtherRow,
    },
    /// More bad rows than `max_errors` allows.
    TooManyErrors {
        /// Bad rows seen.
        count: u64,
        /// The last one.
        last: Box<ImportError>,
    },
    /// An I/O error on a file of the import.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The engine failed.
    Db(sluice::Error),
    /// `resume` was asked but the checkpoint found does not belong to this import (another
    /// input, schema, table, Db or option): nothing was resumed, the checkpoint is kept.
    CannotResume {
        /// The checkpoint's directory.
        dir: PathBuf,
        /// What differs, e.g. `input t.csv changed: 1200 bytes then, 1300 now`.
        reason: String,
    },
    /// A filesystem the import writes to is full (`ENOSPC`).
    DiskFull {
        /// The directory being written (the import's temporary directory or the Db's).
        dir: PathBuf,
        /// Bytes the import needs there in all (an estimate: spilled runs plus final files).
        needed: u64,
        /// Bytes free there when the error was seen.
        available: u64,
        /// Bytes of finished work kept there for `resume` (0: nothing kept).
        kept: u64,
        /// The error as the operating system reported it.
        source: std::io::Error,
    },
    /// A bug: a worker thread panicked or an internal invariant broke.
    Internal(String),
}

impl ImportError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        ImportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether this is about the input's rows (a bad row, a duplicate, a unique violation,
    /// too many of them), as opposed to the schema, options, files or the engine.
    pub fn is_data_error(&self) -> bool {
        matches!(
            self,
            ImportError::BadRow(_)
                | ImportError::DuplicateKey { .. }
                | ImportError::UniqueViolation { .. }
                | ImportError::TooManyErrors { .. }
        )
    }
}

impl fmt::Display for OtherRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OtherRow::Input(Some(p)) => write!(f, "{p}"),
            OtherRow::Input(None) => f.write_str("an earlier row of the input"),
            OtherRow::Stored(pk) => write!(f, "existing row {pk}"),
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Schema(e) => write!(f, "schema: {e}"),
            ImportError::InvalidOption { option, reason } => write!(f, "{option}: {reason}"),
            ImportError::InvalidArgument(s)
            | ImportError::Catalog(s)
            | ImportError::Internal(s) => f.write_str(s),
            ImportError::BadRow(b) => write!(f, "{b}"),
            ImportError::DuplicateKey { place, key, other } => match other {
                OtherRow::Stored(table) => {
                    write!(
                        f,
                        "{place}: duplicate primary key {key}: already in table {table}"
                    )
                }
                OtherRow::Input(_) => {
                    write!(f, "{place}: duplicate primary key {key} (also at {other})")
                }
            },
            ImportError::UniqueViolation {
                place,
                index,
                value,
                other,
            } => match other {
                OtherRow::Stored(_) => {
                    write!(
                        f,
                        "{place}: {value} violates unique index {index}: {other} has it"
                    )
                }
                OtherRow::Input(_) => {
                    write!(
                        f,
                        "{place}: {value} violates unique index {index} (also at {other})"
                    )
                }
            },
            ImportError::TooManyErrors { count, last } => {
                write!(
                    f,
                    "{count} bad rows, more than max_errors allows; the last: {last}"
                )
            }
            ImportError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ImportError::Db(e) => write!(f, "{e}"),
            ImportError::CannotResume { dir, reason } => write!(
                f,
                "cannot resume from the checkpoint in {}: {reason}; nothing was imported (run \
                 without resume to start over, which discards the checkpoint)",
                dir.display()
            ),
            ImportError::DiskFull {
                dir,
                needed,
                available,
                kept,
                source,
            } => {
                write!(
                    f,
                    "{}: {source}: the import needs about {needed} bytes there ({available} \
                     free now); free space or point tmp_dir at another filesystem",
                    dir.display()
                )?;
                if *kept > 0 {
                    write!(
                        f,
                        ", then resume: {kept} bytes of finished work are kept there for it"
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ImportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ImportError::Schema(e) => Some(e),
            ImportError::Io { source, .. } => Some(source),
            ImportError::Db(e) => Some(e),
            ImportError::DiskFull { source, .. } => Some(source),
            ImportError::TooManyErrors { last, .. } => Some(last.as_ref()),
            _ => None,
        }
    }
}

impl From<sluice::Error> for ImportError {
    fn from(e: sluice::Error) -> Self {
        ImportError::Db(e)
    }
}

impl From<SchemaError> for ImportError {
    fn from(e: SchemaError) -> Self {
        ImportError::Schema(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_keep_their_shape_and_sources_chain() {
        let place = RowPlace {
            file: "a.csv".into(),
            line: 3,
        };
        let bad = ImportError::BadRow(BadRow {
            place: place.clone(),
            column: Some("id".into()),
            value: Some("x".into()),
            reason: "\"x\" is not an INT".into(),
        });
        assert_eq!(bad.to_string(), "a.csv:3: column id: \"x\" is not an INT");
        assert!(bad.is_data_error());
        let dup = ImportError::DuplicateKey {
            place: place.clone(),
            key: "(5)".into(),
            other: OtherRow::Input(Some(RowPlace {
                file: "b.csv".into(),
                line: 1,
            })),
        };
        assert_eq!(
            dup.to_string(),
            "a.csv:3: duplicate primary key (5) (also at b.csv:1)"
        );
        let many = ImportError::TooManyErrors {
            count: 4,
            last: Box::new(dup),
        };
        let src = std::error::Error::source(&many).unwrap();
        assert!(src.to_string().contains("duplicate primary key"));
        let opt = ImportError::InvalidOption {
            option: "threads",
            reason: "must be at least 1".into(),
        };
        assert_eq!(opt.to_string(), "threads: must be at least 1");
        assert!(!opt.is_data_error());
    }
}
