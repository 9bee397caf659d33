//! Iterating a table: a two-level iterator (index block → data blocks) that honours its
//! [`IterBounds`] at the index level (invariant 2 of `table`): a block the index proves lies
//! entirely outside the bounds is never read.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::base::bounds::IterBounds;
use crate::base::error::{clone_error, Error, Result};
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, ParsedKey, TRAILER_LEN};
use crate::base::trace::Trace;
use crate::sst::block::{BlockIter, KeyOrder};
use crate::sst::index_iter::IndexIter;
use crate::sst::table::Table;

/// A two-level iterator: index block → data blocks, restricted to [`IterBounds`].
///
/// Positioning is done by "raw" moves that ignore the bounds, followed by one bound check.
/// The raw moves consult the index before loading the next (or previous) block: a block whose
/// separator proves it lies entirely past a bound is never read.
pub struct TableIter {
    table: Arc<Table>,
    index: IndexIter,
    data: Option<(BlockIter, u64)>,
    bounds: IterBounds,
    err: Option<Error>,
    blocks_read: u64,
    /// Where block reads are recorded, if the read is traced.
    trace: Option<Trace>,
}

impl Table {
    /// An iterator over the whole table, restricted to user keys in `bounds`.
    pub fn iter(self: &Arc<Self>, bounds: IterBounds) -> TableIter {
        TableIter::new(Arc::clone(self), bounds)
    }
}

impl TableIter {
    fn new(table: Arc<Table>, bounds: IterBounds) -> Self {
        let index = table.index_iter();
        TableIter {
            table,
            index,
            data: None,
            bounds,
            err: None,
            blocks_read: 0,
            trace: None,
        }
    }

    /// Records every data block this iterator reads into `trace` (`None`: records nothing).
    pub fn set_trace(&mut self, trace: Option<Trace>) {
        self.trace = trace;
    }

    /// Data blocks loaded so far (a measure of work, used by bound tests).
    pub fn blocks_read(&self) -> u64 {
        self.blocks_read
    }

    pub(crate) fn current_block_offset(&self) -> u64 {
        self.data.as_ref().map_or(0, |d| d.1)
    }

