//! Opening a Db: recovery as numbered steps (see [`Db::open`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::base::error::{Error, Result};
use crate::base::filenames::{
    classify, current_tmp_name, manifest_name, number_in_name, options_file_name, table_file_name,
    wal_name, FileKind,
};
use crate::compaction::picker;
use crate::fs::staged::{self, StageError, WalStage};
use crate::fs::{DirLock, FileSystem};
use crate::memtable::MemTable;
use crate::sst::cache::BlockCache;
use crate::version::l0_sublevels::L0Sublevels;
use crate::version::{FileMeta, Version, VersionEdit, MANIFEST_FORMAT_VERSION};
use crate::wal::batch::{decode_ingest_record, decode_install_marker, WriteBatch};
use crate::wal::log::{LogEnd, LogReader, LogWriter};

use super::create::lock_or_create;
use super::events::{Events, RecoveryReport, StallTracker};
use super::file_book::FileBook;
use super::flush::flush_memtable;
use super::flushable::Flushable;
use super::jobs::Jobs;
use super::metrics::Counters;
use super::table_cache::{PinnedTables, TableCache};
use super::version_set::ManifestState;
use super::write::WriteQueue;
use super::{picker_options, Db, Inner, Options, State};

impl Db {
    /// Opens (or creates) the database in `dir`. Recovery, step by step:
    /// 1. lock the directory; create it if missing (and allowed) — a directory without
    ///    `CURRENT` holding only an interrupted creation's leftovers counts as empty, and one
    ///    holding anything else is refused untouched (`db/create.rs`: creation is atomic);
    /// 2. read `CURRENT` and replay the MANIFEST into a version;
    /// 3. write what a crashed process left in its WAL stage's ring to its WAL (step 2b),
    ///    then replay every WAL not yet flushed into memtables (a torn tail is dropped);
    /// 4. flush the recovered memtables to L0;
    /// 5. start a new WAL and a new MANIFEST holding a snapshot of the version, and a WAL
    ///    stage for the new WAL (step 5b, `Options::wal_staging`);
    /// 6. delete files no version needs; start the background workers.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Db> {
        opts.validate()?;
        let dir = dir.as_ref().to_path_buf();
        let fs = Arc::clone(&opts.fs);
        let lock = lock_or_create(&*fs, &dir, &opts)?;
        let mut rec = Self::recover_manifest(&*fs, &dir, &opts)?;
        // A number may be on disk without the edit that names it (a crash between an ingest's
        // link and its edit, or a flush's table and its edit): never hand it out again.
        for name in fs.list(&dir).map_err(|e| Error::io(&dir, e))? {
            // A foreign name with an absurd number is not ours: never let it exhaust the space.
            if let Some(n) = number_in_name(&name).filter(|&n| n < u64::MAX >> 8) {
                rec.next_file_number = rec.next_file_number.max(n + 1);
            }
        }
        Self::recover_wal_stage(&*fs, &dir)?;
        let mems = Self::replay_wals(&*fs, &dir, &mut rec)?;
        let report = (!opts.listeners.is_empty()).then(|| RecoveryReport::begin(&mems));
        let recovered = Self::flush_recovered(&*fs, &dir, &opts, &mut rec, mems)?;
        let report = report.map(|r| r.flushed(&recovered));
        let (wal, manifest, wal_number) = Self::start_logs(&*fs, &dir, &opts, &mut rec, recovered)?;
        let (wal, stage) = Self::stage_wal(&*fs, &dir, &opts, wal, wal_number)?;
        let inner = Arc::new(Inner::new(
            rec,
            Arc::new(MemTable::new(wal_number)),
            Vec::new(),
            (wal, manifest, stage),
            Some(lock),
            (dir, fs, opts),
            None,
        ));
        if let Some(r) = report {
            inner.recovery_flushed(r);
        }
        inner.delete_obsolete_files();
        let jobs = inner.opts.max_background_jobs;
        let workers = (0..jobs)
            .map(|i| {
                let inner = Arc::clone(&inner);
                let role = super::background::Role::of(i, jobs);
                std::thread::Builder::new()
                    .name(format!("sluice-bg-{i}"))
                    .spawn(move || {
                        lower_priority(role.nice(&inner.opts));
                        inner.background_loop(role)
                    })
                    .expect("spawn background worker")
            })
            .collect();
        Ok(Db {
            inner,
            workers: Mutex::new(workers),
        })
    }

    pub(super) fn recover_manifest(
        fs: &dyn FileSystem,
        dir: &Path,
        _opts: &Options,
    ) -> Result<Recovery> {
        let current = dir.join("CURRENT");
        let mut rec = Recovery {
            version: Version::default(),
            next_file_number: 2,
            last_sequence: 0,
            log_number: 0,
            flushed_seqno: 0,
            manifest_number: 0,
            manifest_clean_len: None,
            manifest_valid_len: 0,
        };
        if !fs.exists(&current) {
            return Ok(rec);
        }
        let name = fs.read_all(&current).map_err(|e| Error::io(&current, e))?;
        let name = String::from_utf8(name)
            .ok()
            .and_then(|s| s.strip_suffix('\n').map(str::to_string))
            .filter(|s| matches!(classify(s), FileKind::Manifest(_)))
            .ok_or_else(|| Error::corruption(&current, 0, "CURRENT does not name a MANIFEST"))?;
        if let FileKind::Manifest(n) = classify(&name) {
            rec.next_file_number = rec.next_file_number.max(n + 1);
            rec.manifest_number = n;
        }
        let path = dir.join(&name);
        let data = fs.read_all(&path).map_err(|e| Error::io(&path, e))?;
        let mut reader = LogReader::new(&data, &path);
        let mut edits = 0;
        while let Some((offset, rec_bytes)) = reader.next_record()? {
            let edit =
                VersionEdit::decode(&rec_bytes).map_err(|e| Error::corruption(&path, offset, e))?;
            rec.version = rec
                .version
                .apply(&edit)
                .map_err(|e| Error::corruption(&path, offset, e))?;
            if let Some(n) = edit.next_file_number {
                rec.next_file_number = rec.next_file_number.max(n);
            }
            if let Some(s) = edit.last_sequence {
                rec.last_sequence = rec.last_sequence.max(s);
            }
            if let Some(l) = edit.log_number {
                rec.log_number = rec.log_number.max(l);
            }
            if let Some(f) = edit.flushed_seqno {
                rec.flushed_seqno = rec.flushed_seqno.max(f);
            }
            edits += 1;
        }
        if edits == 0 {
            return Err(Error::corruption(
                &path,
                0,
                "MANIFEST holds no version edit",
            ));
        }
        rec.manifest_valid_len = match reader.end() {
            Some(LogEnd::TornTail(offset, _)) => *offset,
            _ => data.len() as u64,
        };
        if reader.end() == Some(&LogEnd::Clean) {
            rec.manifest_clean_len = Some(data.len() as u64);
        }
        for f in rec.version.levels.iter().flatten() {
            rec.next_file_number = rec.next_file_number.max(f.number + 1);
        }
        Ok(rec)
    }

    /// Step 2b: whatever a crashed process left in its WAL stage's ring (`fs::staged`) is
    /// written to its WAL, so that step 3 replays it — whatever this open's options.
    fn recover_wal_stage(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        let Some(stage_dir) = fs.wal_stage_dir() else {
            return Ok(());
        };
        staged::recover(dir, &stage_dir, |n| wal_name(dir, n))
            .map_err(|e| Self::stage_error(dir, e))?;
        Ok(())
    }

    pub(super) fn stage_error(dir: &Path, e: StageError) -> Error {
        match e {
            StageError::Io(path, source) => Error::io(&path, source),
            StageError::Corrupt(path, offset, why) => Error::corruption(
                &path,
                offset,
                format!(
                    "{why}; it may hold the last acknowledged writes of {}: move it away to \
                     open the Db without them",
                    dir.display()
                ),
            ),
        }
    }

    /// Step 5b: with `Options::wal_staging`, a new ring for this open, through which the new
    /// (still empty) WAL is written from now on. Made once `CURRENT` exists, so that a
    /// creation that stops early never leaves a name `DirContents` does not know. Where no
    /// ring can be made, the WAL is written directly.
    fn stage_wal(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
        wal: LogWriter,
        wal_number: u64,
    ) -> Result<(LogWriter, Option<WalStage>)> {
        let stage_dir = fs.wal_stage_dir();
        let Some(stage_dir) = stage_dir.filter(|_| opts.wal_staging && !opts.wal_mmap_writes)
        else {
            return Ok((wal, None));
        };
        let Ok(stage) = WalStage::create(dir, &stage_dir, staged::DEFAULT_RING) else {
            return Ok((wal, None));
        };
        let wal = match wal.into_file() {
            Ok(file) => {
                let path = wal_name(dir, wal_number);
                LogWriter::new(
                    stage
                        .wrap(file, wal_number)
                        .map_err(|e| Error::io(&path, e))?,
                )
            }
            Err(wal) => return Ok((wal, None)),
        };
        Ok((wal, Some(stage)))
    }

    /// Step 3: replays every WAL not yet flushed, in order, into what it held: memtables of
    /// ordinary writes, split at each flushable ingest's record into the ingested tables.
    /// Records at or below the flushed seqno are already in tables and skipped (a memtable
    /// rotated for an ingest shares its WAL with the next one).
    pub(super) fn replay_wals(
        fs: &dyn FileSystem,
        dir: &Path,
        rec: &mut Recovery,
    ) -> Result<Vec<Recovered>> {
        let names = fs.list(dir).map_err(|e| Error::io(dir, e))?;
        let mut wals: Vec<u64> = names
            .iter()
            .filter_map(|n| match classify(n) {
                FileKind::Wal(w) if w >= rec.log_number => Some(w),
                _ => None,
            })
            .collect();
        wals.sort_unstable();
        let mut out = Vec::new();
        for w in wals {
            let path = wal_name(dir, w);
            let data = fs.read_all(&path).map_err(|e| Error::io(&path, e))?;
            Self::replay_wal(rec, w, &path, data, None, None, &mut out)?;
        }
        Ok(out)
    }

    /// Step 3 for one WAL, `w`, whose contents are `data`: what it held, appended to `out`. A
    /// read-only open passes the bytes its writer's WAL stage had not written yet (laid over
    /// the WAL they belong to), and `cut`: the position its MANIFEST read reached (number,
    /// valid length), at whose first install marker past it the replay stops — returning
    /// `true` — since every record from there on may have been acknowledged after an ingest
    /// that read did not see. Recovery passes `None`: every edit a marker names is durable
    /// before the marker is written, so recovery's MANIFEST has it, and markers are skipped.
    pub(super) fn replay_wal(
        rec: &mut Recovery,
        w: u64,
        path: &Path,
        mut data: Vec<u8>,
        overlay: Option<&staged::Overlay>,
        cut: Option<(u64, u64)>,
        out: &mut Vec<Recovered>,
    ) -> Result<bool> {
        rec.next_file_number = rec.next_file_number.max(w + 1);
        if let Some(o) = overlay.filter(|o| o.wal_number == w) {
            o.apply(&mut data)
                .map_err(|why| Error::corruption(path, o.offset, why))?;
        }
        let mut reader = LogReader::wal(&data, path);
        // Made at the first entry: a memtable costs about a megabyte before it holds one
        // (its skiplist's chunk table and first chunk), and a WAL may hold none.
        let mut mem: Option<Arc<MemTable>> = None;
        let mut stopped = false;
        while let Some((offset, payload)) = reader.next_record()? {
            if let Some(marker) = decode_install_marker(&payload) {
                if cut.is_some_and(|cut| marker > cut) {
                    stopped = true;
                    break;
                }
                continue;
            }
            if let Some((seq, tables)) = decode_ingest_record(&payload) {
                if seq <= rec.flushed_seqno {
                    continue;
                }
                let edit =
                    VersionEdit::decode(tables).map_err(|e| Error::corruption(path, offset, e))?;
                let files: Vec<FileMeta> = edit.added.into_iter().map(|(_, f)| f).collect();
                for f in &files {
                    rec.last_sequence = rec.last_sequence.max(f.largest_seqno);
                }
                if let Some(m) = mem.take().filter(|m| !m.is_empty()) {
                    out.push(Recovered::Mem(m));
                }
                out.push(Recovered::Ingested(files));
                continue;
            }
            let batch =
                WriteBatch::from_rep(payload).map_err(|e| Error::corruption(path, offset, e))?;
            let mut seq = batch.seqno();
            for e in batch.iter() {
                let e = e.map_err(|e| Error::corruption(path, offset, e))?;
                if seq > rec.flushed_seqno {
                    mem.get_or_insert_with(|| Arc::new(MemTable::new(w)))
                        .add(seq, e.kind, e.key, e.value);
                }
                seq += 1;
            }
            if batch.count() > 0 {
                rec.last_sequence = rec.last_sequence.max(seq - 1);
            }
        }
        if let Some(m) = mem.filter(|m| !m.is_empty()) {
            out.push(Recovered::Mem(m));
        }
        Ok(stopped)
    }

    /// Step 4: recovered memtables become L0 tables; recovered ingested tables are checked to
    /// be on disk as their WAL record describes them and join L0 as they are.
    pub(super) fn flush_recovered(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
        rec: &mut Recovery,
        recovered: Vec<Recovered>,
    ) -> Result<Vec<FileMeta>> {
        let mut out = Vec::new();
        // No split keys with sublevels off (RocksDB's L0).
        let split_bytes = if opts.l0_sublevels {
            opts.flush_split_bytes
        } else {
            0
        };
        let split_keys = L0Sublevels::from_version(&rec.version).flush_split_keys(split_bytes);
        for item in recovered {
            match item {
                Recovered::Mem(mem) => {
                    let mut next = rec.next_file_number;
                    let files = flush_memtable(fs, dir, opts, &mem, &[], &split_keys, &mut || {
                        next += 1;
                        next - 1
                    })?;
                    rec.next_file_number = next;
                    out.extend(files);
                }
                Recovered::Ingested(files) => {
                    for f in &files {
                        let path = table_file_name(dir, f.number);
                        let size = fs.file_size(&path).map_err(|e| Error::io(&path, e))?;
                        if size != f.size {
                            return Err(Error::corruption(
                                &path,
                                0,
                                format!(
                                    "ingested table is {size} bytes, its WAL record says {}",
                                    f.size
                                ),
                            ));
                        }
                    }
                    out.extend(files);
                }
            }
        }
        Ok(out)
    }

    /// Step 5: a new WAL, and the recovered tables recorded with it in a new MANIFEST, which
    /// `CURRENT` then names: the old one's history carried forward while it ends cleanly and is
    /// below `max_manifest_file_size` (`carry_manifest`), else a snapshot of the version. The
    /// OPTIONS file beside it is written.
    fn start_logs(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
        rec: &mut Recovery,
        recovered: Vec<FileMeta>,
    ) -> Result<(LogWriter, ManifestState, u64)> {
        let wal_number = rec.next_file_number;
        rec.next_file_number += 1;
        let wal_path = wal_name(dir, wal_number);
        let wal = LogWriter::new(
            super::write::create_wal(fs, &wal_path, opts).map_err(|e| Error::io(&wal_path, e))?,
        );
        let added: Vec<(usize, FileMeta)> = recovered.into_iter().map(|f| (0, f)).collect();
        if !added.is_empty() {
            let edit = VersionEdit {
                added: added.clone(),
                ..Default::default()
            };
            rec.version = rec.version.apply(&edit).map_err(Error::InvalidArgument)?;
        }
        let manifest = match Self::carry_manifest(fs, dir, opts, rec, wal_number, added)? {
            Some(m) => m,
            None => Self::new_manifest(fs, dir, opts, rec, wal_number)?,
        };
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
        rec.log_number = wal_number;
        Ok((wal, manifest, wal_number))
    }

    /// Starts a new MANIFEST carrying the current one's history — its records up to the clean
    /// end, copied byte for byte — followed by this open's edit, and points `CURRENT` at it; if
    /// the current one ends cleanly and is below `max_manifest_file_size`. `None` otherwise
    /// (nothing written then). The history is rewritten, never appended to in place: after a
    /// failed fsync the previous process's last edits may sit in the page cache only (Linux
    /// can mark such pages clean), so appending behind them could leave a valid record after a
    /// hole on power loss — corruption, where a new file written and synced whole makes them
    /// durable, as the old snapshot-per-open did.
    fn carry_manifest(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
        rec: &mut Recovery,
        wal_number: u64,
        added: Vec<(usize, FileMeta)>,
    ) -> Result<Option<ManifestState>> {
        let Some(len) = rec.manifest_clean_len else {
            return Ok(None); // new Db, or a torn tail: never carry damage forward
        };
        if rec.manifest_number == 0 || len >= opts.max_manifest_file_size {
            return Ok(None);
        }
        let old = dir.join(manifest_name(rec.manifest_number));
        let data = fs.read_all(&old).map_err(|e| Error::io(&old, e))?;
        let Some(history) = data.get(..len as usize) else {
            return Ok(None); // shorter than when recovery read it: start afresh
        };
        let manifest_number = rec.next_file_number;
        rec.next_file_number += 1;
        let mpath = dir.join(manifest_name(manifest_number));
        let mut file = fs.create(&mpath).map_err(|e| Error::io(&mpath, e))?;
        std::io::Write::write_all(&mut file, history).map_err(|e| Error::io(&mpath, e))?;
        let edit = VersionEdit {
            log_number: Some(wal_number),
            next_file_number: Some(rec.next_file_number),
            last_sequence: Some(rec.last_sequence),
            added,
            ..Default::default()
        };
        let writer = LogWriter::appending(file, len);
        commit_manifest(fs, dir, opts, writer, manifest_number, &edit).map(Some)
    }

    /// Starts a new MANIFEST holding a snapshot of the version and points `CURRENT` at it.
    fn new_manifest(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
        rec: &mut Recovery,
        wal_number: u64,
    ) -> Result<ManifestState> {
        let manifest_number = rec.next_file_number;
        rec.next_file_number += 1;
        let mut snapshot = VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION),
            log_number: Some(wal_number),
            next_file_number: Some(rec.next_file_number),
            last_sequence: Some(rec.last_sequence),
            ..Default::default()
        };
        for (level, files) in rec.version.levels.iter().enumerate() {
            for f in files {
                snapshot.added.push((level, (**f).clone()));
            }
        }
        let mpath = dir.join(manifest_name(manifest_number));
        let writer = LogWriter::new(fs.create(&mpath).map_err(|e| Error::io(&mpath, e))?);
        commit_manifest(fs, dir, opts, writer, manifest_number, &snapshot)
    }
}

