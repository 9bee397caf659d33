//! The database: write path, read path, flush, compaction, recovery.
//!
//! Threads and locks:
//! * `ingest_order`: held by an ingest from its latch to its install or queueing, so ingests
//!   apply one at a time.
//! * `queue` (group commit): writers enqueue; the front writer is the *leader*, which writes
//!   the whole group to the WAL and memtable while the others wait. Only the leader inserts
//!   into the active memtable and appends writes to the WAL; an ingest appends its own
//!   records (a flushable's under a queue barrier, an install marker under `manifest`), each
//!   under `wal`, which orders every append.
//! * `manifest`: serializes version edits. Held while an edit is written and synced (and an
//!   ingest's install marker appended under `wal`), so the order of edits in the MANIFEST is
//!   the order versions are installed.
//! * `snapshots`: the registry of live snapshots (a job reads it with the read horizon).
//! * `state` (`State`): memtables, the current version and its derived facts, the running
//!   jobs (`jobs.rs`) and the file book (`file_book.rs`). Held briefly; never across table
//!   I/O. Readers lock it only to clone `Arc`s of their sources.
//! * `wal`: the active WAL's writer (appends by the leader; syncs, switches).
//! * The event queue (`events/dispatch.rs`): a leaf lock, taken under any of the above only to
//!   push an event; listeners run on the event thread with no lock of the Db held.
//! * Background workers run flushes and compactions without holding `state`.
//! * The event thread (`sluice-events`, only with listeners) calls the listeners with no lock
//!   of the Db held; everyone else only pushes onto its queue (`events/`).
//! * Lock order: `ingest_order` → `queue` → `manifest` → `snapshots` → `state` → `wal`;
//!   never the reverse.
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

mod background;
mod checkpoint;
mod compact;
mod create;
pub mod events;
mod file_book;
mod flush;
mod flushable;
#[doc(hidden)]
pub mod fuzz;
mod ingest;
mod jobs;
mod metrics;
mod obsolete;
mod open;
mod options;
mod read;
mod read_only;
mod table_cache;
mod version_set;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

pub use checkpoint::CheckpointInfo;
pub use create::DirContents;
pub use ingest::{ingest_target_level, IngestOptions, IngestPlan, IngestedFile};
pub use metrics::{LevelMetrics, Metrics};
pub use options::{Options, ReadOptions, WriteOptions};

use events::{Events, StallTracker};
use file_book::FileBook;
use flushable::Flushable;
use jobs::Jobs;
use metrics::Counters;
use obsolete::ReadPin;
use read::View;
use table_cache::TableCache;
use version_set::ManifestState;
use write::WriteQueue;

use crate::base::error::{Error, Result};
use crate::compaction::picker::{self, PickerOptions};
use crate::fs::{DirLock, FileSystem};
use crate::memtable::MemTable;
use crate::read::db_iter::DbIterator;
use crate::sst::cache::BlockCache;
use crate::version::l0_sublevels::L0Sublevels;
use crate::version::Version;
use crate::wal::batch::WriteBatch;
use crate::wal::log::LogWriter;

