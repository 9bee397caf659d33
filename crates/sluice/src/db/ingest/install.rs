//! Steps 4–6: with the key ranges latched, either queue the files above the memtables
//! (the flushable path, when a memtable overlaps them) or place them in the version and install
//! them in one durable edit.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::base::bounds::IterBounds;
use crate::base::error::{Error, Result};
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, ValueKind};
use crate::compaction::RunningOutput;
use crate::memtable::MemTable;
use crate::version::{FileMeta, Version, VersionEdit, NUM_LEVELS};

use super::super::flushable::{Flushable, IngestedTables};
use super::super::version_set::ManifestState;
use super::super::Inner;
use super::{ingest_target_level, IngestOptions, IngestPlan, IngestedFile, Prepared};

/// True if `mem` or an entry of `imm` (memtable or flushable ingest) may hold data in the user
/// keys `[lo, hi]` (`[lo, hi)` with `hi_exclusive`): an entry, or a range deletion reaching
/// into them.
pub(in crate::db) fn unflushed_overlap(
    mem: &Arc<MemTable>,
    imm: &[Flushable],
    lo: &[u8],
    hi: &[u8],
    hi_exclusive: bool,
) -> bool {
    let mut upper = hi.to_vec();
    if !hi_exclusive {
        upper.push(0);
    }
    let mem_overlaps = |m: &Arc<MemTable>| {
        let mut it = m.iter(Some(lo.to_vec()), Some(upper.clone()));
        it.seek_to_first();
        it.valid() || m.range_deletion_overlaps(lo, &upper)
    };
    mem_overlaps(mem)
        || imm.iter().any(|entry| match entry {
            Flushable::Mem(m) => mem_overlaps(m),
            Flushable::Ingested(t) => t.overlaps(lo, hi),
        })
}

impl Inner {
    /// True if the active memtable or an entry of the immutable queue (memtable or flushable
    /// ingest) holds data in one of the files' ranges.
    pub(super) fn memtables_overlap(&self, files: &[Prepared]) -> bool {
        let (mem, imm) = {
            let s = self.state.lock();
            (Arc::clone(&s.mem), s.imm.clone())
        };
        files
            .iter()
            .any(|f| unflushed_overlap(&mem, &imm, &f.smallest, &f.largest, f.largest_exclusive))
    }

    /// The flushable path (steps 5–6 when memtables overlap the files): in the write queue,
    /// so every earlier write has a lower seqno and every later one a higher, the memtable
    /// becomes immutable and the files are queued above it at level 0 with fresh global
    /// seqnos, logged in the WAL, readable at once. Nothing waits for a flush, and the queue
    /// is held for a WAL append and an O(1) memtable rotation — and, as for any write, for a
    /// stall or a WAL switch when the memtable is full (`make_room_for_write`).
    /// The caller syncs the WAL after it has released the queue and the ranges' latch,
    /// before the ingest is acknowledged.
    pub(super) fn ingest_flushable(
        self: &Arc<Self>,
        files: &[Prepared],
        opts: &IngestOptions,
        started: Instant,
    ) -> Result<Vec<IngestedFile>> {
        let me = self.enter_queue_barrier();
        let r = self.queue_flushable_ingest(files, opts, started);
        self.leave_queue_barrier(&me);
        r
    }

