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
pub fn ingest_target_level(
    v: &Version,
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
        if level > 0 && candidates.is_empty() {
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
    Ok(IngestPlan {
        level: target,
        needs_seqno: overlap,
    })
}
