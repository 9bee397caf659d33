//! Merges a sorted internal stream (a memtable for a flush; input tables for a compaction)
//! into new table files.
//!
//! What may be dropped (snapshots split seqnos into *stripes*: a stripe ends at each live
//! snapshot; a reader at a snapshot sees at most one version per stripe boundary):
//! 1. A version with a newer version of the same user key in the same stripe.
//! 2. A point covered by a range deletion that is newer and in the same stripe.
//! 3. At the bottommost level for the key (nothing deeper overlaps it), a deletion, range
//!    deletion or covered point in the oldest stripe.
//!
//! Output files are cut only between user keys (never between versions of one key), so
//! outputs never overlap. Into a level with files beneath it (the *grandparents*), outputs are
//! cut where a grandparent file begins or ends once they hold half the target size or more
//! (more, the more boundaries they have crossed), and may grow to twice the target to reach
//! one: a file that ends where a grandparent file ends rewrites only that file when it moves
//! down, where a file cut blindly at the target size straddles two (RocksDB's
//! `level_compaction_dynamic_file_size`, on by default since 7.8; see [`GrandparentCuts`]). Range deletions are clipped to each output's key range
//! `[its first key, the next output's first key)`; a clipped end that bounds a file is
//! recorded as an exclusive largest key.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::base::filenames::table_file_name;
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, compare_internal, ValueKind, MAX_SEQNO};
use crate::base::range_tombstone::RangeTombstone;
use crate::fs::FileSystem;
use crate::read::range_del::RangeDelAggregator;
use crate::sst::table_builder::{TableBuilder, TableIdentity, TableOptions};
use crate::version::FileMeta;

/// How to write outputs.
pub struct OutputSpec<'a> {
    /// The file system.
    pub fs: &'a dyn FileSystem,
    /// The database directory.
    pub dir: &'a Path,
    /// Table options for the output level.
    pub table: TableOptions,
    /// Cut a new file once one reaches this size.
    pub target_file_size: u64,
    /// Also cut before the first key at or past each of these (ascending).
    pub split_keys: &'a [Vec<u8>],
    /// The files of the level below the output level that the compaction's span overlaps, in
    /// key order (empty for a flush, an intra-L0 compaction, or into the last level with data).
    pub grandparents: &'a [Arc<FileMeta>],
    /// Allocates a file number for each new output.
    pub new_file_number: &'a mut dyn FnMut() -> u64,
}

/// What may be dropped.
pub struct DropPolicy<'a> {
    /// Live snapshot seqnos, ascending.
    pub snapshots: Vec<u64>,
    /// True if nothing below the output level overlaps `[start, end]` (inclusive user keys).
    pub bottommost: &'a (dyn Fn(&[u8], &[u8]) -> bool + Sync),
}

/// Statistics of one merge.
#[derive(Debug, Default, Clone)]
pub struct MergeStats {
    /// Entries read.
    pub entries_in: u64,
    /// Entries written.
    pub entries_out: u64,
    /// Bytes of the output files.
    pub bytes_out: u64,
}

struct OpenOutput {
    number: u64,
    path: PathBuf,
    builder: TableBuilder<Box<dyn crate::fs::WritableFile>>,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    smallest_seqno: u64,
    largest_seqno: u64,
    lower: Option<Vec<u8>>,
}

/// Runs the merge. On error, every output created is removed.
pub fn merge_to_tables(
    input: &mut dyn InternalIterator,
    tombstones: Vec<RangeTombstone>,
    policy: &DropPolicy<'_>,
    out: &mut OutputSpec<'_>,
) -> Result<(Vec<FileMeta>, MergeStats)> {
    let mut created: Vec<PathBuf> = Vec::new();
    let r = merge_inner(input, tombstones, policy, out, &mut created);
    if r.is_err() {
        for p in created {
            let _ = out.fs.remove(&p);
        }
    }
    r
}

fn stripe(snapshots: &[u64], seqno: u64) -> usize {
    snapshots.partition_point(|&s| s < seqno)
}

/// Why an entry is dropped (or not): the rules of the module docs, one per variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Written to the output.
    Keep,
    /// Rule 1: a newer version of the key is in the same stripe.
    Shadowed,
    /// Rule 2: a newer range deletion in the same stripe covers it.
    Covered,
    /// Rule 3: a point deletion in the oldest stripe where nothing deeper holds the key.
    BottommostDeletion,
}

