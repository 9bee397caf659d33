//! The background scheduler: workers pick a flush or a compaction under `state`, run it without
//! holding it, and clean up after it.
//!
//! With two or more workers, the first runs only flushes and the others only compactions, at
//! more niceness ([`Role`], `Options::compaction_nice`): a flush that shares the CPU evenly with a
//! compaction's subcompactions falls behind, fills the memtables and stops every writer, while
//! a compaction that gets less only lets L0 grow. At nice 10 against 15 the scheduler gives the
//! flush about three quarters of a core they share. RocksDB keeps the two apart the same way
//! (its HIGH and LOW thread pools). The jobs that may run at once are unchanged: one flush, and
//! compactions up to `max_background_jobs - 1` (one with a single worker, which runs both).
//! The cost: under CPU contention a compaction, and so whatever waits for one (`close`,
//! `compact_range`, a write stopped by L0), takes longer than at the flush's priority.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::MutexGuard;

use crate::compaction::picker::{self, CompactionChoice};

use super::flushable::Flushable;
use super::{Inner, State};

pub(super) enum Job {
    Flush(Flushable),
    /// A compaction and, with a listener, the score ×100 its source level was picked at.
    Compact(CompactionChoice, Option<u64>),
}

/// What a background worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// Flushes and compactions (a Db with one worker).
    Any,
    /// Flushes only.
    Flush,
    /// Compactions only, at `Options::compaction_nice`.
    Compact,
}

impl Role {
    /// Worker `i`'s role among `workers`.
    pub(super) fn of(i: usize, workers: usize) -> Role {
        match (workers, i) {
            (0 | 1, _) => Role::Any,
            (_, 0) => Role::Flush,
            _ => Role::Compact,
        }
    }

    /// The niceness a worker of this role gives itself (the subcompaction threads a
    /// compaction worker starts inherit it).
    pub(super) fn nice(self, opts: &super::Options) -> i32 {
        match self {
            Role::Compact => opts.compaction_nice(),
            _ => opts.background_nice,
        }
    }

    fn flushes(self) -> bool {
        self != Role::Compact
    }

    fn compacts(self) -> bool {
        self != Role::Flush
    }
}

impl Inner {
    pub(super) fn background_loop(self: Arc<Self>, role: Role) {
        loop {
            let job = {
                let mut s = self.state.lock();
                loop {
                    if self.shutting_down.load(Ordering::Acquire) {
                        return;
                    }
                    if s.background_error.is_none() {
                        if role.flushes() && !s.jobs.flush_running() && !s.imm.is_empty() {
                            s.jobs.start_flush();
                            break Job::Flush(s.imm[0].clone());
                        }
                        if role.compacts()
                            && s.jobs.may_pick_compaction(self.opts.max_background_jobs)
                        {
                            // Read at each pick: the L0 round follows the flushes measured.
                            let picker_opts = self.picker_options();
                            let earliest_unflushed_seqno = s
                                .imm
                                .iter()
                                .map(Flushable::smallest_seqno)
                                .chain([
                                    s.mem.smallest_seqno(),
                                    self.last_sequence.load(Ordering::Acquire) + 1,
                                ])
                                .min()
                                .unwrap_or(u64::MAX);
                            // Inputs busy and output range taken in this critical section.
                            let st = &mut *s;
                            let (mem, imm) = (&st.mem, &st.imm);
                            let unflushed_in = |lo: &[u8], hi: &[u8]| {
                                super::ingest::unflushed_overlap(mem, imm, lo, hi, false)
                            };
                            let picked = st.jobs.pick_compaction(
                                &st.version,
                                &st.l0,
                                earliest_unflushed_seqno,
                                &unflushed_in,
                                &picker_opts,
                            );
                            if let Some(c) = picked {
                                let score = self.events.enabled().then(|| {
                                    picker::level_scores(&st.version, &st.l0, &picker_opts)
                                        [c.level()]
                                });
                                break Job::Compact(c, score);
                            }
                        }
                    }
                    self.bg_cv.wait_for(&mut s, Duration::from_millis(200));
                }
            };
            let result = match &job {
                Job::Flush(m) => self.run_flush(m),
                Job::Compact(c, score) => self.run_compaction(c, *score),
            };
            let mut s = self.state.lock();
            match &job {
                Job::Flush(_) => s.jobs.finish_flush(),
                Job::Compact(c, _) => s.jobs.finish_compaction(c),
            }
            self.job_ended(s, &result);
        }
    }

    /// What follows every flush or compaction (background, manual, or a caller's small-file
    /// merge) once its registration is dropped under `s`: a failure poisons the Db, the
    /// stall condition is looked at again, files no version refers to go, and the waiters
    /// (for room, for the jobs to end, for a job slot) wake.
    pub(super) fn job_ended(&self, mut s: MutexGuard<'_, State>, result: &crate::Result<()>) {
        if let Err(e) = result {
            self.set_background_error(&mut s, e.to_string());
        }
        self.recheck_stall(&mut s);
        drop(s);
        self.delete_obsolete_files();
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
    }

    /// A file-number allocator that also protects the numbers from obsolete-file deletion.
    pub(super) fn allocate_numbers(&self) -> impl FnMut() -> u64 + '_ {
        move || self.state.lock().files.new_table_number()
    }

    /// The seqnos a flush or compaction starting now must keep readable: every live snapshot,
    /// and the read horizon (`visible_seq`), since a reader may already hold a view at it
    /// without a registered snapshot (invariant 6). Ascending.
    pub(super) fn live_snapshots(&self) -> Vec<u64> {
        let m = self.snapshots.lock();
        let horizon = self.visible_seq.load(Ordering::Acquire);
        let mut v: Vec<u64> = m.keys().copied().collect();
        if v.last().is_none_or(|&l| l < horizon) {
            v.push(horizon);
        }
        v
    }
}
