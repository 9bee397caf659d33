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
