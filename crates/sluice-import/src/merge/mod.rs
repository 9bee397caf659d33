//! Sorted sources and their k-way merge: in-memory chunk lists, spilled runs (plain SSTs:
//! no filter, no compression), streamed
//! final files turned back into runs, and pending deletions. A run key is the entry key followed
//! by its 8-byte source position (see [`write_run`]).
//!
//! Invariant: the merge yields entries ordered by (key, source position), so equal keys come
//! out together and in input order; a deletion sorts after every put of its key.
//!
//! Rooms: `sources` (sorted lists, runs, deletions, key ranges), this file (the [`Source`]
//! contract and the [`Merger`]), `runs` (writing runs, the multi-level merge that bounds
//! fan-in), `final_writer` (final SSTs cut at a target size) and `columnar` (the cell
//! writers of the columnar layout).

mod chunks;
mod columnar;
mod final_writer;
mod runs;
mod sources;

pub use columnar::{
    cell_writers_memory, chunk_writers_memory, column_file_options, CellFiles, CELL_WRITE_BUFFER,
};
pub use final_writer::FinalWriter;
pub use runs::{
    merge_fan_in, open_files_for_runs, reduce_runs, run_table_options, write_run, RUN_READ_COST,
};
pub use sources::{sample_entries, split_ranges, DeletionSource, MemSource, RunSource};

use crate::parse::key_head;

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
