//! The database: write path, read path, flush, compaction, recovery.
//!
//! Threads and locks:
//! * `queue` (group commit): writers enqueue; the front writer is the *leader*, which writes
//!   the whole group to the WAL and memtable while the others wait. Only the leader touches
//!   the WAL and inserts into the active memtable.
//! * `state`: memtables, the current version, counters, busy files. Held briefly; never
//!   across table I/O. Readers lock it only to clone `Arc`s of their sources.
//! * `manifest`: serializes version edits. Held while an edit is written and synced, so the
//!   order of edits in the MANIFEST is the order versions are installed.
//! * Background workers run flushes and compactions without holding `state`.
//! * Lock order: `queue` → `manifest` → `snapshots` → `state` → `wal`; never the reverse.
//!
//! Invariants:
//! 1. A seqno is published (`visible_seq`) only after its batch is in the memtable (or its
//!    ingested file in the version); a reader loads `visible_seq` and clones its sources in one
//!    `state` critical section (`read_view`), so the view holds every version visible at the
//!    seqno: nothing installed later can take one away.
//! 2. A flushed memtable leaves the immutable list in the same `state` critical section that
//!    installs the version holding its table.
//! 3. A WAL is deleted only after a durable edit whose `log_number` is above it.
//! 4. New table files are synced, and their directory synced, before the edit naming them.
//! 5. After a failed background write or sync the Db refuses writes (read-only error state).
//! 6. A flush or compaction drops a shadowed version only within a stripe bounded by the live
//!    snapshots *and* the read horizon (`visible_seq` when the job starts): a reader without a
//!    snapshot reads the version it cloned, which still holds the job's inputs.
//! 7. A table leaves the directory when no live version holds it: at the install that
//!    removes it if no reader holds an older version, else when the last such reader (its
//!    `ReadPin`) lets go; a full scan at open and after background jobs catches the rest.

mod ingest;
mod options;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

pub use ingest::{ingest_target_level, IngestOptions, IngestedFile, RunningOutput};
pub use options::{Options, ReadOptions, WriteOptions};

use crate::batch::WriteBatch;
use crate::compaction::job::{merge_to_tables, table_file_name, DropPolicy, OutputSpec};
use crate::compaction::picker::{self, CompactionChoice, PickerOptions};
use crate::error::{Error, Result};
use crate::fs::{DirLock, FileSystem};
use crate::iter::db_iter::DbIterator;
use crate::iter::level::{file_iter, LevelIter, TableOpener};
use crate::iter::merging::{BoxIter, MergingIter};
use crate::iter::range_del::RangeDelAggregator;
use crate::key::{self, ValueKind};
use crate::log::{LogReader, LogWriter};
use crate::manifest::{FileMeta, Version, VersionEdit, MANIFEST_FORMAT_VERSION, NUM_LEVELS};
use crate::memtable::MemTable;
use crate::sst::cache::BlockCache;
use crate::sst::table::{IterBounds, RangeTombstone, Table, TableReadOptions};

/// Largest group a leader commits at once, in bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;

fn wal_name(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.log"))
}
fn manifest_name(n: u64) -> String {
    format!("MANIFEST-{n:06}")
}

/// What kind of file a name in the DB directory is.
#[derive(Debug, PartialEq, Eq)]
enum FileKind {
    Table(u64),
    Wal(u64),
    Manifest(u64),
    Temp,
    Other,
}

/// The file number in a name of the DB directory (tables, WALs, MANIFESTs, OPTIONS files and
/// `CURRENT.n.tmp`), if any. Recovery allocates numbers above all of them (invariant 9).
fn number_in_name(name: &str) -> Option<u64> {
    match classify(name) {
        FileKind::Table(n) | FileKind::Wal(n) | FileKind::Manifest(n) => Some(n),
        _ => name
            .strip_prefix("OPTIONS-")
            .or_else(|| name.strip_prefix("CURRENT."))
            .map(|s| s.trim_end_matches(".tmp"))
            .and_then(|s| s.parse().ok()),
    }
}

fn classify(name: &str) -> FileKind {
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

/// A consistent point-in-time view; reads through it see exactly the writes acknowledged
/// before it was taken. Released on drop.
pub struct Snapshot {
    seqno: u64,
    registry: Weak<Mutex<BTreeMap<u64, usize>>>,
    /// The memtables and version the snapshot was taken on: reads through it never see a file
    /// installed later (see `ingest`), and flushed memtables stay readable.
    view: View,
    /// Declared after `view`, so it is dropped after it: deletes what only this view kept.
    _pin: ReadPin,
}

/// Held by every reader of a view (snapshot, iterator, point read) and dropped after the
/// view's version: when the last reader of an obsolete table lets go, the table is deleted
/// at once (invariant 7), not at the next background job or open.
pub(crate) struct ReadPin {
    inner: Weak<Inner>,
}

impl Drop for ReadPin {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            if inner.obsolete_pending.load(Ordering::Acquire) {
                inner.purge_obsolete_tables();
            }
        }
    }
}

/// The sources a read consults.
#[derive(Clone)]
struct View {
    mem: Arc<MemTable>,
    imm: Vec<Arc<MemTable>>,
    version: Arc<Version>,
}

impl Snapshot {
    /// The snapshot's sequence number.
    pub fn seqno(&self) -> u64 {
        self.seqno
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Snapshot({})", self.seqno)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if let Some(r) = self.registry.upgrade() {
            let mut m = r.lock();
            if let Some(c) = m.get_mut(&self.seqno) {
                *c -= 1;
                if *c == 0 {
                    m.remove(&self.seqno);
                }
            }
        }
    }
}

/// Per-level shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelMetrics {
    /// Files in the level.
    pub files: usize,
    /// Bytes in the level.
    pub bytes: u64,
    /// Compaction score ×100 (>= 100 means the level needs compacting).
    pub score_x100: u64,
}

/// A snapshot of the engine's counters.
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    /// L0..L6.
    pub levels: Vec<LevelMetrics>,
    /// Bytes in the active memtable.
    pub memtable_bytes: u64,
    /// Immutable memtables waiting for flush.
    pub immutable_memtables: usize,
    /// Sources a point read may consult: memtables + L0 files + non-empty deeper levels.
    pub read_amplification: usize,
    /// Bytes written by flushes and compactions per byte of user batches.
    pub write_amplification: f64,
    /// User batch bytes written.
    pub user_bytes: u64,
    /// Bytes written by flushes.
    pub flush_bytes: u64,
    /// Flushes completed.
    pub flushes: u64,
    /// Compactions completed (trivial moves included).
    pub compactions: u64,
    /// Bytes read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: u64,
    /// Times a write had to wait (stop) or was delayed (slowdown).
    pub stall_count: u64,
    /// Total time writers spent stalled, in microseconds.
    pub stall_micros: u64,
    /// Last sequence number visible to readers.
    pub last_sequence: u64,
    /// Block cache (hits, misses).
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// The background error, if the Db is in read-only error state.
    pub background_error: Option<String>,
}

#[derive(Default)]
struct Counters {
    user_bytes: AtomicU64,
    flush_bytes: AtomicU64,
    flushes: AtomicU64,
    compactions: AtomicU64,
    compaction_read: AtomicU64,
    compaction_written: AtomicU64,
    stall_count: AtomicU64,
    stall_micros: AtomicU64,
}

