//! Answers "which range deletion covers this user key, and how new is it?" for a read.
//!
//! Tombstones from every source visible at the read's snapshot are cut into non-overlapping
//! fragments, each labelled with the largest seqno of the tombstones covering it. A point entry
//! `(k, s)` is deleted when the fragment holding `k` has a seqno greater than `s`.

use std::collections::BTreeMap;

use crate::base::range_tombstone::RangeTombstone;

/// Fragmented, snapshot-filtered range tombstones.
#[derive(Debug, Default, Clone)]
pub struct RangeDelAggregator {
    /// (start, end, max seqno), sorted, non-overlapping.
    fragments: Vec<(Vec<u8>, Vec<u8>, u64)>,
}

impl RangeDelAggregator {
    /// Builds from tombstones, keeping those with seqno <= `snapshot`.
    pub fn new(tombstones: impl IntoIterator<Item = RangeTombstone>, snapshot: u64) -> Self {
        let ts: Vec<RangeTombstone> = tombstones
            .into_iter()
            .filter(|t| t.seqno <= snapshot && t.start < t.end)
            .collect();
        if ts.is_empty() {
            return Self::default();
        }
        let mut bounds: Vec<&[u8]> = ts
            .iter()
            .flat_map(|t| [t.start.as_slice(), t.end.as_slice()])
            .collect();
        bounds.sort();
        bounds.dedup();
        // Sweep: tombstones sorted by start enter; those whose end <= fragment start leave.
        let mut by_start: Vec<&RangeTombstone> = ts.iter().collect();
        by_start.sort_by(|a, b| a.start.cmp(&b.start));
        let mut active: BTreeMap<u64, Vec<&RangeTombstone>> = BTreeMap::new();
        let mut next = 0;
        let mut fragments: Vec<(Vec<u8>, Vec<u8>, u64)> = Vec::new();
        for w in bounds.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            while next < by_start.len() && by_start[next].start.as_slice() <= lo {
                active
                    .entry(by_start[next].seqno)
                    .or_default()
                    .push(by_start[next]);
                next += 1;
            }
            active.retain(|_, v| {
                v.retain(|t| t.end.as_slice() > lo);
                !v.is_empty()
            });
            if let Some((&seq, _)) = active.iter().next_back() {
                match fragments.last_mut() {
                    Some(last) if last.1.as_slice() == lo && last.2 == seq => last.1 = hi.to_vec(),
                    _ => fragments.push((lo.to_vec(), hi.to_vec(), seq)),
                }
            }
        }
        RangeDelAggregator { fragments }
    }

    /// Largest seqno of a tombstone covering `user_key` (0 if none).
    pub fn max_covering_seqno(&self, user_key: &[u8]) -> u64 {
        let i = self
            .fragments
            .partition_point(|f| f.0.as_slice() <= user_key);
        if i == 0 {
            return 0;
        }
        let f = &self.fragments[i - 1];
        if user_key < f.1.as_slice() {
            f.2
        } else {
            0
        }
    }

    /// True if the entry `(user_key, seqno)` is deleted by a newer range tombstone.
    pub fn covers(&self, user_key: &[u8], seqno: u64) -> bool {
        !self.fragments.is_empty() && self.max_covering_seqno(user_key) > seqno
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_brute_force(
            ts in proptest::collection::vec((0u8..20, 0u8..20, 1u64..50), 0..12),
            snap in 1u64..60,
        ) {
            let tombs: Vec<RangeTombstone> = ts.iter().map(|&(a, b, s)| RangeTombstone { start: vec![a], end: vec![b], seqno: s }).collect();
            let agg = RangeDelAggregator::new(tombs.clone(), snap);
            for k in 0u8..22 {
                let want = tombs.iter().filter(|t| t.seqno <= snap && t.start[0] <= k && k < t.end[0]).map(|t| t.seqno).max().unwrap_or(0);
                prop_assert_eq!(agg.max_covering_seqno(&[k]), want, "key {}", k);
            }
        }
    }
}
