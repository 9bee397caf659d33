//! Checkpoints of a file import, and resuming from one (`ImportOptions::resume`).
//!
//! A file import works in a directory of its own, `sluice-resume-<hash of the Db path>` in the
//! Db directory (or in `tmp_dir`), which survives a crash. At a checkpoint every file it names
//! is durable (an SST is fsynced and renamed into place by its writer) and the `CHECKPOINT`
//! manifest is replaced by write-temp, fsync, rename, fsync-dir, with a CRC32C over its body.
//! What a checkpoint records:
//!
//! 1. **Parse** (every `checkpoint_bytes` of input, and at a spill once a quarter of that was
//!    read): the number of chunks taken, after every sort buffer was spilled as a run and
//!    every streaming index's open file was finished; per index its runs, streamed files and
//!    last key; the policy's state (rows, rejects, drops, the secondary keys to suppress or
//!    delete, the last unique value); the length of the rejects file; the file counters.
//! 2. **Merge** (after the parse, when a parse checkpoint was taken; after a multi-level
//!    merge's passes; inside an index's merge after final files, every
//!    `MERGE_CHECKPOINT_BYTES` of output per key range; after each index's merge): the
//!    indexes merged so far and their final files; for the index merging, per key range (one,
//!    or one per thread of a parallel merge) its final files so far, the last key emitted and,
//!    for a parallel merge, the worker's policy state (in a `merge-*.bin` file). A resumed
//!    merge seeks every run past that key and appends to those files; runs are deleted only
//!    after the checkpoint naming the index's last final files (or the runs replacing them).
//!    Final files are named with their size and CRC32C, checked on resume: a file missing or
//!    changed refuses the resume.
//! 3. **Staged**: every final file and the catalog file, before the ingest.
//!
//! Resuming re-reads the input up to the chunk recorded (chunk boundaries depend only on the
//! input and the chunk size, which the checkpoint fixes) without parsing it, deletes every
//! file the checkpoint does not name, and goes on from the stage recorded: the same chunks,
//! in the same order, meet the same policy state, so the result equals an uninterrupted
//! import's.
//!
//! Invariants:
//! 1. A checkpoint is used only by an import with the same [`Fingerprint`]: the input files
//!    (path, size, modification time), the bound table definition (with its id), whether the
//!    table was new, had rows and its next row id, the Db (path, catalog), the newest sequence
//!    number in the table's key range, and the options that change the result. Anything else
//!    refuses with [`ImportError::CannotResume`]; it never skips data.
//! 2. A table changed since the checkpoint refuses (the newest sequence number in its key
//!    range, or the catalog, moved; writes elsewhere in the Db do not count, so a Db that
//!    serves other writes while the import is down can still resume it): that also refuses a
//!    checkpoint whose ingest already committed, and one into whose table another import
//!    went meanwhile: every import writes the table's catalog entry again, and that file
//!    always takes a sequence number (data files that overlap nothing go in at 0). A raw
//!    `Db::ingest` into the table's range at sequence number 0 (overlapping nothing, or
//!    `ingest_behind`) is not seen: only imports and writes through the write path are.
//!    An ingest that committed is also found by its files' link count.
//! 3. The rejects file holds at least the bytes the checkpoint counted (synced, its directory
//!    entry synced when it was made), or the resume refuses: it is cut back to that length.
//! 4. Only the thread running the import writes checkpoints, between chunks, between indexes
//!    or (merging) after a finished final file, at a boundary between keys: never while a
//!    worker writes a file the checkpoint names.

mod fingerprint;
mod merge_state;
mod policy_file;
mod rejects;

use std::collections::HashSet;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sluice::SstFileInfo;

use fingerprint::difference;
pub(crate) use fingerprint::{table_seqno, Fingerprint};
pub(crate) use merge_state::{load_merge_state, MergingCk};
use merge_state::{store_merge_state, Crcs};
use policy_file::store_policy;
pub(crate) use policy_file::{decode_policy, encode_policy, load_policy};

use crate::pipeline::merge::policy::EmitCtx;
use crate::pipeline::plan::IndexState;
use crate::pipeline::Import;
use crate::positions::{PositionsFile, RecorderState, Sample, StreamedPositions};
use crate::ImportError;

