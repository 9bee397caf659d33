//! The write path: group commit (one leader writes a whole group to the WAL and memtable),
//! write stalls, memtable switches, queue barriers and the key-range latches of ingests.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use crate::base::error::{Error, Result};
use crate::base::filenames::wal_name;
use crate::base::key::ValueKind;
use crate::base::trace::{span, SpanGuard, Trace};
use crate::memtable::MemTable;
use crate::wal::batch::WriteBatch;
use crate::wal::log::LogWriter;

use super::events::StallCondition;
use super::flushable::Flushable;
use super::{Inner, State, WriteOptions};

/// Largest group a leader commits at once, in bytes.
pub(super) const MAX_GROUP_BYTES: usize = 1 << 20;

pub(super) struct PendingWrite {
    /// The batch, for the leader that takes this write into its group; `None` for a writer
    /// that led from the start (it keeps its batch) and for a barrier.
    pub(super) batch: Mutex<Option<WriteBatch>>,
    /// The batch's size in bytes, fixed when the write is queued.
    pub(super) size: usize,
    /// The writer's options, less its trace (which stays with the writer's thread).
    pub(super) opts: WriteOptions<'static>,
    pub(super) result: Mutex<Option<Result<()>>>,
    /// A barrier (flush/ingest waiting for earlier writes), never part of a write group.
    pub(super) barrier: bool,
}

