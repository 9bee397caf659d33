//! Step 4: per index, the k-way merge of runs and buffers into final files (on several
//! threads over disjoint key ranges when big enough), through the duplicate and unique
//! policy of [`policy`].

pub(crate) mod policy;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sluice::{SstFileInfo, TableOptions};

use crate::merge::{
    merge_fan_in, open_files_for_runs, reduce_runs, sample_entries, split_ranges, DeletionSource,
    FinalWriter, MemSource, Merger, RunSource, Source, DELETION_SRC,
};
use crate::parse::Entries;
use crate::pipeline::checkpoint::{Progress, Stage};
use crate::pipeline::merge::policy::EmitCtx;
use crate::pipeline::plan::{IndexState, Plan};
use crate::pipeline::Import;
use crate::progress::Counters;
use crate::schema::Layout;
use crate::ImportError;

impl Import {
    /// Step 4.
    pub(crate) fn merge(
        &self,
        plan: &Plan,
        counters: &Counters,
        ctx: &mut EmitCtx<'_>,
        indexes: &mut [IndexState],
    ) -> Result<(), ImportError> {
        let file_counter = &plan.merge_files;
        let columnar = plan.table.layout == Layout::Columnar;
        // Checkpoints between indexes once the parse took one (everything is in runs then).
        let checkpoints = plan.ck.as_ref().is_some_and(|c| c.parse_taken());
        let first = plan
            .resume
            .as_ref()
            .filter(|r| r.stage == Stage::Merge)
            .map_or(0, |r| r.next_slot);
        for slot in first..indexes.len() {
            let st = &mut indexes[slot];
            if slot == 0 && columnar {
                // Streamed rows are row-layout files: merged again (one sequential pass) into
                // the columnar writer below.
                if let Some(p) = st.stop_streaming()? {
                    ctx.streamed[slot] = Some(Arc::new(p));
                }
            }
            if st.streaming {
                if let Some(w) = st.writer.take() {
                    st.finals = w.finish()?;
                }
                st.streamed_all = true;
                self.merge_checkpoint(plan, ctx, indexes, slot, counters, checkpoints)?;
                continue;
            }
            let cell_opts = (slot == 0 && columnar).then(|| TableOptions {
                // Cells are read by scans (a cursor per column), rarely by point reads: no
                // filter, bigger blocks.
                bloom_bits_per_key: None,
                block_size: 16 << 10,
                ..self.final_options()
            });
            // Bounded fan-in: at most `fan_in` runs are read at once by each merge thread.
            let (fan_in, merge_threads) =
                merge_fan_in(plan.merge_memory, open_files_for_runs(), self.opts.threads);
            let tmp = &plan.tmp.path;
            let name = || {
                let n = file_counter.fetch_add(1, Ordering::Relaxed);
                tmp.join(format!("run-{slot}-{n:06}.sst"))
            };
            // Runs a checkpoint names are deleted only once a newer one does not.
            let mut retired = Vec::new();
            let merged = reduce_runs(
                &mut st.runs,
                fan_in,
                merge_threads,
                &name,
                self.writeback(),
                checkpoints.then_some(&mut retired),
            )?;
            counters.runs_premerged.fetch_add(merged, Ordering::Relaxed);
            let bytes = st.mem_bytes as u64
                + st.runs
                    .iter()
                    .filter_map(|(p, _)| std::fs::metadata(p).ok())
                    .map(|m| m.len())
                    .sum::<u64>();
            // The index's deletions (replaced rows' old entries), sorted: merged as a source and
            // kept beside the merge, where a unique check against stored rows skips them.
            ctx.merging_deletions = Arc::new(DeletionSource::sorted(std::mem::take(
                &mut ctx.deletions[slot],
            )));
            let parallel = merge_threads > 1
                && cell_opts.is_none()
                && st.unique_cols.is_none()
                && bytes >= self.opts.parallel_merge_min_bytes;
            st.finals = if parallel {
                self.merge_parallel(plan, counters, ctx, st, file_counter, merge_threads)?
            } else {
                let mut sources: Vec<Box<dyn Source>> = Vec::new();
                for (p, with_src) in &st.runs {
                    sources.push(Box::new(RunSource::open(p, *with_src)?));
                }
                for e in std::mem::take(&mut st.mem) {
                    sources.push(Box::new(MemSource::new(e, None)));
                }
                if !ctx.merging_deletions.is_empty() {
                    sources.push(Box::new(DeletionSource::range(
                        Arc::clone(&ctx.merging_deletions),
                        &sluice::IterBounds::default(),
                    )));
                }
                let mut w = self.final_writer(plan, slot, file_counter);
                if let Some(cell_opts) = cell_opts {
                    w.split_columns(&plan.table, cell_opts, self.opts.threads);
                }
                merge_sources(ctx, counters, slot, st.unique_cols, sources, &mut w)?;
                w.finish()?
            };
            let done: Vec<PathBuf> = st.runs.drain(..).map(|(p, _)| p).collect();
            self.merge_checkpoint(plan, ctx, indexes, slot, counters, checkpoints)?;
            for p in done.into_iter().chain(retired) {
                let _ = std::fs::remove_file(p);
            }
        }
        Ok(())
    }

    /// The checkpoint after index `slot` was merged (when `enabled`).
    fn merge_checkpoint(
        &self,
        plan: &Plan,
        ctx: &mut EmitCtx<'_>,
        indexes: &mut [IndexState],
        slot: usize,
        counters: &Counters,
        enabled: bool,
    ) -> Result<(), ImportError> {
        if !enabled {
            return Ok(());
        }
        let at = Progress {
            stage: Stage::Merge,
            next_chunk: 0,
            next_slot: slot + 1,
            catalog: None,
        };
        self.checkpoint(plan, ctx, indexes, at, counters)
    }