    /// Under the queue barrier: allocate the seqnos, log the ingest record, rotate the
    /// memtable and queue the tables above it, publish.
    fn queue_flushable_ingest(
        self: &Arc<Self>,
        files: &[Prepared],
        opts: &IngestOptions,
        started: Instant,
    ) -> Result<Vec<IngestedFile>> {
        self.make_room_for_write(None)?;
        let plans = vec![
            IngestPlan {
                level: 0,
                needs_seqno: true,
            };
            files.len()
        ];
        let seqnos = self.ingest_allocate_seqnos(files, opts, &plans);
        let (edit, report) = ingest_edit(files, &plans, &seqnos);
        let largest_seqno = seqnos.iter().copied().max().unwrap_or(0);
        let record = crate::wal::batch::encode_ingest_record(
            seqnos.iter().copied().min().unwrap_or(0),
            &VersionEdit {
                added: edit.added.clone(),
                ..Default::default()
            }
            .encode(),
        );
        self.append_wal_record(&record)?;
        let mut tables: Vec<Arc<FileMeta>> = edit
            .added
            .iter()
            .map(|(_, f)| Arc::new(f.clone()))
            .collect();
        tables.sort_by_key(|f| std::cmp::Reverse(f.largest_seqno));
        {
            let mut s = self.state.lock();
            let wal_number = s.mem.wal_number;
            let old = std::mem::replace(&mut s.mem, Arc::new(MemTable::new(wal_number)));
            if !old.is_empty() {
                s.imm.push(Flushable::Mem(old));
            }
            let ingested = Arc::new(IngestedTables {
                files: tables,
                wal_number,
                largest_seqno,
            });
            s.files.track_ingested(&ingested);
            s.imm.push(Flushable::Ingested(ingested));
            // In the critical section that queues it: before its flush can begin.
            self.ingested(&edit.added, &report, true, started);
        }
        self.visible_seq.fetch_max(largest_seqno, Ordering::AcqRel);
        self.bg_cv.notify_all();
        Ok(report)
    }

    /// Steps 5 and 6, each a function: take the install slot, place every file, allocate the
    /// global seqnos, build the edit, make every earlier write durable, install.
    pub(super) fn ingest_install(
        self: &Arc<Self>,
        files: &mut [Prepared],
        opts: &IngestOptions,
        started: Instant,
    ) -> Result<Vec<IngestedFile>> {
        let InstallSlot {
            mut manifest,
            version,
            running,
            _guard,
        } = self.ingest_begin_install(files, opts)?;
        let plans = self.ingest_place(files, opts, &version, &running)?;
        let seqnos = self.ingest_allocate_seqnos(files, opts, &plans);
        let (edit, report) = ingest_edit(files, &plans, &seqnos);
        self.ingest_make_earlier_writes_durable(&seqnos)?;
        // Step 6: one durable edit, written under the manifest lock we hold.
        let added = if self.events.enabled() {
            edit.added.clone()
        } else {
            Vec::new()
        };
        self.apply_edit_then(
            &mut manifest,
            edit,
            |m| self.log_install_marker(m.number, m.writer.size()),
            |_| self.ingested(&added, &report, false, started),
        )?;
        drop(manifest);
        if let Some(last) = seqnos.last() {
            self.visible_seq.fetch_max(*last, Ordering::AcqRel);
        }
        Ok(report)
    }

    /// Step 6b: the install marker (`wal::batch::encode_install_marker`) of the edit ending at
    /// byte `end` of MANIFEST `manifest`, appended to the WAL once the edit is durable and
    /// before the version holding it is installed: any write made by someone who saw the
    /// ingest, or after it was acknowledged, lies after it in the WAL. A read-only open that
    /// read the MANIFEST before the edit stops its replay there (`db/read_only.rs`); recovery
    /// skips it. Not synced: it matters only beside a live writer, and a WAL cut before it
    /// holds no write made after the ingest either. If the append fails, the ingest (durable)
    /// is still installed and reported done, and the Db refuses writes from then on (a write
    /// could otherwise be acknowledged after it with no marker between them).
    fn log_install_marker(&self, manifest: u64, end: u64) {
        let _ = self.append_wal_record(&crate::wal::batch::encode_install_marker(manifest, end));
    }

    /// Appends an ingest's own record to the active WAL; a failure stops the Db's writes (it
    /// may have left a torn record).
    fn append_wal_record(&self, record: &[u8]) -> Result<()> {
        // The WAL's guard ends here, before `state` is taken (lock order: `state` → `wal`).
        let r = self.wal.lock().add_record(record);
        r.map_err(|e| self.wal_failed("write", e))
    }