struct State {
    mem: Arc<MemTable>,
    /// Immutable memtables, oldest first.
    imm: Vec<Arc<MemTable>>,
    version: Arc<Version>,
    live_versions: Vec<Weak<Version>>,
    next_file_number: u64,
    log_number: u64,
    busy: HashSet<u64>,
    pending_outputs: HashSet<u64>,
    running_outputs: Vec<RunningOutput>,
    flush_running: bool,
    compactions_running: usize,
    manual_compaction: bool,
    /// Ingests between reading the version and installing their edit; no compaction is
    /// picked meanwhile (it could write into an ingested range, see `ingest_begin_install`).
    ingests_installing: usize,
    /// Tables removed from the current version that an older, still-read version may hold.
    obsolete: Vec<u64>,
    bg_error: Option<String>,
    unlogged_writes: bool,
}

struct ManifestState {
    writer: LogWriter,
    number: u64,
}

struct PendingWrite {
    batch: Mutex<Option<WriteBatch>>,
    opts: WriteOptions,
    result: Mutex<Option<Result<()>>>,
    /// A barrier (flush/ingest waiting for earlier writes), never part of a write group.
    barrier: bool,
}

/// Writers waiting for the group commit, and the key ranges latched by ingests.
#[derive(Default)]
struct WriteQueue {
    q: VecDeque<Arc<PendingWrite>>,
    /// (id, smallest, largest) user keys, inclusive.
    latches: Vec<(u64, Vec<u8>, Vec<u8>)>,
    next_latch: u64,
}

impl WriteQueue {
    fn blocks(&self, batch: &WriteBatch) -> bool {
        if self.latches.is_empty() {
            return false;
        }
        batch.iter().flatten().any(|e| {
            self.latches.iter().any(|(_, lo, hi)| match e.kind {
                ValueKind::RangeDeletion => e.key <= hi.as_slice() && lo.as_slice() < e.value,
                _ => lo.as_slice() <= e.key && e.key <= hi.as_slice(),
            })
        })
    }
}

type TableMap = BTreeMap<u64, (Arc<Table>, u64)>;

struct TableCache {
    /// Open tables by file number with their last-use tick, and the tick counter.
    map: Mutex<(TableMap, u64)>,
    capacity: usize,
}

struct Inner {
    dir: PathBuf,
    opts: Options,
    fs: Arc<dyn FileSystem>,
    state: Mutex<State>,
    bg_cv: Condvar,
    done_cv: Condvar,
    manifest: Mutex<ManifestState>,
    queue: Mutex<WriteQueue>,
    queue_cv: Condvar,
    wal: Mutex<LogWriter>,
    /// Highest seqno allocated (leader only writes it).
    last_sequence: AtomicU64,
    visible_seq: AtomicU64,
    snapshots: Arc<Mutex<BTreeMap<u64, usize>>>,
    table_cache: TableCache,
    block_cache: Arc<BlockCache>,
    counters: Counters,
    /// `state.obsolete` is non-empty: readers letting go should try to delete tables.
    obsolete_pending: AtomicBool,
    shutting_down: AtomicBool,
    _lock: Box<dyn DirLock>,
}

/// An open database. `Send + Sync`: share it between threads with `Arc`.
///
/// ```
/// use sluice::{Db, Options};
/// let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// db.put(b"k", b"v").unwrap();
/// assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
/// ```
pub struct Db {
    inner: Arc<Inner>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.inner.dir).finish()
    }
}

