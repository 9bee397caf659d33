//! Compaction: the pure [`picker`] and the job that merges input tables into new ones.

pub mod picker;
