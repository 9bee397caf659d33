//! Compaction execution: trivial moves, merges into new tables through one durable edit, and
//! manual compaction. Choosing what to compact is `compaction::picker` (pure).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::base::bounds::IterBounds;
use crate::base::error::{Error, Result};
use crate::base::range_tombstone::RangeTombstone;
use crate::compaction::job::{merge_to_tables, DropPolicy, MergeStats, OutputSpec};
use crate::compaction::picker::{self, CompactionChoice, PickerOptions};
use crate::compaction::split::subcompaction_ranges;
use crate::compaction::RunningOutput;
use crate::read::level::file_iter;
use crate::read::merging::{BoxIter, MergingIter};
use crate::version::{FileMeta, Version, VersionEdit, NUM_LEVELS};

use super::events::{
    table_infos, CompactionInfo, CompactionKind, CompactionStats, JobReport, TableFileCreation,
    TableFileDeletion,
};
use super::Inner;

impl Inner {
    /// Compaction, step by step: trivial move or merge the inputs into new tables, then one
    /// durable edit that swaps inputs for outputs. `score_x100`: why it was picked, for
    /// listeners.
    pub(super) fn run_compaction(
        self: &Arc<Self>,
        c: &CompactionChoice,
        score_x100: Option<u64>,
    ) -> Result<()> {
        let inputs: Vec<(usize, Arc<FileMeta>)> = c
            .inputs()
            .iter()
            .map(|f| (c.level(), Arc::clone(f)))
            .chain(
                c.output_inputs()
                    .iter()
                    .map(|f| (c.output_level(), Arc::clone(f))),
            )
            .collect();
        let kind = match c {
            CompactionChoice::Move { .. } => CompactionKind::Move,
            CompactionChoice::Merge {
                level,
                output_level,
                ..
            } if level == output_level => CompactionKind::SmallFiles,
            CompactionChoice::Merge { .. } => CompactionKind::Merge,
            CompactionChoice::IntraL0 { .. } => CompactionKind::IntraL0,
        };
        let job = self.compaction_began(kind, score_x100, &inputs, c.output_level());
        let r = match c {
            CompactionChoice::Move {
                level,
                output_level,
                file,
            } => self.move_file(*level, *output_level, file, job.as_ref()),
            _ => self.compact_files(&inputs, c.output_level(), job.as_ref()),
        };
        if let Err(e) = &r {
            let stats = CompactionStats::default();
            self.compaction_ended(job.as_ref(), Vec::new(), stats, Some(e.to_string()));
        }
        r
    }