    /// The current key, split.
    pub fn parsed(&self) -> Result<ParsedKey<'_>> {
        key::parse_internal_key(self.key()).ok_or_else(|| {
            self.table.corruption(
                self.current_block_offset(),
                format!(
                    "malformed internal key {:?}",
                    crate::base::error::escape_bytes(self.key())
                ),
            )
        })
    }

    fn set_error(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.data = None;
    }

    /// Loads the data block the index iterator points at. False when there is none or on error.
    fn load_block(&mut self) -> bool {
        if !self.index.valid() {
            self.data = None;
            if let Some(e) = self.index.error() {
                let e = self
                    .table
                    .corruption(self.table.index_handle.offset, format!("index block: {e}"));
                self.set_error(e);
            }
            return false;
        }
        let Some(h) = self.index.handle() else {
            let e = self.table.corruption(
                self.table.index_handle.offset,
                "index entry has a bad block handle",
            );
            self.set_error(e);
            return false;
        };
        if self.data.as_ref().is_some_and(|(_, off)| *off == h.offset) {
            return true;
        }
        match self.table.data_block_traced(h, self.trace.as_ref()) {
            Ok(b) => {
                self.blocks_read += 1;
                self.data = Some((b.iter(KeyOrder::Internal), h.offset));
                true
            }
            Err(e) => {
                self.set_error(e);
                false
            }
        }
    }

    /// Turns a data-block iterator error into the iterator's error. False on error.
    fn check_data(&mut self) -> bool {
        let err = match &self.data {
            Some((d, off)) => d.error().map(|e| (e.to_string(), *off)),
            None => None,
        };
        match err {
            Some((e, off)) => {
                let e = self.table.corruption(off, format!("data block: {e}"));
                self.set_error(e);
                false
            }
            None => true,
        }
    }

    /// User key of the current index entry (its separator).
    fn index_user_key(&self) -> Option<&[u8]> {
        self.table.index_layout.separator_user_key(self.index.key())
    }

    fn data_valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(|(d, _)| d.valid())
    }

    /// Moves forward over exhausted blocks. With `prune`, stops (invalid) instead of loading a
    /// block that the current separator proves lies at or past the upper bound.
    fn skip_empty_forward(&mut self, prune: bool) {
        while self.check_data() && self.data.is_some() && !self.data_valid() {
            if prune {
                if let (Some(up), Some(sep)) = (&self.bounds.upper, self.index_user_key()) {
                    // Later blocks hold keys > separator >= upper.
                    if sep >= up.as_slice() {
                        self.data = None;
                        return;
                    }
                }
            }
            self.index.next();
            if !self.load_block() {
                return;
            }
            if let Some((d, _)) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    /// Moves backward over exhausted blocks, never loading a block that its separator proves
    /// lies entirely below the lower bound.
    fn skip_empty_backward(&mut self) {
        while self.check_data() && self.data.is_some() && !self.data_valid() {
            self.index.prev();
            if !self.index.valid() {
                self.data = None;
                let _ = self.load_block();
                return;
            }
            if let (Some(lo), Some(sep)) = (&self.bounds.lower, self.index_user_key()) {
                // That block holds keys <= separator < lower.
                if sep < lo.as_slice() {
                    self.data = None;
                    return;
                }
            }
            if !self.load_block() {
                return;
            }
            if let Some((d, _)) = &mut self.data {
                d.seek_to_last();
            }
        }
    }

    fn raw_seek(&mut self, target: &[u8], prune: bool) {
        self.index.seek(self.table.index_layout.seek_target(target));
        if !self.load_block() {
            return;
        }
        if let Some((d, _)) = &mut self.data {
            d.seek(target);
        }
        self.skip_empty_forward(prune);
    }

    fn raw_first(&mut self) {
        self.index.seek_to_first();
        if self.load_block() {
            if let Some((d, _)) = &mut self.data {
                d.seek_to_first();
            }
            self.skip_empty_forward(true);
        }
    }

    fn raw_last(&mut self) {
        self.index.seek_to_last();
        if self.load_block() {
            if let Some((d, _)) = &mut self.data {
                d.seek_to_last();
            }
            self.skip_empty_backward();
        }
    }

    fn raw_prev(&mut self) {
        if let Some((d, _)) = &mut self.data {
            d.prev();
        }
        self.skip_empty_backward();
    }

    /// Last entry `<= target`, ignoring the upper bound.
    fn raw_seek_for_prev(&mut self, target: &[u8]) {
        self.raw_seek(target, false);
        if self.err.is_some() {
            return;
        }
        if !self.data_valid() {
            self.raw_last();
        } else if key::compare_internal(self.key(), target) == Ordering::Greater {
            self.raw_prev();
        }
    }

    fn above_upper(&self) -> bool {
        match (&self.bounds.upper, self.data_valid()) {
            (Some(up), true) if self.key().len() >= TRAILER_LEN => {
                key::user_key(self.key()) >= up.as_slice()
            }
            _ => false,
        }
    }

    fn below_lower(&self) -> bool {
        match (&self.bounds.lower, self.data_valid()) {
            (Some(lo), true) if self.key().len() >= TRAILER_LEN => {
                key::user_key(self.key()) < lo.as_slice()
            }
            _ => false,
        }
    }

    fn check_upper(&mut self) {
        if self.above_upper() {
            self.data = None;
        }
    }

    fn check_lower(&mut self) {
        if self.below_lower() {
            self.data = None;
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.data_valid()
    }

    fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        match self.bounds.lower.clone() {
            Some(lo) => self.raw_seek(&key::seek_key(&lo, key::MAX_SEQNO), true),
            None => self.raw_first(),
        }
        self.check_upper();
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        match self.bounds.upper.clone() {
            // The seek key (upper, MAX, 0xFF) sorts before every key of `upper`.
            Some(up) => self.raw_seek_for_prev(&key::seek_key(&up, key::MAX_SEQNO)),
            None => self.raw_last(),
        }
        self.check_lower();
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        if target.len() >= TRAILER_LEN {
            let u = key::user_key(target);
            if let Some(up) = &self.bounds.upper {
                if u >= up.as_slice() {
                    self.data = None;
                    return;
                }
            }
            if let Some(lo) = self.bounds.lower.clone() {
                if u < lo.as_slice() {
                    self.raw_seek(&key::seek_key(&lo, key::MAX_SEQNO), true);
                    self.check_upper();
                    return;
                }
            }
        }
        self.raw_seek(target, true);
        self.check_upper();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        if target.len() >= TRAILER_LEN {
            let u = key::user_key(target);
            if let Some(lo) = &self.bounds.lower {
                if u < lo.as_slice() {
                    self.data = None;
                    return;
                }
            }
            if let Some(up) = self.bounds.upper.clone() {
                if u >= up.as_slice() {
                    self.raw_seek_for_prev(&key::seek_key(&up, key::MAX_SEQNO));
                    self.check_lower();
                    return;
                }
            }
        }
        self.raw_seek_for_prev(target);
        self.check_lower();
    }

    fn next(&mut self) {
        if let Some((d, _)) = &mut self.data {
            d.next();
        }
        self.skip_empty_forward(true);
        self.check_upper();
    }

    fn prev(&mut self) {
        self.raw_prev();
        self.check_lower();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |(d, _)| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |(d, _)| d.value())
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(clone_error(e)),
            None => Ok(()),
        }
    }
}