/// A consistent point-in-time view; reads through it see exactly the writes acknowledged
/// before it was taken. Released on drop.
pub struct Snapshot {
    seqno: u64,
    registry: Weak<Mutex<BTreeMap<u64, usize>>>,
    /// The memtables and version the snapshot was taken on: reads through it never see a file
    /// installed later (see `ingest`), and flushed memtables stay readable.
    view: View,
    /// Declared after `view`, so it is dropped after it (holding the last reference to the
    /// view's version, it deletes what only that version kept).
    _pin: ReadPin,
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

/// Everything guarded by the `state` lock. Held briefly, never across I/O. The sources of
/// reads and their derived facts sit here; what runs and what it holds busy is [`Jobs`]
/// (`jobs.rs`), file numbers and which tables must stay on disk the [`FileBook`]
/// (`file_book.rs`), each changed only through its own methods.
struct State {
    /// The active memtable: only the write leader inserts into it.
    mem: Arc<MemTable>,
    /// Immutable memtables and flushable ingests, oldest first (seqnos increase along it);
    /// each leaves in the critical section that installs the version holding its tables
    /// (invariant 2).
    imm: Vec<Flushable>,
    /// The current version. Replaced only by `log_and_apply`, after its edit is durable.
    version: Arc<Version>,
    /// The current version's L0 sublevels, rebuilt with every version by `set_version`
    /// (derived from the version, never stored in the MANIFEST).
    l0: Arc<L0Sublevels>,
    /// Estimated bytes compaction is behind in the current version (see `Options`), also
    /// rebuilt by `set_version`.
    pending_compaction_bytes: u64,
    /// Writes skipped the WAL since the last flush: closing flushes them.
    unlogged_writes: bool,
    /// Set by the first failed background write or sync: the Db is read-only from then on
    /// (invariant 5).
    background_error: Option<String>,
    /// The flush, compactions and ingest installs running, and what they hold busy.
    jobs: Jobs,
    /// File numbers, uninstalled files, obsolete tables and the live versions holding them.
    files: FileBook,
    /// The write stall condition last reported to listeners (untouched without one).
    stall: StallTracker,
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
    /// The ring the WAL is staged through (`Options::wal_staging`), closed before the
    /// directory lock is let go.
    wal_stage: Option<crate::fs::staged::WalStage>,
    /// Highest seqno allocated (leader only writes it).
    last_sequence: AtomicU64,
    visible_seq: AtomicU64,
    snapshots: Arc<Mutex<BTreeMap<u64, usize>>>,
    table_cache: TableCache,
    block_cache: Arc<BlockCache>,
    counters: Counters,
    /// A full flush's output over its memtable's bytes, per mille (`FLUSH_RATIO_UNMEASURED`
    /// until a flush of at least a quarter of `write_buffer_size` has been measured): the picker's L0 round is
    /// `write_buffer_size` times it (`Options::l0_thin_sublevels_wait`).
    flush_out_permille: AtomicU64,
    /// `state.obsolete_tables` is non-empty: readers letting go should try to delete tables.
    obsolete_pending: AtomicBool,
    shutting_down: AtomicBool,
    /// The directory lock; released when the Db is closed or dropped, even if a reader's
    /// pin briefly keeps `Inner` alive after that. `None` when open read-only.
    lock: Mutex<Option<Box<dyn DirLock>>>,
    /// Opened with `Db::open_read_only`: nothing is ever written or deleted.
    read_only: bool,
    /// Held by an ingest from its latch to its install or queueing: ingests are applied one
    /// at a time (lock order: before `queue`).
    ingest_order: Mutex<()>,
    /// The event queue and its thread (none without listeners, or when open read-only).
    events: Events,
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
    /// Sets `key` to `value`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(key.len() + value.len() + WriteBatch::ENTRY_OVERHEAD);
        b.put(key, value);
        self.write(b, WriteOptions::default())
    }

