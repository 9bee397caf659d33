//! Sorted sources and their k-way merge: in-memory chunk lists, spilled runs (plain SSTs:
//! no filter, no compression), streamed
//! final files turned back into runs, and pending deletions. A run key is the entry key followed
//! by its 8-byte source position (see [`write_run`]).
//!
//! Invariant: the merge yields entries ordered by (key, source position), so equal keys come
//! out together and in input order; a deletion sorts after every put of its key.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice::{
    CompressionType, InternalIterator, IterBounds, SstFileInfo, SstWriter, Table, TableIter,
    TableOptions, TableReadOptions, Writeback,
};

use crate::keycode::encode_prefix;
use crate::parse::{key_head, BufferPool, Entries};
use crate::positions::{PositionRecorder, StreamedPositions};
use crate::row::{default_cell, for_each_cell};
use crate::schema::{TableDef, COLUMN_INDEX_BASE};
use crate::types::ColumnType;

/// Source position of a deletion (after every put of the same key).
pub const DELETION_SRC: u64 = u64::MAX;

/// A sorted stream of `(key, src, value)`.
pub trait Source {
    /// True while positioned on an entry.
    fn valid(&self) -> bool;
    /// Current key.
    fn key(&self) -> &[u8];
    /// Current source position (`DELETION_SRC` for a deletion).
    fn src(&self) -> u64;
    /// Current value.
    fn value(&self) -> &[u8];
    /// Advances.
    fn next(&mut self) -> sluice::Result<()>;
}

/// An in-memory sorted list (or the part of one in a key range); its buffer goes back to the
/// pool when the last source reading it is done.
pub struct MemSource {
    e: Arc<Entries>,
    i: usize,
    end: usize,
    pool: Option<Arc<BufferPool>>,
}

impl MemSource {
    /// Over a sorted list.
    pub fn new(e: Entries, pool: Option<Arc<BufferPool>>) -> Self {
        let end = e.items.len();
        MemSource {
            e: Arc::new(e),
            i: 0,
            end,
            pool,
        }
    }

    /// Over the entries of a shared sorted list whose keys lie in `range`.
    pub fn range(e: Arc<Entries>, range: &IterBounds) -> Self {
        let n = e.items.len();
        let at = |b: &Option<Vec<u8>>, default: usize| {
            b.as_ref().map_or(default, |b| {
                (0..n).partition_point_by(|i| e.key(i) < b.as_slice())
            })
        };
        let (i, end) = (at(&range.lower, 0), at(&range.upper, n));
        MemSource {
            e,
            i,
            end,
            pool: None,
        }
    }
}

/// `partition_point` over an index range (the entries' keys are not one slice).
trait PartitionPointBy {
    fn partition_point_by(self, pred: impl FnMut(usize) -> bool) -> usize;
}

