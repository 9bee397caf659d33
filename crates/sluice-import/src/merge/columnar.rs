//! The column writers of the columnar and cells layouts: rows batched, regrouped by column and
//! written to one [`FinalWriter`] per column on several threads. The columnar layout writes
//! each row group's values of a column as one chunk ([`crate::chunk`]); the cells layout one KV
//! per cell.

use std::sync::Arc;

use sluice::{SstFileInfo, TableOptions};

use super::chunks::{chunk_encoder, chunk_writer};
use super::FinalWriter;
use crate::chunk::{encode_pk_value, GROUP_ROWS};
use crate::keycode::encode_prefix;
use crate::row::{default_cell, for_each_cell};
use crate::schema::{Layout, TableDef, COLUMN_INDEX_BASE};
use crate::types::ColumnType;

/// Rows handed to the cell writers: `(key suffix, row value)` pairs back to back.
#[derive(Default)]
pub(super) struct RowBatch {
    pub(super) arena: Vec<u8>,
    /// `(offset, suffix length, value length)`.
    pub(super) rows: Vec<(usize, u32, u32)>,
    /// Columnar layout: the row groups of the batch, `(group id, index of its first row)`.
    /// A group never spans two batches.
    pub(super) groups: Vec<(u64, u32)>,
}

/// Where the next row of a columnar table goes: group `next`, position `pos`.
struct GroupCursor {
    next: u64,
    pos: u32,
}

impl GroupCursor {
    /// Ends the open group (the next row starts a new one).
    fn close(&mut self) {
        if self.pos > 0 {
            self.pos = 0;
            self.next += 1;
        }
    }
}

/// Bytes of rows batched before the cell writers get them.
const ROW_BATCH_BYTES: usize = 4 << 20;

/// Write buffer of each cell file (a columnar table has one open per column).
pub const CELL_WRITE_BUFFER: usize = 128 << 10;

/// The table options of a columnar table's column files, from those of its index files:
/// cells are read by scans (a cursor per column), rarely by point reads, so no filter and
/// bigger blocks.
pub fn column_file_options(index: TableOptions) -> TableOptions {
    TableOptions {
        bloom_bits_per_key: None,
        block_size: 16 << 10,
        ..index
    }
}

/// Memory of the cell writers of a table with `columns` columns on `threads` threads: each
/// column's write buffer, data block (16 KiB) and index block, the row batches in flight
/// (one filling, up to two queued per thread, one being read), and each thread's batch
/// regrouped by column (the cell bytes plus 8 bytes per cell: at most three batches' worth,
/// since a cell takes at least one byte of its row).
pub fn cell_writers_memory(columns: usize, threads: usize) -> usize {
    let threads = threads.clamp(1, columns.max(1));
    columns * (CELL_WRITE_BUFFER + (64 << 10))
        + (2 * threads + 2) * ROW_BATCH_BYTES
        + threads * 9 * ROW_BATCH_BYTES
}

/// Memory of the columnar layout's column writers: each column's write buffer, data block
/// and index block; the batch filling (at most twice [`ROW_BATCH_BYTES`], cut at a group's
/// end or early, its arena's capacity up to twice that); per encoder thread a batch queued, one
/// being encoded, its regrouped copy, its chunks and the chunks queued for the writer (each at
/// most a batch's bytes).
pub fn chunk_writers_memory(columns: usize, threads: usize) -> usize {
    let batch = 2 * ROW_BATCH_BYTES;
    columns * (CELL_WRITE_BUFFER + (64 << 10)) + 2 * batch + threads.max(1) * 5 * batch
}

/// The cell writers of a columnar table: `threads` writer threads, each owning the
/// [`FinalWriter`]s of every `threads`-th non-key column (disjoint key ranges), each writer
/// with its column's key prefix built once. Rows go to them in batches.
pub(super) struct ColumnSplit {
    pub(super) version: u8,
    batch: RowBatch,
    /// Cells: one writer thread per share of the columns, each handed every batch.
    /// Columnar: the chunk encoders, each handed every `n`-th batch ([`super::chunks`]).
    workers: Vec<CellWorker>,
    /// Columnar layout: the group the next row goes to (`None`: cells layout).
    groups: Option<GroupCursor>,
    /// Columnar layout: the chunk writer thread.
    chunk_writer: Option<std::thread::JoinHandle<sluice::Result<Vec<SstFileInfo>>>>,
    /// Columnar layout: batches and cuts handed to the encoders so far.
    turn: usize,
    /// The primary-index value of the last row pushed.
    pub(super) pk_value: Vec<u8>,
}

/// What a cell writer thread is handed: rows, or a request to finish its open files and
/// report every file finished so far by column (a checkpoint of the merge).
pub(super) enum CellMsg {
    Rows(Arc<RowBatch>),
    Cut(std::sync::mpsc::SyncSender<sluice::Result<CellFiles>>),
}

