//! The internal iterator protocol shared by blocks, tables, memtables and merging iterators.
//!
//! Invariants every implementation keeps:
//! 1. `key()`/`value()` may be called only while `valid()`.
//! 2. A positioning call that hits corrupt bytes leaves the iterator invalid and makes
//!    `status()` return the error; it never panics.
//! 3. Bounded iterators never position on, or read blocks for, keys outside their bounds.

use crate::base::error::Result;

/// A sorted cursor over internal (or, for meta blocks, plain) keys.
pub trait InternalIterator {
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    fn seek_to_first(&mut self);
    /// Positions on the last entry.
    fn seek_to_last(&mut self);
    /// Positions on the first entry with key `>= target`.
    fn seek(&mut self, target: &[u8]);
    /// Positions on the last entry with key `<= target`.
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry. Requires `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. Requires `valid()`.
    fn prev(&mut self);
    /// The current key.
    fn key(&self) -> &[u8];
    /// The current value.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}
