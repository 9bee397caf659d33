//! Sorted sources: in-memory chunk lists, run files (or streamed final files read back as
//! runs), pending deletions, each whole or limited to a key range; and the key ranges of a
//! parallel merge.

use std::path::Path;
use std::sync::Arc;

use sluice::{InternalIterator, IterBounds, Table, TableIter, TableReadOptions};

use super::{Source, DELETION_SRC};
use crate::parse::{BufferPool, Entries};

/// An in-memory sorted list (or the part of one in a key range); its buffer goes back to the
/// pool when the last source reading it is done.
pub struct MemSource {
    e: Arc<Entries>,
    i: usize,
    end: usize,
    pool: Option<Arc<BufferPool>>,
}

impl MemSource {
    /// Over a sorted list.
    pub fn new(e: Entries, pool: Option<Arc<BufferPool>>) -> Self {
        let end = e.items.len();
        MemSource {
            e: Arc::new(e),
            i: 0,
            end,
            pool,
        }
    }

    /// Over the entries of a shared sorted list whose keys lie in `range`.
    pub fn range(e: Arc<Entries>, range: &IterBounds) -> Self {
        let n = e.items.len();
        let at = |b: &Option<Vec<u8>>, default: usize| {
            b.as_ref().map_or(default, |b| {
                (0..n).partition_point_by(|i| e.key(i) < b.as_slice())
            })
        };
        let (i, end) = (at(&range.lower, 0), at(&range.upper, n));
        MemSource {
            e,
            i,
            end,
            pool: None,
        }
    }
}

/// `partition_point` over an index range (the entries' keys are not one slice).
trait PartitionPointBy {
    fn partition_point_by(self, pred: impl FnMut(usize) -> bool) -> usize;
}

