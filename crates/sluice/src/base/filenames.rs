//! Every name in a Db directory, in one place (LevelDB's `db/filename.h`).
//!
//! Numbered files share one counter (`next_file_number`): tables `NNNNNN.sst`, WALs
//! `NNNNNN.log`, `MANIFEST-NNNNNN` and its `OPTIONS-NNNNNN`; `CURRENT` names the MANIFEST and
//! is replaced through `CURRENT.NNNNNN.tmp`. A number is never reused (invariant 9 of
//! DESIGN.md): recovery allocates above every number found on disk ([`number_in_name`]).

use std::path::{Path, PathBuf};

/// Table file path for a number.
pub fn table_file_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}

/// WAL file path for a number.
pub fn wal_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}

/// MANIFEST file name for a number.
pub fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// OPTIONS file path written beside the MANIFEST of this number.
pub fn options_file_name(dir: &Path, manifest_number: u64) -> PathBuf {
    dir.join(format!("OPTIONS-{manifest_number:06}"))
}

/// The temporary name `CURRENT` is written under before its rename.
pub fn current_tmp_name(dir: &Path, manifest_number: u64) -> PathBuf {
    dir.join(format!("CURRENT.{manifest_number:06}.tmp"))
}

/// What kind of file a name in the DB directory is.
#[derive(Debug, PartialEq, Eq)]
pub enum FileKind {
    /// `NNNNNN.sst`.
    Table(u64),
    /// `NNNNNN.log`.
    Wal(u64),
    /// `MANIFEST-NNNNNN`.
    Manifest(u64),
    /// `*.tmp`.
    Temp,
    /// Anything else (`CURRENT`, `LOCK`, `OPTIONS-*`, foreign files).
    Other,
}

/// Classifies a file name of the DB directory.
pub fn classify(name: &str) -> FileKind {
    if let Some(n) = name.strip_suffix(".sst").and_then(|s| s.parse().ok()) {
        return FileKind::Table(n);
    }
    if let Some(n) = name.strip_suffix(".log").and_then(|s| s.parse().ok()) {
        return FileKind::Wal(n);
    }
    if let Some(n) = name.strip_prefix("MANIFEST-").and_then(|s| s.parse().ok()) {
        return FileKind::Manifest(n);
    }
    if name.ends_with(".tmp") {
        return FileKind::Temp;
    }
    FileKind::Other
}

/// The file number in a name of the DB directory (tables, WALs, MANIFESTs, OPTIONS files and
/// `CURRENT.n.tmp`), if any. Recovery allocates numbers above all of them.
pub fn number_in_name(name: &str) -> Option<u64> {
    match classify(name) {
        FileKind::Table(n) | FileKind::Wal(n) | FileKind::Manifest(n) => Some(n),
        _ => name
            .strip_prefix("OPTIONS-")
            .or_else(|| name.strip_prefix("CURRENT."))
            .map(|s| s.trim_end_matches(".tmp"))
            .and_then(|s| s.parse().ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_numbered_name_yields_its_number() {
        let dir = Path::new("/d");
        let names = [
            table_file_name(dir, 7),
            wal_name(dir, 8),
            dir.join(manifest_name(9)),
            options_file_name(dir, 10),
            current_tmp_name(dir, 11),
        ];
        let got: Vec<Option<u64>> = names
            .iter()
            .map(|p| number_in_name(p.file_name().unwrap().to_str().unwrap()))
            .collect();
        assert_eq!(got, [Some(7), Some(8), Some(9), Some(10), Some(11)]);
        assert_eq!(number_in_name("CURRENT"), None);
        assert_eq!(number_in_name("LOCK"), None);
    }
}
