//! Disk space: the estimate an import checks before it starts, and what an import that fills
//! a filesystem (`ENOSPC`) reports and leaves behind.
//!
//! A file import that fails for want of space removes every file its last checkpoint does not
//! name (the partial run or file being written, anything merged since) and keeps the
//! checkpointed work for `resume`; with no checkpoint yet it removes its directory. The Db is
//! unchanged: an import changes it only by its final ingest.

use std::path::{Path, PathBuf};

use crate::pipeline::checkpoint;
use crate::pipeline::Import;
use crate::ImportError;

/// The work directory holds spilled runs (uncompressed: the input encoded, a secondary
/// index's keys and 8 bytes of source position per entry: 2.2× a narrow CSV with one
/// secondary index, measured by `tests/disk_full.rs`) and, at the end of the merge, every
/// final file beside them.
const WORK_PER_INPUT_BYTE: u64 = 3;

/// How many times its size a compressed input is assumed to expand.
const COMPRESSED_EXPANSION: u64 = 4;

/// Bytes free to an unprivileged user in the filesystem of `dir` (`statvfs`), if known.
pub(crate) fn free_bytes(dir: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

impl Import {
    /// About the bytes the import writes into its work directory at its peak.
    pub(crate) fn space_needed(&self) -> u64 {
        self.files
            .iter()
            .map(|f| {
                let len = std::fs::metadata(f).map_or(0, |m| m.len());
                if crate::input::is_compressed(f) {
                    len.saturating_mul(COMPRESSED_EXPANSION)
                } else {
                    len
                }
            })
            .sum::<u64>()
            .saturating_mul(WORK_PER_INPUT_BYTE)
    }

    /// The pre-flight check: a note when `dir`'s filesystem clearly has too little room (less
    /// than half the estimate; a resumed import: less than half of what is still missing).
    pub(crate) fn warn_if_short_of_space(&self, dir: &Path, resuming: bool) {
        let Some(free) = free_bytes(dir) else {
            return;
        };
        let have = if resuming {
            checkpoint::bytes_in(dir)
        } else {
            0
        };
        let needed = self.space_needed().saturating_sub(have);
        if free < needed / 2 {
            self.note(&format!(
                "warning: {} has {free} bytes free; this import needs about {needed} there \
                 (spilled runs and final files): it will probably run out of space (tmp_dir \
                 can point at another filesystem)",
                dir.display()
            ));
        }
    }

    /// The failed import's error, after its work directory was tidied: kept for `resume`
    /// when the failure is one a resume can get past (I/O, the engine, a full disk, an
    /// interruption), else removed. `ENOSPC` becomes [`ImportError::DiskFull`].
    pub(crate) fn after_failure(&self, e: ImportError) -> ImportError {
        let owned = self
            .owned_dir
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some(dir) = owned else {
            return e;
        };
        match &e {
            ImportError::Io { .. } | ImportError::Db(_) | ImportError::DiskFull { .. } => {
                match checkpoint::load(&dir) {
                    Ok(Some(state)) => checkpoint::remove_unnamed(&dir, Some(&state)),
                    _ => {
                        let _ = std::fs::remove_dir_all(&dir);
                    }
                }
            }
            // An interruption (a test's, or a worker's panic): left as a crash leaves it; a
            // refused resume leaves the checkpoint it refused.
            ImportError::Internal(_) | ImportError::CannotResume { .. } => {}
            _ => {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        let Some((source, path)) = no_space(&e) else {
            return e;
        };
        let full = path
            .and_then(Path::parent)
            .map_or_else(|| dir.clone(), Path::to_path_buf);
        let kept = if dir.exists() {
            checkpoint::bytes_in(&dir)
        } else {
            0
        };
        ImportError::DiskFull {
            available: free_bytes(&full).unwrap_or(0),
            dir: full,
            needed: self.space_needed(),
            kept,
            source: std::io::Error::new(source.kind(), source.to_string()),
        }
    }
}

/// The `ENOSPC` (or quota) error in `e`, and the file it is about when known.
fn no_space(e: &ImportError) -> Option<(&std::io::Error, Option<&Path>)> {
    let (source, path): (&std::io::Error, Option<&PathBuf>) = match e {
        ImportError::Io { path, source } => (source, Some(path)),
        ImportError::Db(sluice::Error::Io { path, source }) => (source, path.as_ref()),
        _ => return None,
    };
    let full = matches!(source.raw_os_error(), Some(28 | 122))
        || source.kind() == std::io::ErrorKind::StorageFull
        || source.kind() == std::io::ErrorKind::QuotaExceeded;
    full.then_some((source, path.map(PathBuf::as_path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enospc_is_found_in_import_and_engine_errors() {
        let enospc = || std::io::Error::from_raw_os_error(28);
        let e = ImportError::io(Path::new("/x/run-1.sst"), enospc());
        let (_, p) = no_space(&e).unwrap();
        assert_eq!(p, Some(Path::new("/x/run-1.sst")));
        let e = ImportError::Db(sluice::Error::Io {
            path: None,
            source: enospc(),
        });
        assert!(no_space(&e).is_some());
        let e = ImportError::io(Path::new("/x"), std::io::Error::from_raw_os_error(5));
        assert!(no_space(&e).is_none());
    }

    #[test]
    fn free_bytes_of_a_real_directory_is_known() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).is_some());
    }
}
