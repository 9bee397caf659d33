//! Running jobs: the flush, compactions and ingest installs under way, and what they hold busy
//! (input files, output ranges). A part of `State`, under the `state` lock; the scheduler
//! (`background.rs`), manual compaction (`compact.rs`) and ingest installs (`ingest/install.rs`)
//! register and finish their jobs through these methods, and nothing else touches the fields.
//!
//! Invariants:
//! 1. One flush at a time (the oldest entry of the immutable queue first).
//! 2. A file is an input of at most one running compaction: busy files are never picked again.
//! 3. A compaction's inputs and output range are registered in the critical section that picks
//!    them, and released in the one after it installed (or failed): an ingest reading the
//!    running outputs either sees the range or installed before the version it was picked from.
//! 4. No automatic compaction is picked while a manual compaction runs or an ingest installs
//!    (it could write into an ingested range); a manual compaction waits for both to finish.

use std::collections::HashSet;

use crate::compaction::picker::{self, CompactionChoice, L0Context, PickerOptions};
use crate::compaction::RunningOutput;
use crate::version::l0_sublevels::{L0Sublevels, RunningL0Compaction};
use crate::version::Version;

/// What runs, and what it holds busy.
#[derive(Default)]
pub(super) struct Jobs {
    /// A flush is running (invariant 1).
    flush_running: bool,
    /// Automatic compactions running.
    compactions_running: usize,
    /// A manual compaction runs: no automatic compaction is picked.
    manual_compaction: bool,
    /// Ingests between reading the version and installing their edit; no compaction is
    /// picked meanwhile (see `ingest_begin_install`).
    ingests_installing: usize,
    /// Input files of running compactions (invariant 2).
    compacting_files: HashSet<u64>,
    /// Running compactions out of L0 (several may run at once on disjoint key ranges).
    running_l0: Vec<RunningL0Compaction>,
    /// Key ranges and output levels of running compactions, manual ones included: an ingest
    /// never lands in one (its placement treats the range as occupied, see
    /// `ingest_target_level`), and no compaction writes into one.
    compaction_output_ranges: Vec<RunningOutput>,
}

impl Jobs {
    /// A flush is running.
    pub(super) fn flush_running(&self) -> bool {
        self.flush_running
    }

    pub(super) fn start_flush(&mut self) {
        self.flush_running = true;
    }

    pub(super) fn finish_flush(&mut self) {
        self.flush_running = false;
    }

    /// Automatic compactions running.
    pub(super) fn compactions_running(&self) -> usize {
        self.compactions_running
    }

    /// Input files of running compactions.
    pub(super) fn compacting_files(&self) -> &HashSet<u64> {
        &self.compacting_files
    }

    /// Output ranges of running compactions.
    pub(super) fn running_outputs(&self) -> &[RunningOutput] {
        &self.compaction_output_ranges
    }

    /// An automatic compaction may be picked: no manual compaction or ingest install runs
    /// (invariant 4), and fewer than `max_background_jobs - 1` compactions (at least one) run:
    /// one worker is the flushes' (`background::Role`).
    pub(super) fn may_pick_compaction(&self, max_background_jobs: usize) -> bool {
        !self.manual_compaction
            && self.ingests_installing == 0
            && self.compactions_running + 1 < max_background_jobs.max(2)
    }

    /// Picks an automatic compaction of `version` around the running ones and registers it
    /// (invariant 3); `earliest_unflushed_seqno` is the smallest seqno not in a table yet, and
    /// `unflushed_in(lo, hi)` tells whether a memtable or queued ingest holds keys in a span.
    pub(super) fn pick_compaction(
        &mut self,
        version: &Version,
        l0: &L0Sublevels,
        earliest_unflushed_seqno: u64,
        unflushed_in: &dyn Fn(&[u8], &[u8]) -> bool,
        opts: &PickerOptions,
    ) -> Option<CompactionChoice> {
        let ctx = L0Context {
            sublevels: l0,
            running: &self.running_l0,
            earliest_unflushed_seqno,
            running_outputs: &self.compaction_output_ranges,
            unflushed_in: Some(unflushed_in),
        };
        let c = picker::pick_compaction_with(version, &ctx, opts, &self.compacting_files)?;
        self.register(&c);
        Some(c)
    }

