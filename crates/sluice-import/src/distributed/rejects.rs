//! `max_errors` across tasks: each task returns the rows it rejected (bad rows while encoding,
//! duplicate keys while building a primary range) as [`RowReject`]s, fails on its own once it
//! alone has more than the plan's `max_errors`, and the coordinator adds them all up
//! ([`tally_rejects`]): over the limit, the job fails before anything is visible (the rejects
//! file holding the rows up to the one that went over); within it, the coordinator writes
//! the rejects file in `sluice import`'s format.
//!
//! Order, as `sluice import` writes them: bad rows by source position, then duplicates in key
//! order (primary ranges in range order).

use std::io::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{BadRow, OtherRow, RowPlace};
use crate::ImportError;

/// A rejected row that travels from a task to the coordinator.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RowReject {
    /// Its source position (input number, line): orders bad rows.
    pub src: u64,
    /// Why.
    pub error: RejectError,
    /// The record (as read for a bad row; the parsed row as CSV for a duplicate), lossy UTF-8.
    pub record: String,
}

/// The rejectable [`ImportError`]s, in a form that can be serialised.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum RejectError {
    /// [`ImportError::BadRow`].
    Bad {
        /// Input name.
        file: String,
        /// Line.
        line: u64,
        /// The column at fault.
        column: Option<String>,
        /// The value as written.
        value: Option<String>,
        /// What is wrong.
        reason: String,
    },
    /// [`ImportError::DuplicateKey`].
    Duplicate {
        /// Input name.
        file: String,
        /// Line.
        line: u64,
        /// The key shown.
        key: String,
        /// The input row that keeps the key (`None`: a stored row does).
        other: Option<(String, u64)>,
        /// The table, when a stored row keeps it.
        stored: Option<String>,
    },
}

impl RowReject {
    /// The reject of a bad row or a duplicate key (`None` for any other error).
    pub fn new(src: u64, error: &ImportError, record: &[u8]) -> Option<RowReject> {
        let error = match error {
            ImportError::BadRow(b) => RejectError::Bad {
                file: b.place.file.clone(),
                line: b.place.line,
                column: b.column.clone(),
                value: b.value.clone(),
                reason: b.reason.clone(),
            },
            ImportError::DuplicateKey { place, key, other } => RejectError::Duplicate {
                file: place.file.clone(),
                line: place.line,
                key: key.clone(),
                other: match other {
                    OtherRow::Input(p) => p.as_ref().map(|p| (p.file.clone(), p.line)),
                    OtherRow::Stored(_) => None,
                },
                stored: match other {
                    OtherRow::Stored(t) => Some(t.clone()),
                    OtherRow::Input(_) => None,
                },
            },
            _ => return None,
        };
        Some(RowReject {
            src,
            error,
            record: String::from_utf8_lossy(record).into_owned(),
        })
    }

    /// The reject as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A reject from [`to_json`](Self::to_json)'s text.
    pub fn from_json(s: &str) -> Result<RowReject, ImportError> {
        serde_json::from_str(s)
            .map_err(|e| ImportError::InvalidArgument(format!("not a row reject: {e}")))
    }

    /// The error again, as the single-machine import reports it.
    pub fn to_error(&self) -> ImportError {
        match &self.error {
            RejectError::Bad {
                file,
                line,
                column,
                value,
                reason,
            } => ImportError::BadRow(BadRow {
                place: RowPlace {
                    file: file.clone(),
                    line: *line,
                },
                column: column.clone(),
                value: value.clone(),
                reason: reason.clone(),
            }),
            RejectError::Duplicate {
                file,
                line,
                key,
                other,
                stored,
            } => ImportError::DuplicateKey {
                place: RowPlace {
                    file: file.clone(),
                    line: *line,
                },
                key: key.clone(),
                other: match stored {
                    Some(t) => OtherRow::Stored(t.clone()),
                    None => OtherRow::Input(other.as_ref().map(|(file, line)| RowPlace {
                        file: file.clone(),
                        line: *line,
                    })),
                },
            },
        }
    }
}

/// The error a task or the coordinator fails with once `rejects` passes `max_errors`: the
/// reject itself when none are allowed (what `sluice import` reports), else
/// [`ImportError::TooManyErrors`] with the one that went over.
pub fn over_limit(rejects: &[RowReject], max_errors: u64) -> Option<ImportError> {
    let over = rejects.get(usize::try_from(max_errors).ok()?)?;
    Some(if max_errors == 0 {
        over.to_error()
    } else {
        ImportError::TooManyErrors {
            count: rejects.len() as u64,
            last: Box::new(over.to_error()),
        }
    })
}

/// The coordinator's count of every task's rejects — `bad` (from encoding; sorted here by
/// source position) then `duplicates` (from the primary ranges, in range order): fails past
/// `max_errors`; writes them to `path` (`# reason` then the record, as `sluice import`
/// does) and returns how many there were. Past the limit, the file holds the rows up to and
/// including the one that went over, as `sluice import` leaves it.
pub fn tally_rejects(
    mut bad: Vec<RowReject>,
    duplicates: Vec<RowReject>,
    max_errors: u64,
    path: Option<&Path>,
) -> Result<u64, ImportError> {
    bad.sort_by_key(|r| r.src);
    bad.extend(duplicates);
    let over = over_limit(&bad, max_errors);
    if over.is_some() {
        bad.truncate(usize::try_from(max_errors).map_or(usize::MAX, |m| m.saturating_add(1)));
    }
    let written = path.map(|p| write_rejects(&bad, p)).transpose();
    // Past the limit the data error is the job's, whatever the write did (a full disk must
    // not make it look retryable).
    match over {
        Some(e) => Err(e),
        None => written.map(|_| bad.len() as u64),
    }
}

/// Writes `bad` to the rejects file `path` and makes it durable.
fn write_rejects(bad: &[RowReject], path: &Path) -> Result<(), ImportError> {
    let mut w =
        std::io::BufWriter::new(std::fs::File::create(path).map_err(|e| ImportError::io(path, e))?);
    for r in bad {
        writeln!(w, "# {}", r.to_error())
            .and_then(|_| writeln!(w, "{}", r.record))
            .map_err(|e| ImportError::io(path, e))?;
    }
    w.flush().map_err(|e| ImportError::io(path, e))?;
    // Durable before the caller commits the job: the rows are in neither place otherwise.
    crate::durable::sync_file(w.get_ref(), path)?;
    crate::durable::sync_parent(path)
}