/// Ends a new MANIFEST `number` whose `writer` holds everything before `edit`: appends and syncs
/// `edit`, writes the OPTIONS file beside it and then points `CURRENT` at the MANIFEST — in that
/// order, so a crash never leaves `CURRENT` naming a MANIFEST whose OPTIONS file is missing.
fn commit_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    mut writer: LogWriter,
    number: u64,
    edit: &VersionEdit,
) -> Result<ManifestState> {
    let mpath = dir.join(manifest_name(number));
    writer
        .add_record(&edit.encode())
        .map_err(|e| Error::io(&mpath, e))?;
    writer.sync().map_err(|e| Error::io(&mpath, e))?;
    write_options_file(fs, dir, opts, number)?;
    set_current(fs, dir, number)?;
    Ok(ManifestState { writer, number })
}

/// Writes `OPTIONS-<manifest_number>` (through a temporary name and a rename when it exists
/// with other contents), synced.
pub(super) fn write_options_file(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    manifest_number: u64,
) -> Result<()> {
    let path = options_file_name(dir, manifest_number);
    let text = opts.to_options_file();
    let exists = fs.exists(&path);
    if exists && fs.read_all(&path).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(());
    }
    let target = if exists {
        let mut name = path.clone().into_os_string();
        name.push(".tmp");
        std::path::PathBuf::from(name)
    } else {
        path.clone()
    };
    // A leftover from a crash is ours to unlink (never to truncate: see FileSystem::create).
    if exists && fs.exists(&target) {
        fs.remove(&target).map_err(|e| Error::io(&target, e))?;
    }
    let mut f = fs.create(&target).map_err(|e| Error::io(&target, e))?;
    std::io::Write::write_all(&mut f, text.as_bytes()).map_err(|e| Error::io(&target, e))?;
    f.sync().map_err(|e| Error::io(&target, e))?;
    drop(f);
    if exists {
        fs.rename(&target, &path).map_err(|e| Error::io(&path, e))?;
    }
    Ok(())
}