/// The drop rules as a pure, streaming decision over internal keys in order (Pebble's
/// compaction iterator, without the I/O): feed every entry to [`DropRules::decide`].
pub struct DropRules<'a> {
    snapshots: &'a [u64],
    bottommost: &'a (dyn Fn(&[u8], &[u8]) -> bool + Sync),
    tombstones: Vec<RangeTombstone>,
    /// One aggregator per stripe, bounded by the stripe's snapshot.
    aggs: HashMap<usize, RangeDelAggregator>,
    cur_user: Vec<u8>,
    have_user: bool,
    prev_stripe: Option<usize>,
    cur_bottommost: bool,
}

impl<'a> DropRules<'a> {
    /// Rules for one merge of inputs holding `tombstones`.
    pub fn new(policy: &'a DropPolicy<'a>, tombstones: Vec<RangeTombstone>) -> Self {
        DropRules {
            snapshots: &policy.snapshots,
            bottommost: policy.bottommost,
            tombstones,
            aggs: HashMap::new(),
            cur_user: Vec::new(),
            have_user: false,
            prev_stripe: None,
            cur_bottommost: false,
        }
    }

    /// The range deletions to write: all but those in the oldest stripe where nothing deeper
    /// overlaps them (rule 3).
    pub fn kept_tombstones(&self) -> Vec<RangeTombstone> {
        self.tombstones
            .iter()
            .filter(|t| {
                !(stripe(self.snapshots, t.seqno) == 0 && (self.bottommost)(&t.start, &t.end))
            })
            .cloned()
            .collect()
    }

    /// The decision for the next entry of the merged stream.
    pub fn decide(&mut self, p: &key::ParsedKey<'_>) -> Decision {
        if !self.have_user || p.user_key != self.cur_user.as_slice() {
            self.cur_user.clear();
            self.cur_user.extend_from_slice(p.user_key);
            self.have_user = true;
            self.prev_stripe = None;
            self.cur_bottommost = (self.bottommost)(p.user_key, p.user_key);
        }
        let s = stripe(self.snapshots, p.seqno);
        let shadowed = self.prev_stripe == Some(s);
        self.prev_stripe = Some(s);
        if shadowed {
            return Decision::Shadowed;
        }
        if !self.tombstones.is_empty() {
            let (snaps, tombs) = (self.snapshots, &self.tombstones);
            let agg = self.aggs.entry(s).or_insert_with(|| {
                let bound = snaps.get(s).copied().unwrap_or(MAX_SEQNO);
                RangeDelAggregator::new(tombs.iter().cloned(), bound)
            });
            if agg.covers(p.user_key, p.seqno) {
                return Decision::Covered;
            }
        }
        if p.kind == ValueKind::Deletion && s == 0 && self.cur_bottommost {
            return Decision::BottommostDeletion;
        }
        Decision::Keep
    }
}

