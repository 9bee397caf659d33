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
//! outputs never overlap. Range deletions are clipped to each output's key range
//! `[its first key, the next output's first key)`; a clipped end that bounds a file is
//! recorded as an exclusive largest key.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
        let full = current.as_ref().is_none_or(|o| {
            new_user && (at_split || o.builder.estimated_file_size() >= out.target_file_size)
        });
        if full {
            if let Some(prev) = current.take() {
                finished.push(finish_output(prev, Some(p.user_key), &kept_tombs, out.fs)?);
            }
            let lower = finished.last().map(|_| p.user_key.to_vec());
            current = Some(open_output(out, lower, created)?);
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