    /// Step 4 on `threads` threads for one index: its key space is cut into disjoint ranges
    /// of about equal bytes (at keys sampled from the sorted lists and the runs' index
    /// blocks), and each thread merges its range of every source into final files of its own,
    /// through a copy of the emit state. The copies' effects are then combined in key-range
    /// order — rejects replayed (so `--max-errors`, the rejects file and the error reported
    /// are those of a merge on one thread), counts summed, suppressions and deletions for the
    /// later indexes gathered. Entries are placed in a range by their key alone, so every
    /// duplicate group stays in one range.
    pub(crate) fn merge_parallel(
        &self,
        plan: &Plan,
        counters: &Counters,
        ctx: &mut EmitCtx<'_>,
        st: &mut IndexState,
        file_counter: &Arc<AtomicU64>,
        threads: usize,
    ) -> Result<Vec<SstFileInfo>, ImportError> {
        let slot = st.slot;
        let mem: Vec<Arc<Entries>> = std::mem::take(&mut st.mem)
            .into_iter()
            .map(Arc::new)
            .collect();
        let mut samples = Vec::new();
        for e in &mem {
            sample_entries(e, 1024, &mut samples);
        }
        for (p, _) in &st.runs {
            // A separator (a run key with its source position, or a shortened one) is a cut
            // point like any other: entries go to a range by their key alone.
            let t = sluice::Table::open_path(p, &sluice::TableReadOptions::new())?;
            samples.extend(t.index_separators()?);
        }
        let dels = Arc::clone(&ctx.merging_deletions);
        let ranges = split_ranges(samples, threads);
        let parts = ranges.len() as u64;
        let mut suppress: Vec<HashMap<Vec<u8>, u32>> = vec![HashMap::new(); ranges.len()];
        for (k, n) in std::mem::take(&mut ctx.suppress[slot]) {
            let i = ranges.partition_point(|r| r.upper.as_deref().is_some_and(|u| u <= &k[..]));
            suppress[i.min(ranges.len() - 1)].insert(k, n);
        }
        let runs = &st.runs;
        let unique_cols = st.unique_cols;
        let base = &*ctx;
        let results: Vec<_> = std::thread::scope(|sc| {
            let handles: Vec<_> = ranges
                .iter()
                .zip(suppress)
                .map(|(range, sup)| {
                    let mut wctx = base.worker(slot, sup);
                    let (mem, dels) = (&mem, &dels);
                    sc.spawn(move || {
                        let r = (|| -> Result<Vec<SstFileInfo>, ImportError> {
                            let mut sources: Vec<Box<dyn Source>> = Vec::new();
                            for (p, with_src) in runs {
                                sources.push(Box::new(RunSource::open_range(p, *with_src, range)?));
                            }
                            for e in mem {
                                sources.push(Box::new(MemSource::range(Arc::clone(e), range)));
                            }
                            if !dels.is_empty() {
                                sources
                                    .push(Box::new(DeletionSource::range(Arc::clone(dels), range)));
                            }
                            let mut w = self.final_writer(plan, slot, file_counter);
                            // The writers fill at once: together they keep one writer's
                            // bound on filter memory.
                            w.max_entries = (plan.max_file_entries / parts).max(1 << 12);
                            merge_sources(&mut wctx, counters, slot, unique_cols, sources, &mut w)?;
                            Ok(w.finish()?)
                        })();
                        (wctx, r)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let rows_before = ctx.rows;
        let mut finals = Vec::new();
        for joined in results {
            let Ok((w, r)) = joined else {
                return Err(ImportError::Internal("a merge thread panicked".into()));
            };
            for (err, rec) in w.reject_log.unwrap_or_default() {
                ctx.reject(err, &rec)?;
            }
            ctx.rows -= rows_before - w.rows;
            ctx.dropped += w.dropped;
            for (n, sup) in w.suppress.into_iter().enumerate() {
                for (k, c) in sup {
                    *ctx.suppress[n].entry(k).or_insert(0) += c;
                }
            }
            for (n, d) in w.deletions.into_iter().enumerate() {
                ctx.deletions[n].extend(d);
            }
            finals.extend(r?);
        }
        Ok(finals)
    }
}

/// Step 4's loop: merges `sources` of index `slot` into `w` through `ctx`, a group of equal
/// keys at a time.
pub(crate) fn merge_sources(
    ctx: &mut EmitCtx<'_>,
    counters: &Counters,
    slot: usize,
    unique_cols: Option<usize>,
    sources: Vec<Box<dyn Source>>,
    w: &mut FinalWriter,
) -> Result<(), ImportError> {
    let mut m = Merger::new(sources);
    let mut key = Vec::new();
    let mut group: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut spare: Vec<Vec<u8>> = Vec::new();
    while let Some(s) = m.peek() {
        key.clear();
        key.extend_from_slice(s.key());
        spare.extend(group.drain(..).map(|(_, mut v)| {
            v.clear();
            v
        }));
        let mut deletion = false;
        while let Some(s) = m.peek() {
            if s.key() != key.as_slice() {
                break;
            }
            if s.src() == DELETION_SRC {
                deletion = true;
            } else {
                let mut v = spare.pop().unwrap_or_default();
                if slot == 0 {
                    v.extend_from_slice(s.value());
                }
                group.push((s.src(), v));
            }
            m.advance()?;
        }
        if slot == 0 {
            let rows: Vec<(u64, &[u8])> = group.iter().map(|(s, v)| (*s, v.as_slice())).collect();
            ctx.emit_primary(w, &key, &rows)?;
        } else {
            let srcs: Vec<u64> = group.iter().map(|g| g.0).collect();
            ctx.emit_secondary(w, slot, unique_cols, &key, &srcs, deletion)?;
        }
        counters.merged.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}