    /// Registers `c`, chosen in this critical section around the running compactions, as
    /// running: its inputs busy, its output range taken (`finish_compaction` ends it).
    pub(super) fn register(&mut self, c: &CompactionChoice) {
        for f in c.all_inputs() {
            self.compacting_files.insert(f.number);
        }
        self.compaction_output_ranges.push(running_output(c));
        if let Some(r) = running_l0(c) {
            self.running_l0.push(r);
        }
        self.compactions_running += 1;
    }

    /// A manual compaction runs (other compactions wait for it).
    pub(super) fn manual_running(&self) -> bool {
        self.manual_compaction
    }

    /// An ingest install runs (a compaction chosen now must wait: see `may_pick_compaction`).
    pub(super) fn ingest_installing(&self) -> bool {
        self.ingests_installing > 0
    }

    /// The automatic compaction `c` is over: its inputs and output range are free again.
    pub(super) fn finish_compaction(&mut self, c: &CompactionChoice) {
        self.compactions_running -= 1;
        remove_running_output(&mut self.compaction_output_ranges, &running_output(c));
        if let Some(r) = running_l0(c) {
            if let Some(i) = self.running_l0.iter().position(|x| *x == r) {
                self.running_l0.remove(i);
            }
        }
        for f in c.all_inputs() {
            self.compacting_files.remove(&f.number);
        }
    }

    /// A manual compaction may start: no other manual one, no automatic one, no ingest
    /// install runs (invariant 4).
    pub(super) fn may_start_manual(&self) -> bool {
        !self.manual_compaction && self.compactions_running == 0 && self.ingests_installing == 0
    }

    /// A manual compaction writing into `out` starts.
    pub(super) fn start_manual(&mut self, out: RunningOutput) {
        self.manual_compaction = true;
        self.compaction_output_ranges.push(out);
    }

    /// The manual compaction writing into `out` is over.
    pub(super) fn finish_manual(&mut self, out: &RunningOutput) {
        remove_running_output(&mut self.compaction_output_ranges, out);
        self.manual_compaction = false;
    }

    /// An ingest starts installing: no compaction is picked until it finishes.
    pub(super) fn start_ingest_install(&mut self) {
        self.ingests_installing += 1;
    }

    pub(super) fn finish_ingest_install(&mut self) {
        self.ingests_installing -= 1;
    }
}

/// Removes one registration of a finished compaction's output range.
fn remove_running_output(running: &mut Vec<RunningOutput>, done: &RunningOutput) {
    if let Some(i) = running.iter().position(|r| r == done) {
        running.remove(i);
    }
}

/// The level and key range a compaction writes into.
fn running_output(c: &CompactionChoice) -> RunningOutput {
    let (lo, hi) = c.span().unwrap_or_default();
    RunningOutput {
        level: c.output_level(),
        lo: lo.to_vec(),
        hi: hi.to_vec(),
    }
}

/// A compaction out of L0 as the L0 picker tracks it (see `L0Context`).
fn running_l0(c: &CompactionChoice) -> Option<RunningL0Compaction> {
    if c.level() != 0 {
        return None;
    }
    let inputs = c.inputs();
    let smallest = inputs.iter().map(|f| f.smallest_user()).min()?.to_vec();
    let largest = inputs.iter().map(|f| f.largest_user()).max()?.to_vec();
    Some(RunningL0Compaction {
        smallest,
        largest,
        intra_l0: matches!(c, CompactionChoice::IntraL0 { .. }),
        files: inputs.iter().map(|f| f.number).collect(),
    })
}