impl Db {
    /// Opens (or creates) the database in `dir`. Recovery, step by step:
    /// 1. lock the directory; create it if missing (and allowed);
    /// 2. read `CURRENT` and replay the MANIFEST into a version;
    /// 3. replay every WAL not yet flushed into memtables (a torn tail is dropped);
    /// 4. flush the recovered memtables to L0;
    /// 5. start a new WAL and a new MANIFEST holding a snapshot of the version;
    /// 6. delete files no version needs; start the background workers.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Db> {
        opts.validate()?;
        let dir = dir.as_ref().to_path_buf();
        let fs = Arc::clone(&opts.fs);
        let lock = Self::lock_dir(&*fs, &dir, &opts)?;
        let mut rec = Self::recover_manifest(&*fs, &dir, &opts)?;
        // A number may be on disk without the edit that names it (a crash between an ingest's
        // link and its edit, or a flush's table and its edit): never hand it out again.
        for name in fs.list(&dir).map_err(|e| Error::io(&dir, e))? {
            if let Some(n) = number_in_name(&name) {
                rec.next_file_number = rec.next_file_number.max(n + 1);
            }
        }
        let mems = Self::replay_wals(&*fs, &dir, &mut rec)?;
        let recovered = Self::flush_recovered(&*fs, &dir, &opts, &mut rec, mems)?;
        let (wal, manifest, wal_number) = Self::start_logs(&*fs, &dir, &opts, &mut rec, recovered)?;
        let block_cache = BlockCache::new(opts.block_cache_bytes);
        let version = Arc::new(rec.version);
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                mem: Arc::new(MemTable::new(wal_number)),
                imm: Vec::new(),
                live_versions: vec![Arc::downgrade(&version)],
                version,
                next_file_number: rec.next_file_number,
                log_number: wal_number,
                busy: HashSet::new(),
                pending_outputs: HashSet::new(),
                running_outputs: Vec::new(),
                flush_running: false,
                compactions_running: 0,
                manual_compaction: false,
                ingests_installing: 0,
                obsolete: Vec::new(),
                bg_error: None,
                unlogged_writes: false,
            }),
            bg_cv: Condvar::new(),
            done_cv: Condvar::new(),
            manifest: Mutex::new(manifest),
            queue: Mutex::new(WriteQueue::default()),
            queue_cv: Condvar::new(),
            wal: Mutex::new(wal),
            last_sequence: AtomicU64::new(rec.last_sequence),
            visible_seq: AtomicU64::new(rec.last_sequence),
            snapshots: Arc::new(Mutex::new(BTreeMap::new())),
            table_cache: TableCache {
                map: Mutex::new((BTreeMap::new(), 0)),
                capacity: opts.max_open_files,
            },
            block_cache,
            counters: Counters::default(),
            obsolete_pending: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
            _lock: lock,
            dir,
            fs,
            opts,
        });
        inner.delete_obsolete_files();
        let workers = (0..inner.opts.max_background_jobs)
            .map(|i| {
                let inner = Arc::clone(&inner);
                std::thread::Builder::new()
                    .name(format!("sluice-bg-{i}"))
                    .spawn(move || inner.background_loop())
                    .expect("spawn background worker")
            })
            .collect();
        Ok(Db {
            inner,
            workers: Mutex::new(workers),
        })
    }

    fn lock_dir(fs: &dyn FileSystem, dir: &Path, opts: &Options) -> Result<Box<dyn DirLock>> {
        let exists = fs.exists(&dir.join("CURRENT"));
        if !exists && !opts.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "{} does not exist (create_if_missing is false)",
                dir.display()
            )));
        }
        if exists && opts.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "{} already exists (error_if_exists is true)",
                dir.display()
            )));
        }
        fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let lock_path = dir.join("LOCK");
        fs.lock(&lock_path).map_err(|e| Error::io(&lock_path, e))
    }

    fn recover_manifest(fs: &dyn FileSystem, dir: &Path, _opts: &Options) -> Result<Recovery> {
        let current = dir.join("CURRENT");
        let mut rec = Recovery {
            version: Version::default(),
            next_file_number: 2,
            last_sequence: 0,
            log_number: 0,
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
            edits += 1;
        }
        if edits == 0 {
            return Err(Error::corruption(
                &path,
                0,
                "MANIFEST holds no version edit",
            ));
        }
        for f in rec.version.levels.iter().flatten() {
            rec.next_file_number = rec.next_file_number.max(f.number + 1);
        }
        Ok(rec)
    }

    fn replay_wals(
        fs: &dyn FileSystem,
        dir: &Path,
        rec: &mut Recovery,
    ) -> Result<Vec<Arc<MemTable>>> {
        let names = fs.list(dir).map_err(|e| Error::io(dir, e))?;
        let mut wals: Vec<u64> = names
            .iter()
            .filter_map(|n| match classify(n) {
                FileKind::Wal(w) if w >= rec.log_number => Some(w),
                _ => None,
            })
            .collect();
        wals.sort_unstable();
        let mut mems = Vec::new();
        for w in wals {
            rec.next_file_number = rec.next_file_number.max(w + 1);
            let path = wal_name(dir, w);
            let data = fs.read_all(&path).map_err(|e| Error::io(&path, e))?;
            let mut reader = LogReader::new(&data, &path);
            let mem = Arc::new(MemTable::new(w));
            while let Some((offset, payload)) = reader.next_record()? {
                let batch = WriteBatch::from_rep(payload)
                    .map_err(|e| Error::corruption(&path, offset, e))?;
                let mut seq = batch.seqno();
                for e in batch.iter() {
                    let e = e.map_err(|e| Error::corruption(&path, offset, e))?;
                    mem.add(seq, e.kind, e.key, e.value);
                    seq += 1;
                }
                if batch.count() > 0 {
                    rec.last_sequence = rec.last_sequence.max(seq - 1);
                }
            }
            if !mem.is_empty() {
                mems.push(mem);
            }
        }
        Ok(mems)
    }

    fn flush_recovered(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
        rec: &mut Recovery,
        mems: Vec<Arc<MemTable>>,
    ) -> Result<Vec<FileMeta>> {
        let mut out = Vec::new();
        for mem in mems {
            let mut next = rec.next_file_number;
            let files = flush_memtable(fs, dir, opts, &mem, &[], &mut || {
                next += 1;
                next - 1
            })?;
            rec.next_file_number = next;
            out.extend(files);
        }
        Ok(out)
    }

    fn start_logs(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
        rec: &mut Recovery,
        recovered: Vec<FileMeta>,
    ) -> Result<(LogWriter, ManifestState, u64)> {
        let wal_number = rec.next_file_number;
        let manifest_number = rec.next_file_number + 1;
        rec.next_file_number += 2;
        let wal_path = wal_name(dir, wal_number);
        let wal = LogWriter::new(fs.create(&wal_path).map_err(|e| Error::io(&wal_path, e))?);
        if !recovered.is_empty() {
            let edit = VersionEdit {
                added: recovered.into_iter().map(|f| (0, f)).collect(),
                ..Default::default()
            };
            rec.version = rec.version.apply(&edit).map_err(Error::InvalidArgument)?;
        }
        // The new MANIFEST starts with a full snapshot of the version.
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
        let mut writer = LogWriter::new(fs.create(&mpath).map_err(|e| Error::io(&mpath, e))?);
        writer
            .add_record(&snapshot.encode())
            .map_err(|e| Error::io(&mpath, e))?;
        writer.sync().map_err(|e| Error::io(&mpath, e))?;
        set_current(fs, dir, manifest_number)?;
        let opts_path = dir.join(format!("OPTIONS-{manifest_number:06}"));
        let mut of = fs
            .create(&opts_path)
            .map_err(|e| Error::io(&opts_path, e))?;
        std::io::Write::write_all(&mut of, opts.to_options_file().as_bytes())
            .map_err(|e| Error::io(&opts_path, e))?;
        of.sync().map_err(|e| Error::io(&opts_path, e))?;
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
        rec.log_number = wal_number;
        Ok((
            wal,
            ManifestState {
                writer,
                number: manifest_number,
            },
            wal_number,
        ))
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b, WriteOptions::default())
    }

    /// Deletes `key`.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b, WriteOptions::default())
    }

    /// Deletes every key in `[start, end)`.
    pub fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        if start >= end {
            return Err(Error::InvalidArgument(
                "delete_range needs start < end".into(),
            ));
        }
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.write(b, WriteOptions::default())
    }

    /// Applies `batch` atomically.
    pub fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.inner.write(batch, opts)
    }

    /// The value of `key`, or `None`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// The value of `key` as of `opts.snapshot`.
    pub fn get_opt(&self, key: &[u8], opts: &ReadOptions<'_>) -> Result<Option<Vec<u8>>> {
        self.inner.get(key, opts.snapshot)
    }

    /// An iterator over `[lower_bound, upper_bound)` as of `opts.snapshot`.
    pub fn iter(&self, opts: ReadOptions<'_>) -> Result<DbIterator> {
        self.inner
            .iter(opts.snapshot, opts.lower_bound, opts.upper_bound)
    }

    /// Takes a snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        // Registered under the registry lock, so a job reading the registry (and the read
        // horizon with it) either sees this snapshot or started before its seqno existed.
        let mut m = self.inner.snapshots.lock();
        let (seqno, view) = self.inner.read_view();
        *m.entry(seqno).or_insert(0) += 1;
        Snapshot {
            seqno,
            registry: Arc::downgrade(&self.inner.snapshots),
            view,
            _pin: self.inner.pin(),
        }
    }

    /// Adds external SST files (from [`SstWriter`](crate::SstWriter) or RocksDB's
    /// `SstFileWriter`) atomically: all of them become visible at once, or none.
    pub fn ingest<P: AsRef<Path>>(
        &self,
        paths: &[P],
        opts: &IngestOptions,
    ) -> Result<Vec<IngestedFile>> {
        let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        self.inner.ingest(&paths, opts)
    }

    /// Flushes the active memtable and waits until every immutable memtable is on disk.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush_and_wait()
    }

    /// Compacts every file overlapping `[start, end]` (`None` = unbounded) into the last
    /// level, after flushing the memtable.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.flush_and_wait()?;
        self.inner.manual_compaction(start, end)
    }

    /// Current counters and LSM shape.
    pub fn metrics(&self) -> Metrics {
        self.inner.metrics()
    }

    /// The current version (for tools).
    pub fn current_version(&self) -> Arc<Version> {
        Arc::clone(&self.inner.state.lock().version)
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Waits until no flush or compaction is pending or running.
    pub fn wait_for_background_work(&self) -> Result<()> {
        let picker_opts = self.inner.picker_options();
        let mut s = self.inner.state.lock();
        loop {
            if let Some(e) = &s.bg_error {
                return Err(Error::InvalidArgument(format!(
                    "database is in read-only error state: {e}"
                )));
            }
            let idle = !s.flush_running
                && s.imm.is_empty()
                && s.compactions_running == 0
                && picker::pick_compaction(&s.version, &picker_opts, &s.busy).is_none();
            if idle {
                return Ok(());
            }
            self.inner.bg_cv.notify_all();
            self.inner
                .done_cv
                .wait_for(&mut s, Duration::from_millis(50));
        }
    }

    /// Waits for background work, flushes writes that skipped the WAL, stops the workers.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        let mut result = Ok(());
        let needs_flush = {
            let s = self.inner.state.lock();
            s.unlogged_writes && s.bg_error.is_none()
        };
        if needs_flush && !self.inner.shutting_down.load(Ordering::Acquire) {
            result = self.inner.flush_and_wait();
        }
        self.inner.shutting_down.store(true, Ordering::Release);
        {
            let _s = self.inner.state.lock();
            self.inner.bg_cv.notify_all();
        }
        for h in self.workers.lock().drain(..) {
            let _ = h.join();
        }
        result
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

struct Recovery {
    version: Version,
    next_file_number: u64,
    last_sequence: u64,
    log_number: u64,
}

fn set_current(fs: &dyn FileSystem, dir: &Path, manifest_number: u64) -> Result<()> {
    let tmp = dir.join(format!("CURRENT.{manifest_number:06}.tmp"));
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

/// Writes a memtable to L0 table(s); returns their metadata. Syncs files and the directory.
fn flush_memtable(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    mem: &Arc<MemTable>,
    snapshots: &[u64],
    new_number: &mut dyn FnMut() -> u64,
) -> Result<Vec<FileMeta>> {
    let mut it = mem.iter(None, None);
    let never_bottom = |_: &[u8], _: &[u8]| false;
    let policy = DropPolicy {
        snapshots: snapshots.to_vec(),
        bottommost: &never_bottom,
    };
    let mut spec = OutputSpec {
        fs,
        dir,
        table: opts.table_options(0),
        target_file_size: u64::MAX,
        new_file_number: new_number,
    };
    let (files, _) = merge_to_tables(&mut it, mem.range_deletions(), &policy, &mut spec)?;
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    Ok(files)
}

impl TableCache {
    fn get(
        &self,
        fs: &dyn FileSystem,
        dir: &Path,
        f: &FileMeta,
        ropts: &TableReadOptions,
    ) -> Result<Arc<Table>> {
        {
            let mut g = self.map.lock();
            let (map, tick) = &mut *g;
            *tick += 1;
            let t = *tick;
            if let Some((table, used)) = map.get_mut(&f.number) {
                *used = t;
                return Ok(Arc::clone(table));
            }
        }
        let path = table_file_name(dir, f.number);
        let file = fs.open(&path).map_err(|e| Error::io(&path, e))?;
        // RocksDB's paranoid check: a table whose size is not the MANIFEST's was changed
        // behind the Db's back (e.g. a linked ingest source rewritten in place).
        let size = fs.file_size(&path).map_err(|e| Error::io(&path, e))?;
        if size != f.size {
            return Err(Error::corruption(
                &path,
                0,
                format!(
                    "table size is {size} bytes but the MANIFEST records {} (changed outside the Db?)",
                    f.size
                ),
            ));
        }
        let table = Table::open(file, path, ropts)?;
        let mut g = self.map.lock();
        let (map, tick) = &mut *g;
        map.insert(f.number, (Arc::clone(&table), *tick));
        if map.len() > self.capacity {
            if let Some((&victim, _)) = map.iter().min_by_key(|(_, (_, used))| *used) {
                map.remove(&victim);
            }
        }
        Ok(table)
    }

    fn evict(&self, number: u64) {
        self.map.lock().0.remove(&number);
    }
}

impl Inner {
    fn table_read_options(&self) -> TableReadOptions {
        TableReadOptions {
            verify_checksums: self.opts.verify_checksums,
            cache: Some(Arc::clone(&self.block_cache)),
        }
    }

    fn table(&self, f: &FileMeta) -> Result<Arc<Table>> {
        self.table_cache
            .get(&*self.fs, &self.dir, f, &self.table_read_options())
    }

    fn opener(self: &Arc<Self>) -> TableOpener {
        let weak = Arc::downgrade(self);
        Arc::new(move |f: &FileMeta| {
            let inner = weak
                .upgrade()
                .ok_or_else(|| Error::InvalidArgument("database closed".into()))?;
            inner.table(f)
        })
    }

    fn picker_options(&self) -> PickerOptions {
        PickerOptions {
            l0_compaction_trigger: self.opts.l0_compaction_trigger,
            max_bytes_for_level_base: self.opts.max_bytes_for_level_base,
            level_multiplier: self.opts.max_bytes_for_level_multiplier,
        }
    }

    fn read_only_error(&self, s: &State) -> Option<Error> {
        s.bg_error.as_ref().map(|e| {
            Error::InvalidArgument(format!(
                "database is in read-only error state after a background failure: {e}"
            ))
        })
    }

    // ---------------------------------------------------------------- write path

    fn write(self: &Arc<Self>, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        let mut q = self.queue.lock();
        // Writes into a range an ingest has latched wait for that ingest; others go on.
        while q.blocks(&batch) {
            self.queue_cv.wait(&mut q);
        }
        let me = Arc::new(PendingWrite {
            batch: Mutex::new(Some(batch)),
            opts,
            result: Mutex::new(None),
            barrier: false,
        });
        q.q.push_back(Arc::clone(&me));
        loop {
            if let Some(r) = me.result.lock().take() {
                return r;
            }
            if Arc::ptr_eq(q.q.front().expect("queue holds me"), &me) {
                break;
            }
            self.queue_cv.wait(&mut q);
        }
        // Leader: take a group of consecutive writers.
        let mut group = Vec::new();
        let mut bytes = 0;
        for w in q.q.iter() {
            if w.barrier {
                // A barrier's owner pops it itself once it reaches the front.
                break;
            }
            let size = w.batch.lock().as_ref().map_or(0, |b| b.size_bytes());
            if !group.is_empty()
                && (bytes + size > MAX_GROUP_BYTES || (w.opts.sync && !me.opts.sync))
            {
                break;
            }
            bytes += size;
            group.push(Arc::clone(w));
        }
        drop(q);
        let result = self.write_group(&group);
        let mut q = self.queue.lock();
        for w in &group {
            q.q.pop_front();
            if !Arc::ptr_eq(w, &me) {
                *w.result.lock() = Some(match &result {
                    Ok(()) => Ok(()),
                    Err(e) => Err(crate::sst::table::clone_error(e)),
                });
            }
        }
        self.queue_cv.notify_all();
        result
    }

    /// The leader's work, in steps: make room, assign seqnos, log, apply, publish.
    fn write_group(self: &Arc<Self>, group: &[Arc<PendingWrite>]) -> Result<()> {
        let mem = self.make_room_for_write()?;
        let mut combined = WriteBatch::new();
        let mut sync = false;
        let mut use_wal = false;
        for w in group {
            if let Some(b) = w.batch.lock().take() {
                combined.append(&b);
            }
            sync |= w.opts.sync;
            use_wal |= !w.opts.disable_wal;
        }
        let count = u64::from(combined.count());
        // fetch_add: an ingest may allocate a seqno concurrently.
        let first = self.last_sequence.fetch_add(count, Ordering::AcqRel) + 1;
        combined.set_seqno(first);
        if use_wal {
            let mut wal = self.wal.lock();
            let r = wal
                .add_record(combined.rep())
                .and_then(|_| if sync { wal.sync() } else { Ok(()) });
            if let Err(e) = r {
                let msg = format!("WAL write failed: {e}");
                self.state.lock().bg_error.get_or_insert(msg);
                return Err(Error::Io {
                    path: None,
                    source: e,
                });
            }
        } else {
            self.state.lock().unlogged_writes = true;
        }
        for (seq, e) in (first..).zip(combined.iter()) {
            let e = e.map_err(Error::InvalidArgument)?;
            mem.add(seq, e.kind, e.key, e.value);
        }
        self.visible_seq
            .fetch_max(first + count - 1, Ordering::AcqRel);
        self.counters
            .user_bytes
            .fetch_add(combined.size_bytes() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Returns the memtable to write into, stalling or switching memtables as needed.
    fn make_room_for_write(self: &Arc<Self>) -> Result<Arc<MemTable>> {
        let mut delayed = false;
        let mut s = self.state.lock();
        loop {
            if let Some(e) = self.read_only_error(&s) {
                return Err(e);
            }
            let l0 = s.version.levels[0].len();
            if !delayed
                && l0 >= self.opts.l0_slowdown_writes_trigger
                && l0 < self.opts.l0_stop_writes_trigger
            {
                // Slow every write a little rather than stop them all later.
                drop(s);
                let t = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                self.record_stall(t);
                delayed = true;
                s = self.state.lock();
                continue;
            }
            if l0 >= self.opts.l0_stop_writes_trigger {
                let t = Instant::now();
                self.bg_cv.notify_all();
                self.done_cv.wait_for(&mut s, Duration::from_millis(100));
                self.record_stall(t);
                continue;
            }
            if s.mem.approximate_bytes() < self.opts.write_buffer_size as u64 {
                return Ok(Arc::clone(&s.mem));
            }
            if s.imm.len() + 1 >= self.opts.max_write_buffer_number {
                let t = Instant::now();
                self.bg_cv.notify_all();
                self.done_cv.wait_for(&mut s, Duration::from_millis(100));
                self.record_stall(t);
                continue;
            }
            self.switch_memtable(&mut s)?;
        }
    }

    fn record_stall(&self, since: Instant) {
        self.counters.stall_count.fetch_add(1, Ordering::Relaxed);
        self.counters
            .stall_micros
            .fetch_add(since.elapsed().as_micros() as u64, Ordering::Relaxed);
    }

    /// Makes the active memtable immutable and starts a new WAL (leader or flush caller only).
    fn switch_memtable(&self, s: &mut State) -> Result<()> {
        let number = s.next_file_number;
        s.next_file_number += 1;
        let path = wal_name(&self.dir, number);
        let switch = || -> std::io::Result<LogWriter> {
            let mut wal = self.wal.lock();
            // Earlier WALs must be durable before later ones: a sync write in the new WAL
            // implies every write before it survives.
            wal.sync()?;
            let f = self.fs.create(&path)?;
            self.fs.sync_dir(&self.dir)?;
            Ok(std::mem::replace(&mut *wal, LogWriter::new(f)))
        };
        match switch() {
            Ok(_old) => {}
            Err(e) => {
                s.bg_error
                    .get_or_insert(format!("cannot start WAL {}: {e}", path.display()));
                return Err(Error::io(&path, e));
            }
        }
        let old = std::mem::replace(&mut s.mem, Arc::new(MemTable::new(number)));
        s.imm.push(old);
        self.bg_cv.notify_all();
        Ok(())
    }

    /// Switches the memtable (through the write queue, so no write is in flight) and waits
    /// until every immutable memtable is flushed.
    fn flush_and_wait(self: &Arc<Self>) -> Result<()> {
        // Become the write leader with an empty group to exclude concurrent writes.
        let me = self.enter_queue_barrier();
        let r = {
            let mut s = self.state.lock();
            match self.read_only_error(&s) {
                Some(e) => Err(e),
                None if !s.mem.is_empty() => self
                    .switch_memtable(&mut s)
                    .map(|_| s.unlogged_writes = false),
                None => Ok(()),
            }
        };
        self.leave_queue_barrier(&me);
        r?;
        let mut s = self.state.lock();
        while !s.imm.is_empty() || s.flush_running {
            if let Some(e) = self.read_only_error(&s) {
                return Err(e);
            }
            self.bg_cv.notify_all();
            self.done_cv.wait_for(&mut s, Duration::from_millis(50));
        }
        match self.read_only_error(&s) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Waits until every write queued before this call is applied, and holds the queue (no
    /// write group runs) until [`Inner::leave_queue_barrier`].
    fn enter_queue_barrier(&self) -> Arc<PendingWrite> {
        let me = Arc::new(PendingWrite {
            batch: Mutex::new(None),
            opts: WriteOptions::default(),
            result: Mutex::new(None),
            barrier: true,
        });
        let mut q = self.queue.lock();
        q.q.push_back(Arc::clone(&me));
        while !Arc::ptr_eq(q.q.front().expect("queue holds me"), &me) {
            self.queue_cv.wait(&mut q);
        }
        me
    }

    fn leave_queue_barrier(&self, me: &Arc<PendingWrite>) {
        let mut q = self.queue.lock();
        if q.q.front().is_some_and(|f| Arc::ptr_eq(f, me)) {
            q.q.pop_front();
        }
        self.queue_cv.notify_all();
    }

    /// Latches user-key ranges (inclusive) against writes, then waits for writes queued
    /// before the latch. Returns the latch id.
    fn latch_ranges(&self, ranges: Vec<(Vec<u8>, Vec<u8>)>) -> u64 {
        let id = {
            let mut q = self.queue.lock();
            q.next_latch += 1;
            let id = q.next_latch;
            for (lo, hi) in ranges {
                q.latches.push((id, lo, hi));
            }
            id
        };
        let me = self.enter_queue_barrier();
        self.leave_queue_barrier(&me);
        id
    }

    fn unlatch(&self, id: u64) {
        let mut q = self.queue.lock();
        q.latches.retain(|(l, _, _)| *l != id);
        self.queue_cv.notify_all();
    }

    // ---------------------------------------------------------------- read path

    /// The read seqno and the sources holding everything visible at it, taken in one `state`
    /// critical section (invariant 1): a flush or compaction installed after this cannot have
    /// removed a version this seqno needs from the view.
    fn read_view(&self) -> (u64, View) {
        let s = self.state.lock();
        let seq = self.visible_seq.load(Ordering::Acquire);
        let view = View {
            mem: Arc::clone(&s.mem),
            imm: s.imm.clone(),
            version: Arc::clone(&s.version),
        };
        (seq, view)
    }

    fn sources(
        &self,
        snapshot: Option<&Snapshot>,
    ) -> (u64, Arc<MemTable>, Vec<Arc<MemTable>>, Arc<Version>) {
        if let Some(snap) = snapshot {
            let v = snap.view.clone();
            return (snap.seqno, v.mem, v.imm, v.version);
        }
        let (seq, v) = self.read_view();
        (seq, v.mem, v.imm, v.version)
    }

    fn get(
        self: &Arc<Self>,
        user_key: &[u8],
        snapshot: Option<&Snapshot>,
    ) -> Result<Option<Vec<u8>>> {
        // Declared first, dropped last: after the version below.
        let _pin = self.pin();
        let (seq, mem, imm, version) = self.sources(snapshot);
        let mut max_tomb = 0u64;
        // Newest first: active memtable, immutable memtables, L0 newest first, then L1..L6.
        for m in std::iter::once(&mem).chain(imm.iter().rev()) {
            if m.has_range_deletions() {
                for t in m.range_deletions() {
                    if t.seqno <= seq
                        && t.start.as_slice() <= user_key
                        && user_key < t.end.as_slice()
                    {
                        max_tomb = max_tomb.max(t.seqno);
                    }
                }
            }
            if let Some((kind, value, s)) = m.get(user_key, seq) {
                return Ok(resolve(kind, value, s, max_tomb));
            }
        }
        for (level, files) in version.levels.iter().enumerate() {
            let candidates: Vec<&Arc<FileMeta>> = if level == 0 {
                files
                    .iter()
                    .filter(|f| f.overlaps(Some(user_key), Some(user_key)))
                    .collect()
            } else {
                // The first file whose largest key may reach `user_key`. A file whose largest
                // key is an exclusive range-deletion end equal to `user_key` does not hold it,
                // and the next file may start at it: look at both.
                let i = files.partition_point(|f| f.largest_user() < user_key);
                files[i..]
                    .iter()
                    .take(2)
                    .find(|f| f.overlaps(Some(user_key), Some(user_key)))
                    .into_iter()
                    .collect()
            };
            for f in candidates {
                let table = self.table(f)?;
                for t in table.range_deletions() {
                    let ts = if f.global_seqno > 0 {
                        f.global_seqno
                    } else {
                        t.seqno
                    };
                    if ts <= seq && t.start.as_slice() <= user_key && user_key < t.end.as_slice() {
                        max_tomb = max_tomb.max(ts);
                    }
                }
                let found = if f.global_seqno > 0 {
                    if f.global_seqno > seq {
                        None
                    } else {
                        table
                            .get(user_key, key::MAX_SEQNO)?
                            .map(|(k, v)| (k, v, f.global_seqno))
                    }
                } else {
                    table.get_with_seqno(user_key, seq)?
                };
                if let Some((kind, value, s)) = found {
                    return Ok(resolve(kind, value, s, max_tomb));
                }
            }
        }
        Ok(None)
    }

    fn iter(
        self: &Arc<Self>,
        snapshot: Option<&Snapshot>,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> Result<DbIterator> {
        let (seq, mem, imm, version) = self.sources(snapshot);
        let bounds = IterBounds {
            lower: lower.clone(),
            upper: upper.clone(),
        };
        let mut children: Vec<BoxIter> = Vec::new();
        let mut tombs: Vec<RangeTombstone> = Vec::new();
        let mut pins: Vec<Arc<dyn std::any::Any + Send + Sync>> = Vec::new();
        for m in std::iter::once(&mem).chain(imm.iter()) {
            children.push(Box::new(m.iter(lower.clone(), upper.clone())));
            tombs.extend(m.range_deletions());
            pins.push(Arc::clone(m) as Arc<dyn std::any::Any + Send + Sync>);
        }
        let lo = lower.as_deref();
        for (level, files) in version.levels.iter().enumerate() {
            let in_range: Vec<Arc<FileMeta>> = files
                .iter()
                .filter(|f| {
                    f.overlaps(lo, None) && upper.as_deref().is_none_or(|u| f.smallest_user() < u)
                })
                .cloned()
                .collect();
            for f in in_range.iter().filter(|f| f.range_dels > 0) {
                let t = self.table(f)?;
                tombs.extend(t.range_deletions().iter().map(|t| RangeTombstone {
                    seqno: if f.global_seqno > 0 {
                        f.global_seqno
                    } else {
                        t.seqno
                    },
                    ..t.clone()
                }));
            }
            if level == 0 {
                for f in &in_range {
                    let t = self.table(f)?;
                    children.push(file_iter(&t, f, bounds.clone()));
                }
            } else if !in_range.is_empty() {
                children.push(Box::new(LevelIter::new(
                    in_range,
                    self.opener(),
                    bounds.clone(),
                )));
            }
        }
        pins.push(version as Arc<dyn std::any::Any + Send + Sync>);
        // Last: dropped after the version (a Vec drops its elements in order).
        pins.push(Arc::new(self.pin()) as Arc<dyn std::any::Any + Send + Sync>);
        let agg = RangeDelAggregator::new(tombs, seq);
        Ok(DbIterator::new(
            MergingIter::new(children),
            seq,
            agg,
            lower,
            upper,
            pins,
        ))
    }

    // ---------------------------------------------------------------- background work

    fn background_loop(self: Arc<Self>) {
        let picker_opts = self.picker_options();
        loop {
            let job = {
                let mut s = self.state.lock();
                loop {
                    if self.shutting_down.load(Ordering::Acquire) {
                        return;
                    }
                    if s.bg_error.is_none() {
                        if !s.flush_running && !s.imm.is_empty() {
                            s.flush_running = true;
                            break Job::Flush(Arc::clone(&s.imm[0]));
                        }
                        if !s.manual_compaction
                            && s.ingests_installing == 0
                            && s.compactions_running + 1 < self.opts.max_background_jobs.max(2)
                        {
                            if let Some(c) =
                                picker::pick_compaction(&s.version, &picker_opts, &s.busy)
                            {
                                for f in c.all_inputs() {
                                    s.busy.insert(f.number);
                                }
                                s.running_outputs.push(running_output(&c));
                                s.compactions_running += 1;
                                break Job::Compact(c);
                            }
                        }
                    }
                    self.bg_cv.wait_for(&mut s, Duration::from_millis(200));
                }
            };
            let result = match &job {
                Job::Flush(m) => self.run_flush(m),
                Job::Compact(c) => self.run_compaction(c),
            };
            let mut s = self.state.lock();
            match &job {
                Job::Flush(_) => s.flush_running = false,
                Job::Compact(c) => {
                    s.compactions_running -= 1;
                    remove_running_output(&mut s.running_outputs, &running_output(c));
                    for f in c.all_inputs() {
                        s.busy.remove(&f.number);
                    }
                }
            }
            if let Err(e) = result {
                s.bg_error.get_or_insert(e.to_string());
            }
            drop(s);
            self.delete_obsolete_files();
            self.done_cv.notify_all();
            self.bg_cv.notify_all();
        }
    }

    /// A file-number allocator that also protects the numbers from obsolete-file deletion.
    fn allocate_numbers(&self) -> impl FnMut() -> u64 + '_ {
        move || {
            let mut s = self.state.lock();
            let x = s.next_file_number;
            s.next_file_number += 1;
            s.pending_outputs.insert(x);
            x
        }
    }

    /// The seqnos a flush or compaction starting now must keep readable: every live snapshot,
    /// and the read horizon (`visible_seq`), since a reader may already hold a view at it
    /// without a registered snapshot (invariant 6). Ascending.
    fn live_snapshots(&self) -> Vec<u64> {
        let m = self.snapshots.lock();
        let horizon = self.visible_seq.load(Ordering::Acquire);
        let mut v: Vec<u64> = m.keys().copied().collect();
        if v.last().is_none_or(|&l| l < horizon) {
            v.push(horizon);
        }
        v
    }

    /// Flush, step by step: write the table, then one durable edit that adds it and advances
    /// the log number, then drop the memtable from the immutable list.
    fn run_flush(self: &Arc<Self>, mem: &Arc<MemTable>) -> Result<()> {
        let snapshots = self.live_snapshots();
        let mut alloc = self.allocate_numbers();
        let files = flush_memtable(
            &*self.fs, &self.dir, &self.opts, mem, &snapshots, &mut alloc,
        )?;
        let bytes: u64 = files.iter().map(|f| f.size).sum();
        let numbers: Vec<u64> = files.iter().map(|f| f.number).collect();
        let next_log = {
            let s = self.state.lock();
            s.imm.get(1).map_or(s.mem.wal_number, |m| m.wal_number)
        };
        let edit = VersionEdit {
            log_number: Some(next_log),
            last_sequence: Some(self.last_sequence.load(Ordering::Acquire)),
            added: files.into_iter().map(|f| (0, f)).collect(),
            ..Default::default()
        };
        let r = self.log_and_apply(edit, |s| {
            if s.imm.first().is_some_and(|m| Arc::ptr_eq(m, mem)) {
                s.imm.remove(0);
            }
            s.log_number = next_log;
        });
        let mut s = self.state.lock();
        for n in numbers {
            s.pending_outputs.remove(&n);
        }
        drop(s);
        r?;
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        self.counters
            .flush_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Writes `edit` to the MANIFEST, syncs it, installs the new version and runs `also`
    /// in the same critical section.
    fn log_and_apply(&self, edit: VersionEdit, also: impl FnOnce(&mut State)) -> Result<()> {
        let mut m = self.manifest.lock();
        self.apply_edit_locked(&mut m, edit, also)
    }

    /// [`Inner::log_and_apply`] for a caller already holding the manifest lock.
    fn apply_edit_locked(
        &self,
        m: &mut ManifestState,
        mut edit: VersionEdit,
        also: impl FnOnce(&mut State),
    ) -> Result<()> {
        let next_version = {
            let s = self.state.lock();
            if let Some(e) = self.read_only_error(&s) {
                return Err(e);
            }
            edit.next_file_number = Some(s.next_file_number);
            s.version
                .apply(&edit)
                .map_err(|e| Error::InvalidArgument(format!("bad version edit: {e}")))?
        };
        let path = self.dir.join(manifest_name(m.number));
        let written = m
            .writer
            .add_record(&edit.encode())
            .and_then(|_| m.writer.sync());
        if let Err(e) = written {
            let mut s = self.state.lock();
            s.bg_error
                .get_or_insert(format!("MANIFEST write failed: {e}"));
            return Err(Error::io(&path, e));
        }
        let mut s = self.state.lock();
        let v = Arc::new(next_version);
        s.live_versions.retain(|w| w.strong_count() > 0);
        s.live_versions.push(Arc::downgrade(&v));
        // A trivial move deletes and re-adds the same number: that table stays.
        for (_, n) in &edit.deleted {
            if !edit.added.iter().any(|(_, f)| f.number == *n) {
                s.obsolete.push(*n);
            }
        }
        s.version = v;
        also(&mut s);
        if !s.obsolete.is_empty() {
            self.obsolete_pending.store(true, Ordering::Release);
        }
        drop(s);
        self.purge_obsolete_tables();
        Ok(())
    }

    /// A pin for a reader of a view (see [`ReadPin`]).
    fn pin(self: &Arc<Self>) -> ReadPin {
        ReadPin {
            inner: Arc::downgrade(self),
        }
    }

    /// Deletes every obsolete table no live version holds any more.
    fn purge_obsolete_tables(&self) {
        let dead: Vec<u64> = {
            let mut s = self.state.lock();
            if s.obsolete.is_empty() {
                return;
            }
            s.live_versions.retain(|w| w.strong_count() > 0);
            let mut live: HashSet<u64> = s.version.file_numbers().collect();
            for v in s.live_versions.iter().filter_map(Weak::upgrade) {
                live.extend(v.file_numbers());
            }
            let (dead, still): (Vec<u64>, Vec<u64>) =
                s.obsolete.iter().partition(|n| !live.contains(n));
            s.obsolete = still;
            if s.obsolete.is_empty() {
                self.obsolete_pending.store(false, Ordering::Release);
            }
            dead
        };
        for n in dead {
            self.table_cache.evict(n);
            let _ = self.fs.remove(&table_file_name(&self.dir, n));
        }
    }

    /// Compaction, step by step: trivial move or merge the inputs into new tables, then one
    /// durable edit that swaps inputs for outputs.
    fn run_compaction(self: &Arc<Self>, c: &CompactionChoice) -> Result<()> {
        if c.trivial_move {
            let f = &c.inputs[0];
            let edit = VersionEdit {
                deleted: vec![(c.level, f.number)],
                added: vec![(c.output_level, (**f).clone())],
                ..Default::default()
            };
            self.log_and_apply(edit, |_| {})?;
            self.counters.compactions.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let inputs: Vec<(usize, Arc<FileMeta>)> = c
            .inputs
            .iter()
            .map(|f| (c.level, Arc::clone(f)))
            .chain(
                c.output_inputs
                    .iter()
                    .map(|f| (c.output_level, Arc::clone(f))),
            )
            .collect();
        self.compact_files(&inputs, c.output_level)
    }

    fn compact_files(
        self: &Arc<Self>,
        inputs: &[(usize, Arc<FileMeta>)],
        output_level: usize,
    ) -> Result<()> {
        // Only the deeper levels are needed (not the version: holding it would keep the
        // inputs on disk after the install, see invariant 7).
        let deeper = self.state.lock().version.levels[output_level + 1..].to_vec();
        let mut children: Vec<BoxIter> = Vec::new();
        let mut tombs = Vec::new();
        let mut bytes_in = 0;
        for (_, f) in inputs {
            let t = self.table(f)?;
            tombs.extend(t.range_deletions().iter().map(|rt| RangeTombstone {
                seqno: if f.global_seqno > 0 {
                    f.global_seqno
                } else {
                    rt.seqno
                },
                ..rt.clone()
            }));
            children.push(file_iter(&t, f, IterBounds::default()));
            bytes_in += f.size;
        }
        let mut merged = MergingIter::new(children);
        let bottommost = move |lo: &[u8], hi: &[u8]| {
            deeper
                .iter()
                .all(|files| !files.iter().any(|f| f.overlaps(Some(lo), Some(hi))))
        };
        let policy = DropPolicy {
            snapshots: self.live_snapshots(),
            bottommost: &bottommost,
        };
        let mut alloc = self.allocate_numbers();
        let mut spec = OutputSpec {
            fs: &*self.fs,
            dir: &self.dir,
            table: self.opts.table_options(output_level),
            target_file_size: self.opts.target_file_size,
            new_file_number: &mut alloc,
        };
        let merged_result = merge_to_tables(&mut merged, tombs, &policy, &mut spec);
        drop(alloc);
        let (files, stats) = merged_result?;
        let numbers: Vec<u64> = files.iter().map(|f| f.number).collect();
        let r = self
            .fs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))
            .and_then(|_| {
                let edit = VersionEdit {
                    deleted: inputs.iter().map(|(l, f)| (*l, f.number)).collect(),
                    added: files.into_iter().map(|f| (output_level, f)).collect(),
                    ..Default::default()
                };
                self.log_and_apply(edit, |_| {})
            });
        let mut s = self.state.lock();
        for n in &numbers {
            s.pending_outputs.remove(n);
        }
        drop(s);
        r?;
        self.counters.compactions.fetch_add(1, Ordering::Relaxed);
        self.counters
            .compaction_read
            .fetch_add(bytes_in, Ordering::Relaxed);
        self.counters
            .compaction_written
            .fetch_add(stats.bytes_out, Ordering::Relaxed);
        Ok(())
    }

    fn manual_compaction(self: &Arc<Self>, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        // Stop automatic compactions and wait for running ones and for ingest installs.
        let mut s = self.state.lock();
        while s.manual_compaction || s.compactions_running > 0 || s.ingests_installing > 0 {
            self.done_cv.wait_for(&mut s, Duration::from_millis(50));
        }
        s.manual_compaction = true;
        // Choose the inputs and register the output range in this critical section, so an
        // ingest reading the running outputs either sees it or installed before the version
        // the inputs come from.
        let (inputs, out) = manual_compaction_inputs(&s.version, start, end);
        s.running_outputs.push(out.clone());
        drop(s);
        let only_last = inputs.iter().all(|(l, _)| *l == NUM_LEVELS - 1) && inputs.len() <= 1;
        let r = if inputs.is_empty() || only_last {
            Ok(())
        } else {
            self.compact_files(&inputs, NUM_LEVELS - 1)
        };
        let mut s = self.state.lock();
        remove_running_output(&mut s.running_outputs, &out);
        s.manual_compaction = false;
        if let Err(e) = &r {
            s.bg_error.get_or_insert(e.to_string());
        }
        drop(s);
        self.delete_obsolete_files();
        self.bg_cv.notify_all();
        self.done_cv.notify_all();
        r
    }

    /// Deletes every file in the directory that no live version, memtable or running job needs.
    fn delete_obsolete_files(&self) {
        self.purge_obsolete_tables();
        // Lock order is manifest before state (as in log_and_apply): read the number first.
        let manifest_number = self.manifest.lock().number;
        let (live, log_number, number_limit) = {
            let mut s = self.state.lock();
            s.live_versions.retain(|w| w.strong_count() > 0);
            let mut live: HashSet<u64> = s.version.file_numbers().collect();
            for v in s.live_versions.iter().filter_map(Weak::upgrade) {
                live.extend(v.file_numbers());
            }
            live.extend(s.pending_outputs.iter().copied());
            let min_wal = s.imm.first().map_or(s.mem.wal_number, |m| m.wal_number);
            // Files numbered from here on were allocated after this live set was taken.
            (live, s.log_number.min(min_wal), s.next_file_number)
        };
        let Ok(names) = self.fs.list(&self.dir) else {
            return;
        };
        for name in names {
            let remove = match classify(&name) {
                FileKind::Table(n) => n < number_limit && !live.contains(&n),
                FileKind::Wal(n) => n < log_number,
                FileKind::Manifest(n) => n < manifest_number,
                FileKind::Temp => true,
                FileKind::Other => {
                    name.starts_with("OPTIONS-") && name != format!("OPTIONS-{manifest_number:06}")
                }
            };
            if remove {
                if let FileKind::Table(n) = classify(&name) {
                    self.table_cache.evict(n);
                }
                let _ = self.fs.remove(&self.dir.join(&name));
            }
        }
    }

    fn metrics(&self) -> Metrics {
        let s = self.state.lock();
        let scores = picker::level_scores(&s.version, &self.picker_options());
        let levels: Vec<LevelMetrics> = (0..NUM_LEVELS)
            .map(|l| LevelMetrics {
                files: s.version.levels[l].len(),
                bytes: s.version.level_bytes(l),
                score_x100: scores[l],
            })
            .collect();
        let read_amp =
            1 + s.imm.len() + levels[0].files + levels[1..].iter().filter(|l| l.files > 0).count();
        let c = &self.counters;
        let user = c.user_bytes.load(Ordering::Relaxed);
        let written =
            c.flush_bytes.load(Ordering::Relaxed) + c.compaction_written.load(Ordering::Relaxed);
        let (hits, misses) = self.block_cache.hit_stats();
        Metrics {
            memtable_bytes: s.mem.approximate_bytes(),
            immutable_memtables: s.imm.len(),
            read_amplification: read_amp,
            write_amplification: if user > 0 {
                written as f64 / user as f64
            } else {
                0.0
            },
            user_bytes: user,
            flush_bytes: c.flush_bytes.load(Ordering::Relaxed),
            flushes: c.flushes.load(Ordering::Relaxed),
            compactions: c.compactions.load(Ordering::Relaxed),
            compaction_bytes_read: c.compaction_read.load(Ordering::Relaxed),
            compaction_bytes_written: c.compaction_written.load(Ordering::Relaxed),
            stall_count: c.stall_count.load(Ordering::Relaxed),
            stall_micros: c.stall_micros.load(Ordering::Relaxed),
            last_sequence: self.visible_seq.load(Ordering::Acquire),
            block_cache_hits: hits,
            block_cache_misses: misses,
            background_error: s.bg_error.clone(),
            levels,
        }
    }
}

/// A manual compaction's inputs: every file overlapping `[start, end]`, the range expanded
/// until it covers whole files at every level; and its output range in the last level.
fn manual_compaction_inputs(
    v: &Version,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> (Vec<(usize, Arc<FileMeta>)>, RunningOutput) {
    let (mut lo, mut hi) = (start.map(<[u8]>::to_vec), end.map(<[u8]>::to_vec));
    let mut inputs: Vec<(usize, Arc<FileMeta>)>;
    loop {
        inputs = Vec::new();
        for level in 0..NUM_LEVELS {
            for f in v.overlapping(level, lo.as_deref(), hi.as_deref()) {
                inputs.push((level, f));
            }
        }
        let new_lo = inputs.iter().map(|(_, f)| f.smallest_user().to_vec()).min();
        let new_hi = inputs.iter().map(|(_, f)| f.largest_user().to_vec()).max();
        let grow_lo = match (&lo, &new_lo) {
            (Some(a), Some(b)) if b < a => Some(b.clone()),
            _ => None,
        };
        let grow_hi = match (&hi, &new_hi) {
            (Some(a), Some(b)) if b > a => Some(b.clone()),
            _ => None,
        };
        if grow_lo.is_none() && grow_hi.is_none() {
            break;
        }
        lo = grow_lo.or(lo);
        hi = grow_hi.or(hi);
    }
    let out = RunningOutput {
        level: NUM_LEVELS - 1,
        lo: inputs
            .iter()
            .map(|(_, f)| f.smallest_user().to_vec())
            .min()
            .unwrap_or_default(),
        hi: inputs
            .iter()
            .map(|(_, f)| f.largest_user().to_vec())
            .max()
            .unwrap_or_default(),
    };
    (inputs, out)
}

/// Removes one registration of a finished compaction's output range.
fn remove_running_output(running: &mut Vec<RunningOutput>, done: &RunningOutput) {
    if let Some(i) = running.iter().position(|r| r == done) {
        running.remove(i);
    }
}

fn running_output(c: &CompactionChoice) -> RunningOutput {
    let lo = c
        .all_inputs()
        .map(|f| f.smallest_user())
        .min()
        .unwrap_or_default()
        .to_vec();
    let hi = c
        .all_inputs()
        .map(|f| f.largest_user())
        .max()
        .unwrap_or_default()
        .to_vec();
    RunningOutput {
        level: c.output_level,
        lo,
        hi,
    }
}

enum Job {
    Flush(Arc<MemTable>),
    Compact(CompactionChoice),
}

fn resolve(kind: ValueKind, value: Vec<u8>, seqno: u64, max_tomb: u64) -> Option<Vec<u8>> {
    if max_tomb > seqno {
        return None;
    }
    (kind == ValueKind::Value).then_some(value)
}