impl Inner {
    /// The shared state of an open Db, from what recovery found. `read_only`: `Some` for a
    /// read-only Db, with the table files its view holds open (`Db::open_read_only`).
    pub(super) fn new(
        rec: Recovery,
        mem: Arc<MemTable>,
        imm: Vec<Flushable>,
        (wal, manifest, wal_stage): (LogWriter, ManifestState, Option<WalStage>),
        lock: Option<Box<dyn DirLock>>,
        (dir, fs, opts): (PathBuf, Arc<dyn FileSystem>, Options),
        read_only: Option<PinnedTables>,
    ) -> Inner {
        let (read_only, pinned) = (read_only.is_some(), read_only.unwrap_or_default());
        let version = Arc::new(rec.version);
        let picker_opts = picker_options(&opts);
        let l0 = Arc::new(L0Sublevels::from_version(&version));
        Inner {
            state: Mutex::new(State {
                pending_compaction_bytes: picker::pending_compaction_bytes(
                    &version,
                    &l0,
                    &picker_opts,
                ),
                l0,
                files: FileBook::new(rec.next_file_number, mem.wal_number, &version),
                mem,
                imm,
                version,
                unlogged_writes: false,
                background_error: None,
                jobs: Jobs::default(),
                stall: StallTracker::default(),
            }),
            bg_cv: Condvar::new(),
            done_cv: Condvar::new(),
            manifest: Mutex::new(manifest),
            queue: Mutex::new(WriteQueue::default()),
            queue_cv: Condvar::new(),
            wal: Mutex::new(wal),
            wal_stage,
            last_sequence: AtomicU64::new(rec.last_sequence),
            visible_seq: AtomicU64::new(rec.last_sequence),
            snapshots: Arc::new(Mutex::new(BTreeMap::new())),
            table_cache: TableCache {
                map: Mutex::new((BTreeMap::new(), 0)),
                capacity: opts.max_open_files,
                pinned,
            },
            block_cache: BlockCache::new(opts.block_cache_bytes),
            counters: Counters::default(),
            flush_out_permille: AtomicU64::new(super::FLUSH_RATIO_UNMEASURED),
            obsolete_pending: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
            read_only,
            ingest_order: Mutex::new(()),
            events: Events::start(if read_only { &[] } else { &opts.listeners }),
            lock: Mutex::new(lock),
            dir,
            fs,
            opts,
        }
    }
}