    /// A trivial move: one edit moving `file` from `level` to `output_level`, nothing
    /// rewritten.
    fn move_file(
        &self,
        level: usize,
        output_level: usize,
        file: &Arc<FileMeta>,
        job: Option<&JobReport<CompactionInfo>>,
    ) -> Result<()> {
        let edit = VersionEdit {
            deleted: vec![(level, file.number)],
            added: vec![(output_level, (**file).clone())],
            ..Default::default()
        };
        let outputs = job
            .map(|_| table_infos(output_level, [&**file]))
            .unwrap_or_default();
        self.log_and_apply(edit, |_| {
            self.compaction_ended(job, outputs, CompactionStats::default(), None);
        })?;
        self.counters.compactions.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A merge compaction, in steps: split the key space into subcompactions at input file
    /// boundaries, merge each range on its own thread under the drop rules, then one durable
    /// edit swapping inputs for all outputs.
    pub(super) fn compact_files(
        self: &Arc<Self>,
        inputs: &[(usize, Arc<FileMeta>)],
        output_level: usize,
        job: Option<&JobReport<CompactionInfo>>,
    ) -> Result<()> {
        // Only the deeper levels are needed (not the version: holding it would keep the
        // inputs on disk after the install, see invariant 7).
        //
        // An intra-L0 compaction's "deeper" data includes the L0 files it does not take: the
        // picker may leave older files of the stack in L0 (one busy in an L0->Lbase compaction,
        // or a candidate capped in size), and a tombstone dropped here would uncover them.
        // (Pebble's in-use key ranges start at L0 for an intra-L0 compaction, too.)
        let deeper = {
            let s = self.state.lock();
            let mut deeper = s.version.levels[output_level + 1..].to_vec();
            if output_level == 0 {
                let taken: std::collections::HashSet<u64> =
                    inputs.iter().map(|(_, f)| f.number).collect();
                deeper.push(
                    s.version.levels[0]
                        .iter()
                        .filter(|f| !taken.contains(&f.number))
                        .cloned()
                        .collect(),
                );
            }
            deeper
        };
        // The files of the first non-empty level beneath the output level that the
        // compaction's span overlaps: outputs are cut along them (`GrandparentCuts`). None
        // into the last level with data, and none for an intra-L0 compaction (its single
        // output is placed by its newest input; its `deeper` ends with L0's other files).
        let below = deeper.iter().find(|files| !files.is_empty());
        let grandparents: Vec<Arc<FileMeta>> = match (output_level, below) {
            (1.., Some(below)) => {
                let lo = inputs.iter().map(|(_, f)| f.smallest_user()).min();
                let hi = inputs.iter().map(|(_, f)| f.largest_user()).max();
                below
                    .iter()
                    .filter(|f| f.overlaps(lo, hi))
                    .cloned()
                    .collect()
            }
            _ => Vec::new(),
        };
        let bottommost = move |lo: &[u8], hi: &[u8]| {
            deeper
                .iter()
                .all(|files| !files.iter().any(|f| f.overlaps(Some(lo), Some(hi))))
        };
        let policy = DropPolicy {
            snapshots: self.live_snapshots(),
            bottommost: &bottommost,
        };
        let bytes_in: u64 = inputs.iter().map(|(_, f)| f.size).sum();
        // An intra-L0 compaction writes exactly one file, placed in L0 by its newest input:
        // split outputs would each be placed by their own newest entry, and a piece could sort
        // below an older file it overlaps.
        let intra_l0 = output_level == 0;
        let split = !intra_l0 && bytes_in > 2 * self.opts.target_file_size;
        let ranges = if split {
            subcompaction_ranges(inputs, output_level, self.opts.max_subcompactions)
        } else {
            vec![IterBounds::default()]
        };
        let results: Vec<Result<(Vec<FileMeta>, MergeStats)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .iter()
                .map(|range| {
                    let policy = &policy;
                    let grandparents = &grandparents[..];
                    scope.spawn(move || {
                        self.subcompaction(
                            inputs,
                            output_level,
                            range,
                            policy,
                            intra_l0,
                            grandparents,
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::InvalidArgument("a subcompaction panicked".into()))
                    })
                })
                .collect()
        });
        let mut outputs = Vec::new();
        let mut bytes_out = 0;
        let mut first_err = None;
        for r in results {
            match r {
                Ok((files, stats)) => {
                    bytes_out += stats.bytes_out;
                    outputs.extend(files);
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(j) = job {
            let created: Vec<(u64, u64)> = outputs.iter().map(|f| (f.number, f.size)).collect();
            let (level, id) = (Some(output_level), Some(j.info.job_id));
            self.tables_created(&created, level, TableFileCreation::Compaction, id);
        }
        if let Some(e) = first_err {
            // Outputs of the ranges that finished are garbage now.
            let mut s = self.state.lock();
            for f in &outputs {
                s.files.release(f.number);
                self.remove_table(f.number, TableFileDeletion::JobFailed);
            }
            return Err(e);
        }
        let stats = CompactionStats {
            bytes_read: bytes_in,
            bytes_written: bytes_out,
            subcompactions: ranges.len(),
        };
        self.install_compaction(inputs, outputs, output_level, job, stats)?;
        self.counters.compactions.fetch_add(1, Ordering::Relaxed);
        self.counters
            .subcompactions
            .fetch_add(ranges.len() as u64, Ordering::Relaxed);
        self.counters
            .compaction_read
            .fetch_add(bytes_in, Ordering::Relaxed);
        self.counters
            .compaction_written
            .fetch_add(bytes_out, Ordering::Relaxed);
        Ok(())
    }

    /// One key range `[lo, hi)` of a compaction: the inputs bounded to it, their range
    /// deletions clipped to it, merged into new tables.
    fn subcompaction(
        self: &Arc<Self>,
        inputs: &[(usize, Arc<FileMeta>)],
        output_level: usize,
        range: &IterBounds,
        policy: &DropPolicy<'_>,
        single_output: bool,
        grandparents: &[Arc<FileMeta>],
    ) -> Result<(Vec<FileMeta>, MergeStats)> {
        let (mut merged, tombstones) = self.compaction_input(inputs, range)?;
        let mut alloc = self.allocate_numbers();
        let mut spec = OutputSpec {
            fs: &*self.fs,
            dir: &self.dir,
            table: self.opts.table_options(output_level),
            target_file_size: if single_output {
                u64::MAX
            } else {
                self.opts.target_file_size
            },
            split_keys: &[],
            grandparents,
            new_file_number: &mut alloc,
        };
        merge_to_tables(&mut merged, tombstones, policy, &mut spec)
    }

    /// The inputs within `range` as one merged stream, and their range deletions (at their
    /// files' global seqno where they have one) clipped to `range`.
    fn compaction_input(
        &self,
        inputs: &[(usize, Arc<FileMeta>)],
        range: &IterBounds,
    ) -> Result<(MergingIter, Vec<RangeTombstone>)> {
        let mut children: Vec<BoxIter> = Vec::new();
        let mut tombstones = Vec::new();
        for (_, f) in inputs {
            let t = self.table(f)?;
            for rt in t.range_deletions() {
                let seqno = f.entry_seqno(rt.seqno);
                if let Some((start, end)) =
                    rt.clipped(range.lower.as_deref(), range.upper.as_deref())
                {
                    tombstones.push(RangeTombstone {
                        start: start.to_vec(),
                        end: end.to_vec(),
                        seqno,
                    });
                }
            }
            children.push(file_iter(&t, f, range.clone(), None));
        }
        Ok((MergingIter::new(children), tombstones))
    }

    /// Syncs the directory (invariant 4) and installs one edit swapping `inputs` for
    /// `outputs`; the outputs stop being protected as uninstalled either way.
    fn install_compaction(
        &self,
        inputs: &[(usize, Arc<FileMeta>)],
        outputs: Vec<FileMeta>,
        output_level: usize,
        job: Option<&JobReport<CompactionInfo>>,
        stats: CompactionStats,
    ) -> Result<()> {
        let numbers: Vec<u64> = outputs.iter().map(|f| f.number).collect();
        let infos = job
            .map(|_| table_infos(output_level, &outputs))
            .unwrap_or_default();
        let r = self
            .fs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))
            .and_then(|_| {
                let edit = VersionEdit {
                    deleted: inputs.iter().map(|(l, f)| (*l, f.number)).collect(),
                    added: outputs.into_iter().map(|f| (output_level, f)).collect(),
                    ..Default::default()
                };
                self.log_and_apply(edit, |_| {
                    self.compaction_ended(job, infos, stats, None);
                })
            });
        let mut s = self.state.lock();
        for n in numbers {
            s.files.release(n);
        }
        r
    }

