//! User-key bounds of an iterator, `[lower, upper)`, which table and level iterators honour,
//! and the ranges a compaction (or an import) splits the key space into.

/// User-key bounds for an iterator: `lower` inclusive, `upper` exclusive.
#[derive(Debug, Clone, Default)]
pub struct IterBounds {
    /// Smallest user key to return.
    pub lower: Option<Vec<u8>>,
    /// First user key not to return.
    pub upper: Option<Vec<u8>>,
}

impl IterBounds {
    /// The contiguous ranges that strictly increasing `cuts` divide the key space into: the
    /// first unbounded below, the last unbounded above, each cut the upper bound of one range
    /// and the lower bound of the next (so each user key falls in exactly one).
    pub fn between_cuts(cuts: Vec<Vec<u8>>) -> Vec<IterBounds> {
        let mut ranges = Vec::with_capacity(cuts.len() + 1);
        let mut lower = None;
        for c in cuts {
            ranges.push(IterBounds {
                lower: lower.take(),
                upper: Some(c.clone()),
            });
            lower = Some(c);
        }
        ranges.push(IterBounds { lower, upper: None });
        ranges
    }
}