    /// Step 5a: each file's level ([`ingest_target_level`] for the normal path), checked
    /// against `ingest_behind` and `fail_if_not_bottommost`.
    fn ingest_place(
        &self,
        files: &[Prepared],
        opts: &IngestOptions,
        version: &Version,
        running: &[RunningOutput],
    ) -> Result<Vec<IngestPlan>> {
        let bottom = NUM_LEVELS - 1;
        let (_, base) = crate::compaction::picker::level_targets(version, &self.picker_options());
        let mut plans = Vec::with_capacity(files.len());
        for f in files {
            let plan = if opts.ingest_behind {
                if !version
                    .overlapping(bottom, Some(&f.smallest), Some(&f.largest))
                    .is_empty()
                {
                    return Err(Error::InvalidArgument(format!(
                        "{}: ingest_behind needs the bottom level free in its range",
                        f.source.display()
                    )));
                }
                IngestPlan {
                    level: bottom,
                    needs_seqno: false,
                }
            } else if opts.allow_overlap && files.len() > 1 {
                // Layered in L0, later files newer: each gets its own seqno.
                IngestPlan {
                    level: 0,
                    needs_seqno: true,
                }
            } else {
                let mut data_overlaps = |existing: &FileMeta| -> Result<bool> {
                    self.file_has_data_in(existing, &f.smallest, &f.largest, f.largest_exclusive)
                };
                ingest_target_level(
                    version,
                    base,
                    &f.smallest,
                    &f.largest,
                    running,
                    &mut data_overlaps,
                )?
            };
            if opts.fail_if_not_bottommost && plan.level != bottom {
                return Err(Error::InvalidArgument(format!(
                    "{}: would go to L{}, not the bottom level (fail_if_not_bottommost)",
                    f.source.display(),
                    plan.level
                )));
            }
            plans.push(plan);
        }
        Ok(plans)
    }

    /// Step 5b: the global seqno of each file, from the writers' counter. Disjoint files share
    /// one seqno (or 0 when nothing they overlap exists); `allow_overlap` gives each file its
    /// own, in order, so later files are newer.
    pub(super) fn ingest_allocate_seqnos(
        &self,
        files: &[Prepared],
        opts: &IngestOptions,
        plans: &[IngestPlan],
    ) -> Vec<u64> {
        let needs_seqno = plans.iter().any(|p| p.needs_seqno);
        let count = match (opts.allow_overlap, needs_seqno) {
            (true, _) => files.len() as u64,
            (false, true) => 1,
            (false, false) => return vec![0; files.len()],
        };
        let first = self.last_sequence.fetch_add(count, Ordering::AcqRel) + 1;
        (0..files.len() as u64)
            .map(|i| if opts.allow_overlap { first + i } else { first })
            .collect()
    }

    /// Step 5c: every write with a lower seqno is applied (at most one write group is in
    /// flight; it has passed its stall checks, so it needs no lock we hold), hence in the WAL;
    /// then the WAL is synced, so an ingest that survives a crash never survives without a
    /// write acknowledged before it.
    fn ingest_make_earlier_writes_durable(&self, seqnos: &[u64]) -> Result<()> {
        if let Some(first) = seqnos.iter().copied().filter(|&s| s > 0).min() {
            self.wait_visible(first - 1)?;
        }
        self.sync_wal()
    }

    /// Waits until every seqno up to `seq` is published, or the Db failed.
    pub(super) fn wait_visible(&self, seq: u64) -> Result<()> {
        while self.visible_seq.load(Ordering::Acquire) < seq {
            if let Some(e) = self.read_only_error(&self.state.lock()) {
                return Err(e);
            }
            std::thread::yield_now();
        }
        Ok(())
    }

    /// Syncs the active WAL (earlier WALs were synced when the memtable switched) without
    /// holding the WAL lock during the fsync, so the write leader is never blocked by it.
    pub(super) fn sync_wal(&self) -> Result<()> {
        let handle = self.wal.lock().sync_handle();
        let r = match handle {
            Some(h) => h(),
            None => self.wal.lock().sync(),
        };
        r.map_err(|e| self.wal_failed("sync", e))
    }

