//! Range deletions as every layer sees them.

/// A range deletion: user keys in `[start, end)` with seqno below `seqno` are deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTombstone {
    /// First deleted user key.
    pub start: Vec<u8>,
    /// First user key not deleted.
    pub end: Vec<u8>,
    /// Sequence number of the deletion.
    pub seqno: u64,
}

impl RangeTombstone {
    /// The part of `[start, end)` within `[lower, upper)` (`None` = unbounded), if any.
    pub fn clipped<'a>(
        &'a self,
        lower: Option<&'a [u8]>,
        upper: Option<&'a [u8]>,
    ) -> Option<(&'a [u8], &'a [u8])> {
        let start = lower.map_or(self.start.as_slice(), |lo| lo.max(self.start.as_slice()));
        let end = upper.map_or(self.end.as_slice(), |up| up.min(self.end.as_slice()));
        (start < end).then_some((start, end))
    }
}