    pub(super) fn manual_compaction(
        self: &Arc<Self>,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        // Stop automatic compactions and wait for running ones and for ingest installs.
        let mut s = self.state.lock();
        while !s.jobs.may_start_manual() {
            self.done_cv.wait_for(&mut s, Duration::from_millis(50));
        }
        // Choose the inputs and register the output range in this critical section, so an
        // ingest reading the running outputs either sees it or installed before the version
        // the inputs come from.
        let (inputs, out) = manual_compaction_inputs(&s.version, start, end);
        s.jobs.start_manual(out.clone());
        drop(s);
        let only_last = inputs.iter().all(|(l, _)| *l == NUM_LEVELS - 1) && inputs.len() <= 1;
        let r = if inputs.is_empty() || only_last {
            Ok(())
        } else {
            let last = NUM_LEVELS - 1;
            let job = self.compaction_began(CompactionKind::Manual, None, &inputs, last);
            let r = self.compact_files(&inputs, last, job.as_ref());
            if let Err(e) = &r {
                let stats = CompactionStats::default();
                self.compaction_ended(job.as_ref(), Vec::new(), stats, Some(e.to_string()));
            }
            r
        };
        let mut s = self.state.lock();
        s.jobs.finish_manual(&out);
        self.job_ended(s, &r);
        r
    }
}

impl Inner {
    /// `Db::merge_small_files`: picker policy 7 runs in `[lo, hi)` with `prefix`, one at a
    /// time on this thread, each chosen and registered like a background pick (beside the
    /// running compactions, after any ingest install running). It stops early, leaving the
    /// rest to a later call, while a manual compaction runs or the picker has due work: a
    /// registered merge holds a compaction slot, which the due work must not wait for.
    pub(super) fn merge_small_files(
        self: &Arc<Self>,
        prefix: usize,
        small_bytes: u64,
        lo: &[u8],
        hi: &[u8],
    ) -> Result<usize> {
        let base = self.picker_options();
        let o = PickerOptions {
            small_file_prefix: prefix,
            small_file_bytes: base.small_file_bytes.min(small_bytes),
            ..base
        };
        let mut merges = 0;
        loop {
            let mut s = self.state.lock();
            while s.jobs.ingest_installing() {
                self.done_cv.wait_for(&mut s, Duration::from_millis(50));
            }
            if let Some(e) = &s.background_error {
                return Err(Error::Poisoned(e.clone()));
            }
            let due = picker::level_scores(&s.version, &s.l0, &base)
                .iter()
                .any(|&score| score >= 100);
            if due || s.jobs.manual_running() {
                return Ok(merges);
            }
            let st = &mut *s;
            let c = picker::pick_small_files(
                &st.version,
                st.jobs.compacting_files(),
                st.jobs.running_outputs(),
                &o,
                Some((lo, hi)),
            );
            let Some(c) = c else {
                return Ok(merges);
            };
            st.jobs.register(&c);
            drop(s);
            let r = self.run_compaction(&c, None);
            let mut s = self.state.lock();
            s.jobs.finish_compaction(&c);
            self.job_ended(s, &r);
            r?;
            merges += 1;
        }
    }
}

