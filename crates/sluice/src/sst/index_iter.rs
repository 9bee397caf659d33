//! Iterating a table's index: one binary-search index block, or a partitioned index
//! (RocksDB's `kTwoLevelIndexSearch`): a top-level block whose entries point at index
//! partitions, each an ordinary index block.
//!
//! Invariants:
//! 1. The partitions are read and checksum-verified when the table opens and pinned with it
//!    (as a single index block would be), so moving an [`IndexIter`] does no I/O; a top-level
//!    entry that names no pinned partition is an error, never a panic.
//! 2. The separator of a top-level entry is at least every key of its partition, so a seek in
//!    the top level followed by a seek in the partition it lands on finds the first entry at or
//!    after the target, as a seek in one big index block would.

use std::sync::Arc;

use crate::base::coding::Reader;
use crate::base::key::{self, TRAILER_LEN};
use crate::sst::block::{Block, BlockIter, KeyOrder};
use crate::sst::format::BlockHandle;

/// How index values are encoded (from the table properties).
#[derive(Debug, Clone, Copy)]
pub struct IndexLayout {
    /// Separator keys are user keys (bytewise) or internal keys.
    pub order: KeyOrder,
    /// Values are delta-encoded block handles.
    pub delta: bool,
    /// Values carry the first key of their block (`kBinarySearchWithFirstKey`; never in a
    /// partitioned index or filter).
    pub first_key: bool,
}

impl IndexLayout {
    /// The user key of index separator `k`: `k` itself in a user-key index; `None` for an
    /// internal key too short to hold a trailer.
    pub(crate) fn separator_user_key<'a>(&self, k: &'a [u8]) -> Option<&'a [u8]> {
        match self.order {
            KeyOrder::Bytewise => Some(k),
            KeyOrder::Internal if k.len() >= TRAILER_LEN => Some(key::user_key(k)),
            KeyOrder::Internal => None,
        }
    }

    /// What to seek the index for to find internal key `target`: its user key in a user-key
    /// index (a separator equal to that user key must not sort below it).
    pub(crate) fn seek_target<'a>(&self, target: &'a [u8]) -> &'a [u8] {
        match self.order {
            KeyOrder::Bytewise if target.len() >= TRAILER_LEN => key::user_key(target),
            _ => target,
        }
    }

    /// An iterator over an index block of this layout.
    fn iter(&self, block: &Arc<Block>) -> BlockIter {
        let it = block.index_iter(self.order, self.delta);
        if self.first_key {
            it.with_first_keys()
        } else {
            it
        }
    }

    /// The block handle of an index value (`it` positioned at an entry).
    fn handle(&self, it: &BlockIter) -> Option<BlockHandle> {
        if self.delta {
            return Some(it.handle());
        }
        if !self.first_key {
            return BlockHandle::decode_exact(it.value());
        }
        let mut r = Reader::new(it.value());
        let h = BlockHandle::decode_from(&mut r)?;
        r.length_prefixed()?;
        r.remaining().is_empty().then_some(h)
    }
}

/// The pinned partitions of a partitioned index, by offset.
pub type Partitions = Arc<Vec<(u64, Arc<Block>)>>;

/// An iterator over the entries (separator → data block handle) of a table's index.
pub struct IndexIter {
    layout: IndexLayout,
    top: BlockIter,
    /// `Some` for a partitioned index: the partitions and the iterator over the current one.
    two_level: Option<(Partitions, Option<BlockIter>)>,
    err: Option<String>,
}

impl IndexIter {
    /// An iterator over a single index block, or over `partitions` when the table's index is
    /// partitioned (`index` is then its top level).
    pub fn new(index: &Arc<Block>, partitions: Option<Partitions>, layout: IndexLayout) -> Self {
        IndexIter {
            layout,
            top: layout.iter(index),
            two_level: partitions.map(|p| (p, None)),
            err: None,
        }
    }

    fn current(&self) -> Option<&BlockIter> {
        match &self.two_level {
            None => Some(&self.top),
            Some((_, part)) => part.as_ref(),
        }
    }