    /// Takes the manifest lock and a consistent (version, running compactions) pair, and
    /// registers the install so no compaction is picked until it is done (a compaction picked
    /// from the version before the install could write into the ingested range). An
    /// `ingest_behind` first waits for running compactions into the bottom level in its range.
    pub(super) fn ingest_begin_install(
        &self,
        files: &[Prepared],
        opts: &IngestOptions,
    ) -> Result<InstallSlot<'_>> {
        loop {
            let m = self.manifest.lock();
            let mut s = self.state.lock();
            if let Some(e) = self.read_only_error(&s) {
                return Err(e);
            }
            let bottom = NUM_LEVELS - 1;
            let blocked = opts.ingest_behind
                && s.jobs.running_outputs().iter().any(|r| {
                    r.level == bottom
                        && files.iter().any(|f| {
                            r.lo.as_slice() <= f.largest.as_slice()
                                && f.smallest.as_slice() <= r.hi.as_slice()
                        })
                });
            if !blocked {
                s.jobs.start_ingest_install();
                let snapshot = (Arc::clone(&s.version), s.jobs.running_outputs().to_vec());
                drop(s);
                return Ok(InstallSlot {
                    manifest: m,
                    version: snapshot.0,
                    running: snapshot.1,
                    _guard: InstallGuard { inner: self },
                });
            }
            drop(m);
            self.done_cv
                .wait_for(&mut s, std::time::Duration::from_millis(50));
        }
    }

    /// True if `f` holds an entry or range deletion in user keys `[lo, hi]` (`hi` exclusive
    /// when `hi_exclusive`).
    pub(super) fn file_has_data_in(
        &self,
        f: &FileMeta,
        lo: &[u8],
        hi: &[u8],
        hi_exclusive: bool,
    ) -> Result<bool> {
        let t = self.table(f)?;
        let mut upper = hi.to_vec();
        if !hi_exclusive {
            upper.push(0);
        }
        let mut it = t.iter(IterBounds {
            lower: Some(lo.to_vec()),
            upper: Some(upper.clone()),
        });
        it.seek_to_first();
        it.status()?;
        Ok(it.valid()
            || t.range_deletions()
                .iter()
                .any(|r| r.start.as_slice() < upper.as_slice() && lo < r.end.as_slice()))
    }
}

/// What an ingest installs against: the manifest lock, the version and running compactions
/// read with it, and the registration that keeps compactions from being picked meanwhile.
pub(super) struct InstallSlot<'a> {
    manifest: parking_lot::MutexGuard<'a, ManifestState>,
    version: Arc<Version>,
    running: Vec<RunningOutput>,
    _guard: InstallGuard<'a>,
}

/// Ends an ingest's install registration (see `ingest_begin_install`) when dropped.
struct InstallGuard<'a> {
    inner: &'a Inner,
}

impl Drop for InstallGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.inner.state.lock();
        s.jobs.finish_ingest_install();
        drop(s);
        self.inner.bg_cv.notify_all();
        self.inner.done_cv.notify_all();
    }
}

/// The version edit adding every file at its planned level and seqno (the edit's
/// `last_sequence` covers the seqnos), and the per-file report.
fn ingest_edit(
    files: &[Prepared],
    plans: &[IngestPlan],
    seqnos: &[u64],
) -> (VersionEdit, Vec<IngestedFile>) {
    let mut edit = VersionEdit::default();
    let mut report = Vec::with_capacity(files.len());
    for ((f, plan), &g) in files.iter().zip(plans).zip(seqnos) {
        // A range deletion's exclusive end is the file's largest key: mark it as such.
        let largest = if f.largest_exclusive {
            key::make_internal_key(&f.largest, key::MAX_SEQNO, ValueKind::RangeDeletion)
        } else {
            key::make_internal_key(&f.largest, g, ValueKind::Value)
        };
        edit.added.push((
            plan.level,
            FileMeta {
                number: f.number,
                size: f.size,
                smallest: key::make_internal_key(&f.smallest, g, ValueKind::Value),
                largest,
                smallest_seqno: g,
                largest_seqno: g,
                global_seqno: g,
                range_dels: f.range_dels,
            },
        ));
        report.push(IngestedFile {
            source: f.source.clone(),
            level: Some(plan.level),
            seqno: g,
            number: f.number,
            entries: f.entries,
        });
    }
    edit.last_sequence = seqnos.iter().copied().max().filter(|&s| s > 0);
    (edit, report)
}
