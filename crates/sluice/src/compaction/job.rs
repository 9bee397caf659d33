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
    /// Allocates a file number for each new output.
    pub new_file_number: &'a mut dyn FnMut() -> u64,
}

/// What may be dropped.
pub struct DropPolicy<'a> {
    /// Live snapshot seqnos, ascending.
    pub snapshots: Vec<u64>,
    /// True if nothing below the output level overlaps `[start, end]` (inclusive user keys).
    pub bottommost: &'a dyn Fn(&[u8], &[u8]) -> bool,
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

fn merge_inner(
    input: &mut dyn InternalIterator,
    tombstones: Vec<RangeTombstone>,
    policy: &DropPolicy<'_>,
    out: &mut OutputSpec<'_>,
    created: &mut Vec<PathBuf>,
) -> Result<(Vec<FileMeta>, MergeStats)> {
    let snaps = &policy.snapshots;
    // Range deletions that survive: drop those in the oldest stripe at the bottommost level.
    let kept_tombs: Vec<RangeTombstone> = tombstones
        .iter()
        .filter(|t| !(stripe(snaps, t.seqno) == 0 && (policy.bottommost)(&t.start, &t.end)))
        .cloned()
        .collect();
    // One aggregator per stripe, bounded by the stripe's snapshot (see module docs).
    let mut aggs: HashMap<usize, RangeDelAggregator> = HashMap::new();

    let mut stats = MergeStats::default();
    let mut outputs: Vec<OpenOutput> = Vec::new();
    let mut finished: Vec<FileMeta> = Vec::new();
    let mut cur_user: Vec<u8> = Vec::new();
    let mut have_user = false;
    let mut prev_stripe: Option<usize> = None;
    let mut cur_bottommost = false;

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
        let new_user = !have_user || p.user_key != cur_user.as_slice();
        if new_user {
            cur_user.clear();
            cur_user.extend_from_slice(p.user_key);
            have_user = true;
            prev_stripe = None;
            cur_bottommost = (policy.bottommost)(p.user_key, p.user_key);
        }
        let s = stripe(snaps, p.seqno);
        let shadowed = prev_stripe == Some(s);
        prev_stripe = Some(s);
        let covered = !shadowed
            && !tombstones.is_empty()
            && aggs
                .entry(s)
                .or_insert_with(|| {
                    let bound = snaps.get(s).copied().unwrap_or(MAX_SEQNO);
                    RangeDelAggregator::new(tombstones.iter().cloned(), bound)
                })
                .covers(p.user_key, p.seqno);
        let obsolete_delete = p.kind == ValueKind::Deletion && s == 0 && cur_bottommost;
        if shadowed || covered || obsolete_delete {
            input.next();
            continue;
        }
        // Cut a new output only at a user-key boundary.
        let need_new = match outputs.last() {
            None => true,
            Some(o) => new_user && o.builder.estimated_file_size() >= out.target_file_size,
        };
        if need_new {
            if let Some(prev) = outputs.pop() {
                finished.push(finish_output(prev, Some(p.user_key), &kept_tombs, out.fs)?);
            }
            let lower = finished.last().map(|_| p.user_key.to_vec());
            let o = open_output(out, lower, created)?;
            outputs.push(o);
        }
        let o = outputs.last_mut().expect("output open");
        if o.builder.num_entries() == 0 {
            o.smallest = ikey.to_vec();
        }
        o.builder.add(ikey, input.value())?;
        o.largest.clear();
        o.largest.extend_from_slice(ikey);
        o.smallest_seqno = o.smallest_seqno.min(p.seqno);
        o.largest_seqno = o.largest_seqno.max(p.seqno);
        stats.entries_out += 1;
        input.next();
    }
    input.status()?;
    if outputs.is_empty() && !kept_tombs.is_empty() {
        let o = open_output(out, None, created)?;
        outputs.push(o);
    }
    if let Some(last) = outputs.pop() {
        finished.push(finish_output(last, None, &kept_tombs, out.fs)?);
    }
    stats.bytes_out = finished.iter().map(|f| f.size).sum();
    Ok((finished, stats))
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
        let start = match &o.lower {
            Some(lo) if lo.as_slice() > t.start.as_slice() => lo.as_slice(),
            _ => t.start.as_slice(),
        };
        let end = match upper {
            Some(up) if up < t.end.as_slice() => up,
            _ => t.end.as_slice(),
        };
        if start >= end {
            continue;
        }
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
