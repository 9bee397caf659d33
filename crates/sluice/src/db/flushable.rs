//! The entries of the immutable queue (`State::imm`, oldest first): memtables waiting for
//! their flush, and *flushable ingests* — tables an ingest placed above the memtable holding
//! older writes to their range (Pebble's flushable ingest). A flushable ingest is readable at
//! once, logged in the WAL (recovery replays it), and "flushed" in queue order by one edit
//! that adds its tables to L0 without rewriting them.
//!
//! Invariant: seqnos increase along the queue — every seqno of an entry is above every seqno of
//! the entries before it — so reading newest entry first is reading newest data first.

use std::sync::Arc;

use crate::memtable::MemTable;
use crate::version::FileMeta;

/// Ingested tables waiting in the immutable queue.
pub(super) struct IngestedTables {
    /// The tables as they will sit in L0 (global seqnos set), newest first.
    pub(super) files: Vec<Arc<FileMeta>>,
    /// The WAL holding the ingest record.
    pub(super) wal_number: u64,
    /// The largest global seqno of the tables.
    pub(super) largest_seqno: u64,
}

impl IngestedTables {
    /// True if a table may hold user keys in `[lo, hi]`.
    pub(super) fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.files.iter().any(|f| f.overlaps(Some(lo), Some(hi)))
    }
}

/// One entry of the immutable queue.
#[derive(Clone)]
pub(super) enum Flushable {
    /// A memtable that no longer takes writes.
    Mem(Arc<MemTable>),
    /// Tables of a flushable ingest.
    Ingested(Arc<IngestedTables>),
}

impl Flushable {
    /// The WAL its contents were logged in: WALs below the oldest entry's may be deleted.
    pub(super) fn wal_number(&self) -> u64 {
        match self {
            Flushable::Mem(m) => m.wal_number,
            Flushable::Ingested(t) => t.wal_number,
        }
    }

    /// Its largest seqno: once it is flushed, WAL records at or below are in tables.
    pub(super) fn largest_seqno(&self) -> u64 {
        match self {
            Flushable::Mem(m) => m.largest_seqno(),
            Flushable::Ingested(t) => t.largest_seqno,
        }
    }

    /// Its smallest seqno (`u64::MAX` for an empty memtable).
    pub(super) fn smallest_seqno(&self) -> u64 {
        match self {
            Flushable::Mem(m) => m.smallest_seqno(),
            Flushable::Ingested(t) => t
                .files
                .iter()
                .map(|f| f.smallest_seqno)
                .min()
                .unwrap_or(u64::MAX),
        }
    }

    /// The same entry (by identity).
    pub(super) fn same(&self, other: &Flushable) -> bool {
        match (self, other) {
            (Flushable::Mem(a), Flushable::Mem(b)) => Arc::ptr_eq(a, b),
            (Flushable::Ingested(a), Flushable::Ingested(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
