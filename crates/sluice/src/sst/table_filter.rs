//! A table's filter as the reader holds it: none, one full filter, or a partitioned filter
//! (RocksDB's `partition_filters`), whose partitions are read and verified at open and pinned
//! with the table, like a full filter.
//!
//! A partitioned filter's top level is laid out like an index block: partition `i`'s separator
//! is at least every key added to partition `i`, and a user key whose versions span a
//! partition boundary is added to both partitions; so the first partition whose separator is at
//! or after the key's first possible internal key is the one to ask.

use std::cmp::Ordering;

use crate::base::key;
use crate::sst::block::KeyOrder;
use crate::sst::filter::{filter_hash, BloomReader};

/// The filter of an open table.
#[derive(Debug)]
pub enum TableFilter {
    /// No filter, or one that cannot answer whole-key lookups (a prefix filter).
    None,
    /// One filter for the whole table.
    Full(BloomReader),
    /// Partitions, in order, each with its separator key.
    Partitioned {
        /// Whether the separators are user keys (bytewise) or internal keys.
        order: KeyOrder,
        /// (separator, filter) of every partition.
        parts: Vec<(Vec<u8>, BloomReader)>,
    },
}

impl TableFilter {
    /// False only if `user_key` is certainly absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        match self {
            TableFilter::None => true,
            TableFilter::Full(f) => f.may_contain(user_key),
            TableFilter::Partitioned { order, parts } => {
                let Some(i) = partition_for(*order, parts, user_key) else {
                    return true;
                };
                parts[i].1.may_contain_hash(filter_hash(user_key))
            }
        }
    }

    /// True if the filter can reject keys.
    pub fn is_effective(&self) -> bool {
        match self {
            TableFilter::None => false,
            TableFilter::Full(f) => f.is_effective(),
            TableFilter::Partitioned { parts, .. } => parts.iter().any(|(_, f)| f.is_effective()),
        }
    }

    /// Bytes of memory held.
    pub fn charge(&self) -> usize {
        match self {
            TableFilter::None => 0,
            TableFilter::Full(f) => f.charge(),
            TableFilter::Partitioned { parts, .. } => {
                parts.iter().map(|(k, f)| k.capacity() + f.charge()).sum()
            }
        }
    }
}

/// The partition to ask about `user_key`: the first whose separator is at or after the key
/// (the last one past every separator, as RocksDB does); `None` when there are no partitions.
fn partition_for(
    order: KeyOrder,
    parts: &[(Vec<u8>, BloomReader)],
    user_key: &[u8],
) -> Option<usize> {
    if parts.is_empty() {
        return None;
    }
    let i = match order {
        KeyOrder::Bytewise => parts.partition_point(|(sep, _)| sep.as_slice() < user_key),
        KeyOrder::Internal => {
            let target = key::seek_key(user_key, key::MAX_SEQNO);
            parts.partition_point(|(sep, _)| key::compare_internal(sep, &target) == Ordering::Less)
        }
    };
    Some(i.min(parts.len() - 1))
}