/// The merge, in steps: decide each entry ([`DropRules`]), cut outputs between user keys at
/// the target size, write the kept range deletions clipped to each output.
fn merge_inner(
    input: &mut dyn InternalIterator,
    tombstones: Vec<RangeTombstone>,
    policy: &DropPolicy<'_>,
    out: &mut OutputSpec<'_>,
    created: &mut Vec<PathBuf>,
) -> Result<(Vec<FileMeta>, MergeStats)> {
    let mut rules = DropRules::new(policy, tombstones);
    let kept_tombs = rules.kept_tombstones();
    let mut stats = MergeStats::default();
    let mut current: Option<OpenOutput> = None;
    let mut finished: Vec<FileMeta> = Vec::new();
    let mut last_user: Option<Vec<u8>> = None;
    let mut next_split = 0;
    let mut gp = GrandparentCuts::new(out.grandparents);
    input.seek_to_first();
    while input.valid() {
        stats.entries_in += 1;
        let ikey = input.key();
        let p = key::parse_internal_key(ikey).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "compaction input has a malformed key {:?}",
                crate::base::error::escape_bytes(ikey)
            ))
        })?;
        if rules.decide(&p) != Decision::Keep {
            input.next();
            continue;
        }
        let new_user = last_user.as_deref() != Some(p.user_key);
        if new_user {
            last_user = Some(p.user_key.to_vec());
        }
        // Cut a new output only at a user-key boundary: at the target size, or at a split key.
        let mut at_split = false;
        while next_split < out.split_keys.len()
            && out.split_keys[next_split].as_slice() <= p.user_key
        {
            next_split += 1;
            at_split = true;
        }
        let crossed = if new_user { gp.advance(p.user_key) } else { 0 };
        let full = current.as_ref().is_none_or(|o| {
            new_user
                && (at_split
                    || gp.should_cut(
                        o.builder.estimated_file_size(),
                        crossed,
                        out.target_file_size,
                    ))
        });
        if full {
            if let Some(prev) = current.take() {
                finished.push(finish_output(prev, Some(p.user_key), &kept_tombs, out.fs)?);
            }
            let lower = finished.last().map(|_| p.user_key.to_vec());
            current = Some(open_output(out, lower, created)?);
            gp.start_output();
        }
        current
            .as_mut()
            .expect("output open")
            .add(ikey, input.value(), p.seqno)?;
        stats.entries_out += 1;
        input.next();
    }
    input.status()?;
    if current.is_none() && finished.is_empty() && !kept_tombs.is_empty() {
        current = Some(open_output(out, None, created)?);
    }
    if let Some(last) = current.take() {
        finished.push(finish_output(last, None, &kept_tombs, out.fs)?);
    }
    stats.bytes_out = finished.iter().map(|f| f.size).sum();
    Ok((finished, stats))
}

/// Where to cut a compaction's outputs so that they line up with the files beneath the output
/// level (the grandparents), so that a later compaction of an output down a level rewrites
/// few grandparent bytes (the rule of RocksDB's `CompactionOutputs::ShouldStopBefore` with
/// `level_compaction_dynamic_file_size`). Fed every new user key in order ([`Self::advance`]),
/// it counts the grandparent boundaries (a file's first or last key) each key crosses; at a
/// crossing, the output is cut:
/// 1. once it holds `50% + 5%` per boundary it has crossed (at most 90%) of the target size:
///    a file that has crossed many boundaries is likely to meet another before the target;
/// 2. when the key jumps over a whole grandparent file (two boundaries crossed if it lands in
///    a gap, three if it lands inside the next file) and the files it reached hold more than an
///    eighth of the target: a later compaction of this output would rewrite them for nothing;
/// 3. when the output and the grandparent bytes it overlaps pass 25 targets (RocksDB's
///    `max_compaction_bytes` default), which bounds that later compaction.
///
/// Without a crossing it grows to twice the target before it is cut. With no grandparents it
/// cuts at the target size, as before. Only point keys move it: an output's range deletion
/// that reaches over grandparent files is not counted (they are clipped to the output).
/// Each file crossed counts its first and its last key, so contiguous grandparents give two
/// boundaries per file and an output crossing many of them reaches the 90% step quickly.
struct GrandparentCuts<'a> {
    files: &'a [Arc<FileMeta>],
    /// The grandparent file at or after the last key.
    next: usize,
    /// The last key lies between grandparent files (or before the first, after the last).
    in_gap: bool,
    seen_key: bool,
    /// Grandparent bytes the open output overlaps.
    overlapped: u64,
    /// Boundaries the open output has crossed.
    crossed_in_output: u64,
    /// `overlapped` before the last key.
    overlapped_before: u64,
}

impl<'a> GrandparentCuts<'a> {
    fn new(files: &'a [Arc<FileMeta>]) -> Self {
        GrandparentCuts {
            files,
            next: 0,
            in_gap: true,
            seen_key: false,
            overlapped: 0,
            crossed_in_output: 0,
            overlapped_before: 0,
        }
    }

    /// Moves to user key `k` (ascending); returns the grandparent boundaries it crossed since
    /// the last key.
    fn advance(&mut self, k: &[u8]) -> u64 {
        self.overlapped_before = self.overlapped;
        let mut crossed = 0;
        while let Some(f) = self.files.get(self.next) {
            if self.in_gap {
                if k < f.smallest_user() {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                    self.overlapped = self.overlapped.saturating_add(f.size);
                }
                self.in_gap = false;
            } else {
                // A file ending at a range deletion's exclusive end holds keys below it only.
                let largest = f.largest_user();
                if k < largest || (k == largest && !f.largest_is_exclusive()) {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                }
                self.in_gap = true;
                self.next += 1;
            }
        }
        if !self.seen_key {
            self.seen_key = true;
            self.overlapped = self.overlapping_now();
        }
        self.crossed_in_output += crossed;
        crossed
    }