    /// True when positioned at an entry.
    pub fn valid(&self) -> bool {
        self.err.is_none() && self.current().is_some_and(BlockIter::valid)
    }

    /// The current separator key.
    pub fn key(&self) -> &[u8] {
        self.current().map_or(&[], BlockIter::key)
    }

    /// The current data block handle, `None` if the entry's value is malformed.
    pub fn handle(&self) -> Option<BlockHandle> {
        self.layout.handle(self.current()?)
    }

    /// The first corruption met, in the top level or a partition.
    pub fn error(&self) -> Option<String> {
        if let Some(e) = &self.err {
            return Some(e.clone());
        }
        if let Some(e) = self.top.error() {
            return Some(format!("top-level index: {e}"));
        }
        match &self.two_level {
            None => None,
            Some((_, part)) => part
                .as_ref()
                .and_then(|p| p.error())
                .map(|e| format!("index partition: {e}")),
        }
    }

    /// Opens the partition the top level points at (none when the top level is exhausted).
    fn load_partition(&mut self) -> bool {
        let handle = if self.top.valid() {
            self.layout.handle(&self.top)
        } else {
            None
        };
        let Some((parts, cur)) = &mut self.two_level else {
            return self.top.valid();
        };
        *cur = None;
        if !self.top.valid() {
            return false;
        }
        let found = handle.and_then(|h| {
            parts
                .binary_search_by_key(&h.offset, |(off, _)| *off)
                .ok()
                .map(|i| Arc::clone(&parts[i].1))
        });
        match found {
            Some(block) => {
                *cur = Some(self.layout.iter(&block));
                true
            }
            None => {
                self.err = Some("top-level index entry names no index partition".into());
                false
            }
        }
    }

    fn part(&mut self) -> Option<&mut BlockIter> {
        self.two_level.as_mut().and_then(|(_, p)| p.as_mut())
    }

    /// Moves forward over exhausted partitions.
    fn skip_forward(&mut self) {
        while self.two_level.is_some()
            && self.err.is_none()
            && self
                .part()
                .is_some_and(|p| !p.valid() && p.error().is_none())
        {
            self.top.next();
            if !self.load_partition() {
                return;
            }
            if let Some(p) = self.part() {
                p.seek_to_first();
            }
        }
    }

    /// Moves backward over exhausted partitions.
    fn skip_backward(&mut self) {
        while self.two_level.is_some()
            && self.err.is_none()
            && self
                .part()
                .is_some_and(|p| !p.valid() && p.error().is_none())
        {
            self.top.prev();
            if !self.load_partition() {
                return;
            }
            if let Some(p) = self.part() {
                p.seek_to_last();
            }
        }
    }

    /// Positions at the first entry.
    pub fn seek_to_first(&mut self) {
        self.top.seek_to_first();
        if self.two_level.is_some() && self.load_partition() {
            if let Some(p) = self.part() {
                p.seek_to_first();
            }
            self.skip_forward();
        }
    }

    /// Positions at the last entry.
    pub fn seek_to_last(&mut self) {
        self.top.seek_to_last();
        if self.two_level.is_some() && self.load_partition() {
            if let Some(p) = self.part() {
                p.seek_to_last();
            }
            self.skip_backward();
        }
    }

    /// Positions at the first entry whose separator is at or after `target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.top.seek(target);
        if self.two_level.is_some() && self.load_partition() {
            if let Some(p) = self.part() {
                p.seek(target);
            }
            self.skip_forward();
        }
    }

    /// Moves to the next entry.
    pub fn next(&mut self) {
        match &mut self.two_level {
            None => self.top.next(),
            Some((_, Some(p))) => p.next(),
            Some((_, None)) => return,
        }
        self.skip_forward();
    }

    /// Moves to the previous entry.
    pub fn prev(&mut self) {
        match &mut self.two_level {
            None => self.top.prev(),
            Some((_, Some(p))) => p.prev(),
            Some((_, None)) => return,
        }
        self.skip_backward();
    }
}