use crate::durable::sync_dir;
use crate::tmp_dirs::RESUME_PREFIX;

/// The manifest of a checkpoint directory.
const MANIFEST: &str = "CHECKPOINT";

/// Format of the manifest (its first line): `sluice-import-checkpoint <version> <crc>`.
const MAGIC: &str = "sluice-import-checkpoint";

/// The manifest's version written. Version 1 (no merge progress inside an index, no CRC32C
/// of the files) reads as a version 2 without them: its index merges are redone whole.
const VERSION: u32 = 2;

/// Where a checkpoint stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Stage {
    /// In step 3: `next_chunk` chunks taken.
    Parse,
    /// In step 4: indexes before `next_slot` merged.
    Merge,
    /// Steps 1-5 done: only the ingest is left.
    Staged,
}

/// A finished SST of the checkpoint, by name in its directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FileCk {
    name: String,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    entries: u64,
    size: u64,
    /// CRC32C of the contents (final files of the merge; none in a version 1 checkpoint).
    #[serde(default)]
    crc: Option<u32>,
}

/// One index's state at a checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IndexCk {
    pub(crate) streaming: bool,
    pub(crate) streamed_all: bool,
    pub(crate) last_key: Option<Vec<u8>>,
    pub(crate) streamed: Vec<FileCk>,
    /// The streaming writer's recorded positions (`positions-<slot>`).
    pub(crate) recorder: Option<RecorderState>,
    /// The positions of what the index streamed before its input turned out unsorted: the
    /// samples and the streamed files (now runs).
    pub(crate) positions: Option<(Vec<Sample>, Vec<String>)>,
    /// The length and CRC32C of that positions file (none in a checkpoint before they were
    /// recorded).
    #[serde(default)]
    pub(crate) positions_file: Option<PositionsFile>,
    pub(crate) runs: Vec<(String, bool)>,
    pub(crate) finals: Vec<FileCk>,
    /// The index's merge in progress (the index `next_slot` at a merge checkpoint).
    #[serde(default)]
    pub(crate) merging: Option<MergingCk>,
}

/// The manifest's body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct State {
    pub(crate) fingerprint: Fingerprint,
    pub(crate) chunk_size: usize,
    /// Checkpoints written into the directory so far (this one included).
    pub(crate) seq: u64,
    pub(crate) stage: Stage,
    pub(crate) next_chunk: u64,
    pub(crate) next_slot: usize,
    pub(crate) parse_files: u64,
    pub(crate) merge_files: u64,
    pub(crate) indexes: Vec<IndexCk>,
    pub(crate) rows: u64,
    pub(crate) rejected: u64,
    pub(crate) dropped: u64,
    pub(crate) runs_spilled: u64,
    pub(crate) runs_premerged: u64,
    pub(crate) rejects_len: u64,
    /// CRC32C of the rejects file's first `rejects_len` bytes (none in a checkpoint before it
    /// was recorded).
    #[serde(default)]
    pub(crate) rejects_crc: Option<u32>,
    pub(crate) last_unique: Vec<Option<(Vec<u8>, usize, u64)>>,
    /// The file holding the policy's suppressions and deletions, and its CRC32C.
    pub(crate) policy: Option<(String, u32)>,
    pub(crate) catalog: Option<FileCk>,
    /// The file holding a parallel merge's worker states (of the index merging), and its
    /// CRC32C.
    #[serde(default)]
    pub(crate) merge_state: Option<(String, u32)>,
}

/// A checkpoint directory's path for the Db at `db_dir` under `parent`.
/// One per Db and table: `sluice-resume-<CRC32C of the Db's path>-<table>`.
pub(crate) fn dir_for(parent: &Path, db_dir: &Path, table: &str) -> PathBuf {
    let table: String = table
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    parent.join(format!("{}{table}", db_prefix(db_dir)))
}

/// The name prefix of every checkpoint directory of the Db at `db_dir`.
fn db_prefix(db_dir: &Path) -> String {
    let db = canonical(db_dir);
    format!("{RESUME_PREFIX}{:08x}-", crc32c::crc32c(db.as_bytes()))
}

