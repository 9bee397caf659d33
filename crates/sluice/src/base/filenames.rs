//! Every name in a Db directory, in one place (LevelDB's `db/filename.h`).
//!
//! Numbered files share one counter (`next_file_number`): tables `NNNNNN.sst`, WALs
//! `NNNNNN.log`, `MANIFEST-NNNNNN` and its `OPTIONS-NNNNNN`; `CURRENT` names the MANIFEST and
//! is replaced through `CURRENT.NNNNNN.tmp`. A number is never given to two files: recovery
//! allocates above every number found on disk ([`number_in_name`]), and an open Db hands each
//! number out once (`db/file_book.rs`).

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

/// True if `name` (of `size` bytes) is something a Db's first open writes before its
/// `CURRENT` exists: `LOCK`, `MANIFEST-N`, `OPTIONS-N`, `OPTIONS-N.tmp`, `CURRENT.N.tmp`, or
/// an *empty* WAL (a WAL gets records only once the open has returned, after `CURRENT`). A
/// directory without `CURRENT` that holds nothing else is a creation that has not finished
/// (see `db/create.rs`); tables, a WAL with records and every foreign name are never one.
pub fn creation_leftover(name: &str, size: u64) -> bool {
    let numbered = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match classify(name) {
        FileKind::Wal(_) => size == 0,
        FileKind::Manifest(_) => true,
        FileKind::Table(_) => false,
        FileKind::Temp | FileKind::Other => {
            name == "LOCK"
                || name
                    .strip_prefix("OPTIONS-")
                    .is_some_and(|n| numbered(n.strip_suffix(".tmp").unwrap_or(n)))
                || name
                    .strip_prefix("CURRENT.")
                    .and_then(|n| n.strip_suffix(".tmp"))
                    .is_some_and(numbered)
        }
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

    #[test]
    fn creation_leftovers_are_only_names_a_first_open_writes() {
        let dir = Path::new("/d");
        let ours = [
            "LOCK".to_string(),
            manifest_name(3),
            file(&options_file_name(dir, 3)),
            format!("{}.tmp", file(&options_file_name(dir, 3))),
            file(&current_tmp_name(dir, 3)),
        ];
        for name in &ours {
            assert!(creation_leftover(name, 123), "{name}");
        }
        assert!(creation_leftover(&file(&wal_name(dir, 2)), 0));
        // A WAL with records, a table, CURRENT itself and foreign names never are.
        let never = [
            (file(&wal_name(dir, 2)), 1),
            (file(&table_file_name(dir, 5)), 0),
            ("CURRENT".to_string(), 16),
            ("notes.tmp".to_string(), 0),
            ("CURRENT.x.tmp".to_string(), 0),
            ("OPTIONS-".to_string(), 0),
            ("OPTIONS-3.bak".to_string(), 0),
            ("sluice-import-1-0".to_string(), 0),
            ("LOCK2".to_string(), 0),
        ];
        for (name, size) in &never {
            assert!(!creation_leftover(name, *size), "{name}");
        }
    }

    fn file(p: &Path) -> String {
        p.file_name().unwrap().to_string_lossy().into_owned()
    }
}
