//! Fuzz harnesses for the files recovery reads — the WAL, the MANIFEST and the OPTIONS file —
//! shared by the cargo-fuzz targets (`fuzz/`) and the seeded mutation test that runs in
//! `cargo test` (`tests/fuzz_seeded.rs`).
//!
//! Each harness lays the bytes out as that file in an in-memory directory and runs the code
//! `Db::open` runs on it, step for step. Invariants every harness checks by running:
//! 1. No panic, whatever the bytes.
//! 2. Memory is bounded by the input: no allocation is sized by a length read from the bytes.
//! 3. Every error about the file's contents is an [`Error::Corruption`] naming the file and
//!    the offset of the damaged record (or line).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::base::filenames::{manifest_name, options_file_name, wal_name};
use crate::compaction::picker;
use crate::fs::{FileSystem, MemFs};
use crate::version::l0_sublevels::L0Sublevels;
use crate::version::VersionEdit;
use crate::wal::log::{LogEnd, LogReader, LogWriter};

use super::open::set_current;
use super::{picker_options, Db, Options};

/// The directory the harnesses lay files out in.
pub const FUZZ_DIR: &str = "/fuzz-db";
/// The MANIFEST (and OPTIONS) number the harnesses use.
pub const MANIFEST_NUMBER: u64 = 1;
/// The WAL number the WAL harness uses (above the MANIFEST's log number, so it is replayed).
pub const WAL_NUMBER: u64 = 4;

/// What recovery made of a WAL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRecovery {
    /// Records the log reader returned.
    pub records: u64,
    /// How the log ended.
    pub end: LogEnd,
    /// The largest seqno recovery found.
    pub last_sequence: u64,
    /// Tables recovery flushed or took over from flushable ingests.
    pub tables: usize,
}

/// What recovery made of a MANIFEST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestRecovery {
    /// Files in the recovered version.
    pub files: usize,
    /// The largest seqno the MANIFEST records.
    pub last_sequence: u64,
    /// True if every byte of the MANIFEST was a valid record.
    pub clean: bool,
}

/// The path of the WAL the WAL harness replays.
pub fn wal_path() -> std::path::PathBuf {
    wal_name(Path::new(FUZZ_DIR), WAL_NUMBER)
}

/// The path of the MANIFEST the MANIFEST harness replays.
pub fn manifest_path() -> std::path::PathBuf {
    Path::new(FUZZ_DIR).join(manifest_name(MANIFEST_NUMBER))
}

/// The path of the OPTIONS file the OPTIONS harness loads.
pub fn options_path() -> std::path::PathBuf {
    options_file_name(Path::new(FUZZ_DIR), MANIFEST_NUMBER)
}

/// Replays `bytes` as a WAL (`000004.log`) the way `Db::open` does: records, fragments, the
/// write batch or ingest record in each, memtables, and the flush of what was recovered.
/// Ingested tables the WAL names do not exist, so such a WAL fails at the flush step.
pub fn exercise_wal(bytes: &[u8]) -> Result<WalRecovery> {
    let fs = empty_db()?;
    fs.write_raw(&wal_path(), bytes.to_vec());
    let (records, end) = read_log(bytes, &wal_path())?;
    let dir = Path::new(FUZZ_DIR);
    let opts = options_on(&fs);
    let mut rec = Db::recover_manifest(&fs, dir, &opts)?;
    let recovered = Db::replay_wals(&fs, dir, &mut rec)?;
    let tables = Db::flush_recovered(&fs, dir, &opts, &mut rec, recovered)?;
    Ok(WalRecovery {
        records,
        end,
        last_sequence: rec.last_sequence,
        tables: tables.len(),
    })
}