impl PartitionPointBy for std::ops::Range<usize> {
    fn partition_point_by(self, mut pred: impl FnMut(usize) -> bool) -> usize {
        let (mut lo, mut hi) = (self.start, self.end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl Drop for MemSource {
    fn drop(&mut self) {
        if let Some(p) = &self.pool {
            let e = std::mem::replace(&mut self.e, Arc::new(Entries::default()));
            if let Ok(e) = Arc::try_unwrap(e) {
                p.give(e);
            }
        }
    }
}

impl Source for MemSource {
    fn valid(&self) -> bool {
        self.i < self.end
    }
    fn key(&self) -> &[u8] {
        self.e.key(self.i)
    }
    fn src(&self) -> u64 {
        self.e.items[self.i].3
    }
    fn value(&self) -> &[u8] {
        self.e.value(self.i)
    }
    fn next(&mut self) -> sluice::Result<()> {
        self.i += 1;
        Ok(())
    }
}

/// The key ranges of a parallel merge: `parts` ranges covering every key, cut at the weighted
/// quantiles of `samples` (`(key, bytes up to the next sample)`, any order), so each range gets
/// about the same bytes; fewer when the samples do not have `parts - 1` distinct cut points.
/// Entries go to a range by their key alone (never by their source position), so all entries
/// of one key fall in one range. No cut falls at the largest sample: no sampled bytes lie above
/// it, so the range above such a cut could be empty (a run's last sample is its last key).
pub fn split_ranges(mut samples: Vec<(Vec<u8>, u64)>, parts: usize) -> Vec<IterBounds> {
    samples.sort_unstable();
    let total: u64 = samples.iter().map(|s| s.1).sum();
    let largest = samples.last().map(|s| s.0.clone());
    let mut cuts: Vec<Vec<u8>> = Vec::new();
    let mut acc = 0u64;
    let mut next = 1;
    for (k, w) in samples {
        if next >= parts || largest.as_ref() == Some(&k) {
            break;
        }
        acc += w;
        if acc as u128 * parts as u128 >= total as u128 * next as u128 {
            if cuts.last() != Some(&k) {
                cuts.push(k);
            }
            while next < parts && acc as u128 * parts as u128 >= total as u128 * next as u128 {
                next += 1;
            }
        }
    }
    IterBounds::between_cuts(cuts)
}

/// Samples of a sorted list for [`split_ranges`]: about `per_list` keys with the bytes
/// between them.
pub fn sample_entries(e: &Entries, per_list: usize, out: &mut Vec<(Vec<u8>, u64)>) {
    let n = e.items.len();
    if n == 0 {
        return;
    }
    let step = n.div_ceil(per_list.max(1)).max(1);
    let bytes = e.arena.len() as u64 * step as u64 / n as u64;
    for i in (step - 1..n).step_by(step) {
        out.push((e.key(i).to_vec(), bytes.max(1)));
    }
}

/// Sorted keys to delete.
pub struct DeletionSource {
    keys: Arc<Vec<Vec<u8>>>,
    i: usize,
    end: usize,
}

impl DeletionSource {
    /// `keys` sorted and deduplicated (for [`DeletionSource::range`]).
    pub fn sorted(mut keys: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The keys of sorted, deduplicated `keys` in `range`.
    pub fn range(keys: Arc<Vec<Vec<u8>>>, range: &IterBounds) -> Self {
        Self::range_after(keys, range, None)
    }

    /// [`DeletionSource::range`] past `after` (a resumed merge goes on after the last key
    /// it emitted).
    pub fn range_after(keys: Arc<Vec<Vec<u8>>>, range: &IterBounds, after: Option<&[u8]>) -> Self {
        let at = |b: &Option<Vec<u8>>, default: usize| {
            b.as_ref().map_or(default, |b| {
                keys.partition_point(|k| k.as_slice() < b.as_slice())
            })
        };
        let (mut i, end) = (at(&range.lower, 0), at(&range.upper, keys.len()));
        if let Some(a) = after {
            i = i.max(keys.partition_point(|k| k.as_slice() <= a));
        }
        DeletionSource {
            keys,
            i: i.min(end),
            end,
        }
    }
}

impl Source for DeletionSource {
    fn valid(&self) -> bool {
        self.i < self.end
    }
    fn key(&self) -> &[u8] {
        &self.keys[self.i]
    }
    fn src(&self) -> u64 {
        DELETION_SRC
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn next(&mut self) -> sluice::Result<()> {
        self.i += 1;
        Ok(())
    }
}

/// A run file (or a streamed final file read back as a run), or its entries in a key range.
pub struct RunSource {
    it: TableIter,
    /// Values carry an 8-byte source position prefix.
    with_src: bool,
    /// Entries from a key at or past this one are not this source's.
    upper: Option<Vec<u8>>,
    _table: Arc<Table>,
}

impl RunSource {
    /// Opens a run. `with_src`: the file was written by [`super::write_run`].
    pub fn open(path: &Path, with_src: bool) -> sluice::Result<Self> {
        Self::open_range(path, with_src, &IterBounds::default())
    }

    /// Opens a run positioned on its first entry in `range`.
    pub fn open_range(path: &Path, with_src: bool, range: &IterBounds) -> sluice::Result<Self> {
        Self::open_range_after(path, with_src, range, None)
    }

    /// Opens a run positioned on its first entry in `range` whose key follows `after` (a
    /// resumed merge goes on after the last key it emitted: every entry of that key, whatever
    /// its source position, was seen).
    pub fn open_range_after(
        path: &Path,
        with_src: bool,
        range: &IterBounds,
        after: Option<&[u8]>,
    ) -> sluice::Result<Self> {
        let lower = match (after, &range.lower) {
            (Some(a), Some(l)) if l.as_slice() > a => Some(l.clone()),
            (Some(a), _) => Some(a.to_vec()),
            (None, l) => l.clone(),
        };
        let range = &IterBounds {
            lower,
            upper: range.upper.clone(),
        };
        crate::failpoints::inject_at("import::run_read", path)?;
        let table = Table::open_path(path, &TableReadOptions::new())?;
        // A run's stored key is the entry key followed by its source position, so the table's
        // own bound finds the first stored key at or past `lower`; an entry whose key is a
        // proper prefix of `lower` can sort there too and is skipped below.
        let mut it = table.iter(IterBounds {
            lower: range.lower.clone(),
            upper: None,
        });
        it.seek_to_first();
        it.status()?;
        let mut r = RunSource {
            it,
            with_src,
            upper: range.upper.clone(),
            _table: table,
        };
        if let Some(l) = &range.lower {
            while r.it.valid() && r.key() < l.as_slice() {
                r.it.next();
            }
            r.it.status()?;
        }
        if let Some(a) = after {
            while r.it.valid() && r.key() <= a {
                r.it.next();
            }
            r.it.status()?;
        }
        Ok(r)
    }
}

impl Source for RunSource {
    fn valid(&self) -> bool {
        self.it.valid() && self.upper.as_deref().is_none_or(|u| self.key() < u)
    }
    fn key(&self) -> &[u8] {
        let k = sluice::key::user_key(self.it.key());
        if self.with_src {
            &k[..k.len().saturating_sub(8)]
        } else {
            k
        }
    }
    fn src(&self) -> u64 {
        if self.with_src {
            let k = sluice::key::user_key(self.it.key());
            k.get(k.len().saturating_sub(8)..)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_be_bytes)
        } else {
            0
        }
    }
    fn value(&self) -> &[u8] {
        self.it.value()
    }
    fn next(&mut self) -> sluice::Result<()> {
        self.it.next();
        self.it.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cuts fall at weighted quantiles of the samples, never at the largest one (a heavy last
    /// sample would otherwise leave the range above it empty).
    #[test]
    fn ranges_are_cut_at_quantiles_but_not_at_the_largest_sample() {
        let s = |k: &str, w| (k.as_bytes().to_vec(), w);
        let even = split_ranges(vec![s("d", 1), s("a", 1), s("c", 1), s("b", 1)], 2);
        assert_eq!(even.len(), 2);
        assert_eq!(even[0].upper.as_deref(), Some(&b"b"[..]));
        // The last sample holds most of the bytes: a cut there would leave nothing above it.
        let heavy_last = split_ranges(vec![s("a", 1), s("b", 1), s("z", 100)], 4);
        assert!(heavy_last
            .iter()
            .all(|r| r.upper.as_deref() != Some(&b"z"[..])));
        assert_eq!(heavy_last.last().unwrap().upper, None);
        assert_eq!(split_ranges(vec![s("a", 5)], 3).len(), 1);
        assert_eq!(split_ranges(Vec::new(), 3).len(), 1);
    }
}