/// A manual compaction's inputs: every file overlapping `[start, end]`, the range expanded
/// until it covers whole files at every level; and its output range in the last level.
pub(super) fn manual_compaction_inputs(
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

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use crate::compaction::picker::{self, CompactionChoice, L0Context, PickerOptions};
    use crate::fs::MemFs;
    use crate::version::l0_sublevels::{L0Sublevels, RunningL0Compaction};
    use crate::version::{FileMeta, Version, VersionEdit};
    use crate::{Db, Options, ReadOptions};

    /// The picker does hand out an intra-L0 compaction of the newer files of a stack whose
    /// oldest file is still L0 (here: busy in a running L0->Lbase compaction).
    #[test]
    fn intra_l0_pick_leaves_older_overlapping_l0_file_out() {
        let added = (1..=5)
            .map(|n| (0, FileMeta::for_test(n, b"a", b"d", 1 << 10, n)))
            .collect();
        let v = Version::default()
            .apply(&VersionEdit {
                added,
                ..Default::default()
            })
            .unwrap();
        let busy: HashSet<u64> = [1].into_iter().collect();
        let running = vec![RunningL0Compaction {
            smallest: b"a".to_vec(),
            largest: b"d".to_vec(),
            intra_l0: false,
            files: vec![1],
        }];
        let l0 = L0Sublevels::from_version(&v);
        let ctx = L0Context {
            sublevels: &l0,
            running: &running,
            earliest_unflushed_seqno: u64::MAX,
            running_outputs: &[],
            unflushed_in: None,
        };
        let po = PickerOptions {
            l0_compaction_trigger: 2,
            l0_sublevels: true,
            max_bytes_for_level_base: 64 << 10,
            level_multiplier: 10,
            l0_round_bytes: 0,
            ..PickerOptions::default()
        };
        let c = picker::pick_compaction_with(&v, &ctx, &po, &busy);
        let Some(CompactionChoice::IntraL0 { inputs }) = c else {
            panic!("expected intra-L0, got {c:?}");
        };
        let nums: Vec<u64> = inputs.iter().map(|f| f.number).collect();
        assert!(!nums.contains(&1), "older file 1 is not an input: {nums:?}");
    }

    /// An intra-L0 compaction of the newer L0 file holding a deletion (a range deletion, or a
    /// point one), with an older L0 file holding the covered put left out and nothing in
    /// L1..L6: the deletion must not be dropped as "bottommost", or the put comes back. (Found
    /// by `sluice-stress faults`, seed 11012: a bounded iterator returned a range-deleted put.)
    #[test]
    fn intra_l0_compaction_keeps_deletions_over_an_older_l0_file() {
        for range in [true, false] {
            let fs = MemFs::new();
            let opts = Options {
                fs: Arc::new(fs.clone()),
                l0_compaction_trigger: 100,
                l0_slowdown_writes_trigger: 100,
                l0_stop_writes_trigger: 100,
                ..Options::default()
            };
            let db = Db::open("/db", opts).unwrap();
            db.put(b"k05", b"v1").unwrap();
            db.flush().unwrap(); // F1: the put
            if range {
                db.delete_range(b"k00", b"k10").unwrap();
            } else {
                db.delete(b"k05").unwrap();
            }
            db.flush().unwrap(); // F2: the deletion
            assert_eq!(db.get(b"k05").unwrap(), None);
            let v = db.current_version();
            assert_eq!(v.levels[0].len(), 2);
            let newer = v.levels[0]
                .iter()
                .max_by_key(|f| f.largest_seqno)
                .cloned()
                .unwrap();
            // What the scheduler runs for `CompactionChoice::IntraL0 { inputs: [F2] }`.
            db.inner.compact_files(&[(0, newer)], 0, None).unwrap();
            let mut it = db
                .iter(ReadOptions {
                    lower_bound: Some(b"k00".to_vec()),
                    upper_bound: Some(b"k10".to_vec()),
                    ..Default::default()
                })
                .unwrap();
            it.seek(b"k01");
            let iter_saw = it.valid().then(|| it.key().to_vec());
            assert_eq!(
                iter_saw, None,
                "range {range}: iterator resurrected a deleted put"
            );
            assert_eq!(
                db.get(b"k05").unwrap(),
                None,
                "range {range}: get resurrected it"
            );
        }
    }
}