impl PartitionPointBy for std::ops::Range<usize> {
    fn partition_point_by(self, mut pred: impl FnMut(usize) -> bool) -> usize {
        let (mut lo, mut hi) = (self.start, self.end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl Drop for MemSource {
    fn drop(&mut self) {
        if let Some(p) = &self.pool {
            let e = std::mem::replace(&mut self.e, Arc::new(Entries::default()));
            if let Ok(e) = Arc::try_unwrap(e) {
                p.give(e);
            }
        }
    }
}

impl Source for MemSource {
    fn valid(&self) -> bool {
        self.i < self.end
    }
    fn key(&self) -> &[u8] {
        self.e.key(self.i)
    }
    fn src(&self) -> u64 {
        self.e.items[self.i].3
    }
    fn value(&self) -> &[u8] {
        self.e.value(self.i)
    }
    fn next(&mut self) -> sluice::Result<()> {
        self.i += 1;
        Ok(())
    }
}

/// The key ranges of a parallel merge: `parts` ranges covering every key, cut at the weighted
/// quantiles of `samples` (`(key, bytes up to the next sample)`, any order), so each range gets
/// about the same bytes; fewer when the samples do not have `parts - 1` distinct cut points.
/// Entries go to a range by their key alone (never by their source position), so all entries
/// of one key fall in one range.
pub fn split_ranges(mut samples: Vec<(Vec<u8>, u64)>, parts: usize) -> Vec<IterBounds> {
    samples.sort_unstable();
    let total: u64 = samples.iter().map(|s| s.1).sum();
    let mut cuts: Vec<Vec<u8>> = Vec::new();
    let mut acc = 0u64;
    let mut next = 1;
    for (k, w) in samples {
        if next >= parts {
            break;
        }
        acc += w;
        if acc as u128 * parts as u128 >= total as u128 * next as u128 {
            if cuts.last() != Some(&k) {
                cuts.push(k);
            }
            while next < parts && acc as u128 * parts as u128 >= total as u128 * next as u128 {
                next += 1;
            }
        }
    }
    IterBounds::between_cuts(cuts)
}

/// Samples of a sorted list for [`split_ranges`]: about `per_list` keys with the bytes
/// between them.
pub fn sample_entries(e: &Entries, per_list: usize, out: &mut Vec<(Vec<u8>, u64)>) {
    let n = e.items.len();
    if n == 0 {
        return;
    }
    let step = n.div_ceil(per_list.max(1)).max(1);
    let bytes = e.arena.len() as u64 * step as u64 / n as u64;
    for i in (step - 1..n).step_by(step) {
        out.push((e.key(i).to_vec(), bytes.max(1)));
    }
}

/// Sorted keys to delete.
pub struct DeletionSource {
    keys: Arc<Vec<Vec<u8>>>,
    i: usize,
    end: usize,
}

impl DeletionSource {
    /// `keys` sorted and deduplicated (for [`DeletionSource::range`]).
    pub fn sorted(mut keys: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The keys of sorted, deduplicated `keys` in `range`.
    pub fn range(keys: Arc<Vec<Vec<u8>>>, range: &IterBounds) -> Self {
        let at = |b: &Option<Vec<u8>>, default: usize| {
            b.as_ref().map_or(default, |b| {
                keys.partition_point(|k| k.as_slice() < b.as_slice())
            })
        };
        let (i, end) = (at(&range.lower, 0), at(&range.upper, keys.len()));
        DeletionSource { keys, i, end }
    }
}

impl Source for DeletionSource {
    fn valid(&self) -> bool {
        self.i < self.end
    }
    fn key(&self) -> &[u8] {
        &self.keys[self.i]
    }
    fn src(&self) -> u64 {
        DELETION_SRC
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn next(&mut self) -> sluice::Result<()> {
        self.i += 1;
        Ok(())
    }
}

/// A run file (or a streamed final file read back as a run), or its entries in a key range.
pub struct RunSource {
    it: TableIter,
    /// Values carry an 8-byte source position prefix.
    with_src: bool,
    /// Entries from a key at or past this one are not this source's.
    upper: Option<Vec<u8>>,
    _table: Arc<Table>,
}

impl RunSource {
    /// Opens a run. `with_src`: the file was written by [`write_run`].
    pub fn open(path: &Path, with_src: bool) -> sluice::Result<Self> {
        Self::open_range(path, with_src, &IterBounds::default())
    }

    /// Opens a run positioned on its first entry in `range`.
    pub fn open_range(path: &Path, with_src: bool, range: &IterBounds) -> sluice::Result<Self> {
        let table = Table::open_path(path, &TableReadOptions::new())?;
        // A run's stored key is the entry key followed by its source position, so the table's
        // own bound finds the first stored key at or past `lower`; an entry whose key is a
        // proper prefix of `lower` can sort there too and is skipped below.
        let mut it = table.iter(IterBounds {
            lower: range.lower.clone(),
            upper: None,
        });
        it.seek_to_first();
        it.status()?;
        let mut r = RunSource {
            it,
            with_src,
            upper: range.upper.clone(),
            _table: table,
        };
        if let Some(l) = &range.lower {
            while r.it.valid() && r.key() < l.as_slice() {
                r.it.next();
            }
            r.it.status()?;
        }
        Ok(r)
    }
}

impl Source for RunSource {
    fn valid(&self) -> bool {
        self.it.valid() && self.upper.as_deref().is_none_or(|u| self.key() < u)
    }
    fn key(&self) -> &[u8] {
        let k = sluice::key::user_key(self.it.key());
        if self.with_src {
            &k[..k.len().saturating_sub(8)]
        } else {
            k
        }
    }
    fn src(&self) -> u64 {
        if self.with_src {
            let k = sluice::key::user_key(self.it.key());
            k.get(k.len().saturating_sub(8)..)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_be_bytes)
        } else {
            0
        }
    }
    fn value(&self) -> &[u8] {
        self.it.value()
    }
    fn next(&mut self) -> sluice::Result<()> {
        self.it.next();
        self.it.status()
    }
}

/// K-way merge over sources (a binary heap of source indexes).
pub struct Merger {
    sources: Vec<Box<dyn Source>>,
    /// [`key_head`] of each source's current key: most comparisons end there.
    heads: Vec<u64>,
    heap: Vec<usize>,
}

impl Merger {
    /// Merges `sources`.
    pub fn new(sources: Vec<Box<dyn Source>>) -> Self {
        let heap: Vec<usize> = (0..sources.len()).filter(|&i| sources[i].valid()).collect();
        let heads = sources
            .iter()
            .map(|s| if s.valid() { key_head(s.key()) } else { 0 })
            .collect();
        let mut m = Merger {
            sources,
            heads,
            heap,
        };
        for i in (0..m.heap.len() / 2).rev() {
            m.sift_down(i);
        }
        m
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let (ha, hb) = (self.heads[a], self.heads[b]);
        if ha != hb {
            return ha < hb;
        }
        let (x, y) = (&self.sources[a], &self.sources[b]);
        (x.key(), x.src()) < (y.key(), y.src())
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.less(self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < n && self.less(self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == i {
                return;
            }
            self.heap.swap(i, m);
            i = m;
        }
    }

    /// The smallest current entry, if any.
    pub fn peek(&self) -> Option<&dyn Source> {
        self.heap.first().map(|&i| &*self.sources[i])
    }

    /// Advances past the smallest entry.
    pub fn advance(&mut self) -> sluice::Result<()> {
        let Some(&top) = self.heap.first() else {
            return Ok(());
        };
        self.sources[top].next()?;
        if self.sources[top].valid() {
            self.heads[top] = key_head(self.sources[top].key());
        } else {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
        }
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
        Ok(())
    }
}

/// Options of spilled runs: no filter, no compression.
pub fn run_table_options() -> TableOptions {
    TableOptions {
        compression: CompressionType::None,
        bloom_bits_per_key: None,
        block_size: 64 << 10,
        ..TableOptions::default()
    }
}

/// Writes one run. A run key is the entry's key followed by its 8-byte big-endian source
/// position: keys of one index are prefix-free (every column encoding is), so this keeps the
/// (key, src) order and makes duplicate keys distinct, as an SST needs.
pub fn write_run(
    path: &Path,
    mut merger: Merger,
    writeback: Writeback,
) -> sluice::Result<Option<PathBuf>> {
    let mut w = SstWriter::create_with(path, run_table_options(), 1 << 20, writeback)?;
    let mut key = Vec::new();
    while let Some(s) = merger.peek() {
        key.clear();
        key.extend_from_slice(s.key());
        key.extend_from_slice(&s.src().to_be_bytes());
        w.put(&key, s.value())?;
        merger.advance()?;
    }
    if w.entries() == 0 {
        drop(w);
        return Ok(None);
    }
    w.finish()?;
    Ok(Some(path.to_path_buf()))
}

/// Memory an open run costs a merge: its current 64 KiB data block (see
/// [`run_table_options`]), its index block, the table and iterator.
pub const RUN_READ_COST: usize = 96 << 10;

/// How many runs one merge may read at once: bounded by `memory` (bytes for read blocks)
/// and by `open_files` (descriptors this merge may hold), with `threads` merges running
/// side by side. At least 4.
pub fn merge_fan_in(memory: usize, open_files: u64, threads: usize) -> usize {
    let threads = threads.max(1);
    let by_memory = memory / RUN_READ_COST / threads;
    let by_files = usize::try_from(open_files).unwrap_or(usize::MAX) / threads;
    by_memory.min(by_files).clamp(4, 4096)
}

/// File descriptors an import may hold open for reading runs: half of what the process's
/// soft `RLIMIT_NOFILE` leaves after 64 (the Db, the final writers, the input, stdio).
pub fn open_files_for_runs() -> u64 {
    #[cfg(unix)]
    {
        let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        let soft = lim.current.unwrap_or(u64::MAX);
        soft.saturating_sub(64) / 2
    }
    #[cfg(not(unix))]
    {
        256
    }
}

/// Multi-level merge: merges `runs` (of one index) in passes until at most `fan_in` are left,
/// so that the final merge reads a bounded number of runs whatever the number spilled —
/// memory (a read block per open run) and open files stay bounded. Each pass merges groups of
/// `fan_in` runs, the smallest first and only as many groups as needed, on up to `threads`
/// threads; a merged group becomes one run (keys keep their source positions, so the merge
/// order (key, source position) is unchanged) and its inputs are deleted. `name` makes the
/// new runs' file names (`name(n)` for a fresh number `n`). Returns the runs merged.
pub fn reduce_runs(
    runs: &mut Vec<(PathBuf, bool)>,
    fan_in: usize,
    threads: usize,
    name: &(dyn Fn() -> PathBuf + Sync),
    writeback: Writeback,
) -> sluice::Result<u64> {
    let fan_in = fan_in.max(2);
    let mut merged = 0u64;
    while runs.len() > fan_in {
        let n = runs.len();
        // Each group of `fan_in` runs takes `fan_in - 1` off the count.
        let needed = (n - fan_in).div_ceil(fan_in - 1);
        let groups = needed.min(n / fan_in).max(1);
        let take = (groups * fan_in).min(n);
        // The smallest runs first: the cheapest to rewrite; streamed final files last (merged
        // into a run, their entries' positions can no longer be looked up for messages).
        runs.sort_by_key(|(p, with_src)| (!*with_src, std::fs::metadata(p).map_or(0, |m| m.len())));
        let inputs: Vec<Vec<(PathBuf, bool)>> = runs
            .drain(..take)
            .collect::<Vec<_>>()
            .chunks(fan_in)
            .map(<[_]>::to_vec)
            .collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let outputs: Vec<sluice::Result<Vec<(PathBuf, bool)>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads.clamp(1, inputs.len()))
                .map(|_| {
                    s.spawn(|| -> sluice::Result<Vec<(PathBuf, bool)>> {
                        let mut out = Vec::new();
                        loop {
                            let g = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(group) = inputs.get(g) else {
                                return Ok(out);
                            };
                            let mut sources: Vec<Box<dyn Source>> = Vec::new();
                            for (p, with_src) in group {
                                sources.push(Box::new(RunSource::open(p, *with_src)?));
                            }
                            let path = name();
                            if let Some(p) = write_run(&path, Merger::new(sources), writeback)? {
                                out.push((p, true));
                            }
                            for (p, _) in group {
                                let _ = std::fs::remove_file(p);
                            }
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(sluice::Error::InvalidArgument(
                            "internal error: a run merge thread panicked".into(),
                        ))
                    })
                })
                .collect()
        });
        for o in outputs {
            runs.extend(o?);
        }
        merged += take as u64;
    }
    Ok(merged)
}

/// Writes final SSTs of one index, cut at a target size.
pub struct FinalWriter {
    dir: PathBuf,
    name: String,
    target: u64,
    opts: TableOptions,
    cur: Option<SstWriter>,
    /// Finished files.
    pub files: Vec<SstFileInfo>,
    counter: Arc<std::sync::atomic::AtomicU64>,
    /// Entries per file at most: the filter builder holds 8 bytes per key until the file is
    /// finished, so this bounds the writer's memory.
    pub max_entries: u64,
    /// Write buffer of each file (default 1 MiB; cell writers use [`CELL_WRITE_BUFFER`]).
    pub write_buffer: usize,
    /// Columnar primary index: rows are split into cells (see [`FinalWriter::split_columns`]).
    split: Option<Box<ColumnSplit>>,
    /// How its files get to disk while written (cell writers inherit it).
    pub writeback: Writeback,
    /// The source position of each entry written, when asked for (streaming writers).
    positions: Option<PositionRecorder>,
}

/// Rows handed to the cell writers: `(key suffix, row value)` pairs back to back.
#[derive(Default)]
struct RowBatch {
    arena: Vec<u8>,
    /// `(offset, suffix length, value length)`.
    rows: Vec<(usize, u32, u32)>,
}

/// Bytes of rows batched before the cell writers get them.
const ROW_BATCH_BYTES: usize = 4 << 20;

/// Write buffer of each cell file (a columnar table has one open per column).
pub const CELL_WRITE_BUFFER: usize = 128 << 10;

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

/// The cell writers of a columnar table: `threads` writer threads, each owning the
/// [`FinalWriter`]s of every `threads`-th non-key column (disjoint key ranges), each writer
/// with its column's key prefix built once. Rows go to them in batches.
struct ColumnSplit {
    version: u8,
    batch: RowBatch,
    workers: Vec<CellWorker>,
}

/// A cell writer thread's queue and handle (`None` once closed / joined).
type CellWorker = (
    Option<std::sync::mpsc::SyncSender<Arc<RowBatch>>>,
    Option<std::thread::JoinHandle<sluice::Result<Vec<SstFileInfo>>>>,
);

/// Per column: the key buffer holding its 8-byte prefix and its writer (`None`: a column
/// this thread does not own, or a primary key column).
type CellWriters = Vec<Option<(Vec<u8>, FinalWriter)>>;

/// One batch's cells of one column, regrouped so the column's writer runs over them in one
/// go: `cells[i] = (row index in the batch, end of the cell in bytes)`.
#[derive(Default)]
struct ColumnCells {
    bytes: Vec<u8>,
    cells: Vec<(u32, u32)>,
}

/// A cell writer thread: every batch, the cells of the columns it owns. The batch is first
/// regrouped by column (one pass over the rows), then each column's cells go to its writer in
/// one run: a writer's block, index and key state stay in cache for thousands of cells
/// instead of being visited once per row (writing cell by cell across ~50 writers per row
/// spent a third of the import in cache misses on the writers' last keys). A NOT NULL
/// column's cell holding its type's zero value is not stored ([`default_cell`]).
fn cell_writer(
    rx: std::sync::mpsc::Receiver<Arc<RowBatch>>,
    types: Vec<ColumnType>,
    defaults: Vec<Option<&'static [u8]>>,
    mut cols: CellWriters,
) -> sluice::Result<Vec<SstFileInfo>> {
    let owned: Vec<bool> = cols.iter().map(Option::is_some).collect();
    let mut by_col: Vec<ColumnCells> = (0..types.len()).map(|_| ColumnCells::default()).collect();
    for batch in rx {
        for cc in &mut by_col {
            cc.bytes.clear();
            cc.cells.clear();
        }
        for (r, &(o, kl, vl)) in batch.rows.iter().enumerate() {
            let value = &batch.arena[o + kl as usize..o + kl as usize + vl as usize];
            let res = for_each_cell(value, &types, |c, cell| {
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

impl ColumnSplit {
    /// Hands the batch to every writer; a writer that stopped reports its error.
    fn flush(&mut self) -> sluice::Result<()> {
        if self.batch.rows.is_empty() {
            return Ok(());
        }
        let b = Arc::new(std::mem::take(&mut self.batch));
        for i in 0..self.workers.len() {
            let sent = match &self.workers[i].0 {
                Some(tx) => tx.send(Arc::clone(&b)).is_ok(),
                None => false,
            };
            if !sent {
                return Err(self.join(i).err().unwrap_or_else(|| {
                    sluice::Error::InvalidArgument("a cell writer stopped".into())
                }));
            }
        }
        self.batch.arena.reserve(ROW_BATCH_BYTES + (64 << 10));
        Ok(())
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
    }
}

impl FinalWriter {
    /// Files go to `dir` as `{name}-{n}.sst`.
    pub fn new(
        dir: &Path,
        name: String,
        target: u64,
        opts: TableOptions,
        counter: Arc<std::sync::atomic::AtomicU64>,
    ) -> Self {
        FinalWriter {
            dir: dir.to_path_buf(),
            name,
            target,
            opts,
            cur: None,
            files: Vec::new(),
            counter,
            max_entries: u64::MAX,
            write_buffer: 1 << 20,
            split: None,
            writeback: Writeback::default(),
            positions: None,
        }
    }

    /// Records the source position of every entry from now on in a file at `path` (see
    /// [`crate::positions`]); [`FinalWriter::finish_streamed`] returns the lookup.
    pub fn record_positions(&mut self, path: PathBuf) -> sluice::Result<()> {
        let r = PositionRecorder::create(path.clone()).map_err(|source| sluice::Error::Io {
            path: Some(path),
            source,
        })?;
        self.positions = Some(r);
        Ok(())
    }

    /// [`FinalWriter::put`] of an entry from source position `src`.
    pub fn put_from(&mut self, key: &[u8], value: &[u8], src: u64) -> sluice::Result<()> {
        self.record(key, src)?;
        self.put(key, value)
    }

    fn record(&mut self, key: &[u8], src: u64) -> sluice::Result<()> {
        if let Some(r) = self.positions.as_mut() {
            r.record(key, src)
                .map_err(|source| sluice::Error::Io { path: None, source })?;
        }
        Ok(())
    }

    /// [`FinalWriter::finish`], with the positions of its entries when they were recorded.
    pub fn finish_streamed(
        mut self,
    ) -> sluice::Result<(Vec<SstFileInfo>, Option<StreamedPositions>)> {
        let rec = self.positions.take();
        let files = self.finish()?;
        let positions = match rec {
            Some(r) => Some(
                r.finish(files.iter().map(|f| f.path.clone()).collect())
                    .map_err(|source| sluice::Error::Io { path: None, source })?,
            ),
            None => None,
        };
        Ok((files, positions))
    }

    /// From now on each `put(primary key, row)` writes the columnar layout: `primary key →
    /// version byte` here and each non-NULL, non-key cell to its column's files (same target
    /// size and entry limit; `cell_opts`), all in the key order of the rows, on `threads`
    /// writer threads.
    pub fn split_columns(&mut self, t: &TableDef, cell_opts: TableOptions, threads: usize) {
        let threads = threads.clamp(1, t.columns.len().max(1));
        let types: Vec<ColumnType> = t.columns.iter().map(|c| c.ty).collect();
        let defaults: Vec<Option<&'static [u8]>> = t
            .columns
            .iter()
            .map(|c| c.not_null.then(|| default_cell(&c.ty)))
            .collect();
        let mut per_thread: Vec<CellWriters> = (0..threads).map(|_| Vec::new()).collect();
        let mut n = 0;
        for c in 0..t.columns.len() {
            for (i, cols) in per_thread.iter_mut().enumerate() {
                cols.push(None);
                if t.primary_key.contains(&c) || n % threads != i {
                    continue;
                }
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
                w.write_buffer = CELL_WRITE_BUFFER;
                w.writeback = self.writeback;
                cols[c] = Some((key, w));
            }
            if !t.primary_key.contains(&c) {
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
        self.split = Some(Box::new(ColumnSplit {
            version: t.version,
            batch: RowBatch::default(),
            workers,
        }));
    }

    fn writer(&mut self) -> sluice::Result<&mut SstWriter> {
        if self.cur.is_none() {
            let n = self
                .counter
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p = self.dir.join(format!("{}-{n:06}.sst", self.name));
            self.cur = Some(SstWriter::create_with(
                p,
                self.opts.clone(),
                self.write_buffer,
                self.writeback,
            )?);
        }
        Ok(self.cur.as_mut().expect("just created"))
    }

    /// Adds `key → value` (keys strictly increasing).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> sluice::Result<()> {
        if let Some(split) = self.split.as_mut() {
            let suffix = key.get(8..).unwrap_or(&[]);
            let b = &mut split.batch;
            let o = b.arena.len();
            b.arena.extend_from_slice(suffix);
            b.arena.extend_from_slice(value);
            b.rows.push((o, suffix.len() as u32, value.len() as u32));
            if b.arena.len() >= ROW_BATCH_BYTES {
                split.flush()?;
            }
            let v = [split.version];
            self.writer()?.put(key, &v)?;
            return self.maybe_cut();
        }
        self.writer()?.put(key, value)?;
        self.maybe_cut()
    }

    /// Adds a deletion of `key`.
    pub fn delete(&mut self, key: &[u8]) -> sluice::Result<()> {
        self.record(key, DELETION_SRC)?;
        self.writer()?.delete(key)?;
        self.maybe_cut()
    }

    fn maybe_cut(&mut self) -> sluice::Result<()> {
        if self.cur.as_ref().is_some_and(|w| {
            w.estimated_file_size() >= self.target || w.entries() >= self.max_entries
        }) {
            self.finish_current()?;
        }
        Ok(())
    }

    /// Finishes the open file, if any.
    pub fn finish_current(&mut self) -> sluice::Result<()> {
        if let Some(w) = self.cur.take() {
            if w.entries() > 0 {
                self.files.push(w.finish()?);
            }
        }
        Ok(())
    }

    /// Finishes and returns every file (a columnar writer's cell files after its own).
    pub fn finish(mut self) -> sluice::Result<Vec<SstFileInfo>> {
        self.finish_current()?;
        let mut files = std::mem::take(&mut self.files);
        if let Some(mut split) = self.split.take() {
            split.flush()?;
            for i in 0..split.workers.len() {
                files.extend(split.join(i)?);
            }
        }
        Ok(files)
    }
}