    /// The grandparent bytes the last key overlaps.
    fn overlapping_now(&self) -> u64 {
        match self.files.get(self.next) {
            Some(f) if !self.in_gap => f.size,
            _ => 0,
        }
    }

    /// A new output begins at the last key.
    fn start_output(&mut self) {
        self.crossed_in_output = 0;
        self.overlapped = self.overlapping_now();
    }

    /// Whether to cut the open output of `size` bytes before the last key, which crossed
    /// `crossed` boundaries.
    fn should_cut(&self, size: u64, crossed: u64, target: u64) -> bool {
        if self.files.is_empty() {
            return size >= target;
        }
        if size >= target.saturating_mul(2) {
            return true;
        }
        if crossed == 0 {
            return false;
        }
        let skipped = self.overlapped.saturating_sub(self.overlapped_before);
        let skip_needs = if self.in_gap { 2 } else { 3 };
        let pct = 50 + (self.crossed_in_output * 5).min(40);
        self.overlapped.saturating_add(size) > target.saturating_mul(25)
            || (crossed >= skip_needs && skipped > target / 8)
            || size >= target.div_ceil(100).saturating_mul(pct)
    }
}

impl OpenOutput {
    fn add(&mut self, ikey: &[u8], value: &[u8], seqno: u64) -> Result<()> {
        if self.builder.num_entries() == 0 {
            self.smallest = ikey.to_vec();
        }
        self.builder.add(ikey, value)?;
        self.largest.clear();
        self.largest.extend_from_slice(ikey);
        self.smallest_seqno = self.smallest_seqno.min(seqno);
        self.largest_seqno = self.largest_seqno.max(seqno);
        Ok(())
    }
}

fn open_output(
    out: &mut OutputSpec<'_>,
    lower: Option<Vec<u8>>,
    created: &mut Vec<PathBuf>,
) -> Result<OpenOutput> {
    let number = (out.new_file_number)();
    let path = table_file_name(out.dir, number);
    let file = out.fs.create(&path).map_err(|e| Error::io(&path, e))?;
    created.push(path.clone());
    let builder = TableBuilder::new(
        file,
        out.table.clone(),
        TableIdentity {
            external_sst: false,
            db_id: "sluice".into(),
            db_session_id: String::new(),
        },
    )?;
    Ok(OpenOutput {
        number,
        path,
        builder,
        smallest: Vec::new(),
        largest: Vec::new(),
        smallest_seqno: MAX_SEQNO,
        largest_seqno: 0,
        lower,
    })
}

