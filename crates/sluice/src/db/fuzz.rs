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

/// Every record of a WAL, as the WAL reader of open sees them: the count and how the log ended.
fn read_log(bytes: &[u8], path: &Path) -> Result<(u64, LogEnd)> {
    let mut reader = LogReader::wal(bytes, path);
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

/// The records of a log, up to the first damage (for mutation tests that re-frame them).
pub fn records_of(log: &[u8]) -> Vec<Vec<u8>> {
    let mut r = LogReader::new(log, Path::new("/log"));
    let mut out = Vec::new();
    while let Ok(Some((_, rec))) = r.next_record() {
        out.push(rec);
    }
    out
}

/// Offsets where fragments start in a valid log.
fn fragment_starts(log: &[u8]) -> Vec<usize> {
    use crate::wal::log::{BLOCK_SIZE, HEADER_SIZE};
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + HEADER_SIZE <= log.len() {
        let left = BLOCK_SIZE - pos % BLOCK_SIZE;
        if left < HEADER_SIZE {
            pos += left;
            continue;
        }
        out.push(pos);
        pos += HEADER_SIZE + usize::from(u16::from_le_bytes([log[pos + 4], log[pos + 5]]));
    }
    out
}

/// A varint whose value is far larger than any input: where a length is read, it must be
/// refused or capped by the bytes that remain, never allocated.
const HUGE_VARINT: &[u8] = &[0xff, 0xff, 0xff, 0xff, 0x0f];

/// The damage the seeded mutation tests (of this crate and the crates above it) do to the
/// files they recover: seeded (splitmix64), so that a seed replays a run.
#[derive(Debug, Clone)]
pub struct Mutator(u64);

impl Mutator {
    /// A mutator whose damage is a function of `seed`.
    pub fn new(seed: u64) -> Mutator {
        Mutator(seed)
    }

    /// The next random number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Damage to raw bytes: bit flips, truncation, insertion, deletion, a huge varint, a byte
    /// set to a boundary value.
    pub fn mutate_bytes(&mut self, v: &mut Vec<u8>) {
        for _ in 0..1 + self.below(4) {
            let at = self.below(v.len() + 1);
            match self.below(6) {
                0 if at < v.len() => v[at] ^= 1 << self.below(8),
                1 => v.truncate(at),
                2 => {
                    let n = 1 + self.below(8);
                    let bytes: Vec<u8> = (0..n).map(|_| self.next_u64() as u8).collect();
                    v.splice(at..at, bytes);
                }
                3 => {
                    let end = (at + 1 + self.below(16)).min(v.len());
                    v.drain(at..end);
                }
                4 => {
                    let end = (at + HUGE_VARINT.len()).min(v.len());
                    v.splice(at..end, HUGE_VARINT.iter().copied());
                }
                _ if at < v.len() => v[at] = [0, 0x7f, 0x80, 0xff][self.below(4)],
                _ => {}
            }
        }
    }

    /// Damage to a log whose records are `records`: raw byte damage, a fragment's length set
    /// huge, a fragment duplicated, or damage inside a record's payload re-framed with valid
    /// checksums (so that it reaches the decoder behind the log reader), sometimes with a
    /// record duplicated.
    pub fn mutate_log(&mut self, log: &[u8], records: &[Vec<u8>]) -> Vec<u8> {
        let starts = fragment_starts(log);
        match self.below(4) {
            1 if !starts.is_empty() => {
                let mut v = log.to_vec();
                let at = starts[self.below(starts.len())];
                let len = [0xffffu16, 0x8000, 32768 - 7, self.next_u64() as u16][self.below(4)];
                v[at + 4..at + 6].copy_from_slice(&len.to_le_bytes());
                v
            }
            2 if !starts.is_empty() => {
                let i = self.below(starts.len());
                let (a, b) = (starts[i], starts.get(i + 1).copied().unwrap_or(log.len()));
                let mut v = log.to_vec();
                v.splice(b..b, log[a..b].to_vec());
                v
            }
            3 => {
                let mut recs = records.to_vec();
                if !recs.is_empty() {
                    let i = self.below(recs.len());
                    self.mutate_bytes(&mut recs[i]);
                    if self.below(4) == 0 {
                        let dup = recs[self.below(recs.len())].clone();
                        recs.insert(self.below(recs.len() + 1), dup);
                    }
                }
                log_of(&recs)
            }
            _ => {
                let mut v = log.to_vec();
                self.mutate_bytes(&mut v);
                v
            }
        }
    }
}

/// `Err` unless `e` is a [`Error::Corruption`] naming `file` at an offset within its `len`
/// bytes: what every error about a file's contents must be.
pub fn check_corruption(e: &Error, file: &Path, len: usize) -> std::result::Result<(), String> {
    match e {
        Error::Corruption {
            file: f, offset, ..
        } if f == file => {
            if *offset <= len as u64 {
                Ok(())
            } else {
                Err(format!("offset {offset} past the end ({len} bytes): {e}"))
            }
        }
        e => Err(format!(
            "error does not name {} and an offset: {e}",
            file.display()
        )),
    }
}

/// The seed and iteration count of a seeded mutation test: `SLUICE_FUZZ_SEED` and
/// `SLUICE_FUZZ_ITERS` when set (to explore further), else `0x5eed` and `iters`.
pub fn seed_and_iters(iters: usize) -> (u64, usize) {
    let env = |k: &str| std::env::var(k).ok().and_then(|s| s.parse::<u64>().ok());
    (
        env("SLUICE_FUZZ_SEED").unwrap_or(0x5eed),
        env("SLUICE_FUZZ_ITERS").map_or(iters, |n| n as usize),
    )
}

/// The files of a seed directory (a cargo-fuzz seed corpus), as (name, bytes) in name order.
pub fn seed_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().to_string_lossy().into_owned();
            Some((name, std::fs::read(e.path()).ok()?))
        })
        .collect();
    out.sort();
    out
}

/// Set in the child process [`run_capped`] starts.
const CAPPED_CHILD: &str = "SLUICE_FUZZ_CAPPED_CHILD";

/// Runs the test `name` of the current test binary again, in a child process under
/// `ulimit -v cap_kib` (so that no allocation sized by a length read from the bytes can
/// succeed), and fails if it fails. Returns false in that child (the caller then runs the
/// test's body), true in the parent once the child passed:
/// `if run_capped("my_test", 1 << 20) { return; }`.
pub fn run_capped(name: &str, cap_kib: u64) -> bool {
    if std::env::var_os(CAPPED_CHILD).is_some() {
        return false;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let script = format!("ulimit -v {cap_kib} && exec \"$0\" --exact {name} --nocapture");
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .arg(&exe)
        .env(CAPPED_CHILD, "1")
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{name} failed under a {cap_kib} KiB memory cap:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    true
}
