//! The background scheduler: workers pick a flush or a compaction under `state`, run it without
//! holding it, and clean up after it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::compaction::picker::{self, CompactionChoice};

use super::compact::{remove_running_output, running_l0, running_output};
use super::flushable::Flushable;
use super::Inner;

pub(super) enum Job {
    Flush(Flushable),
    Compact(CompactionChoice),
}

impl Inner {
    pub(super) fn background_loop(self: Arc<Self>) {
        let picker_opts = self.picker_options();
        loop {
            let job = {
                let mut s = self.state.lock();
                loop {
                    if self.shutting_down.load(Ordering::Acquire) {
                        return;
                    }
                    if s.background_error.is_none() {
                        if !s.flush_running && !s.imm.is_empty() {
                            s.flush_running = true;
                            break Job::Flush(s.imm[0].clone());
                        }
                        if !s.manual_compaction
                            && s.ingests_installing == 0
                            && s.compactions_running + 1 < self.opts.max_background_jobs.max(2)
                        {
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
                            let ctx = picker::L0Context {
                                sublevels: &s.l0,
                                running: &s.running_l0,
                                earliest_unflushed_seqno,
                                running_outputs: &s.compaction_output_ranges,
                            };
                            if let Some(c) = picker::pick_compaction_with(
                                &s.version,
                                &ctx,
                                &picker_opts,
                                &s.compacting_files,
                            ) {
                                for f in c.all_inputs() {
                                    s.compacting_files.insert(f.number);
                                }
                                s.compaction_output_ranges.push(running_output(&c));
                                if let Some(r) = running_l0(&c) {
                                    s.running_l0.push(r);
                                }
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
                    remove_running_output(&mut s.compaction_output_ranges, &running_output(c));
                    if let Some(r) = running_l0(c) {
                        if let Some(i) = s.running_l0.iter().position(|x| *x == r) {
                            s.running_l0.remove(i);
                        }
                    }
                    for f in c.all_inputs() {
                        s.compacting_files.remove(&f.number);
                    }
                }
            }
            if let Err(e) = result {
                s.background_error.get_or_insert(e.to_string());
            }
            drop(s);
            self.delete_obsolete_files();
            self.done_cv.notify_all();
            self.bg_cv.notify_all();
        }
    }

    /// A file-number allocator that also protects the numbers from obsolete-file deletion.
    pub(super) fn allocate_numbers(&self) -> impl FnMut() -> u64 + '_ {
        move || {
            let mut s = self.state.lock();
            let x = s.next_file_number;
            s.next_file_number += 1;
            s.uninstalled_files.insert(x);
            x
        }
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
