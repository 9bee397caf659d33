//! The memtable: recent writes, in a [`SkipList`] of internal keys, plus the range deletions
//! written since it was created.
//!
//! Invariants:
//! 1. Only the write leader inserts (the write path serializes); readers never block it.
//! 2. Entries become visible to readers through the DB's published sequence number, never
//!    earlier: a reader at seqno S ignores entries above S even if they are already linked.
//! 3. An immutable memtable is never written again; it is dropped once a durable version
//!    edit contains its flushed table and no reader holds it.

pub mod skiplist;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::base::error::Result;
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, ValueKind};
use crate::base::range_tombstone::RangeTombstone;
pub use skiplist::{SkipIter, SkipList};

/// One memtable.
pub struct MemTable {
    list: SkipList,
    range_dels: RwLock<Vec<RangeTombstone>>,
    /// WAL file that holds this memtable's writes.
    pub wal_number: u64,
    largest_seqno: AtomicU64,
    smallest_seqno: AtomicU64,
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("entries", &self.list.len())
            .field("bytes", &self.approximate_bytes())
            .finish()
    }
}

impl MemTable {
    /// An empty memtable whose writes are logged in WAL `wal_number`.
    pub fn new(wal_number: u64) -> Self {
        MemTable {
            list: SkipList::new(),
            range_dels: RwLock::new(Vec::new()),
            wal_number,
            largest_seqno: AtomicU64::new(0),
            smallest_seqno: AtomicU64::new(u64::MAX),
        }
    }

    /// Adds one entry (write leader only).
    pub fn add(&self, seqno: u64, kind: ValueKind, key: &[u8], value: &[u8]) {
        if kind == ValueKind::RangeDeletion {
            self.range_dels.write().push(RangeTombstone {
                start: key.to_vec(),
                end: value.to_vec(),
                seqno,
            });
            self.list
                .insert_accounting((key.len() + value.len() + 64) as u64);
        } else {
            let trailer = key::pack_trailer(seqno, kind as u8).to_le_bytes();
            self.list.insert_parts(key, &trailer, value);
        }
        self.largest_seqno.fetch_max(seqno, Ordering::Relaxed);
        self.smallest_seqno.fetch_min(seqno, Ordering::Relaxed);
    }

    /// Approximate memory used, in bytes.
    pub fn approximate_bytes(&self) -> u64 {
        self.list.approximate_bytes()
    }

    /// True if nothing was written.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && self.range_dels.read().is_empty()
    }

    /// Smallest seqno written (`u64::MAX` if empty).
    pub fn smallest_seqno(&self) -> u64 {
        self.smallest_seqno.load(Ordering::Relaxed)
    }

    /// Largest seqno written (0 if empty).
    pub fn largest_seqno(&self) -> u64 {
        self.largest_seqno.load(Ordering::Relaxed)
    }

    /// The range deletions (a copy).
    pub fn range_deletions(&self) -> Vec<RangeTombstone> {
        self.range_dels.read().clone()
    }

    /// True if a range deletion `[start, end)` written here reaches into `[lo, upper)`
    /// (without copying the list, as [`range_deletions`](Self::range_deletions) does).
    pub fn range_deletion_overlaps(&self, lo: &[u8], upper: &[u8]) -> bool {
        self.range_dels
            .read()
            .iter()
            .any(|t| t.start.as_slice() < upper && lo < t.end.as_slice())
    }

    /// True if any range deletion was written.
    pub fn has_range_deletions(&self) -> bool {
        !self.range_dels.read().is_empty()
    }

    /// The newest point entry for `user_key` with seqno <= `seqno`: (kind, value, its seqno).
    pub fn get(&self, user_key: &[u8], seqno: u64) -> Option<(ValueKind, Vec<u8>, u64)> {
        let mut it = SkipIter::new(&self.list);
        it.seek(&key::seek_key(user_key, seqno));
        if !it.valid() {
            return None;
        }
        let p = key::parse_internal_key(it.key())?;
        (p.user_key == user_key).then(|| (p.kind, it.value().to_vec(), p.seqno))
    }

    /// An iterator over point entries with user keys in `[lower, upper)`.
    pub fn iter(self: &Arc<Self>, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> MemIter {
        MemIter {
            it: SkipIter::new(ArcList(Arc::clone(self))),
            lower,
            upper,
        }
    }
}

/// Lets an iterator own its memtable.
pub struct ArcList(Arc<MemTable>);

impl std::ops::Deref for ArcList {
    type Target = SkipList;
    fn deref(&self) -> &SkipList {
        &self.0.list
    }
}

impl SkipList {
    /// Adds memory accounted for outside the list (range deletions).
    pub fn insert_accounting(&self, bytes: u64) {
        self.add_bytes(bytes);
    }
}

/// A bounded iterator over a memtable's point entries.
pub struct MemIter {
    it: SkipIter<ArcList>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
}

impl MemIter {
    fn check_upper(&mut self) {
        if let (true, Some(up)) = (self.it.valid(), &self.upper) {
            if key::user_key(self.it.key()) >= up.as_slice() {
                self.it.invalidate();
            }
        }
    }
    fn check_lower(&mut self) {
        if let (true, Some(lo)) = (self.it.valid(), &self.lower) {
            if key::user_key(self.it.key()) < lo.as_slice() {
                self.it.invalidate();
            }
        }
    }
}

impl InternalIterator for MemIter {
    fn valid(&self) -> bool {
        self.it.valid()
    }
    fn seek_to_first(&mut self) {
        match &self.lower {
            Some(lo) => {
                let t = key::seek_key(lo, key::MAX_SEQNO);
                self.it.seek(&t);
            }
            None => self.it.seek_to_first(),
        }
        self.check_upper();
    }
    fn seek_to_last(&mut self) {
        match &self.upper {
            Some(up) => {
                let t = key::seek_key(up, key::MAX_SEQNO);
                self.it.seek_for_prev(&t);
            }
            None => self.it.seek_to_last(),
        }
        self.check_lower();
    }
    fn seek(&mut self, target: &[u8]) {
        if let Some(lo) = &self.lower {
            if key::user_key(target) < lo.as_slice() {
                let t = key::seek_key(lo, key::MAX_SEQNO);
                self.it.seek(&t);
                self.check_upper();
                return;
            }
        }
        self.it.seek(target);
        self.check_upper();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        if let Some(up) = &self.upper {
            if key::user_key(target) >= up.as_slice() {
                self.seek_to_last();
                return;
            }
        }
        self.it.seek_for_prev(target);
        self.check_lower();
    }
    fn next(&mut self) {
        self.it.next();
        self.check_upper();
    }
    fn prev(&mut self) {
        self.it.prev();
        self.check_lower();
    }
    fn key(&self) -> &[u8] {
        self.it.key()
    }
    fn value(&self) -> &[u8] {
        self.it.value()
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
