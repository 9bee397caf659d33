//! The read path: a view (seqno + memtables + version, taken atomically, invariant 1), point
//! reads newest source first, and iterators merging every source under the view's seqno.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::base::error::Result;
use crate::base::key::{self, ValueKind};
use crate::base::range_tombstone::RangeTombstone;
use crate::memtable::MemTable;
use crate::read::db_iter::DbIterator;
use crate::read::level::{file_iter, LevelIter};
use crate::read::merging::{BoxIter, MergingIter};
use crate::read::range_del::RangeDelAggregator;
use crate::sst::table::IterBounds;
use crate::version::{FileMeta, Version};

use super::*;

/// The sources a read consults.
#[derive(Clone)]
pub(super) struct View {
    pub(super) mem: Arc<MemTable>,
    pub(super) imm: Vec<Arc<MemTable>>,
    pub(super) version: Arc<Version>,
}

impl Inner {
    /// The read seqno and the sources holding everything visible at it, taken in one `state`
    /// critical section (invariant 1): a flush or compaction installed after this cannot have
    /// removed a version this seqno needs from the view.
    pub(super) fn read_view(&self) -> (u64, View) {
        let s = self.state.lock();
        let seq = self.visible_seq.load(Ordering::Acquire);
        let view = View {
            mem: Arc::clone(&s.mem),
            imm: s.imm.clone(),
            version: Arc::clone(&s.version),
        };
        (seq, view)
    }

    pub(super) fn sources(
        &self,
        snapshot: Option<&Snapshot>,
    ) -> (u64, Arc<MemTable>, Vec<Arc<MemTable>>, Arc<Version>) {
        if let Some(snap) = snapshot {
            let v = snap.view.clone();
            return (snap.seqno, v.mem, v.imm, v.version);
        }
        let (seq, v) = self.read_view();
        (seq, v.mem, v.imm, v.version)
    }

    pub(super) fn get(
        self: &Arc<Self>,
        user_key: &[u8],
        snapshot: Option<&Snapshot>,
    ) -> Result<Option<Vec<u8>>> {
        let (seq, mem, imm, version) = self.sources(snapshot);
        // The pin owns the reader's only reference to the version.
        let pin = self.pin(version);
        let version = pin.version();
        let mut max_tomb = 0u64;
        // Newest first: active memtable, immutable memtables, L0 newest first, then L1..L6.
        for m in std::iter::once(&mem).chain(imm.iter().rev()) {
            if m.has_range_deletions() {
                for t in m.range_deletions() {
                    if t.seqno <= seq
                        && t.start.as_slice() <= user_key
                        && user_key < t.end.as_slice()
                    {
                        max_tomb = max_tomb.max(t.seqno);
                    }
                }
            }
            if let Some((kind, value, s)) = m.get(user_key, seq) {
                return Ok(resolve(kind, value, s, max_tomb));
            }
        }
        for (level, files) in version.levels.iter().enumerate() {
            let candidates: Vec<&Arc<FileMeta>> = if level == 0 {
                files
                    .iter()
                    .filter(|f| f.overlaps(Some(user_key), Some(user_key)))
                    .collect()
            } else {
                // The first file whose largest key may reach `user_key`. A file whose largest
                // key is an exclusive range-deletion end equal to `user_key` does not hold it,
                // and the next file may start at it: look at both.
                let i = files.partition_point(|f| f.largest_user() < user_key);
                files[i..]
                    .iter()
                    .take(2)
                    .find(|f| f.overlaps(Some(user_key), Some(user_key)))
                    .into_iter()
                    .collect()
            };
            for f in candidates {
                let table = self.table(f)?;
                for t in table.range_deletions() {
                    let ts = if f.global_seqno > 0 {
                        f.global_seqno
                    } else {
                        t.seqno
                    };
                    if ts <= seq && t.start.as_slice() <= user_key && user_key < t.end.as_slice() {
                        max_tomb = max_tomb.max(ts);
                    }
                }
                let found = if f.global_seqno > 0 {
                    if f.global_seqno > seq {
                        None
                    } else {
                        table
                            .get(user_key, key::MAX_SEQNO)?
                            .map(|(k, v)| (k, v, f.global_seqno))
                    }
                } else {
                    table.get_with_seqno(user_key, seq)?
                };
                if let Some((kind, value, s)) = found {
                    return Ok(resolve(kind, value, s, max_tomb));
                }
            }
        }
        Ok(None)
    }

    pub(super) fn iter(
        self: &Arc<Self>,
        snapshot: Option<&Snapshot>,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> Result<DbIterator> {
        let (seq, mem, imm, version) = self.sources(snapshot);
        let bounds = IterBounds {
            lower: lower.clone(),
            upper: upper.clone(),
        };
        let mut children: Vec<BoxIter> = Vec::new();
        let mut tombs: Vec<RangeTombstone> = Vec::new();
        let mut pins: Vec<Arc<dyn std::any::Any + Send + Sync>> = Vec::new();
        for m in std::iter::once(&mem).chain(imm.iter()) {
            children.push(Box::new(m.iter(lower.clone(), upper.clone())));
            tombs.extend(m.range_deletions());
            pins.push(Arc::clone(m) as Arc<dyn std::any::Any + Send + Sync>);
        }
        let lo = lower.as_deref();
        for (level, files) in version.levels.iter().enumerate() {
            let in_range: Vec<Arc<FileMeta>> = files
                .iter()
                .filter(|f| {
                    f.overlaps(lo, None) && upper.as_deref().is_none_or(|u| f.smallest_user() < u)
                })
                .cloned()
                .collect();
            for f in in_range.iter().filter(|f| f.range_dels > 0) {
                let t = self.table(f)?;
                tombs.extend(t.range_deletions().iter().map(|t| RangeTombstone {
                    seqno: if f.global_seqno > 0 {
                        f.global_seqno
                    } else {
                        t.seqno
                    },
                    ..t.clone()
                }));
            }
            if level == 0 {
                for f in &in_range {
                    let t = self.table(f)?;
                    children.push(file_iter(&t, f, bounds.clone()));
                }
            } else if !in_range.is_empty() {
                children.push(Box::new(LevelIter::new(
                    in_range,
                    self.opener(),
                    bounds.clone(),
                )));
            }
        }
        // The pin owns the iterator's reference to the version.
        pins.push(Arc::new(self.pin(version)) as Arc<dyn std::any::Any + Send + Sync>);
        let agg = RangeDelAggregator::new(tombs, seq);
        Ok(DbIterator::new(
            MergingIter::new(children),
            seq,
            agg,
            lower,
            upper,
            pins,
        ))
    }
}

pub(super) fn resolve(
    kind: ValueKind,
    value: Vec<u8>,
    seqno: u64,
    max_tomb: u64,
) -> Option<Vec<u8>> {
    if max_tomb > seqno {
        return None;
    }
    (kind == ValueKind::Value).then_some(value)
}