pub(super) struct Recovery {
    pub(super) version: Version,
    pub(super) next_file_number: u64,
    pub(super) last_sequence: u64,
    pub(super) log_number: u64,
    /// WAL records at or below this seqno are in tables.
    pub(super) flushed_seqno: u64,
    /// The MANIFEST `CURRENT` names (0 for a new Db).
    pub(super) manifest_number: u64,
    /// The MANIFEST's length if every byte of it is a valid record (its history may then be
    /// carried into the next MANIFEST).
    pub(super) manifest_clean_len: Option<u64>,
    /// How many bytes of the MANIFEST were read as valid records (its length, or where a torn
    /// tail begins): edits ending there or before are in `version`.
    pub(super) manifest_valid_len: u64,
}

/// What a WAL replay yields, in order.
pub(super) enum Recovered {
    /// Ordinary writes.
    Mem(Arc<MemTable>),
    /// The tables of a flushable ingest (at L0, global seqnos set).
    Ingested(Vec<FileMeta>),
}

pub(super) fn set_current(fs: &dyn FileSystem, dir: &Path, manifest_number: u64) -> Result<()> {
    let tmp = current_tmp_name(dir, manifest_number);
    // A leftover from a crash is ours to unlink (never to truncate: see FileSystem::create).
    if fs.exists(&tmp) {
        fs.remove(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    let mut f = fs.create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    std::io::Write::write_all(
        &mut f,
        format!("{}\n", manifest_name(manifest_number)).as_bytes(),
    )
    .map_err(|e| Error::io(&tmp, e))?;
    f.sync().map_err(|e| Error::io(&tmp, e))?;
    drop(f);
    let current = dir.join("CURRENT");
    fs.rename(&tmp, &current)
        .map_err(|e| Error::io(&current, e))?;
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// Lowers the calling thread's CPU priority to niceness `nice` (`Options::background_nice`);
/// threads it starts inherit it. Best effort: a failure leaves the priority as it was.
fn lower_priority(nice: i32) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // On Linux, PRIO_PROCESS with a thread id names that one thread. Only ever lowered: a
        // Db opened by a process already nicer than `nice` keeps the process's niceness.
        let me = Some(rustix::thread::gettid());
        let now = rustix::process::getpriority_process(me).unwrap_or(0);
        if nice > now {
            let _ = rustix::process::setpriority_process(me, nice);
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = nice;
}
