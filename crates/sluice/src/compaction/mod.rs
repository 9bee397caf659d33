//! Compaction: the pure [`picker`] and the [`job`] that merges inputs into new tables.

pub mod job;
pub mod picker;
