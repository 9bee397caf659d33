//! Row-group ids of a columnar table's distributed import.
//!
//! The columnar layout stores each row group's chunks under the group's id
//! ([`crate::chunk`]); ids are unique in the table for its lifetime. Tasks on other machines
//! cannot ask the Db for ids, so the coordinator reserves one block of
//! [`IDS_PER_IMPORT`] ids when it plans the job ([`JobPlan::group_base`]) and each range takes
//! a fixed slice of it: range `r` numbers its groups from `group_base + r ×`
//! [`RANGE_GROUP_IDS`]. A range's chunk keys of one column therefore lie in an interval of
//! their own, so the ranges' column files are disjoint and the job still commits in one ingest.
//!
//! Invariants:
//! 1. From the plan to the commit, this process holds the block as any import holds its
//!    ids ([`reserve_group_ids`]): a single-machine import or a group rewrite of the table
//!    started meanwhile numbers its groups past it.
//! 2. The commit holds the table's latch as an import does and checks, before it ingests,
//!    that the block is still the job's: held by no other import, and no stored group in it. A coordinator that restarted (a resumed job) reserves it again there; if
//!    another import or a rewrite has taken ids in it since, the commit fails, the Db
//!    untouched, and the job must run again under a new id.
//! 3. A range never numbers a group outside its slice: the build checks its chunk files'
//!    last keys.
//!
//! [`JobPlan::group_base`]: super::JobPlan::group_base

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use sluice::{Db, ReadOptions, SstFileInfo};

use super::JobPlan;
use crate::chunk::{
    chunk_group, chunk_key, reserve_group_ids, GroupIds, TableLatch, IDS_PER_IMPORT,
};
use crate::keycode::prefix;
use crate::schema::{TableDef, COLUMN_INDEX_BASE};
use crate::ImportError;

/// Group ids of one range: 2^24 groups of up to 4,096 rows, ~68 billion rows a range.
pub const RANGE_GROUP_IDS: u64 = 1 << 24;

/// Ranges a columnar job may cut its primary index into (its block / a range's ids).
pub const MAX_RANGES: u64 = IDS_PER_IMPORT / RANGE_GROUP_IDS;

/// The blocks planned jobs hold in this process, by Db directory and job id (invariant 1).
static HELD: Mutex<BTreeMap<(PathBuf, String), GroupIds>> = Mutex::new(BTreeMap::new());

/// Plans job `job_id` into columnar table `t`: reserves a block of group ids and holds it
/// until the job's commit. Returns the block's first id.
pub(super) fn reserve(db: &Db, t: &TableDef, job_id: &str) -> Result<u64, ImportError> {
    let key = (db.path().to_path_buf(), job_id.to_string());
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    // A job planned again (a rerun in this process) lets its earlier block go first, so it
    // gets the same block back while nothing was stored past it: the block its saved plan
    // names.
    drop(held.remove(&key));
    let ids = reserve_group_ids(db, t, 0)?;
    let start = ids.start;
    held.insert(key, ids);
    Ok(start)
}

/// The first group id of `range` (invariant 3's slice).
pub(super) fn range_first_group(plan: &JobPlan, range: u32) -> Result<u64, ImportError> {
    if u64::from(range) >= MAX_RANGES {
        return Err(ImportError::InvalidArgument(format!(
            "table {}: a columnar table's distributed import takes at most {MAX_RANGES} \
             ranges (range {range} asked for)",
            plan.table.name
        )));
    }
    Ok(plan.group_base + u64::from(range) * RANGE_GROUP_IDS)
}

/// Invariant 3: every chunk file of `range` names groups of its slice only. Every group has a
/// chunk of column 0, so the last key of column 0's files names the range's highest group.
pub(super) fn check_range_files(
    plan: &JobPlan,
    range: u32,
    files: &[SstFileInfo],
) -> Result<(), ImportError> {
    let first = range_first_group(plan, range)?;
    let column0 = prefix(plan.table.id, COLUMN_INDEX_BASE);
    let highest = files
        .iter()
        .filter(|f| f.largest_key.starts_with(&column0))
        .filter_map(|f| chunk_group(&f.largest_key))
        .max();
    if highest.is_some_and(|g| g >= first + RANGE_GROUP_IDS) {
        return Err(ImportError::InvalidArgument(format!(
            "table {}: range {range} holds more than {RANGE_GROUP_IDS} row groups; cut the job \
             into more ranges",
            plan.table.name
        )));
    }
    Ok(())
}

/// What a columnar job's commit holds while it ingests (invariant 2).
pub(super) struct CommitHold {
    _ids: GroupIds,
    _latch: TableLatch,
}

/// Invariant 2: the table's latch and the job's block, checked still the job's.
pub(super) fn hold_for_commit(db: &Db, plan: &JobPlan) -> Result<CommitHold, ImportError> {
    let t = &plan.table;
    let latch = TableLatch::for_import(db, t);
    let key = (db.path().to_path_buf(), plan.job_id.clone());
    // The block this job's latest plan holds; one not the plan's (the job planned again
    // since, with ids stored meanwhile) goes before the plan's block is reserved again.
    let mine = HELD
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&key)
        .filter(|ids| ids.start == plan.group_base);
    let ids = match mine {
        Some(ids) => ids,
        None => reserve_group_ids(db, t, plan.group_base)?,
    };
    if ids.start != plan.group_base || stored_in_block(db, t, plan.group_base)? {
        return Err(ImportError::InvalidArgument(format!(
            "table {}: row groups from id {} were taken by another import or a group rewrite \
             while job {} ran, so its files cannot be committed; nothing was changed: run the \
             job again under a new job id",
            t.name, plan.group_base, plan.job_id
        )));
    }
    Ok(CommitHold {
        _ids: ids,
        _latch: latch,
    })
}

/// Whether table `t` stores a row group with an id in the block starting at `start` (every
/// group has a chunk of column 0).
fn stored_in_block(db: &Db, t: &TableDef, start: u64) -> Result<bool, ImportError> {
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    chunk_key(t, 0, start, &mut lo);
    chunk_key(t, 0, start.saturating_add(IDS_PER_IMPORT), &mut hi);
    let mut it = db.iter(ReadOptions {
        lower_bound: Some(lo),
        upper_bound: Some(hi),
        ..Default::default()
    })?;
    it.seek_to_first();
    let found = it.valid();
    it.status()?;
    Ok(found)
}