/// Adds the clipped range deletions, finishes and syncs the file, and returns its metadata.
fn finish_output(
    mut o: OpenOutput,
    upper: Option<&[u8]>,
    tombs: &[RangeTombstone],
    fs: &dyn FileSystem,
) -> Result<FileMeta> {
    for t in tombs {
        let Some((start, end)) = t.clipped(o.lower.as_deref(), upper) else {
            continue;
        };
        o.builder.add_range_deletion(start, end, t.seqno)?;
        let sk = key::make_internal_key(start, t.seqno, ValueKind::RangeDeletion);
        if o.smallest.is_empty() || compare_internal(&sk, &o.smallest).is_lt() {
            o.smallest = sk;
        }
        let ek = key::make_internal_key(end, MAX_SEQNO, ValueKind::RangeDeletion);
        if o.largest.is_empty() || key::user_key(&ek) > key::user_key(&o.largest) {
            o.largest = ek;
        }
        o.smallest_seqno = o.smallest_seqno.min(t.seqno);
        o.largest_seqno = o.largest_seqno.max(t.seqno);
    }
    let (mut w, props) = o.builder.finish()?;
    w.sync().map_err(|e| Error::io(&o.path, e))?;
    drop(w);
    let size = fs.file_size(&o.path).map_err(|e| Error::io(&o.path, e))?;
    Ok(FileMeta {
        number: o.number,
        size,
        smallest: o.smallest,
        largest: o.largest,
        smallest_seqno: if o.smallest_seqno == MAX_SEQNO {
            0
        } else {
            o.smallest_seqno
        },
        largest_seqno: o.largest_seqno,
        global_seqno: 0,
        range_dels: props.num_range_deletions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(i: usize) -> Vec<u8> {
        format!("k{i:04}").into_bytes()
    }

    fn gp(spans: &[(usize, usize, u64)]) -> Vec<Arc<FileMeta>> {
        let files = spans.iter().enumerate();
        files
            .map(|(n, &(lo, hi, size))| {
                Arc::new(FileMeta::for_test(n as u64, &k(lo), &k(hi), size, 1))
            })
            .collect()
    }

    /// `n` grandparent files of `keys` keys each, side by side from key 0 (`keys` bytes each).
    fn contiguous(n: usize, keys: usize) -> Vec<Arc<FileMeta>> {
        let spans: Vec<(usize, usize, u64)> = (0..n)
            .map(|j| (keys * j, keys * j + keys - 1, keys as u64))
            .collect();
        gp(&spans)
    }

    /// Replays the merge's cut decisions over `keys` (one byte each): the outputs as
    /// `(first key index, last key index)`.
    fn cuts(keys: &[usize], grandparents: &[Arc<FileMeta>], target: u64) -> Vec<(usize, usize)> {
        let mut g = GrandparentCuts::new(grandparents);
        let mut outputs: Vec<(usize, usize)> = Vec::new();
        let mut size = 0;
        for &i in keys {
            let crossed = g.advance(&k(i));
            if outputs.is_empty() || g.should_cut(size, crossed, target) {
                outputs.push((i, i));
                g.start_output();
                size = 0;
            }
            size += 1;
            outputs.last_mut().expect("an output").1 = i;
        }
        outputs
    }

    /// How many grandparent files an output `[lo, hi]` overlaps.
    fn overlapped(grandparents: &[Arc<FileMeta>], (lo, hi): (usize, usize)) -> usize {
        let (lo, hi) = (k(lo), k(hi));
        let over = grandparents
            .iter()
            .filter(|f| f.overlaps(Some(&lo), Some(&hi)));
        over.count()
    }

    #[test]
    fn without_grandparents_outputs_are_cut_at_the_target_size() {
        let keys: Vec<usize> = (0..1000).collect();
        let got = cuts(&keys, &[], 80);
        assert_eq!(got.len(), 13, "{got:?}");
        assert!(
            got.iter().rev().skip(1).all(|&(lo, hi)| hi - lo + 1 == 80),
            "{got:?}"
        );
    }

    /// Grandparent files of 100 keys under a target of 80: every output ends where a
    /// grandparent file ends, so each overlaps exactly one; cut at the target they would
    /// straddle two.
    #[test]
    fn outputs_line_up_with_the_grandparent_files() {
        let keys: Vec<usize> = (0..1000).collect();
        let g = contiguous(10, 100);
        let got = cuts(&keys, &g, 80);
        assert_eq!(got.len(), 10, "{got:?}");
        for &o in &got {
            assert_eq!(overlapped(&g, o), 1, "{o:?} of {got:?}");
        }
        // Cut at the target, 7 of the 13 outputs hold a grandparent boundary inside them.
        let blind = cuts(&keys, &[], 80);
        let straddling = blind.iter().filter(|&&o| overlapped(&g, o) > 1).count();
        assert_eq!(straddling, 7, "{blind:?}");
    }

    /// Narrow contiguous grandparent files (two boundaries each): the threshold climbs 10%
    /// per file to its 90% cap, where the output is cut, on a boundary.
    #[test]
    fn many_narrow_grandparents_cut_at_nine_tenths_of_the_target() {
        let keys: Vec<usize> = (0..2000).collect();
        let g = contiguous(200, 10);
        let got = cuts(&keys, &g, 100);
        for &(lo, hi) in got.iter().rev().skip(1) {
            assert_eq!(hi - lo + 1, 90, "{got:?}");
            assert_eq!(hi % 10, 9, "cut inside a grandparent file: {got:?}");
        }
    }

    /// Grandparent files of 60 keys under a target of 100: at the first boundary the output
    /// holds 60% of the target, past the 60% the two boundaries crossed ask for, so it ends
    /// with the grandparent file, under the target.
    #[test]
    fn a_boundary_past_half_the_target_ends_the_output() {
        let keys: Vec<usize> = (0..600).collect();
        let g = contiguous(10, 60);
        let got = cuts(&keys, &g, 100);
        let want: Vec<(usize, usize)> = (0..10).map(|j| (60 * j, 60 * j + 59)).collect();
        assert_eq!(got, want);
    }

    /// A grandparent file whose largest key is a range deletion's exclusive end does not hold
    /// that key: the next file starts there, and the output is cut before it.
    #[test]
    fn an_exclusive_end_is_not_inside_its_file() {
        let mut first = FileMeta::for_test(1, &k(0), &k(100), 100, 1);
        first.largest = key::make_internal_key(&k(100), MAX_SEQNO, ValueKind::RangeDeletion);
        assert!(first.largest_is_exclusive());
        let g = vec![
            Arc::new(first),
            Arc::new(FileMeta::for_test(2, &k(100), &k(199), 100, 1)),
        ];
        let keys: Vec<usize> = (0..200).collect();
        let got = cuts(&keys, &g, 80);
        assert_eq!(got, vec![(0, 99), (100, 199)]);
    }

    /// One grandparent file under everything: nothing to line up with, so outputs grow to
    /// twice the target.
    #[test]
    fn inside_one_wide_grandparent_outputs_stop_at_twice_the_target() {
        let keys: Vec<usize> = (0..1000).collect();
        let g = gp(&[(0, 999, 1000)]);
        let got = cuts(&keys, &g, 100);
        assert_eq!(got.len(), 5, "{got:?}");
        assert!(got.iter().all(|&(lo, hi)| hi - lo + 1 == 200), "{got:?}");
    }

    /// Through the merge itself: a memtable's keys written above four grandparent files of
    /// 1,000 keys (about 1.4 targets of bytes each) come out as four tables, each overlapping
    /// one grandparent file; cut at the target, they are six, and three straddle two files.
    #[test]
    fn merged_tables_line_up_with_the_grandparents() {
        use crate::fs::{FileSystem, MemFs};
        use crate::memtable::MemTable;
        let mem = Arc::new(MemTable::new(1));
        for i in 0..4000 {
            mem.add(i as u64 + 1, ValueKind::Value, &k(i), &[7u8; 100]);
        }
        let g = contiguous(4, 1000);
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let never = |_: &[u8], _: &[u8]| false;
        let policy = DropPolicy {
            snapshots: Vec::new(),
            bottommost: &never,
        };
        let mut number = 10;
        let mut merge = |grandparents: &[Arc<FileMeta>]| {
            let mut alloc = || {
                number += 1;
                number
            };
            let mut spec = OutputSpec {
                fs: &fs,
                dir,
                table: TableOptions::default(),
                target_file_size: 80_000,
                split_keys: &[],
                grandparents,
                new_file_number: &mut alloc,
            };
            let mut it = mem.iter(None, None);
            merge_to_tables(&mut it, Vec::new(), &policy, &mut spec)
                .unwrap()
                .0
        };
        let over = |f: &FileMeta| {
            let (lo, hi) = (Some(f.smallest_user()), Some(f.largest_user()));
            g.iter().filter(|x| x.overlaps(lo, hi)).count()
        };
        let lined = merge(&g);
        assert_eq!(lined.len(), 4, "{lined:?}");
        assert!(lined.iter().all(|f| over(f) == 1), "{lined:?}");
        assert!(lined.iter().all(|f| f.size < 160_000), "{lined:?}");
        let blind = merge(&[]);
        assert_eq!(blind.len(), 6, "{blind:?}");
        assert_eq!(blind.iter().filter(|f| over(f) > 1).count(), 3, "{blind:?}");
    }

    /// Keys that jump over a whole grandparent file of more than an eighth of the target end
    /// the output, however small: otherwise moving it down would rewrite that file for
    /// nothing. A small file skipped does not.
    #[test]
    fn a_skipped_grandparent_file_ends_the_output() {
        let keys: Vec<usize> = (0..30).chain(300..330).chain(600..630).collect();
        let g = gp(&[(100, 199, 50), (400, 499, 5)]);
        let got = cuts(&keys, &g, 100);
        assert_eq!(got, vec![(0, 29), (300, 629)]);
    }
}