/// Checkpoint directories an import of this process works in: never adopted or discarded by
/// another (an import of the same table beside it runs without checkpoints).
fn in_use() -> &'static std::sync::Mutex<HashSet<PathBuf>> {
    static IN_USE: std::sync::OnceLock<std::sync::Mutex<HashSet<PathBuf>>> =
        std::sync::OnceLock::new();
    IN_USE.get_or_init(|| std::sync::Mutex::new(HashSet::new()))
}

/// Claims `dir` for this import; `false` when another import of this process has it.
pub(crate) fn claim(dir: &Path) -> bool {
    let mut set = in_use().lock().unwrap_or_else(|e| e.into_inner());
    set.insert(dir.to_path_buf())
}

/// Gives `dir` back (the import using it ended).
pub(crate) fn release(dir: &Path) {
    let mut set = in_use().lock().unwrap_or_else(|e| e.into_inner());
    set.remove(dir);
}

fn canonical(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// Reads the checkpoint of `dir`: `Ok(None)` when there is none (an import killed before its
/// first checkpoint), an error when it does not verify.
pub(crate) fn load(dir: &Path) -> Result<Option<State>, ImportError> {
    let path = dir.join(MANIFEST);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ImportError::io(&path, e)),
    };
    let corrupt = |why: &str| ImportError::CannotResume {
        dir: dir.to_path_buf(),
        reason: format!("{MANIFEST} is corrupt: {why}"),
    };
    let text = std::str::from_utf8(&bytes).map_err(|_| corrupt("not UTF-8"))?;
    let (head, body) = text.split_once('\n').ok_or_else(|| corrupt("no header"))?;
    let mut words = head
        .strip_prefix(MAGIC)
        .ok_or_else(|| corrupt("unknown header"))?
        .split_whitespace();
    let version: u32 = words
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| corrupt("unknown header"))?;
    if !(1..=VERSION).contains(&version) {
        return Err(ImportError::CannotResume {
            dir: dir.to_path_buf(),
            reason: format!(
                "{MANIFEST} is of format {version}, written by a newer sluice (this one reads \
                 formats 1 to {VERSION}): resume with that version, or import again without \
                 resume"
            ),
        });
    }
    let crc = words
        .next()
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| corrupt("unknown header"))?;
    if crc32c::crc32c(body.as_bytes()) != crc {
        return Err(corrupt("checksum mismatch"));
    }
    let state: State = serde_json::from_str(body).map_err(|e| corrupt(&e.to_string()))?;
    Ok(Some(state))
}

/// Writes `state` as the checkpoint of `dir` (write-temp, fsync, fsync-dir, rename, fsync-dir).
pub(crate) fn store(dir: &Path, state: &State) -> Result<(), ImportError> {
    let body = serde_json::to_string(state)
        .map_err(|e| ImportError::Internal(format!("checkpoint: {e}")))?;
    let tmp = dir.join(format!("{MANIFEST}.tmp"));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| ImportError::io(&p, e)
    };
    let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    let crc = crc32c::crc32c(body.as_bytes());
    write!(f, "{MAGIC} {VERSION} {crc:08x}\n{body}").map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    drop(f);
    // The entries of the files this manifest names (runs, side files, positions) made durable
    // before it is: a power loss never keeps the manifest without them.
    sync_dir(dir)?;
    let path = dir.join(MANIFEST);
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    sync_dir(dir)
}