    /// Deletes `key`.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(key.len() + WriteBatch::ENTRY_OVERHEAD);
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
        let mut b = WriteBatch::with_capacity(start.len() + end.len() + WriteBatch::ENTRY_OVERHEAD);
        b.delete_range(start, end);
        self.write(b, WriteOptions::default())
    }

    /// Applies `batch` atomically.
    pub fn write(&self, batch: WriteBatch, opts: WriteOptions<'_>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.inner.write(batch, opts)
    }

    /// The value of `key`, or `None`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// The value of `key` as of `opts.snapshot`, recorded into `opts.trace` if set.
    pub fn get_opt(&self, key: &[u8], opts: &ReadOptions<'_>) -> Result<Option<Vec<u8>>> {
        self.inner.get(key, opts.snapshot, opts.trace)
    }

    /// An iterator over `[lower_bound, upper_bound)` as of `opts.snapshot`; with
    /// `opts.trace` it records every positioning call and what it stepped over until dropped.
    pub fn iter(&self, opts: ReadOptions<'_>) -> Result<DbIterator> {
        self.inner.iter(
            opts.snapshot,
            opts.lower_bound,
            opts.upper_bound,
            opts.trace,
        )
    }

    /// Takes a snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        // Registered under the registry lock, so a job reading the registry (and the read
        // horizon with it) either sees this snapshot or started before its seqno existed.
        let mut m = self.inner.snapshots.lock();
        let (seqno, view) = self.inner.read_view();
        let pinned_version = Arc::clone(&view.version);
        *m.entry(seqno).or_insert(0) += 1;
        Snapshot {
            seqno,
            registry: Arc::downgrade(&self.inner.snapshots),
            view,
            _pin: self.inner.pin(pinned_version),
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

    /// The largest sequence number of any entry or range deletion with a user key in
    /// `[lower, upper)`, in the memtables and every table file of the current state (entries
    /// not yet visible included); 0 when the range holds nothing or only entries ingested at
    /// seqno 0.
    ///
    /// Between two calls that return the same number, nothing went into the range through
    /// the write path (puts, deletes, range deletions reaching into it) nor by an ingest that
    /// took a sequence number: compaction never raises or lowers an entry's seqno (Sluice
    /// does not zero seqnos at the bottom level). An ingest at seqno 0 — its files overlapped
    /// nothing in the Db, or `ingest_behind` — does not move it. An import's resume uses it
    /// to tell whether its table changed without scanning it (and writes the table's catalog
    /// entry with every import, a file that always takes a seqno). Cost: the range's memtable
    /// entries, the metadata of the files wholly inside it, and a read of the range's part of
    /// the other files that reach into it (those straddling a bound; at L0 and among queued
    /// ingests, each file partly in the range).
    pub fn max_seqno_in_range(&self, lower: &[u8], upper: &[u8]) -> Result<u64> {
        self.inner.max_seqno_in_range(lower, upper)
    }

    /// The user keys in `[lower, upper)` that have an entry — a value or a deletion — with a
    /// sequence number past `seqno`, in the current view (entries not yet visible included),
    /// sorted, each once. `None` if a range deletion past `seqno` reaches into the range (its
    /// keys are not listed), or if more than `budget` entries would be read to tell: the
    /// caller then reads the range its own way.
    ///
    /// Reads the range's memtable entries and, of the table files, only those whose largest
    /// seqno is past `seqno` (every entry of the range in each of them): usually the recent
    /// writes in the memtables and young L0 files, but a compaction since `seqno` that
    /// rewrote files of the range makes them count too, older entries and all, hence the
    /// budget. Entries ingested at seqno 0 are never listed (as with
    /// [`Db::newest_seqno`]). Hold a [`Snapshot`] at `seqno` while asking: without one, a
    /// compaction may drop a deletion together with the value it deleted, and the key is
    /// then not listed. An import's commit check (`sluice-import`) uses it to read again only
    /// the keys written since its earlier pass, holding that pass's snapshot.
    pub fn keys_written_since(
        &self,
        lower: &[u8],
        upper: &[u8],
        seqno: u64,
        budget: usize,
    ) -> Result<Option<Vec<Vec<u8>>>> {
        self.inner.keys_written_since(lower, upper, seqno, budget)
    }

    /// The sequence number of the newest entry for `key` — a value, a deletion, or a range
    /// deletion covering it — in the current view, found as a point read finds the key (Bloom
    /// filters, one file a level); 0 if there is none, or if that entry came in a file
    /// ingested at sequence number 0 (which overlapped nothing). A write to `key` after a
    /// seqno `s` was published makes this larger than `s`. Used by an import's commit check
    /// (`sluice-import`), one key at a time.
    pub fn newest_seqno(&self, key: &[u8]) -> Result<u64> {
        self.inner.newest_seqno(key)
    }

    /// Approximate bytes on disk of the keys in `[start, end)` (`None` = unbounded): every
    /// table overlapping the range, the tables at its edges pro-rated by their index (RocksDB's
    /// `GetApproximateSizes` without memtables). Reads only table indexes.
    pub fn approximate_size(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<u64> {
        let pin = self.inner.pin(self.current_version());
        let mut total = 0u64;
        for f in pin.version().levels.iter().flatten() {
            if !f.overlaps(start, end) || end.is_some_and(|e| e <= f.smallest_user()) {
                continue;
            }
            let t = self.inner.table(f)?;
            let lo = match start {
                Some(k) if k > f.smallest_user() => t.approximate_offset_of(k),
                _ => 0,
            };
            let hi = match end {
                Some(k) if k <= f.largest_user() => t.approximate_offset_of(k),
                _ => t.file_size(),
            };
            total += hi.saturating_sub(lo);
        }
        Ok(total)
    }

    /// Current counters and LSM shape.
    pub fn metrics(&self) -> Metrics {
        self.inner.metrics()
    }

    /// The current version (for tools).
    pub fn current_version(&self) -> Arc<Version> {
        Arc::clone(&self.inner.state.lock().version)
    }

    /// Merges now, on the caller's thread and beside whatever compactions run, every run of
    /// small neighbouring files that lies wholly in user keys `[lo, hi)` and whose keys share
    /// their first `prefix` bytes (the compaction picker's policy 7, whatever
    /// `Options::small_file_merge_prefix` says, with files small under `small_bytes` too, so
    /// that one merge reads and holds at most 64 times that), until none is left; returns the
    /// merges run.
    /// `sluice_import` calls it for its table after each commit: an append of a few rows
    /// leaves one small file per index (per column of a columnar table) at the bottom, beside
    /// that index's earlier ones, and a process that exits right after its import leaves no
    /// time for background work. A failed merge poisons the Db, as a failed compaction does.
    pub fn merge_small_files(
        &self,
        prefix: usize,
        small_bytes: u64,
        lo: &[u8],
        hi: &[u8],
    ) -> Result<usize> {
        if self.inner.read_only {
            return Ok(0);
        }
        self.inner.merge_small_files(prefix, small_bytes, lo, hi)
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Waits until no flush or compaction is pending or running.
    pub fn wait_for_background_work(&self) -> Result<()> {
        if self.inner.read_only {
            return Ok(()); // no background work runs
        }
        let mut s = self.inner.state.lock();
        loop {
            // Read each time, as the background threads do: a flush may change the L0 round.
            let picker_opts = self.inner.picker_options();
            if let Some(e) = &s.background_error {
                return Err(Error::Poisoned(e.clone()));
            }
            let idle = !s.jobs.flush_running()
                && s.imm.is_empty()
                && s.jobs.compactions_running() == 0
                && !s.files.removing()
                && picker::pick_compaction(&s.version, &picker_opts, s.jobs.compacting_files())
                    .is_none();
            if idle {
                // Settled: delete what the last jobs left to readers that are gone by now.
                drop(s);
                self.inner.purge_obsolete_tables();
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

    /// Closes the Db as [`close`](Self::close) does, but hands back the lock on its directory
    /// instead of letting go of it: no other process can open the Db until the caller drops
    /// it. For a caller that must act on the directory as the Db's owner after the close (the
    /// CLI takes away a Db it created when its command then failed). Fails as `close` does
    /// (the lock is let go then), or when the Db holds no lock (read-only).
    pub fn close_keeping_lock(self) -> Result<Box<dyn crate::fs::DirLock>> {
        let closed = self.shutdown_keeping_lock();
        let lock = self.inner.lock.lock().take();
        closed?;
        lock.ok_or_else(|| Error::InvalidArgument("a read-only Db holds no lock".into()))
    }

    fn shutdown(&self) -> Result<()> {
        let result = self.shutdown_keeping_lock();
        self.inner.lock.lock().take();
        result
    }

    /// Everything of [`shutdown`](Self::shutdown) but letting go of the directory's lock.
    fn shutdown_keeping_lock(&self) -> Result<()> {
        let mut result = Ok(());
        let needs_flush = {
            let s = self.inner.state.lock();
            s.unlogged_writes && s.background_error.is_none()
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
        if self.inner.events.enabled() {
            // A stall still reported as on ends with the Db; then every event is delivered.
            self.inner.track_stall(&mut self.inner.state.lock(), None);
            self.inner.events.close();
        }
        if let Some(stage) = &self.inner.wal_stage {
            // Every byte in the WAL file before another process may open the Db. A failure
            // is reported: the ring is kept, and the next open writes it to the WAL.
            if let Err(e) = stage.close() {
                let wal = self.inner.dir.join(crate::fs::staged::MARKER);
                result = result.and(Err(Error::io(&wal, e)));
            }
        }
        result
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

impl Inner {
    fn picker_options(&self) -> PickerOptions {
        let mut o = picker_options(&self.opts);
        let permille = match self.flush_out_permille.load(Ordering::Relaxed) {
            FLUSH_RATIO_UNMEASURED => 1000,
            p => p,
        };
        o.l0_round_bytes = o.l0_round_bytes.saturating_mul(permille) / 1000;
        o
    }

    /// Folds a flush's output over its memtable's bytes into the L0 round's estimate (a
    /// running average: half the last estimate, half this flush; the first flush alone). Flushes of under a quarter of a memtable (a manual
    /// flush, a close) are left out: their tables' fixed costs skew the ratio.
    fn note_flush_ratio(&self, mem_bytes: u64, out_bytes: u64) {
        if mem_bytes == 0 || mem_bytes < self.opts.write_buffer_size as u64 / 4 {
            return;
        }
        let r = (out_bytes.saturating_mul(1000) / mem_bytes).clamp(FLUSH_RATIO_MIN_PERMILLE, 1000);
        let _ = self
            .flush_out_permille
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(if old == FLUSH_RATIO_UNMEASURED {
                    r
                } else {
                    (old + r) / 2
                })
            });
    }

    /// Installs `version` as current with its derived facts (L0 sublevels, pending bytes).
    fn set_version(&self, s: &mut State, version: Arc<Version>) {
        s.l0 = Arc::new(L0Sublevels::from_version(&version));
        s.pending_compaction_bytes =
            picker::pending_compaction_bytes(&version, &s.l0, &self.picker_options());
        s.version = version;
    }

    fn read_only_error(&self, s: &State) -> Option<Error> {
        if self.read_only {
            return Some(Error::InvalidArgument(format!(
                "{} is open read-only",
                self.dir.display()
            )));
        }
        s.background_error.clone().map(Error::Poisoned)
    }
}

/// The smallest flush output ratio the L0 round uses (1.6% of the memtable): a round never
/// shrinks below that, whatever compression or overwrites folded in memory do.
const FLUSH_RATIO_MIN_PERMILLE: u64 = 16;

/// `Inner::flush_out_permille` before any flush is measured (a round is then a whole
/// memtable); no measured ratio takes this value.
const FLUSH_RATIO_UNMEASURED: u64 = u64::MAX;

/// Picker policy 7's small file: under a 64th of the target size, and always under a block's
/// 4 KiB (a file holding less than a block is all overhead), never over half the target.
fn small_file_bytes(target_file_size: u64) -> u64 {
    (target_file_size / 64).max(4096).min(target_file_size / 2)
}

/// The picker's knobs from the options.
fn picker_options(opts: &Options) -> PickerOptions {
    PickerOptions {
        l0_compaction_trigger: opts.l0_compaction_trigger,
        l0_sublevels: opts.l0_sublevels,
        max_bytes_for_level_base: opts.max_bytes_for_level_base,
        level_multiplier: opts.max_bytes_for_level_multiplier,
        max_l0_move_bytes: opts.target_file_size.saturating_mul(2),
        l0_tiering_ratio_pct: opts.l0_tiering_ratio_pct,
        l0_round_bytes: if opts.l0_thin_sublevels_wait {
            opts.write_buffer_size as u64
        } else {
            0
        },
        l0_slowdown_writes_trigger: opts.l0_slowdown_writes_trigger,
        small_file_bytes: small_file_bytes(opts.target_file_size),
        small_file_prefix: opts.small_file_merge_prefix,
        table_class: std::array::from_fn(|l| {
            let alike = |k: usize| {
                opts.compression_per_level[k] == opts.compression_per_level[l]
                    && opts.bloom_bits_per_level[k] == opts.bloom_bits_per_level[l]
            };
            (0..l).find(|&k| alike(k)).unwrap_or(l) as u8
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::format::CompressionType;

    #[test]
    fn levels_with_their_own_table_settings_get_their_own_class() {
        let mut opts = Options::default();
        let po = picker_options(&opts);
        assert_eq!(po.table_class, [0; crate::version::NUM_LEVELS]);
        assert_eq!(po.max_l0_move_bytes, 2 * opts.target_file_size);
        opts.compression_per_level[5] = CompressionType::Lz4;
        opts.compression_per_level[6] = CompressionType::Lz4;
        opts.bloom_bits_per_level[6] = None;
        assert_eq!(picker_options(&opts).table_class, [0, 0, 0, 0, 0, 5, 6]);
    }

    /// A process killed while its WAL stage's drainer had not written the last acknowledged
    /// writes (paused here, so that it cannot have): the next open writes them from the ring
    /// to the WAL and replays them.
    #[test]
    fn writes_left_in_the_wal_stage_by_a_crash_are_recovered() {
        let dir = tempfile::tempdir().unwrap();
        let staged = || Options {
            wal_staging: true,
            ..Options::default()
        };
        let db = Db::open(dir.path(), staged()).unwrap();
        let stage = db
            .inner
            .wal_stage
            .as_ref()
            .expect("a WAL stage on /dev/shm");
        let ring = stage.path().unwrap().to_path_buf();
        db.put(b"drained", b"1").unwrap();
        let mut wb = WriteBatch::new();
        wb.put(b"synced", b"2");
        db.write(
            wb,
            WriteOptions {
                sync: true,
                ..Default::default()
            },
        )
        .unwrap();
        stage.pause(true);
        for i in 0..100u32 {
            db.put(format!("ring-only-{i:03}").as_bytes(), &i.to_le_bytes())
                .unwrap();
        }
        // A reader beside the live writer sees every acknowledged put, though they are still
        // only in the ring (checked below), and takes nothing from it.
        let sees_all = || {
            let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
            for i in (0..100u32).step_by(33).chain([99]) {
                let k = format!("ring-only-{i:03}");
                assert_eq!(
                    ro.get(k.as_bytes()).unwrap(),
                    Some(i.to_le_bytes().to_vec())
                );
            }
            assert_eq!(ro.get(b"synced").unwrap(), Some(b"2".to_vec()));
        };
        sees_all();
        // A crash: workers stop, the lock goes with the process, nothing is closed.
        db.inner.shutting_down.store(true, Ordering::Release);
        {
            let _s = db.inner.state.lock();
            db.inner.bg_cv.notify_all();
        }
        for h in db.workers.lock().drain(..) {
            h.join().unwrap();
        }
        db.inner.lock.lock().take();
        stage.release_lock();
        let wal =
            crate::base::filenames::wal_name(dir.path(), db.inner.state.lock().mem.wal_number);
        std::mem::forget(db);
        let on_disk = std::fs::read(&wal).unwrap();
        let has = |k: &[u8]| on_disk.windows(k.len()).any(|w| w == k);
        assert!(
            has(b"synced") && !has(b"ring-only-099"),
            "the WAL already had the ring's bytes"
        );
        assert!(ring.exists() && dir.path().join(crate::fs::staged::MARKER).exists());
        // So does one of the crashed Db, which leaves ring, marker and WAL as they were.
        sees_all();
        assert_eq!(std::fs::read(&wal).unwrap(), on_disk);
        assert!(ring.exists() && dir.path().join(crate::fs::staged::MARKER).exists());

        let db = Db::open(dir.path(), staged()).unwrap();
        assert!(!ring.exists(), "the crashed ring was left behind");
        assert_eq!(db.get(b"drained").unwrap(), Some(b"1".to_vec()));
        assert_eq!(db.get(b"synced").unwrap(), Some(b"2".to_vec()));
        for i in 0..100u32 {
            let k = format!("ring-only-{i:03}");
            assert_eq!(
                db.get(k.as_bytes()).unwrap(),
                Some(i.to_le_bytes().to_vec()),
                "{k}"
            );
        }
        let new_ring = db
            .inner
            .wal_stage
            .as_ref()
            .unwrap()
            .path()
            .unwrap()
            .to_path_buf();
        db.close().unwrap();
        assert!(!new_ring.exists() && !dir.path().join(crate::fs::staged::MARKER).exists());
    }

    /// `PickerOptions::default()` (used by the picker's own tests, which may not reach `db`)
    /// must stay the picker's view of `Options::default()`, field by field.
    #[test]
    fn picker_defaults_are_the_db_defaults() {
        assert_eq!(
            picker_options(&Options::default()),
            PickerOptions::default()
        );
    }
}