/// Finished cell files, each with its column.
pub type CellFiles = Vec<(usize, SstFileInfo)>;

/// A cell writer thread's queue and handle (`None` once closed / joined).
type CellWorker = (
    Option<std::sync::mpsc::SyncSender<CellMsg>>,
    Option<std::thread::JoinHandle<sluice::Result<Vec<SstFileInfo>>>>,
);

/// Per column: the key buffer holding its 8-byte prefix and its writer (`None`: a column
/// this thread does not own, or a primary key column).
type CellWriters = Vec<Option<(Vec<u8>, FinalWriter)>>;

/// One batch's cells of one column, regrouped so the column's writer runs over them in one
/// go: `cells[i] = (row index in the batch, end of the cell in bytes)`.
#[derive(Default)]
pub(super) struct ColumnCells {
    pub(super) bytes: Vec<u8>,
    pub(super) cells: Vec<(u32, u32)>,
}

/// A cell writer thread: every batch, the cells of the columns it owns. The batch is first
/// regrouped by column (one pass over the rows), then each column's cells go to its writer in
/// one run: a writer's block, index and key state stay in cache for thousands of cells
/// instead of being visited once per row (writing cell by cell across ~50 writers per row
/// spent a third of the import in cache misses on the writers' last keys). A NOT NULL
/// column's cell holding its type's zero value is not stored ([`default_cell`]).
fn cell_writer(
    rx: std::sync::mpsc::Receiver<CellMsg>,
    types: Vec<ColumnType>,
    defaults: Vec<Option<&'static [u8]>>,
    mut cols: CellWriters,
) -> sluice::Result<Vec<SstFileInfo>> {
    let owned: Vec<bool> = cols.iter().map(Option::is_some).collect();
    let mut by_col: Vec<ColumnCells> = (0..types.len()).map(|_| ColumnCells::default()).collect();
    for msg in rx {
        let batch = match msg {
            CellMsg::Rows(b) => b,
            CellMsg::Cut(reply) => {
                let writers = cols.iter_mut().enumerate();
                answer_cut(
                    writers.filter_map(|(c, s)| Some((c, &mut s.as_mut()?.1))),
                    reply,
                )?;
                continue;
            }
        };
        regroup(&batch, &types, &owned, &defaults, &mut by_col)?;
        for (slot, cc) in cols.iter_mut().zip(&by_col) {
            let Some((k, w)) = slot else {
                continue;
            };
            let mut start = 0;
            for &(r, end) in &cc.cells {
                let (o, kl, _) = batch.rows[r as usize];
                k.truncate(8);
                k.extend_from_slice(&batch.arena[o..o + kl as usize]);
                w.put(k, &cc.bytes[start..end as usize])?;
                start = end as usize;
            }
        }
    }
    let mut files = Vec::new();
    for (_, w) in cols.into_iter().flatten() {
        files.extend(w.finish()?);
    }
    Ok(files)
}

/// A checkpoint cut: finishes each column writer's open file and replies with every file
/// finished so far, by column. A writer that failed to finish stops its thread.
pub(super) fn answer_cut<'a>(
    writers: impl Iterator<Item = (usize, &'a mut FinalWriter)>,
    reply: std::sync::mpsc::SyncSender<sluice::Result<CellFiles>>,
) -> sluice::Result<()> {
    let mut files = Vec::new();
    let mut r = Ok(());
    for (c, w) in writers {
        r = r.and_then(|_| w.finish_current());
        files.extend(w.files.iter().map(|f| (c, f.clone())));
    }
    let failed = r.is_err();
    let _ = reply.send(r.map(|_| files));
    if failed {
        return Err(sluice::Error::InvalidArgument(
            "a column writer failed to finish its files".into(),
        ));
    }
    Ok(())
}