/// Deletes every file of `dir` that `state` does not name (what an interrupted run was
/// writing); `state` `None`: every file.
pub(crate) fn remove_unnamed(dir: &Path, state: Option<&State>) {
    let mut keep: HashSet<String> = HashSet::new();
    if let Some(s) = state {
        keep.insert(MANIFEST.into());
        keep.extend(s.policy.iter().map(|p| p.0.clone()));
        keep.extend(s.catalog.iter().map(|c| c.name.clone()));
        keep.extend(s.merge_state.iter().map(|p| p.0.clone()));
        for (slot, i) in s.indexes.iter().enumerate() {
            if i.recorder.is_some() || i.positions.is_some() {
                keep.insert(name_of(&positions_path(dir, slot)));
            }
            keep.extend(i.streamed.iter().map(|f| f.name.clone()));
            keep.extend(i.finals.iter().map(|f| f.name.clone()));
            keep.extend(i.runs.iter().map(|r| r.0.clone()));
            keep.extend(i.merging.iter().flat_map(|m| m.names().map(str::to_string)));
        }
    }
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !keep.contains(&name) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Bytes of the files under `dir`.
pub(crate) fn bytes_in(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

impl FileCk {
    pub(crate) fn of(f: &SstFileInfo) -> FileCk {
        FileCk {
            name: name_of(&f.path),
            smallest: f.smallest_key.clone(),
            largest: f.largest_key.clone(),
            entries: f.entries,
            size: f.file_size,
            crc: None,
        }
    }

    /// The file in `dir`, checked to be there with its size and its CRC32C (when recorded).
    pub(crate) fn restore(&self, dir: &Path) -> Result<SstFileInfo, ImportError> {
        let path = dir.join(&self.name);
        check_file(dir, &path, Some(self.size))?;
        if let Some(crc) = self.crc {
            let now = merge_state::file_crc(&path).map_err(|e| ImportError::io(&path, e))?;
            if now != crc {
                return Err(ImportError::CannotResume {
                    dir: dir.to_path_buf(),
                    reason: format!(
                        "{} changed since the checkpoint (CRC32C {now:08x}, {crc:08x} then): \
                         import again without resume",
                        path.display()
                    ),
                });
            }
        }
        Ok(SstFileInfo {
            path,
            smallest_key: self.smallest.clone(),
            largest_key: self.largest.clone(),
            entries: self.entries,
            file_size: self.size,
            properties: Default::default(),
        })
    }

    /// Whether the Db holds a hard link to this file (it was ingested).
    pub(crate) fn linked(&self, dir: &Path) -> bool {
        std::fs::metadata(dir.join(&self.name)).is_ok_and(|m| m.nlink() > 1)
    }
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A file the checkpoint names must be there (with its size, when known).
pub(crate) fn check_file(dir: &Path, path: &Path, size: Option<u64>) -> Result<(), ImportError> {
    let m = std::fs::metadata(path).map_err(|e| ImportError::CannotResume {
        dir: dir.to_path_buf(),
        reason: format!("{}: {e}", path.display()),
    })?;
    if size.is_some_and(|s| s != m.len()) {
        return Err(ImportError::CannotResume {
            dir: dir.to_path_buf(),
            reason: format!(
                "{} changed size since the checkpoint: import again without resume",
                path.display()
            ),
        });
    }
    Ok(())
}

/// Whether reading a file a checkpoint names failed because the file is gone or not what the
/// checkpoint recorded (the resume is refused), rather than for the moment (EIO, EMFILE: an
/// I/O error, the checkpoint kept as it is).
pub(crate) fn damaged(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::InvalidData
            | std::io::ErrorKind::NotFound
            | std::io::ErrorKind::UnexpectedEof
    )
}

/// The positions file of index `slot` in `dir`.
pub(crate) fn positions_path(dir: &Path, slot: usize) -> PathBuf {
    dir.join(format!("positions-{slot}"))
}

impl IndexCk {
    /// The checkpoint of `st` (its streaming writer's open file finished first) and of the
    /// positions of what it streamed before its input turned out unsorted.
    fn of(
        st: &mut IndexState,
        streamed_positions: Option<&StreamedPositions>,
        crcs: &Crcs,
    ) -> Result<IndexCk, ImportError> {
        let (mut streamed, mut recorder) = (Vec::new(), None);
        if let Some(w) = st.writer.as_mut() {
            w.finish_current()?;
            streamed = w.files.iter().map(FileCk::of).collect();
            recorder = w.checkpoint_positions()?;
        }
        let (positions, positions_file) = match streamed_positions {
            Some(p) => {
                let (samples, files, file) =
                    p.checkpoint().map_err(|e| ImportError::io(p.path(), e))?;
                let names = files.iter().map(|f| name_of(f)).collect();
                (Some((samples, names)), Some(file))
            }
            None => (None, None),
        };
        Ok(IndexCk {
            streaming: st.streaming,
            streamed_all: st.streamed_all,
            last_key: st.last_key.clone(),
            streamed,
            recorder,
            positions,
            positions_file,
            runs: st.runs.iter().map(|(p, s)| (name_of(p), *s)).collect(),
            finals: st
                .finals
                .iter()
                .map(|f| crcs.file(f))
                .collect::<Result<_, _>>()?,
            merging: st
                .merging
                .as_ref()
                .map(|m| MergingCk::of(m, crcs))
                .transpose()?,
        })
    }
}

/// The checkpoints of one run of an import: what it resumed from and what it wrote.
pub(crate) struct Checkpointer {
    pub(crate) fingerprint: Fingerprint,
    run: std::sync::Mutex<CkRun>,
    crcs: Crcs,
}

struct CkRun {
    /// Checkpoints written into the directory, by all runs (names policy files).
    seq: u64,
    /// Checkpoints written by this run.
    taken: u64,
    /// Input bytes taken by this run at its last parse checkpoint.
    bytes_at_last: u64,
    /// Whether a parse checkpoint was taken (by this run or the one resumed).
    parse_taken: bool,
    /// The policy file the last checkpoint names (deleted when a newer one replaces it).
    policy: Option<(String, u32)>,
    /// The merge state file the last checkpoint names (likewise).
    merge_state: Option<(String, u32)>,
}

/// What a checkpoint records besides the indexes and the policy state.
pub(crate) struct Progress<'a> {
    pub(crate) stage: Stage,
    pub(crate) next_chunk: u64,
    pub(crate) next_slot: usize,
    pub(crate) catalog: Option<&'a SstFileInfo>,
}

impl Checkpointer {
    pub(crate) fn new(fingerprint: Fingerprint, resumed: Option<&State>) -> Self {
        Checkpointer {
            fingerprint,
            run: std::sync::Mutex::new(CkRun {
                seq: resumed.map_or(0, |s| s.seq),
                taken: 0,
                bytes_at_last: 0,
                parse_taken: resumed.is_some_and(|s| s.stage != Stage::Parse || s.next_chunk > 0),
                policy: resumed.and_then(|s| s.policy.clone()),
                merge_state: resumed.and_then(|s| s.merge_state.clone()),
            }),
            crcs: Crcs::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CkRun> {
        self.run.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a parse checkpoint is due after this run took chunks of `bytes` of input:
    /// every `every` bytes, or at a spill (`spilled`) once a quarter of that was taken.
    pub(crate) fn parse_due(&self, bytes: u64, every: u64, spilled: bool) -> bool {
        let since = bytes.saturating_sub(self.lock().bytes_at_last);
        since >= every || (spilled && since >= every / 4)
    }

    /// A parse checkpoint was written after `bytes` of input taken by this run.
    pub(crate) fn parsed_to(&self, bytes: u64) {
        self.lock().bytes_at_last = bytes;
    }

    /// Whether any parse checkpoint was taken (the merge then checkpoints too).
    pub(crate) fn parse_taken(&self) -> bool {
        self.lock().parse_taken
    }
}

impl Import {
    /// Writes a checkpoint of the import's state (step 3 between chunks, step 4 between
    /// indexes, or after step 5); `bytes`: input bytes read so far. Each index's streaming
    /// writer has its open file finished first, and the rejects file is synced.
    pub(crate) fn checkpoint(
        &self,
        plan: &crate::pipeline::plan::Plan,
        ctx: &mut EmitCtx<'_>,
        indexes: &mut [IndexState],
        at: Progress<'_>,
        counters: &crate::progress::Counters,
    ) -> Result<(), ImportError> {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(ck) = plan.ck.as_ref() else {
            return Ok(());
        };
        let dir = &plan.tmp.path;
        let (mut rejects_len, mut rejects_crc) = (0, None);
        if let Some(w) = ctx.rejects.as_mut() {
            let p = self.opts.rejects.clone().unwrap_or_default();
            w.flush().map_err(|e| ImportError::io(&p, e))?;
            let f = w.get_mut();
            crate::durable::sync_file(&f.file, &p)?;
            rejects_len = f.file.metadata().map_err(|e| ImportError::io(&p, e))?.len();
            rejects_crc = Some(f.crc);
        }
        ck.crcs
            .warm(indexes.iter().flat_map(|st| &st.finals), self.opts.threads)?;
        let mut idx = Vec::with_capacity(indexes.len());
        for (slot, st) in indexes.iter_mut().enumerate() {
            idx.push(IndexCk::of(st, ctx.streamed[slot].as_deref(), &ck.crcs)?);
        }
        let mut run = ck.lock();
        run.seq += 1;
        let policy = store_policy(dir, ctx, run.seq)?;
        let merge_state = match indexes.iter().find_map(|i| i.merging.as_ref()) {
            Some(m) => store_merge_state(dir, m, run.seq)?,
            None => None,
        };
        let state = State {
            fingerprint: ck.fingerprint.clone(),
            chunk_size: plan.chunk_size,
            seq: run.seq,
            stage: at.stage,
            next_chunk: at.next_chunk,
            next_slot: at.next_slot,
            parse_files: plan.parse_files.load(Relaxed),
            merge_files: plan.merge_files.load(Relaxed),
            indexes: idx,
            rows: ctx.rows,
            rejected: ctx.rejected,
            dropped: ctx.dropped,
            runs_spilled: counters.runs_spilled.load(Relaxed),
            runs_premerged: counters.runs_premerged.load(Relaxed),
            rejects_len,
            rejects_crc,
            last_unique: ctx.last_unique.clone(),
            policy: policy.clone(),
            catalog: at.catalog.map(FileCk::of),
            merge_state: merge_state.clone(),
        };
        store(dir, &state)?;
        if let Some((old, _)) = std::mem::replace(&mut run.policy, policy) {
            let _ = std::fs::remove_file(dir.join(old));
        }
        if let Some((old, _)) = std::mem::replace(&mut run.merge_state, merge_state) {
            let _ = std::fs::remove_file(dir.join(old));
        }
        if at.stage == Stage::Parse {
            run.parse_taken = true;
        }
        run.taken += 1;
        if self.opts.interrupt_after_checkpoints == Some(run.taken) {
            return Err(ImportError::Internal(format!(
                "interrupted after checkpoint {} (a test)",
                run.taken
            )));
        }
        Ok(())
    }

    /// Step 2's part for a file import with `resume`: the state to go on from, if the
    /// directory `dir` holds a checkpoint that verifies and matches `now` (files it does not
    /// name are deleted); a mismatch refuses.
    pub(crate) fn adopt_checkpoint(
        &self,
        dir: &Path,
        now: &Fingerprint,
    ) -> Result<Option<State>, ImportError> {
        let Some(state) = load(dir)? else {
            // Killed before its first checkpoint: what it wrote goes.
            remove_unnamed(dir, None);
            return Ok(None);
        };
        if let Some(reason) = difference(&state.fingerprint, now) {
            return Err(ImportError::CannotResume {
                dir: dir.to_path_buf(),
                reason,
            });
        }
        let ingested = state.stage == Stage::Staged
            && state
                .indexes
                .iter()
                .flat_map(|i| i.finals.iter().chain(&i.streamed))
                .chain(&state.catalog)
                .any(|f| f.linked(dir));
        if ingested {
            return Err(ImportError::CannotResume {
                dir: dir.to_path_buf(),
                reason: "its files are already in the Db (the import was ingested before it \
                         was interrupted): remove the directory"
                    .into(),
            });
        }
        self.check_rejects(dir, &state)?;
        remove_unnamed(dir, Some(&state));
        self.note(&format!(
            "resuming from the checkpoint in {} ({})",
            dir.display(),
            match state.stage {
                Stage::Parse => format!("{} chunks parsed", state.next_chunk),
                Stage::Merge => {
                    let files = state
                        .indexes
                        .get(state.next_slot)
                        .and_then(|i| i.merging.as_ref())
                        .map_or(0, |m| m.parts.iter().map(|p| p.finals.len()).sum::<usize>());
                    format!(
                        "parsed; {} indexes merged, {files} final files of the next",
                        state.next_slot
                    )
                }
                Stage::Staged => "every file written; ingesting".into(),
            }
        ));
        Ok(Some(state))
    }

    /// Removes the checkpoint directories of the Db at `db_dir` in `parent` (of any table:
    /// an import changes the Db, so no other checkpoint of it could be resumed after it),
    /// except those an import of this process works in, saying so.
    pub(crate) fn discard_checkpoints(
        &self,
        parent: &Path,
        db_dir: &Path,
    ) -> Result<(), ImportError> {
        let prefix = db_prefix(db_dir);
        let found: Vec<PathBuf> = std::fs::read_dir(parent)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .collect();
        for dir in found {
            if claim(&dir) {
                let r = self.discard_checkpoint(&dir);
                release(&dir);
                r?;
            }
        }
        Ok(())
    }

    /// Removes the checkpoint directory `dir`, if there is one, saying so.
    fn discard_checkpoint(&self, dir: &Path) -> Result<(), ImportError> {
        if !dir.is_dir() {
            return Ok(());
        }
        let bytes = bytes_in(dir);
        std::fs::remove_dir_all(dir).map_err(|e| ImportError::io(dir, e))?;
        self.note(&format!(
            "discarded the checkpoint of an interrupted import in {} ({bytes} bytes); \
             resume continues one instead",
            dir.display()
        ));
        Ok(())
    }

    /// A message for the user on stderr, unless progress output is off.
    pub(crate) fn note(&self, msg: &str) {
        if self.opts.progress != crate::ProgressMode::Off {
            eprintln!("sluice import: {msg}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn a_torn_or_flipped_manifest_is_refused_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_none());
        let state = State {
            fingerprint: Fingerprint {
                db: "/db".into(),
                table_seqno: 7,
                catalog: 1,
                table: "{}".into(),
                created: true,
                existing_rows: false,
                rowid_base: 0,
                inputs: vec![],
                options: BTreeMap::new(),
            },
            chunk_size: 1 << 16,
            seq: 1,
            stage: Stage::Parse,
            next_chunk: 3,
            next_slot: 0,
            parse_files: 4,
            merge_files: 1 << 20,
            indexes: vec![],
            rows: 10,
            rejected: 0,
            dropped: 0,
            runs_spilled: 2,
            runs_premerged: 0,
            rejects_len: 0,
            rejects_crc: None,
            last_unique: vec![None],
            policy: None,
            catalog: None,
            merge_state: None,
        };
        store(dir.path(), &state).unwrap();
        assert_eq!(load(dir.path()).unwrap().unwrap().next_chunk, 3);
        let p = dir.path().join(MANIFEST);
        let mut bytes = std::fs::read(&p).unwrap();
        let last = bytes.len() - 2;
        bytes[last] ^= 1;
        std::fs::write(&p, &bytes).unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("checksum mismatch"), "{err}");
    }

    /// A manifest with `body` under the header of format `version`.
    fn manifest(dir: &Path, version: u32, body: &str) {
        let crc = crc32c::crc32c(body.as_bytes());
        std::fs::write(
            dir.join(MANIFEST),
            format!("{MAGIC} {version} {crc:08x}\n{body}"),
        )
        .unwrap();
    }

    #[test]
    fn a_format_1_manifest_resumes_and_a_newer_one_is_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        // As format 1 wrote it: no merge progress, no merge state file, no CRC of files.
        let body = r#"{"fingerprint":{"db":"/db","db_seqno":7,"catalog":1,"table":"{}","created":true,"existing_rows":false,"rowid_base":0,"inputs":[],"options":{}},"chunk_size":65536,"seq":4,"stage":"Merge","next_chunk":0,"next_slot":1,"parse_files":4,"merge_files":1048580,"indexes":[{"streaming":false,"streamed_all":false,"last_key":null,"streamed":[],"recorder":null,"positions":null,"runs":[],"finals":[{"name":"final-0-001048576.sst","smallest":[1],"largest":[2],"entries":2,"size":900}]}],"rows":10,"rejected":0,"dropped":0,"runs_spilled":2,"runs_premerged":0,"rejects_len":0,"last_unique":[null],"policy":null,"catalog":null}"#;
        manifest(dir.path(), 1, body);
        let s = load(dir.path()).unwrap().unwrap();
        assert_eq!((s.stage, s.next_slot), (Stage::Merge, 1));
        assert!(s.indexes[0].merging.is_none() && s.indexes[0].finals[0].crc.is_none());
        assert!(s.merge_state.is_none());
        manifest(dir.path(), VERSION + 1, body);
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains(&format!("format {}", VERSION + 1)) && err.contains("newer sluice"),
            "{err}"
        );
    }
}
