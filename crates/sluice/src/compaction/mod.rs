//! Compaction: the pure [`picker`] and the [`job`] that merges inputs into new tables.

pub mod job;
pub mod picker;
pub mod split;

/// A running compaction's output: nothing may be ingested into its range at or below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningOutput {
    /// Output level.
    pub level: usize,
    /// Smallest user key of the inputs.
    pub lo: Vec<u8>,
    /// Largest user key of the inputs.
    pub hi: Vec<u8>,
}

#[cfg(test)]
mod golden_tests;
