//! Import temporary directories (`sluice-import-<pid>-<n>`) and resumable imports' checkpoint
//! directories (`sluice-resume-<hash>`) as the read-only commands report them (`sluice
//! verify`, `sluice stats`): found, sized and attributed, never removed — the next import into
//! the Db removes a dead process's temporary directory ([`crate::remove_leftovers`]), the next
//! import whose temporary directory is the same `--tmp-dir` removes a dead process's there, and
//! a process interrupted by SIGINT/SIGTERM its own ([`crate::remove_tmp_dirs_for_exit`]); a
//! checkpoint is continued by the next import with `resume`, discarded by one without.

use std::path::{Path, PathBuf};

/// Name prefix of import temporary directories.
pub const TMP_PREFIX: &str = "sluice-import-";

/// Name prefix of resumable imports' checkpoint directories.
pub const RESUME_PREFIX: &str = "sluice-resume-";

/// A `sluice-import-*` directory found in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmpDirFound {
    /// Its path.
    pub path: PathBuf,
    /// Bytes of the files under it.
    pub bytes: u64,
    /// The process that made it (from its name).
    pub pid: Option<u32>,
    /// Whether a process with that id runs now (`None` where that cannot be told: no `/proc`).
    /// A running one may be an import in progress; an exited one was killed.
    pub process_running: Option<bool>,
    /// A resumable import's checkpoint directory (`sluice-resume-*`): an import in progress
    /// or one interrupted that `resume` continues.
    pub resumable: bool,
}

impl TmpDirFound {
    /// One line for an operator: the name, size, and whose it is.
    pub fn describe(&self) -> String {
        let name = self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let whose = match (self.pid, self.process_running) {
            _ if self.resumable => "an import's checkpoint, in progress or interrupted: \
                                    `sluice import --resume` continues an interrupted one, an \
                                    import without --resume removes it"
                .to_string(),
            (Some(pid), Some(true)) => {
                format!("process {pid} is running: an import in progress?")
            }
            (Some(pid), Some(false)) => format!(
                "left by process {pid}, which has exited (a killed import); the next import \
                 into this Db (or with this --tmp-dir) removes it"
            ),
            _ => "an import's, running or killed; the next import into this Db removes a \
                  killed one's"
                .to_string(),
        };
        format!("{name}: {} bytes ({whose})", self.bytes)
    }
}

/// The `sluice-import-*` directories in `dir` (the Db directory: where imports make them
/// unless `--tmp-dir` says otherwise), by name; nothing is changed. An unreadable `dir` has
/// none.
pub fn find_tmp_dirs(dir: &Path) -> Vec<TmpDirFound> {
    let procfs = Path::new("/proc/self").exists();
    let mut found: Vec<TmpDirFound> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(TMP_PREFIX) || name.starts_with(RESUME_PREFIX)
        })
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix(TMP_PREFIX)
                .and_then(|n| n.split('-').next())
                .and_then(|p| p.parse::<u32>().ok());
            TmpDirFound {
                resumable: name.starts_with(RESUME_PREFIX),
                bytes: bytes_under(&e.path()),
                path: e.path(),
                pid,
                process_running: pid
                    .filter(|_| procfs)
                    .map(|p| Path::new("/proc").join(p.to_string()).exists()),
            }
        })
        .collect();
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// Bytes of the regular files under `dir` (symbolic links not followed).
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sizes_and_attributes_without_removing() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(format!("{TMP_PREFIX}4000000000-0"));
        std::fs::create_dir_all(dead.join("runs")).unwrap();
        std::fs::write(dead.join("runs").join("a.sst"), vec![0u8; 1000]).unwrap();
        std::fs::write(dead.join("b.sst"), vec![0u8; 24]).unwrap();
        let mine = dir
            .path()
            .join(format!("{TMP_PREFIX}{}-3", std::process::id()));
        std::fs::create_dir(&mine).unwrap();
        std::fs::write(dir.path().join(format!("{TMP_PREFIX}file")), b"x").unwrap();
        std::fs::create_dir(dir.path().join("other")).unwrap();
        let ck = dir.path().join(format!("{RESUME_PREFIX}0123abcd"));
        std::fs::create_dir(&ck).unwrap();
        std::fs::write(ck.join("CHECKPOINT"), b"xyz").unwrap();
        let mut found = find_tmp_dirs(dir.path());
        let resumable: Vec<TmpDirFound> = found.iter().filter(|d| d.resumable).cloned().collect();
        assert_eq!(resumable.len(), 1, "{found:?}");
        assert_eq!((resumable[0].bytes, resumable[0].pid), (3, None));
        assert!(resumable[0].describe().contains("--resume"));
        found.retain(|d| !d.resumable);
        assert_eq!(found.len(), 2, "{found:?}");
        // The dead process's directory first, whatever this process's id sorts as.
        found.sort_by_key(|d| d.path != dead);
        assert_eq!(
            (found[0].path.clone(), found[0].bytes),
            (dead.clone(), 1024)
        );
        assert_eq!(found[0].pid, Some(4_000_000_000));
        assert_eq!(found[1].pid, Some(std::process::id()));
        if Path::new("/proc/self").exists() {
            assert_eq!(found[0].process_running, Some(false));
            assert_eq!(found[1].process_running, Some(true));
            assert!(found[0].describe().contains("which has exited"));
        }
        assert!(dead.join("b.sst").exists() && mine.exists());
    }
}