/// Regroups `batch` by column into `by_col`: the non-NULL cells of each `owned` column, in row
/// order, leaving out a cell equal to its column's `defaults` entry.
pub(super) fn regroup(
    batch: &RowBatch,
    types: &[ColumnType],
    owned: &[bool],
    defaults: &[Option<&'static [u8]>],
    by_col: &mut [ColumnCells],
) -> sluice::Result<()> {
    for cc in by_col.iter_mut() {
        cc.bytes.clear();
        cc.cells.clear();
    }
    for (r, &(o, kl, vl)) in batch.rows.iter().enumerate() {
        let value = &batch.arena[o + kl as usize..o + kl as usize + vl as usize];
        let res = for_each_cell(value, types, |c, cell| {
            if !owned[c] || defaults[c] == Some(cell) {
                return Ok(());
            }
            let cc = &mut by_col[c];
            cc.bytes.extend_from_slice(cell);
            cc.cells.push((r as u32, cc.bytes.len() as u32));
            Ok(())
        });
        if res.is_err() {
            return Err(sluice::Error::InvalidArgument(format!(
                "row {} does not decode",
                batch.arena[o..o + kl as usize].escape_ascii()
            )));
        }
    }
    Ok(())
}

impl ColumnSplit {
    /// Hands over the last batch and returns every cell file.
    pub(super) fn finish(&mut self) -> sluice::Result<Vec<SstFileInfo>> {
        self.flush()?;
        let mut files = Vec::new();
        let mut failed = None;
        for i in 0..self.workers.len() {
            match self.join(i) {
                Ok(f) => files.extend(f),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        // The chunk writer's error first: an encoder that could not hand it a batch only
        // reports that it stopped.
        files.extend(self.join_chunk_writer()?);
        match failed {
            Some(e) => Err(e),
            None => Ok(files),
        }
    }

    /// Adds one row (`key` is its primary key: table and index prefix, then the key columns),
    /// handing the batch to the writers once it is full, and sets [`ColumnSplit::pk_value`]
    /// to the row's primary-index value.
    pub(super) fn push(&mut self, key: &[u8], value: &[u8]) -> sluice::Result<()> {
        let suffix = key.get(8..).unwrap_or(&[]);
        let b = &mut self.batch;
        let o = b.arena.len();
        b.arena.extend_from_slice(suffix);
        b.arena.extend_from_slice(value);
        b.rows.push((o, suffix.len() as u32, value.len() as u32));
        let full = match self.groups.as_mut() {
            None => {
                self.pk_value.clear();
                self.pk_value.push(self.version);
                b.arena.len() >= ROW_BATCH_BYTES
            }
            Some(g) => {
                if g.pos == 0 {
                    b.groups.push((g.next, b.rows.len() as u32 - 1));
                }
                encode_pk_value(&mut self.pk_value, self.version, g.next, g.pos);
                g.pos += 1;
                if g.pos as usize == GROUP_ROWS {
                    g.close();
                }
                // A batch ends at a group's end, or early (ending its group) when rows are
                // so wide that a whole group would hold several batches' bytes.
                (g.pos == 0 && b.arena.len() >= ROW_BATCH_BYTES)
                    || b.arena.len() >= 2 * ROW_BATCH_BYTES
            }
        };
        if full {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the batch to every writer; a writer that stopped reports its error.
    fn flush(&mut self) -> sluice::Result<()> {
        if let Some(g) = self.groups.as_mut() {
            g.close();
        }
        if self.batch.rows.is_empty() {
            return Ok(());
        }
        let b = Arc::new(std::mem::take(&mut self.batch));
        for i in self.receivers() {
            let sent = match &self.workers[i].0 {
                Some(tx) => tx.send(CellMsg::Rows(Arc::clone(&b))).is_ok(),
                None => false,
            };
            if !sent {
                return Err(self.stopped(i));
            }
        }
        self.batch.arena.reserve(ROW_BATCH_BYTES + (64 << 10));
        Ok(())
    }

    /// The workers the next batch or cut goes to: every cell writer, or the encoder whose
    /// turn it is.
    fn receivers(&mut self) -> std::ops::Range<usize> {
        if self.groups.is_none() {
            return 0..self.workers.len();
        }
        let i = self.turn % self.workers.len();
        self.turn += 1;
        i..i + 1
    }

    /// The error of a worker (`i`) that stopped taking batches, or of the chunk writer.
    fn stopped(&mut self, i: usize) -> sluice::Error {
        let worker = self.join(i).err();
        let writer = self.join_chunk_writer().err();
        writer
            .or(worker)
            .unwrap_or_else(|| sluice::Error::InvalidArgument("a column writer stopped".into()))
    }

    /// Columnar: closes the encoders' queues and waits for the chunk writer's files.
    fn join_chunk_writer(&mut self) -> sluice::Result<Vec<SstFileInfo>> {
        let Some(h) = self.chunk_writer.take() else {
            return Ok(Vec::new());
        };
        for i in 0..self.workers.len() {
            let _ = self.join(i);
        }
        h.join().unwrap_or_else(|_| {
            Err(sluice::Error::InvalidArgument(
                "the chunk writer panicked".into(),
            ))
        })
    }

    /// Every row pushed so far written, each column's open file finished: the cell files
    /// finished so far, by column (for a checkpoint of the merge).
    pub(super) fn cut(&mut self) -> sluice::Result<CellFiles> {
        self.flush()?;
        let mut files = Vec::new();
        for i in self.receivers() {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            let sent = match &self.workers[i].0 {
                Some(q) => q.send(CellMsg::Cut(tx)).is_ok(),
                None => false,
            };
            let got = if sent { rx.recv().ok() } else { None };
            match got {
                Some(r) => files.extend(r?),
                None => return Err(self.stopped(i)),
            }
        }
        files.sort_by_key(|f| f.0);
        Ok(files)
    }

    /// Closes writer `i`'s queue and waits for its files.
    fn join(&mut self, i: usize) -> sluice::Result<Vec<SstFileInfo>> {
        self.workers[i].0 = None;
        match self.workers[i].1.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(sluice::Error::InvalidArgument(
                "a cell writer panicked".into(),
            )),
            None => Ok(Vec::new()),
        }
    }
}

impl Drop for ColumnSplit {
    fn drop(&mut self) {
        for i in 0..self.workers.len() {
            let _ = self.join(i);
        }
        let _ = self.join_chunk_writer();
    }
}

impl FinalWriter {
    /// From now on each `put(primary key, row)` writes table `t`'s layout by column:
    /// - cells: `primary key → version byte` here and each non-NULL, non-key cell to its
    ///   column's files;
    /// - columnar: `primary key → version ‖ group ‖ position` here and each row group's chunk
    ///   of every column to the column's files, groups numbered from `next_group`: the start of the
    ///   block of ids the import holds ([`crate::chunk::reserve_group_ids`]), already past
    ///   the groups of `restored`.
    ///
    /// Column files have the same target size and entry limit (`cell_opts`) and are written
    /// in the key order of the rows, on `threads` writer threads. `restored`: column files a
    /// checkpoint names, by column (a resumed merge appends to them).
    pub fn split_columns(
        &mut self,
        t: &TableDef,
        cell_opts: TableOptions,
        threads: usize,
        mut restored: CellFiles,
        next_group: u64,
    ) {
        let chunked = t.layout == Layout::Columnar;
        let threads = threads.clamp(1, t.columns.len().max(1));
        let types: Vec<ColumnType> = t.columns.iter().map(|c| c.ty).collect();
        // Cells only: chunks store every value.
        let defaults: Vec<Option<&'static [u8]>> = t
            .columns
            .iter()
            .map(|c| c.not_null.then(|| default_cell(&c.ty)))
            .collect();
        let groups = chunked.then_some(GroupCursor {
            next: next_group,
            pos: 0,
        });
        let column_writer = |c: usize, restored: &mut CellFiles| {
            let mut key = Vec::with_capacity(64);
            encode_prefix(&mut key, t.id, COLUMN_INDEX_BASE + c as u32);
            let mut w = FinalWriter::new(
                &self.dir,
                format!("{}-c{c}", self.name),
                self.target,
                cell_opts.clone(),
                Arc::clone(&self.counter),
            );
            w.max_entries = self.max_entries;
            w.files = restored
                .iter()
                .filter(|f| f.0 == c)
                .map(|f| f.1.clone())
                .collect();
            restored.retain(|f| f.0 != c);
            w.write_buffer = CELL_WRITE_BUFFER;
            w.writes = self.writes.clone();
            (key, w)
        };
        let (workers, chunk_writer) = if chunked {
            // Encoders on every thread, one writer of every column's files.
            let cols: Vec<_> = (0..t.columns.len())
                .map(|c| column_writer(c, &mut restored))
                .collect();
            let mut outputs = Vec::new();
            let workers = (0..threads)
                .map(|_| {
                    let (tx, rx) = std::sync::mpsc::sync_channel(1);
                    let (out_tx, out_rx) = std::sync::mpsc::sync_channel(1);
                    outputs.push(out_rx);
                    let types = types.clone();
                    let h = std::thread::spawn(move || chunk_encoder(rx, out_tx, types));
                    (Some(tx), Some(h))
                })
                .collect();
            let w = std::thread::spawn(move || chunk_writer(outputs, cols));
            (workers, Some(w))
        } else {
            let mut per_thread: Vec<CellWriters> = (0..threads).map(|_| Vec::new()).collect();
            let mut n = 0;
            for c in 0..t.columns.len() {
                let stored = !t.primary_key.contains(&c);
                for (i, cols) in per_thread.iter_mut().enumerate() {
                    cols.push(None);
                    if stored && n % threads == i {
                        cols[c] = Some(column_writer(c, &mut restored));
                    }
                }
                if stored {
                    n += 1;
                }
            }
            let workers = per_thread
                .into_iter()
                .map(|cols| {
                    let (tx, rx) = std::sync::mpsc::sync_channel(2);
                    let types = types.clone();
                    let defaults = defaults.clone();
                    let h = std::thread::spawn(move || cell_writer(rx, types, defaults, cols));
                    (Some(tx), Some(h))
                })
                .collect();
            (workers, None)
        };
        self.split = Some(Box::new(ColumnSplit {
            version: t.version,
            batch: RowBatch::default(),
            workers,
            groups,
            chunk_writer,
            turn: 0,
            pk_value: Vec::new(),
        }));
    }
}