/// Writers waiting for the group commit, and the key ranges latched by ingests.
#[derive(Default)]
pub(super) struct WriteQueue {
    pub(super) q: VecDeque<Arc<PendingWrite>>,
    /// (id, smallest, largest) user keys, inclusive.
    pub(super) latches: Vec<(u64, Vec<u8>, Vec<u8>)>,
    pub(super) next_latch: u64,
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

impl Inner {
    /// Writes `batch` through the group commit. With `opts.trace`, records the latch wait (if
    /// any), the group-commit wait and the role it ended in, and — as the leader — the group's
    /// stall, WAL write and memtable insert.
    pub(super) fn write(self: &Arc<Self>, batch: WriteBatch, opts: WriteOptions<'_>) -> Result<()> {
        let trace = opts.trace;
        let root = span(trace, || "write".to_string());
        if let Some(root) = &root {
            root.field("entries", batch.count());
            root.field("bytes", batch.size_bytes());
            root.field("sync", opts.sync);
            root.field("wal", !opts.disable_wal);
        }
        let mut q = self.queue.lock();
        // Writes into a range an ingest has latched wait for that ingest; others go on.
        if q.blocks(&batch) {
            let _latch = span(trace, || "latch wait (ingest)".to_string());
            while q.blocks(&batch) {
                self.queue_cv.wait(&mut q);
            }
        }
        // A writer that finds the queue empty leads at once and keeps its batch; a queued
        // one hands it to whichever leader takes it.
        let leads_now = q.q.is_empty();
        let size = batch.size_bytes();
        let (own, queued) = if leads_now {
            (Some(batch), None)
        } else {
            (None, Some(batch))
        };
        let me = Arc::new(PendingWrite {
            batch: Mutex::new(queued),
            size,
            opts: WriteOptions {
                sync: opts.sync,
                disable_wal: opts.disable_wal,
                trace: None,
            },
            result: Mutex::new(None),
            barrier: false,
        });
        q.q.push_back(Arc::clone(&me));
        let wait = span(trace, || "group commit wait".to_string());
        loop {
            // At the front, this write has not been taken by a leader (a group leaves the
            // queue with its results set): it leads.
            if q.q.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
                break;
            }
            if let Some(r) = me.result.lock().take() {
                if let Some(wait) = &wait {
                    wait.field("role", "follower (a leader logged and applied this write)");
                }
                return r;
            }
            self.queue_cv.wait(&mut q);
        }
        if let Some(wait) = &wait {
            wait.field("role", "leader");
        }
        drop(wait);
        // Leader: take the consecutive writers queued behind it (no allocation when none).
        let mut followers: Vec<Arc<PendingWrite>> = Vec::new();
        let mut bytes = me.size;
        for w in q.q.iter().skip(1) {
            if w.barrier {
                // A barrier's owner pops it itself once it reaches the front.
                break;
            }
            if bytes + w.size > MAX_GROUP_BYTES || (w.opts.sync && !me.opts.sync) {
                break;
            }
            bytes += w.size;
            followers.push(Arc::clone(w));
        }
        drop(q);
        let result = {
            let leader = span(trace, || "write group (leader)".to_string());
            if let Some(leader) = &leader {
                leader.field("writes", 1 + followers.len());
                leader.field("bytes", bytes);
            }
            let own = own.or_else(|| me.batch.lock().take()).unwrap_or_default();
            self.write_group(own, &me.opts, &followers, trace)
        };
        let mut q = self.queue.lock();
        q.q.pop_front();
        for w in &followers {
            q.q.pop_front();
            *w.result.lock() = Some(match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(crate::base::error::clone_error(e)),
            });
        }
        self.queue_cv.notify_all();
        result
    }

    /// The leader's work, in steps: make room, assign seqnos, log, apply, publish. `own` is
    /// the leader's batch (options `opts`), `followers` the writes it took behind it.
    pub(super) fn write_group(
        self: &Arc<Self>,
        own: WriteBatch,
        opts: &WriteOptions<'_>,
        followers: &[Arc<PendingWrite>],
        trace: Option<&Trace>,
    ) -> Result<()> {
        let mem = self.make_room_for_write(trace)?;
        let mut sync = opts.sync;
        let mut use_wal = !opts.disable_wal;
        for w in followers {
            sync |= w.opts.sync;
            use_wal |= !w.opts.disable_wal;
        }
        // A group of one writes its own batch, uncopied; a larger group's batches are copied
        // into one of their summed size.
        let mut combined = if followers.is_empty() {
            own
        } else {
            let total = own.size_bytes() + followers.iter().map(|w| w.size).sum::<usize>();
            let mut combined = WriteBatch::with_capacity(total);
            combined.append(&own);
            for w in followers {
                if let Some(b) = w.batch.lock().take() {
                    combined.append(&b);
                }
            }
            combined
        };
        let count = u64::from(combined.count());
        // fetch_add: an ingest may allocate a seqno concurrently.
        let first = self.last_sequence.fetch_add(count, Ordering::AcqRel) + 1;
        combined.set_seqno(first);
        if use_wal {
            let wal_span = span(trace, || "WAL write".to_string());
            if let Some(w) = &wal_span {
                w.field("bytes", combined.rep().len());
                w.field("sync", sync);
            }
            let mut wal = self.wal.lock();
            let r = wal
                .add_record(combined.rep())
                .and_then(|_| if sync { wal.sync() } else { Ok(()) });
            // Before `state` (lock order: `state` → `wal`).
            drop(wal);
            if let Err(e) = r {
                return Err(self.wal_failed("write", e));
            }
        } else {
            self.state.lock().unlogged_writes = true;
        }
        let insert = span(trace, || "memtable insert".to_string());
        if let Some(insert) = &insert {
            insert.field("entries", count);
        }
        for (seq, e) in (first..).zip(combined.iter()) {
            let e = e.map_err(Error::InvalidArgument)?;
            mem.add(seq, e.kind, e.key, e.value);
        }
        drop(insert);
        self.visible_seq
            .fetch_max(first + count - 1, Ordering::AcqRel);
        self.counters
            .user_bytes
            .fetch_add(combined.size_bytes() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// A failed WAL `write` or `sync`: the Db refuses writes from now on (the log may end in a
    /// torn record); the error for the caller. Takes `state`: call it without the WAL's lock.
    pub(super) fn wal_failed(&self, what: &str, e: std::io::Error) -> Error {
        let msg = format!("WAL {what} failed: {e}");
        self.set_background_error(&mut self.state.lock(), msg);
        Error::Io {
            path: None,
            source: e,
        }
    }

    /// Returns the memtable to write into, stalling or switching memtables as needed; each
    /// stall is a span of `trace` with its cause.
    pub(super) fn make_room_for_write(
        self: &Arc<Self>,
        trace: Option<&Trace>,
    ) -> Result<Arc<MemTable>> {
        let mut delayed = false;
        // When this write first had to stop: one stall per write, however many waits it takes.
        let mut stopped: Option<Instant> = None;
        let mut stop_span: Option<SpanGuard<'_>> = None;
        let mut s = self.state.lock();
        loop {
            if let Some(e) = self.read_only_error(&s) {
                if let Some(t) = stopped {
                    self.record_stall(t);
                }
                return Err(e);
            }
            // Backpressure by L0's read amplification and by compaction debt (the condition,
            // one definition for the write path and the stall events: `StallCondition::of`).
            let condition = StallCondition::of(&self.opts, &s);
            let stop = condition.as_ref().is_some_and(|c| c.stopped);
            let slow = condition.is_some() && !stop;
            let cause = stall_cause(trace, condition.as_ref());
            if self.events.enabled() {
                // Enqueued only: no listener runs under `state`.
                self.track_stall(&mut s, condition);
            }
            if !delayed && slow {
                // Slow every write a little rather than stop them all later.
                drop(s);
                let _slow = span(trace, || format!("stall wait (slowdown: {cause})"));
                let t = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                self.record_stall(t);
                delayed = true;
                s = self.state.lock();
                continue;
            }
            if stop {
                stopped.get_or_insert_with(Instant::now);
                if stop_span.is_none() {
                    stop_span = span(trace, || format!("stall wait (stop: {cause})"));
                }
                // A write that had to stop is not slowed as well afterwards (one stall each).
                delayed = true;
                self.bg_cv.notify_all();
                self.done_cv.wait_for(&mut s, Duration::from_millis(100));
                continue;
            }
            if let Some(t) = stopped.take() {
                self.record_stall(t);
            }
            drop(stop_span.take());
            if s.mem.approximate_bytes() < self.opts.write_buffer_size as u64 {
                return Ok(Arc::clone(&s.mem));
            }
            self.switch_memtable(&mut s)?;
        }
    }

    /// Records the end of a stall that began at `since` in the stall counters.
    pub(super) fn record_stall(&self, since: Instant) {
        let micros = since.elapsed().as_micros() as u64;
        self.counters.stall_count.fetch_add(1, Ordering::Relaxed);
        self.counters
            .stall_micros
            .fetch_add(micros, Ordering::Relaxed);
        self.counters
            .stall_max_micros
            .fetch_max(micros, Ordering::Relaxed);
    }

    /// Makes the active memtable immutable and starts a new WAL (the write leader, or a caller
    /// holding the queue barrier: no other write or switch runs meanwhile). `state` is let go
    /// during the file work — the old WAL's fsync, the new one's creation, the directory's
    /// fsync — so readers and background jobs do not wait for it; the memtable is swapped once
    /// it is held again.
    pub(super) fn switch_memtable(&self, s: &mut MutexGuard<'_, State>) -> Result<()> {
        let number = s.files.new_wal_number();
        let path = wal_name(&self.dir, number);
        let switch = || -> std::io::Result<LogWriter> {
            let mut wal = self.wal.lock();
            // Earlier WALs must be durable before later ones: a sync write in the new WAL
            // implies every write before it survives.
            wal.sync()?;
            let mut f = create_wal(&*self.fs, &path, &self.opts)?;
            if let Some(stage) = &self.wal_stage {
                f = stage.wrap(f, number)?;
            }
            self.fs.sync_dir(&self.dir)?;
            Ok(std::mem::replace(&mut *wal, LogWriter::new(f)))
        };
        // The old writer is closed here too, without `state`.
        match MutexGuard::unlocked(s, || switch().map(drop)) {
            Ok(()) => {}
            Err(e) => {
                let msg = format!("cannot start WAL {}: {e}", path.display());
                self.set_background_error(s, msg);
                return Err(Error::io(&path, e));
            }
        }
        let old = std::mem::replace(&mut s.mem, Arc::new(MemTable::new(number)));
        s.imm.push(Flushable::Mem(old));
        self.bg_cv.notify_all();
        Ok(())
    }

    /// Waits until every write queued before this call is applied, and holds the queue (no
    /// write group runs) until [`Inner::leave_queue_barrier`].
    pub(super) fn enter_queue_barrier(&self) -> Arc<PendingWrite> {
        let me = Arc::new(PendingWrite {
            batch: Mutex::new(None),
            size: 0,
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

    pub(super) fn leave_queue_barrier(&self, me: &Arc<PendingWrite>) {
        let mut q = self.queue.lock();
        if q.q.front().is_some_and(|f| Arc::ptr_eq(f, me)) {
            q.q.pop_front();
        }
        self.queue_cv.notify_all();
    }

    /// Latches user-key ranges (inclusive) against writes, then waits until every write queued
    /// before the latch is applied — without holding the queue: writes queued after it go on
    /// (those into the ranges wait at the latch). Returns the latch id.
    pub(super) fn latch_ranges(&self, ranges: Vec<(Vec<u8>, Vec<u8>)>) -> u64 {
        let mut q = self.queue.lock();
        q.next_latch += 1;
        let id = q.next_latch;
        for (lo, hi) in ranges {
            q.latches.push((id, lo, hi));
        }
        // Entries leave the queue in order: once the last one queued now is gone, so is every
        // write before the latch.
        if let Some(last) = q.q.back().cloned() {
            while q.q.iter().any(|w| Arc::ptr_eq(w, &last)) {
                self.queue_cv.wait(&mut q);
            }
        }
        id
    }

    pub(super) fn unlatch(&self, id: u64) {
        let mut q = self.queue.lock();
        q.latches.retain(|(l, _, _)| *l != id);
        self.queue_cv.notify_all();
    }
}

/// Creates a WAL file with a memtable's worth and a tenth reserved on disk (RocksDB's
/// preallocation of WALs), so that its appends allocate no blocks, written through a mapping
/// of that space with [`Options::wal_mmap_writes`](super::Options::wal_mmap_writes)
/// ([`FileSystem::create_log`](crate::fs::FileSystem::create_log)).
pub(super) fn create_wal(
    fs: &dyn crate::fs::FileSystem,
    path: &std::path::Path,
    opts: &super::Options,
) -> std::io::Result<Box<dyn crate::fs::WritableFile>> {
    let b = opts.write_buffer_size as u64;
    fs.create_log(path, b + b / 10, opts.wal_mmap_writes)
}

/// Why writes stall, for a trace (the empty string when not tracing: nothing is computed).
fn stall_cause(trace: Option<&Trace>, condition: Option<&StallCondition>) -> String {
    match (trace, condition) {
        (Some(_), Some(c)) => format!("{:?}", c.cause),
        _ => String::new(),
    }
}
