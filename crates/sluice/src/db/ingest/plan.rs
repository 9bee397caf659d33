//! Step 5, pure: where a file may go in a version ([`ingest_target_level`]).

use crate::base::error::Result;
use crate::compaction::RunningOutput;
use crate::version::{FileMeta, Version, NUM_LEVELS};

/// Where one ingested file goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestPlan {
    /// The level the file is added to.
    pub level: usize,
    /// Existing data overlaps the file (or a running compaction writes into its range), so its
    /// entries need a global seqno above everything it overlaps; otherwise they keep seqno 0.
    pub needs_seqno: bool,
}

/// The lowest level a file covering user keys `[lo, hi]` may go to: no file at or above it
/// overlaps the file's *data* (`data_overlaps` opens the file to check, bounds alone are not
/// enough), no file in the target level overlaps its *bounds* (levels ≥ 1 stay disjoint), and
/// no running compaction writes into the range at or above it.
///
/// Only L0 and the levels from `base` (the picker's base level, [`level_targets`]) down are
/// targets, as in Pebble's `ingestTargetLevel`: the levels between L1 and the base are kept
/// empty by the picker, so a file put there (one that overlaps the base level) is only merged
/// down level by level, a rewrite per level. Such a file goes to L0 instead, where one L0
/// compaction takes it into the base level. Measured in `l0-ingest-random` (200 overlapping
/// files): the L1→L2→L3→L4 cascade rewrote about 1.1 GB of 7.8 GB written.
///
/// [`level_targets`]: crate::compaction::picker::level_targets
pub fn ingest_target_level(
    v: &Version,
    base: usize,
    lo: &[u8],
    hi: &[u8],
    running: &[RunningOutput],
    data_overlaps: &mut dyn FnMut(&FileMeta) -> Result<bool>,
) -> Result<IngestPlan> {
    let mut target = 0;
    let mut overlap = false;
    for level in 0..NUM_LEVELS {
        let blocked = running
            .iter()
            .any(|r| r.level == level && r.lo.as_slice() <= hi && lo <= r.hi.as_slice());
        if blocked {
            overlap = true;
            break;
        }
        let candidates = v.overlapping(level, Some(lo), Some(hi));
        if level > 0 && level >= base && candidates.is_empty() {
            target = level;
        }
        let mut data = false;
        for f in &candidates {
            if data_overlaps(f)? {
                data = true;
                break;
            }
        }
        if data {
            overlap = true;
            break;
        }
    }
    // A file in L0 always gets a fresh seqno: L0's sublevels order files by their newest
    // seqno, and one of 0 would rank it below every L0 file its bounds overlap.
    Ok(IngestPlan {
        level: target,
        needs_seqno: overlap || target == 0,
    })
}
