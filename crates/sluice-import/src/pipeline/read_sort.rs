//! Step 3: read, parse and sort. A reader thread cuts each file into record-aligned chunks,
//! workers parse and encode them, and this thread takes them back in input order: streamed
//! straight to final files while the input is sorted, else buffered and spilled as runs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use crate::input::Format;
use crate::merge::{write_run, MemSource, Merger, Source};
use crate::parse::{
    parse_chunk, ArrowBatch, Chunk, ChunkOutput, FieldMap, FileChunks, ParseConfig,
};
use crate::pipeline::checkpoint::{Progress, Stage};
use crate::pipeline::merge::policy::EmitCtx;
use crate::pipeline::plan::{IndexState, Plan};
use crate::pipeline::Import;
use crate::progress::Counters;
use crate::ImportError;

impl Import {
    /// Step 3 (from the chunk a resumed checkpoint recorded), with its checkpoints.
    pub(crate) fn parse_and_sort(
        &self,
        plan: &Plan,
        counters: &Arc<Counters>,
        ctx: &mut EmitCtx<'_>,
        indexes: &mut [IndexState],
    ) -> Result<(), ImportError> {
        let skip = plan.resume.as_ref().map_or(0, |r| r.next_chunk);
        // One parse configuration per format (indexed by `Format as usize`).
        let cfgs: Vec<ParseConfig> = [
            Format::Csv,
            Format::Tsv,
            Format::Jsonl,
            Format::Parquet,
            Format::Arrow,
        ]
        .into_iter()
        .map(|format| ParseConfig {
            table: plan.table.clone(),
            format,
            delimiter: self.opts.delimiter.unwrap_or(match format {
                Format::Tsv => b'\t',
                _ => b',',
            }),
            quote: self.opts.quote,
            null: self.opts.null.as_ref().map(|s| s.as_bytes().to_vec()),
            files: plan.file_names.clone(),
            rowid_base: plan.rowid_base,
            pool: Some(Arc::clone(&plan.pool)),
        })
        .collect();
        let abort = AtomicBool::new(false);
        let file_counter = &plan.parse_files;
        let (chunk_tx, chunk_rx) = mpsc::sync_channel::<Chunk>(self.opts.threads);
        let chunk_rx = Mutex::new(chunk_rx);
        std::thread::scope(|s| -> Result<(), ImportError> {
            let (out_tx, out_rx) = mpsc::channel::<Result<ChunkOutput, ImportError>>();
            let (permit_tx, permit_rx) = mpsc::sync_channel::<()>(plan.in_flight);
            for _ in 0..plan.in_flight {
                let _ = permit_tx.send(());
            }
            {
                let out_tx = out_tx.clone();
                let (cfgs, abort, counters) = (&cfgs, &abort, counters);
                s.spawn(move || {
                    let r =
                        self.read_files(plan, cfgs, chunk_tx, &permit_rx, abort, counters, skip);
                    if let Err(e) = r {
                        let _ = out_tx.send(Err(e));
                    }
                });
            }
            for _ in 0..self.opts.threads {
                let out_tx = out_tx.clone();
                let (cfgs, chunk_rx) = (&cfgs, &chunk_rx);
                s.spawn(move || loop {
                    let next = chunk_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok(chunk)) = next else {
                        return;
                    };
                    let cfg = &cfgs[plan.formats[chunk.file] as usize];
                    if out_tx.send(Ok(parse_chunk(cfg, chunk))).is_err() {
                        return;
                    }
                });
            }
            drop(out_tx);
            let result = (|| {
                let mut pending: BTreeMap<u64, ChunkOutput> = BTreeMap::new();
                let mut next = skip;
                // Input bytes of the chunks taken: checkpoints fall at the same chunks in
                // every run.
                let mut taken = 0u64;
                for msg in &out_rx {
                    let out = msg?;
                    pending.insert(out.seq, out);
                    while let Some(out) = pending.remove(&next) {
                        next += 1;
                        counters.rows.fetch_add(out.rows, Ordering::Relaxed);
                        taken += out.bytes;
                        let spilled =
                            self.take_chunk(plan, ctx, indexes, out, file_counter, counters)?;
                        let _ = permit_tx.send(());
                        let at = (next, taken, spilled);
                        self.parse_checkpoint(plan, ctx, indexes, at, counters)?;
                    }
                }
                // The merge resumes from runs only: what is still buffered is spilled first.
                if plan.ck.as_ref().is_some_and(|c| c.parse_taken()) {
                    self.spill_and_checkpoint(plan, ctx, indexes, (Stage::Merge, next), counters)?;
                }
                Ok(())
            })();
            if result.is_err() {
                abort.store(true, Ordering::Relaxed);
            }
            drop(permit_tx);
            drop(out_rx);
            result
        })
    }

    /// A parse checkpoint after chunk `next - 1` when one is due (see
    /// [`crate::pipeline::checkpoint`]): every sort buffer spilled first. `at`: the next
    /// chunk, the input bytes taken by this run, whether the chunk's sort buffers spilled.
    fn parse_checkpoint(
        &self,
        plan: &Plan,
        ctx: &mut EmitCtx<'_>,
        indexes: &mut [IndexState],
        at: (u64, u64, bool),
        counters: &Counters,
    ) -> Result<(), ImportError> {
        let Some(ck) = plan.ck.as_ref() else {
            return Ok(());
        };
        let (next, bytes, spilled) = at;
        if !ck.parse_due(bytes, self.opts.checkpoint_bytes.max(1), spilled) {
            return Ok(());
        }
        self.spill_and_checkpoint(plan, ctx, indexes, (Stage::Parse, next), counters)?;
        ck.parsed_to(bytes);
        Ok(())
    }

    /// Every sort buffer spilled, then a checkpoint at `at` (its stage, and the next chunk).
    fn spill_and_checkpoint(
        &self,
        plan: &Plan,
        ctx: &mut EmitCtx<'_>,
        indexes: &mut [IndexState],
        at: (Stage, u64),
        counters: &Counters,
    ) -> Result<(), ImportError> {
        self.spill(plan, indexes, &plan.parse_files, counters)?;
        let at = Progress {
            stage: at.0,
            next_chunk: at.1,
            next_slot: 0,
            catalog: None,
        };
        self.checkpoint(plan, ctx, indexes, at, counters)
    }

    /// The reader thread: every file, chunk by chunk, in order, then the Arrow stream if
    /// there is one. The first `skip` chunks are read but not sent (a resumed import took
    /// them before).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn read_files(
        &self,
        plan: &Plan,
        cfgs: &[ParseConfig],
        tx: mpsc::SyncSender<Chunk>,
        permits: &mpsc::Receiver<()>,
        abort: &AtomicBool,
        counters: &Counters,
        skip: u64,
    ) -> Result<(), ImportError> {
        let mut feed = Feed {
            tx,
            permits,
            abort,
            seq: 0,
            permit: false,
            global: 0,
            skip,
        };
        for fi in 0..self.files.len() {
            let cfg = &cfgs[plan.formats[fi] as usize];
            if !self.read_file(plan, cfg, fi, &mut feed, counters)? {
                return Ok(());
            }
        }
        if let Some(stream) = self.take_arrow()? {
            let fi = self.files.len();
            let map = |schema: &arrow_schema::Schema| {
                crate::arrow_io::parquet::match_columns(schema, &plan.table)
            };
            let name = &plan.file_names[fi];
            let schema = stream.schema();
            let (_, columns) = map(&schema)
                .map_err(|why| ImportError::InvalidArgument(format!("{name}: {why}")))?;
            let mut columns = Arc::new(FieldMap { fields: columns });
            let mut rows = 0u64;
            for (number, batch) in stream.enumerate() {
                if !feed.acquire() {
                    return Ok(());
                }
                let batch = batch.map_err(|e| {
                    ImportError::InvalidArgument(format!("{name}: batch {number}: {e}"))
                })?;
                // Pick each batch's columns by its own schema (a stream should not change its
                // schema, but a reader that does so is not trusted to keep the field order).
                let (roots, fields) = map(batch.schema().as_ref()).map_err(|why| {
                    ImportError::InvalidArgument(format!("{name}: batch {number}: {why}"))
                })?;
                if fields != columns.fields {
                    columns = Arc::new(FieldMap { fields });
                }
                let batch = batch.project(&roots).map_err(|e| {
                    ImportError::InvalidArgument(format!("{name}: batch {number}: {e}"))
                })?;
                let n = batch.num_rows() as u64;
                counters
                    .bytes_read
                    .fetch_add(batch.get_array_memory_size() as u64, Ordering::Relaxed);
                if !feed.send_batch(fi, batch, number as u64, rows, &columns) {
                    return Ok(());
                }
                rows += n;
            }
        }
        Ok(())
    }

    /// The Arrow stream, taken once.
    fn take_arrow(&self) -> Result<Option<crate::arrow_io::ArrowStream>, ImportError> {
        match self.arrow.lock() {
            Ok(mut a) => Ok(a.take()),
            Err(_) => Err(ImportError::Internal(
                "the Arrow stream's lock is poisoned".into(),
            )),
        }
    }

    /// One input file (CSV, TSV, JSON lines or Parquet), chunk by chunk. `false`: stop (the
    /// import failed elsewhere).
    fn read_file(
        &self,
        plan: &Plan,
        cfg: &ParseConfig,
        fi: usize,
        feed: &mut Feed<'_>,
        counters: &Counters,
    ) -> Result<bool, ImportError> {
        let mut chunks = FileChunks::open(
            &self.files[fi],
            &plan.file_names[fi],
            fi,
            cfg,
            self.opts.header,
            plan.chunk_size,
            Arc::clone(&counters.bytes_read),
        )?;
        loop {
            if !feed.acquire() {
                return Ok(false);
            }
            let Some(mut chunk) = chunks.next_chunk()? else {
                break;
            };
            chunk.offset += feed.global;
            if !feed.send(chunk) {
                return Ok(false);
            }
        }
        feed.global += chunks.consumed() + 1;
        Ok(true)
    }

    /// Takes one chunk output, in input order. Returns whether the sort buffers were spilled.
    pub(crate) fn take_chunk(
        &self,
        plan: &Plan,
        ctx: &mut EmitCtx<'_>,
        indexes: &mut [IndexState],
        out: ChunkOutput,
        file_counter: &Arc<AtomicU64>,
        counters: &Counters,
    ) -> Result<bool, ImportError> {
        for r in out.rejects {
            ctx.reject(ImportError::BadRow(r.error), &r.record)?;
        }
        ctx.rows += out.rows;
        for (slot, entries) in out.indexes.into_iter().enumerate() {
            let primary_streaming = indexes[0].streaming;
            let st = &mut indexes[slot];
            if entries.items.is_empty() {
                continue;
            }
            // Sorted input: this chunk's keys all follow the last key written.
            let in_order = st.streaming
                && (slot == 0 || primary_streaming)
                && entries.distinct()
                && st
                    .last_key
                    .as_deref()
                    .is_none_or(|last| entries.key(0) > last);
            if in_order {
                if st.writer.is_none() {
                    let mut w = self.final_writer(plan, slot, file_counter);
                    w.record_positions(plan.tmp.path.join(format!("positions-{slot}")))?;
                    st.writer = Some(w);
                }
                let w = st.writer.as_mut().expect("just set");
                for i in 0..entries.items.len() {
                    let (k, v, src) = (entries.key(i), entries.value(i), entries.items[i].3);
                    if slot == 0 {
                        ctx.emit_primary(w, k, &[(src, v)])?;
                    } else {
                        ctx.emit_secondary(w, slot, st.unique_cols, k, &[src], false)?;
                    }
                }
                st.last_key = Some(entries.key(entries.items.len() - 1).to_vec());
                continue;
            }
            if st.streaming {
                ctx.streamed[slot] = st.stop_streaming()?.map(Arc::new);
                // What was streamed is merged again: its unique values are checked again then.
                ctx.last_unique[slot] = None;
                if slot == 0 {
                    // Secondary entries may only stream while the primary does (duplicates
                    // found later must be able to take their secondary entries with them).
                    for (n, other) in indexes.iter_mut().enumerate().skip(1) {
                        if other.streaming {
                            ctx.streamed[n] = other.stop_streaming()?.map(Arc::new);
                            ctx.last_unique[n] = None;
                        }
                    }
                }
            }
            let st = &mut indexes[slot];
            st.mem_bytes += entries.memory();
            st.mem.push(entries);
        }
        let buffered: usize = indexes.iter().map(|i| i.mem_bytes).sum();
        if buffered > plan.sort_budget {
            self.spill(plan, indexes, file_counter, counters)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Spills every index's sort buffer as runs written side by side on up to `threads`
    /// threads. A run is a k-way merge of buffered chunks on one core, and while a spill runs
    /// the parse workers wait for it, so with fewer indexes than threads each buffer is cut
    /// (by chunk, in input order) into one run per thread: on `hits`, a table with only a
    /// primary index, a spill kept one of two cores idle for 0.3 s three times per import.
    /// More runs cost the merge little, and their order does not matter: a run's keys carry
    /// their input position, which orders duplicates.
    fn spill(
        &self,
        plan: &Plan,
        indexes: &mut [IndexState],
        file_counter: &Arc<AtomicU64>,
        counters: &Counters,
    ) -> Result<(), ImportError> {
        let buffers = indexes.iter().filter(|st| !st.mem.is_empty()).count();
        let parts = (self.opts.threads / buffers.max(1)).max(1);
        let mut jobs = Vec::new();
        for (i, st) in indexes.iter_mut().enumerate() {
            if st.mem.is_empty() {
                continue;
            }
            let mut mem = std::mem::take(&mut st.mem);
            st.mem_bytes = 0;
            let per_part = mem.len().div_ceil(parts);
            let mut cut = Vec::with_capacity(parts);
            while mem.len() > per_part {
                let tail = mem.split_off(per_part);
                cut.push(std::mem::replace(&mut mem, tail));
            }
            cut.push(mem);
            for mem in cut {
                let n = file_counter.fetch_add(1, Ordering::Relaxed);
                let path = plan.tmp.path.join(format!("run-{}-{n:06}.sst", st.slot));
                jobs.push((i, path, mem));
            }
        }
        let writes = self.writes();
        type Job = (usize, std::path::PathBuf, Vec<crate::parse::Entries>);
        let write = |(i, path, mem): Job| {
            let sources: Vec<Box<dyn Source>> = mem
                .into_iter()
                .map(|e| {
                    Box::new(MemSource::new(e, Some(Arc::clone(&plan.pool)))) as Box<dyn Source>
                })
                .collect();
            (i, write_run(&path, Merger::new(sources), writes.clone()))
        };
        // Jobs are in index and input order, and so are the runs recorded; the first error
        // (by index) is reported.
        let written = crate::workers::map_on_threads(self.opts.threads, jobs, write);
        for (i, r) in written {
            if let Some(p) = r? {
                indexes[i].runs.push((p, true));
                counters.runs_spilled.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

/// The reader's side of the chunk channel. A permit is taken before a chunk is read and
/// handed on with the chunk. The end of a file (or an empty file) reads no chunk: its permit
/// is kept for the next file's first chunk rather than lost (losing one per file once
/// deadlocked imports of more files than there are permits).
pub(crate) struct Feed<'a> {
    tx: mpsc::SyncSender<Chunk>,
    permits: &'a mpsc::Receiver<()>,
    abort: &'a AtomicBool,
    seq: u64,
    permit: bool,
    /// Offset of the current file's first byte (or row) in all inputs, for row ids.
    global: u64,
    /// Chunks before this one are dropped, not sent, and keep their permit.
    skip: u64,
}

impl Feed<'_> {
    /// Waits for a permit to read the next chunk. `false`: stop (the import failed elsewhere).
    fn acquire(&mut self) -> bool {
        if self.abort.load(Ordering::Relaxed) {
            return false;
        }
        if !self.permit {
            if self.permits.recv().is_err() {
                return false;
            }
            self.permit = true;
        }
        true
    }

    /// Sends a chunk read under the permit [`acquire`](Self::acquire) took.
    fn send(&mut self, mut chunk: Chunk) -> bool {
        chunk.seq = self.seq;
        self.seq += 1;
        if chunk.seq < self.skip {
            return true;
        }
        self.permit = false;
        self.tx.send(chunk).is_ok()
    }

    /// Sends a record batch whose first row is row `first_row` (0-based) of input `file`.
    fn send_batch(
        &mut self,
        file: usize,
        rows: arrow_array::RecordBatch,
        number: u64,
        first_row: u64,
        columns: &Arc<FieldMap>,
    ) -> bool {
        let chunk = Chunk {
            seq: 0,
            file,
            data: Vec::new(),
            first_line: first_row + 1,
            offset: self.global + first_row,
            map: Arc::clone(columns),
            batch: Some(ArrowBatch { rows, number }),
            malformed: Vec::new(),
        };
        self.send(chunk)
    }
}
