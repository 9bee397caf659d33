//! Ingestion of external SST files (`Db::ingest`), as numbered steps (Pebble's `ingest.go`
//! shape): each step is one function; any failure before step 6 removes what was linked and
//! leaves the database exactly as it was.
//!
//! 1. [`validate`](Inner::ingest_validate): open and check every file (checksums, order,
//!    seqno 0, unique keys), and that the files are disjoint unless `allow_overlap`.
//! 2. [`link`](Inner::ingest_link): hard-link (or copy) into the DB directory under new numbers.
//! 3. Latch only the ingested key ranges; wait for writes already queued.
//! 4. If a memtable (or an earlier flushable ingest) overlaps the files: the *flushable path*
//!    (`install.rs`, Pebble's flushable ingest): in the write queue, rotate the memtable, queue
//!    the files above it at L0 with fresh global seqnos, log an ingest record in the WAL
//!    (recovery replays it), publish — readable at once, installed later by the flush. No
//!    ingest waits for a flush, and writers into the ranges wait for the queueing, not for
//!    the WAL sync that makes the ingest durable (the latch is released before it).
//! 5. Otherwise pick each file's target level ([`ingest_target_level`], pure) and the global
//!    seqno (if any existing data overlaps).
//! 6. Write all files in one durable version edit; append an install marker to the WAL
//!    (where a read-only open's replay stops if its MANIFEST read missed the edit); install
//!    the version; publish the seqno; release the latches.
//!
//! When every file is small (`small_file_threshold`), steps 2–6 are replaced by one synced
//! write batch (`batch.rs`): atomic, later files newer.
//!
//! Why no global write stall: the global seqno is allocated inside step 6 from the same counter
//! writers use, and explicit snapshots pin the memtables and version they were taken on, so a
//! write to another range that becomes visible during the install cannot make a snapshot see
//! the ingested data appear later. Writers to other ranges never wait; writers into a latched
//! range wait for this ingest only.

use std::path::PathBuf;
use std::sync::Arc;

use crate::base::error::Result;
use crate::sst::table::Table;

use super::events::{TableFileCreation, TableFileDeletion};
use super::Inner;

mod batch;
mod install;
pub(super) use install::unflushed_overlap;
mod link;
mod plan;
mod validate;

pub use plan::{ingest_target_level, IngestPlan};

/// Options of [`Db::ingest`](super::Db::ingest).
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Verify every block checksum before ingesting. Default `true`.
    pub verify_checksums: bool,
    /// Read every key to check that each carries seqno 0 and that no user key repeats. Default
    /// `true`. Files written by [`SstWriter`](crate::SstWriter) hold that by construction (it
    /// refuses keys out of order or repeated and writes seqno 0): a writer handing over the
    /// files it has just written itself (e.g. `sluice import`) may turn this and
    /// `verify_checksums` off, so they are not read a second time (the entry count then comes
    /// from the file's properties; the first and last keys are still read for the key span).
    /// Keep both on for files from elsewhere.
    pub verify_keys: bool,
    /// Allow the files to overlap each other; they are then layered in L0, later files newer.
    /// Default `false`.
    pub allow_overlap: bool,
    /// When *every* file is smaller than this many bytes, they are applied as one write batch
    /// through the WAL and memtable (atomic, later files newer) instead of becoming tiny
    /// tables; if any file is larger, or `ingest_behind` or `fail_if_not_bottommost` is set,
    /// all are ingested as tables. Default 0 (off).
    pub small_file_threshold: u64,
    /// Put the files at the bottom level with seqno 0: existing keys win. Default `false`.
    pub ingest_behind: bool,
    /// Fail unless every file can go to the bottom level. Default `false`.
    pub fail_if_not_bottommost: bool,
    /// Hard-link the files into the Db instead of copying them (RocksDB's `move_files`).
    /// Default `false`: with a link, a later rewrite of the source path in place would change
    /// the Db's table. Only set it when the caller hands the files over for good.
    pub link_files: bool,
    /// Admission by L0's health (CockroachDB's admission control of `AddSSTable`): before
    /// latching anything, wait while L0 is within one sublevel of the writers' slowdown
    /// trigger (`l0_slowdown_writes_trigger`) with an L0 compaction due, or compaction debt is
    /// past `soft_pending_compaction_bytes_limit`. Each ingest of files spanning the key space
    /// adds an L0 sublevel; without the wait, a run of them drives L0 to the stop trigger and
    /// every foreground writer stops, where with it the ingest caller absorbs the backpressure
    /// and writers keep going. Never longer than `max_l0_wait`; concurrent ingests may be
    /// admitted together. Counted in [`Metrics::ingest_waits`](crate::Metrics). Ignored for
    /// `ingest_behind` and write-batch ingests (which never add to L0 / go through the write
    /// path's own backpressure). Default `true`.
    pub wait_for_l0: bool,
    /// The longest an ingest waits for L0 room (`wait_for_l0`) before it goes ahead anyway
    /// (a write load holding L0 just under the slowdown trigger would otherwise starve it).
    /// Default 60 s.
    pub max_l0_wait: std::time::Duration,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            verify_checksums: true,
            verify_keys: true,
            allow_overlap: false,
            small_file_threshold: 0,
            ingest_behind: false,
            fail_if_not_bottommost: false,
            link_files: false,
            wait_for_l0: true,
            max_l0_wait: std::time::Duration::from_secs(60),
        }
    }
}