/// Replays `bytes` as a MANIFEST the way `Db::open` does (every record decoded as a version
/// edit and applied), then runs the decisions open and the first background pass take on the
/// version: L0 sublevels, flush split keys, pending compaction bytes, the compaction pick.
pub fn exercise_manifest(bytes: &[u8]) -> Result<ManifestRecovery> {
    let fs = MemFs::new();
    let dir = Path::new(FUZZ_DIR);
    fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    fs.write_raw(&manifest_path(), bytes.to_vec());
    set_current(&fs, dir, MANIFEST_NUMBER)?;
    let opts = options_on(&fs);
    let rec = Db::recover_manifest(&fs, dir, &opts)?;
    let l0 = L0Sublevels::from_version(&rec.version);
    let _ = l0.flush_split_keys(opts.flush_split_bytes);
    let po = picker_options(&opts);
    let _ = picker::pending_compaction_bytes(&rec.version, &l0, &po);
    let _ = picker::pick_compaction(&rec.version, &po, &HashSet::new());
    let _ = rec.version.describe();
    Ok(ManifestRecovery {
        files: rec.version.file_numbers().count(),
        last_sequence: rec.last_sequence,
        clean: rec.manifest_clean_len.is_some(),
    })
}

/// Loads `bytes` as the OPTIONS file of a Db (`Options::load_latest`, which validates).
pub fn exercise_options(bytes: &[u8]) -> Result<Options> {
    let fs = empty_db()?;
    fs.write_raw(&options_path(), bytes.to_vec());
    let base = options_on(&fs);
    let loaded = Options::load_latest(Path::new(FUZZ_DIR), base)?;
    let _ = loaded.to_options_file();
    Ok(loaded)
}

/// Every record of a log, as the readers of open see them: the count and how the log ended.
fn read_log(bytes: &[u8], path: &Path) -> Result<(u64, LogEnd)> {
    let mut reader = LogReader::new(bytes, path);
    let mut n = 0;
    while reader.next_record()?.is_some() {
        n += 1;
    }
    Ok((n, reader.end().cloned().unwrap_or(LogEnd::Clean)))
}

/// A directory holding a valid, empty Db's MANIFEST (log number 0) and `CURRENT`.
fn empty_db() -> Result<MemFs> {
    let fs = MemFs::new();
    let dir = Path::new(FUZZ_DIR);
    fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let path = manifest_path();
    let mut w = LogWriter::new(fs.create(&path).map_err(|e| Error::io(&path, e))?);
    let edit = VersionEdit {
        format_version: Some(crate::version::MANIFEST_FORMAT_VERSION),
        log_number: Some(0),
        next_file_number: Some(WAL_NUMBER + 1),
        last_sequence: Some(0),
        ..VersionEdit::default()
    };
    w.add_record(&edit.encode())
        .map_err(|e| Error::io(&path, e))?;
    w.sync().map_err(|e| Error::io(&path, e))?;
    set_current(&fs, dir, MANIFEST_NUMBER)?;
    Ok(fs)
}

fn options_on(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// A log file holding `records`, framed by the log writer (valid fragments and checksums), so
/// that damage inside a record's payload reaches the decoders behind the log reader.
pub fn log_of(records: &[Vec<u8>]) -> Vec<u8> {
    let fs = MemFs::new();
    let path = Path::new("/log");
    let Ok(file) = fs.create(path) else {
        return Vec::new();
    };
    let mut w = LogWriter::new(file);
    for r in records {
        if w.add_record(r).is_err() {
            break;
        }
    }
    fs.read_raw(path).unwrap_or_default()
}

/// Splits fuzzer bytes into records — each a little-endian `u16` length and up to that many
/// bytes — and frames them as a log (see [`log_of`]), for targets that fuzz record payloads.
pub fn frame_records(bytes: &[u8]) -> Vec<u8> {
    let mut records = Vec::new();
    let mut rest = bytes;
    while let [lo, hi, tail @ ..] = rest {
        let n = usize::from(u16::from_le_bytes([*lo, *hi])).min(tail.len());
        records.push(tail[..n].to_vec());
        rest = &tail[n..];
    }
    log_of(&records)
}