/// Where one file went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestedFile {
    /// The source path.
    pub source: PathBuf,
    /// Level it was placed at (`None` when applied as a write batch).
    pub level: Option<usize>,
    /// Global seqno its entries are read at (0: their own seqno 0, or applied as a write batch,
    /// whose entries carry the batch's ordinary seqnos).
    pub seqno: u64,
    /// File number in the DB (0 when applied as a write batch).
    pub number: u64,
    /// Entries in the file.
    pub entries: u64,
}

/// A file range being ingested.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    source: PathBuf,
    /// The open table, kept only for a file under `small_file_threshold` (the write-batch
    /// path reads it); a big file's index and filter are not held while the others open,
    /// so an ingest of many big files never holds every index at once.
    table: Option<Arc<Table>>,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    largest_exclusive: bool,
    size: u64,
    entries: u64,
    range_dels: u64,
    number: u64,
}

impl Inner {
    fn release_pending(&self, files: &[Prepared]) {
        let mut s = self.state.lock();
        for f in files {
            s.files.release(f.number);
        }
    }

    /// `Db::ingest`: the numbered steps of the module docs.
    pub(crate) fn ingest(
        self: &Arc<Self>,
        paths: &[PathBuf],
        opts: &IngestOptions,
    ) -> Result<Vec<IngestedFile>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(e) = self.read_only_error(&self.state.lock()) {
            return Err(e);
        }
        let started = std::time::Instant::now();
        let mut big = self.ingest_validate(paths, opts)?;
        // All small: one write batch, atomic. Otherwise all are tables, in one edit: mixing
        // the two paths would make the ingest visible in two steps.
        // (`ingest_behind` and `fail_if_not_bottommost` are promises about levels, which a
        // write batch does not keep.)
        let batch_path = !opts.ingest_behind && !opts.fail_if_not_bottommost;
        if batch_path && big.iter().all(|f| f.size < opts.small_file_threshold) {
            return self.ingest_as_batch(&big, started);
        }
        self.ingest_link(&mut big, opts)?;
        if self.events.enabled() {
            let linked: Vec<(u64, u64)> = big.iter().map(|f| (f.number, f.size)).collect();
            self.tables_created(&linked, None, TableFileCreation::Ingest, None);
        }
        // Admission, before any latch or the ingest order: neither writers nor other ingests
        // (behind, or not waiting) are held while this one waits.
        if opts.wait_for_l0 && !opts.ingest_behind {
            if let Err(e) = self.wait_for_l0_room(opts.max_l0_wait) {
                self.remove_linked(&big);
                return Err(e);
            }
        }
        // Ingests are ordered against each other: the choice between the flushable path and
        // the version path, and the seqno it leads to, must not interleave with another
        // ingest's (a later version-path ingest landing below an earlier queued flushable
        // would be hidden by it). Validation and copying above still run in parallel.
        let ingest_order = self.ingest_order.lock();
        // Step 3: latch the ranges (released on every path out, panics included): writes
        // already queued are applied, and no new write enters the ranges until the files
        // are readable (installed, or queued above the memtables).
        let ranges = big
            .iter()
            .map(|f| (f.smallest.clone(), f.largest.clone()))
            .collect();
        let guard = LatchGuard {
            inner: self,
            id: self.latch_ranges(ranges),
        };
        let r = if opts.ingest_behind || !self.memtables_overlap(&big) {
            // Behind everything, or nothing newer in memory: place in the version.
            self.ingest_install(&mut big, opts, started)
                .map(|r| (r, true))
        } else if opts.fail_if_not_bottommost {
            // A level promise: flush first (writers to the ranges wait), then place.
            self.flush_and_wait()
                .and_then(|_| self.ingest_install(&mut big, opts, started))
                .map(|r| (r, true))
        } else {
            // Above the memtables, as a flushable; its flush installs it later.
            self.ingest_flushable(&big, opts, started)
                .map(|r| (r, false))
        };
        // The files are readable now (installed, or queued above the memtables), so a write
        // into their ranges gets a higher seqno and lands above them: the latch and the
        // ingest order are let go before a flushable's WAL fsync, which writers into the
        // ranges would otherwise wait out (ingest-under-load's tail with ingests).
        drop(guard);
        drop(ingest_order);
        let r = match r {
            // The WAL holds the ingest record after every earlier write: one sync makes them
            // and the ingest durable before it is acknowledged.
            Ok((report, false)) => self.sync_wal().map(|()| (report, false)),
            other => other,
        };
        match r {
            Ok((report, installed)) => {
                if installed {
                    self.release_pending(&big);
                }
                self.bg_cv.notify_all();
                Ok(report)
            }
            Err(e) => {
                self.remove_linked(&big);
                Err(e)
            }
        }
    }

    /// Waits, at most `max`, while L0 is within one sublevel of the slowdown trigger with an L0
    /// compaction due, or compaction debt is past its soft limit
    /// ([`IngestOptions::wait_for_l0`]). Only states a compaction will drain count: with
    /// `l0_slowdown_writes_trigger` at or below `l0_compaction_trigger`, or a zero soft
    /// limit, a plain "one short of the slowdown trigger" would wait for nothing.
    fn wait_for_l0_room(&self, max: std::time::Duration) -> Result<()> {
        let start = std::time::Instant::now();
        let mut waited = false;
        let mut s = self.state.lock();
        loop {
            if let Some(e) = self.read_only_error(&s) {
                return Err(e);
            }
            let l0 = crate::compaction::picker::l0_depth(&s.version, &s.l0, self.opts.l0_sublevels);
            let l0_busy = l0 + 1 >= self.opts.l0_slowdown_writes_trigger
                && l0 >= self.opts.l0_compaction_trigger;
            let soft = self.opts.soft_pending_compaction_bytes_limit;
            let debt = soft > 0 && s.pending_compaction_bytes >= soft;
            let stop = !(l0_busy || debt)
                || start.elapsed() >= max
                || self
                    .shutting_down
                    .load(std::sync::atomic::Ordering::Acquire);
            if stop {
                break;
            }
            waited = true;
            self.bg_cv.notify_all();
            self.done_cv
                .wait_for(&mut s, std::time::Duration::from_millis(50));
        }
        drop(s);
        if waited {
            use std::sync::atomic::Ordering::Relaxed;
            self.counters.ingest_waits.fetch_add(1, Relaxed);
            self.counters
                .ingest_wait_micros
                .fetch_add(start.elapsed().as_micros() as u64, Relaxed);
        }
        Ok(())
    }

    fn remove_linked(&self, files: &[Prepared]) {
        // A failed MANIFEST write may still have put the edit on disk: keep the files for the
        // next open to judge (it deletes whatever no edit names).
        if self.state.lock().background_error.is_some() {
            self.release_pending(files);
            return;
        }
        for f in files {
            self.remove_table(f.number, TableFileDeletion::IngestFailed);
        }
        self.release_pending(files);
    }
}

/// Releases an ingest's key-range latch when dropped.
struct LatchGuard<'a> {
    inner: &'a Inner,
    id: u64,
}

impl Drop for LatchGuard<'_> {
    fn drop(&mut self) {
        self.inner.unlatch(self.id);
    }
}
