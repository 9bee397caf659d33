//! Steps 4 and 5 of a distributed import: one range's SSTs, and the commit of them all.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::RecordBatch;
use serde::{Deserialize, Serialize};
use sluice::{Db, IngestOptions, SstWriter, TableOptions};

use super::groups;
use super::job::job_dir;
use super::rejects::{over_limit, RowReject};
use super::JobPlan;
use crate::catalog;
use crate::error::{OtherRow, RowPlace};
use crate::merge::{column_file_options, FinalWriter};
use crate::parse::LINE_BITS;
use crate::pipeline::merge::policy::{row_record, secondary_keys};
use crate::schema::Layout;
use crate::ImportError;

/// One SST of a range.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RangeFile {
    /// Where the task wrote it.
    pub path: PathBuf,
    /// Its smallest key.
    pub smallest: Vec<u8>,
    /// Its largest key.
    pub largest: Vec<u8>,
    /// Entries.
    pub entries: u64,
    /// Bytes.
    pub bytes: u64,
}

/// What a task built for one (slot, range).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RangeManifest {
    /// The job.
    pub job_id: String,
    /// The index slot (0: primary).
    pub slot: u32,
    /// The range.
    pub range: u32,
    /// The attempt that built it (its directory's name).
    pub attempt: String,
    /// Its files, in key order.
    pub files: Vec<RangeFile>,
    /// Entries written.
    pub entries: u64,
    /// Source positions of the rows left out of the primary index (primary ranges): dropped
    /// by the duplicate policy or rejected. Their secondary entries must be left out too.
    pub dropped: Vec<u64>,
    /// Rows the duplicate policy dropped (`first`, `last`; an input row meeting a stored
    /// row under `first` counts too).
    #[serde(default)]
    pub duplicates: u64,
    /// Rows rejected as duplicates (`error` with `max_errors`), in key order.
    #[serde(default)]
    pub rejects: Vec<RowReject>,
    /// (slot, key): the secondary entries of stored rows that input rows replaced (`last`)
    /// and do not have themselves; the secondary builds delete them.
    #[serde(default)]
    pub deletions: Vec<(u32, Vec<u8>)>,
    /// A columnar table's stored rows that input rows replaced (`last`): the deletion marks
    /// of their positions (`table ‖ DEAD_INDEX_ID ‖ group ‖ position`), written by the commit.
    #[serde(default)]
    pub dead_marks: Vec<Vec<u8>>,
}

/// What the primary ranges decided that the secondary ranges must follow.
#[derive(Debug, Clone, Default)]
pub struct FromPrimary {
    /// Source positions of the rows left out of the primary index.
    pub dropped: HashSet<u64>,
    /// (slot, key) of stored entries to delete.
    pub deletions: Vec<(u32, Vec<u8>)>,
}

impl FromPrimary {
    /// Gathered from the primary ranges' manifests.
    pub fn of(manifests: &[RangeManifest]) -> FromPrimary {
        let primary = || manifests.iter().filter(|m| m.slot == 0);
        FromPrimary {
            dropped: primary().flat_map(|m| m.dropped.iter().copied()).collect(),
            deletions: primary()
                .flat_map(|m| m.deletions.iter().cloned())
                .collect(),
        }
    }
}

impl RangeManifest {
    /// The manifest as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A manifest from [`to_json`](Self::to_json)'s text.
    pub fn from_json(s: &str) -> Result<RangeManifest, ImportError> {
        serde_json::from_str(s)
            .map_err(|e| ImportError::InvalidArgument(format!("not a range manifest: {e}")))
    }
}

fn place(plan: &JobPlan, src: u64) -> RowPlace {
    let file = (src >> LINE_BITS) as usize;
    RowPlace {
        file: plan
            .sources
            .get(file)
            .map_or("?", |s| s.as_str())
            .to_string(),
        line: src & ((1 << LINE_BITS) - 1),
    }
}

/// The directory of one attempt of a job: `dir/sluice-job-<job id>/<attempt>`.
pub fn attempt_dir(dir: &Path, job_id: &str, attempt: &str) -> PathBuf {
    job_dir(dir, job_id).join(attempt)
}

/// One entry of a range: key, value, source position (0: a stored entry).
type Item<'a> = (&'a [u8], &'a [u8], u64);

/// Step 4: the entries of (`slot`, `range`) found in `batches` (encoded batches; entries of
/// other slots or of other ranges under the plan's cut points are skipped), sorted, the
/// duplicate policy applied (primary) or the unique values checked, entries of rows the
/// primary dropped left out and its deletions written (secondary, `from`), as SSTs under
/// `attempt_dir(dir, job, attempt)`. Stored entries (source position 0, from
/// [`JobPlan::existing_entries`]) take part in the checks and are never written.
pub fn build_range(
    plan: &JobPlan,
    slot: usize,
    range: u32,
    batches: &[RecordBatch],
    from: &FromPrimary,
    dir: &Path,
    attempt: &str,
) -> Result<RangeManifest, ImportError> {
    let drop = &from.dropped;
    let mut deletions: Vec<&[u8]> = from
        .deletions
        .iter()
        .filter(|(s, k)| *s as usize == slot && plan.range_of(slot, k) == range)
        .map(|(_, k)| k.as_slice())
        .collect();
    deletions.sort_unstable();
    let deleted: HashSet<&[u8]> = deletions.iter().copied().collect();
    let mut deletions = deletions.into_iter().peekable();
    let mut items = range_items(plan, slot, range, batches)?;
    items.sort_unstable_by(|a, b| a.0.cmp(b.0).then(a.2.cmp(&b.2)));
    let out = attempt_dir(dir, &plan.job_id, attempt);
    std::fs::create_dir_all(&out).map_err(|e| ImportError::io(&out, e))?;
    let mut w = FinalWriter::new(
        &out,
        format!("s{slot}-r{range}"),
        plan.target_file_size,
        TableOptions::default(),
        Arc::new(AtomicU64::new(0)),
    );
    let columnar = slot == 0 && plan.table.layout == Layout::Columnar;
    if columnar {
        // Each row kept becomes its primary entry here and a cell of its group's chunks.
        let first_group = groups::range_first_group(plan, range)?;
        let opts = column_file_options(TableOptions::default());
        w.split_columns(&plan.table, opts, 1, Vec::new(), first_group);
    }
    let mut res = Resolution {
        plan,
        dropped: Vec::new(),
        duplicates: 0,
        rejects: Vec::new(),
        deletions: Vec::new(),
        dead_marks: Vec::new(),
    };
    let mut entries = 0u64;
    let t = &plan.table;
    let unique = slot > 0 && t.indexes[slot - 1].unique;
    // Entries with equal keys (primary) or equal unique values: one group.
    let group_key = |k: &[u8]| -> Vec<u8> {
        if unique {
            t.unique_prefix(slot, k)
                .map_or_else(|| k.to_vec(), <[u8]>::to_vec)
        } else {
            k.to_vec()
        }
    };
    let mut i = 0;
    while i < items.len() {
        let g = group_key(items[i].0);
        let mut j = i + 1;
        while j < items.len() && (slot == 0 || unique) && group_key(items[j].0) == g {
            j += 1;
        }
        let group: Vec<&Item<'_>> = items[i..j]
            .iter()
            .filter(|e| slot == 0 || !drop.contains(&e.2))
            .collect();
        i = j;
        // Stored entries sort first in their group (source position 0).
        let stored = group.iter().take_while(|e| e.2 == 0).count();
        let (old, new) = group.split_at(stored);
        if new.is_empty() {
            continue;
        }
        let keep: Vec<&Item<'_>> = if slot == 0 {
            res.primary(new, old.first().copied())?
                .into_iter()
                .collect()
        } else if unique && t.unique_prefix(slot, new[0].0).is_some() {
            // A stored holder of the value is no conflict once this import deletes its entry.
            let holder = old
                .iter()
                .copied()
                .find(|s| s.0 != new[0].0 && !deleted.contains(s.0));
            vec![res.unique(slot, &g, holder, new)?]
        } else {
            // A plain index, or NULLs in a unique index (exempt): every entry stays.
            new.to_vec()
        };
        for e in keep {
            while let Some(d) = deletions.next_if(|d| *d <= e.0) {
                // Equal: the input row has the entry again; its put is all that is needed.
                if d < e.0 {
                    w.delete(d)?;
                }
            }
            w.put(e.0, e.1)?;
            entries += 1;
        }
    }
    for d in deletions {
        w.delete(d)?;
    }
    let files = w.finish()?;
    if columnar {
        groups::check_range_files(plan, range, &files)?;
    }
    let files = files
        .into_iter()
        .map(|f| RangeFile {
            path: f.path,
            smallest: f.smallest_key,
            largest: f.largest_key,
            entries: f.entries,
            bytes: f.file_size,
        })
        .collect();
    Ok(RangeManifest {
        job_id: plan.job_id.clone(),
        slot: slot as u32,
        range,
        attempt: attempt.to_string(),
        files,
        entries,
        dropped: res.dropped,
        duplicates: res.duplicates,
        rejects: res.rejects,
        deletions: res.deletions,
        dead_marks: res.dead_marks,
    })
}

/// The entries of (`slot`, `range`) in `batches`.
fn range_items<'b>(
    plan: &JobPlan,
    slot: usize,
    range: u32,
    batches: &'b [RecordBatch],
) -> Result<Vec<Item<'b>>, ImportError> {
    let mut items = Vec::new();
    for b in batches {
        let cols = b.columns();
        if cols.len() != 5 {
            return Err(ImportError::InvalidArgument(
                "not an encoded batch (slot, range, key, value, src)".into(),
            ));
        }
        let slots = cols[0].as_primitive::<UInt32Type>();
        let (keys, values) = (cols[2].as_binary::<i32>(), cols[3].as_binary::<i32>());
        let srcs = cols[4].as_primitive::<UInt64Type>();
        for i in 0..b.num_rows() {
            // The range by the plan's cuts, not the batch's column: a batch encoded before the
            // cuts were set (range 0) is routed right too.
            if slots.value(i) as usize == slot && plan.range_of(slot, keys.value(i)) == range {
                items.push((keys.value(i), values.value(i), srcs.value(i)));
            }
        }
    }
    Ok(items)
}

/// The duplicate policy and unique checks of one range, with what they left out.
struct Resolution<'p> {
    plan: &'p JobPlan,
    dropped: Vec<u64>,
    duplicates: u64,
    rejects: Vec<RowReject>,
    deletions: Vec<(u32, Vec<u8>)>,
    dead_marks: Vec<Vec<u8>>,
}

impl Resolution<'_> {
    /// Counts a rejected row; more than `max_errors` in this range alone fail it.
    fn reject(&mut self, src: u64, error: ImportError, value: &[u8]) -> Result<(), ImportError> {
        let record = row_record(&self.plan.table, value);
        self.rejects.extend(RowReject::new(src, &error, &record));
        match over_limit(&self.rejects, self.plan.max_errors) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The input rows `new` of one primary key (source order), and the stored row with it if
    /// any. Returns the row kept, as `sluice import` would: later input rows are refused
    /// (`error`) or dropped (`first`, `last` keeps the last), then the survivor meets the stored
    /// row (`error`: refused; `first`: dropped; `last`: it replaces the stored row, whose index
    /// entries it does not share are deleted).
    fn primary<'i>(
        &mut self,
        new: &[&'i Item<'i>],
        stored: Option<&Item<'_>>,
    ) -> Result<Option<&'i Item<'i>>, ImportError> {
        let plan = self.plan;
        let key = new[0].0;
        let keep = match plan.on_duplicate.as_str() {
            "last" => new.len() - 1,
            _ => 0,
        };
        for (n, e) in new.iter().enumerate() {
            if n == keep {
                continue;
            }
            self.dropped.push(e.2);
            if plan.on_duplicate == "error" {
                let err = ImportError::DuplicateKey {
                    place: place(plan, e.2),
                    key: plan.table.show_pk(key),
                    other: OtherRow::Input(Some(place(plan, new[0].2))),
                };
                self.reject(e.2, err, e.1)?;
            } else {
                self.duplicates += 1;
            }
        }
        let kept = new[keep];
        let Some(stored) = stored else {
            return Ok(Some(kept));
        };
        match plan.on_duplicate.as_str() {
            "error" => {
                self.dropped.push(kept.2);
                let err = ImportError::DuplicateKey {
                    place: place(plan, kept.2),
                    key: plan.table.show_pk(key),
                    other: OtherRow::Stored(plan.table.name.clone()),
                };
                self.reject(kept.2, err, kept.1)?;
                Ok(None)
            }
            "first" => {
                self.dropped.push(kept.2);
                self.duplicates += 1;
                Ok(None)
            }
            _ => {
                let mut old_row = stored.1;
                if plan.table.layout == Layout::Columnar {
                    // The stored row's position gets a deletion mark (its chunks stay).
                    let (pointer, row) = split_stored_columnar(stored.1).ok_or_else(|| {
                        ImportError::InvalidArgument(format!(
                            "the stored entry of row {} is not a position and a row",
                            plan.table.show_pk(key)
                        ))
                    })?;
                    let mark = crate::query::replaced_mark(&plan.table, key, pointer)?;
                    self.dead_marks.push(mark);
                    old_row = row;
                }
                let new_keys = secondary_keys(&plan.table, key, kept.1);
                let old_keys = secondary_keys(&plan.table, key, old_row);
                for (n, k) in old_keys.into_iter().enumerate() {
                    if new_keys.get(n) != Some(&k) {
                        self.deletions.push((n as u32 + 1, k));
                    }
                }
                self.duplicates += 1;
                Ok(Some(kept))
            }
        }
    }

    /// The input entries `new` holding the unique value `value` of slot `slot`, and the
    /// stored entry holding it if any: only one may.
    fn unique<'i>(
        &self,
        slot: usize,
        value: &[u8],
        stored: Option<&Item<'_>>,
        new: &[&'i Item<'i>],
    ) -> Result<&'i Item<'i>, ImportError> {
        let (plan, t) = (self.plan, &self.plan.table);
        let (refused, other) = match (stored, new.get(1)) {
            (Some(s), _) => (
                new[0],
                OtherRow::Stored(t.show_pk_of_secondary(s.0, value.len())),
            ),
            (None, Some(second)) => (*second, OtherRow::Input(Some(place(plan, new[0].2)))),
            (None, None) => return Ok(new[0]),
        };
        Err(ImportError::UniqueViolation {
            place: place(plan, refused.2),
            index: t.indexes[slot - 1].name.clone(),
            value: t.show_unique_value(slot, value),
            other,
        })
    }
}

/// The slot [`commit`] reports for the file of a columnar job's deletion marks (the positions
/// of the stored rows it replaced), which is neither the primary index's (0) nor the catalog's
/// (`u32::MAX`).
pub const DEAD_MARKS_SLOT: u32 = u32::MAX - 1;

/// Step 5: exactly one manifest per (slot, range) — the first given of each, the others
/// ignored — checked (this job's, disjoint key ranges per slot), then the catalog entry (a new
/// table) and every file in **one** `Db::ingest`. Returns the files ingested per slot
/// (`u32::MAX`: the catalog's; [`DEAD_MARKS_SLOT`]: the deletion marks'). The job's directory under `dir` is removed afterwards, whether
/// the commit succeeded or not. The coordinator then calls [`merge_small_files`].
pub fn commit(
    db: &Db,
    plan: &JobPlan,
    manifests: Vec<RangeManifest>,
    dir: &Path,
) -> Result<Vec<(u32, sluice::IngestedFile)>, ImportError> {
    let result = commit_inner(db, plan, manifests, dir);
    let _ = std::fs::remove_dir_all(job_dir(dir, &plan.job_id));
    result
}

/// After [`commit`], once the table's commit lock and latch are let go: the table's small
/// files merged, as after a single-machine import (`Import::run`): an append of a few rows
/// leaves one small file per index, per column of a columnar table. Returns the merges run. A
/// failure (reported as `small_file_merge_error`) does not undo the commit, but poisons the
/// Db as a failed compaction does.
pub fn merge_small_files(db: &Db, plan: &JobPlan) -> Result<usize, ImportError> {
    Ok(crate::pipeline::db::merge_small_table_files(
        db,
        plan.table.id,
    )?)
}

fn commit_inner(
    db: &Db,
    plan: &JobPlan,
    manifests: Vec<RangeManifest>,
    dir: &Path,
) -> Result<Vec<(u32, sluice::IngestedFile)>, ImportError> {
    let chosen = choose_manifests(plan, manifests)?;
    let mut paths = Vec::new();
    let mut slots = Vec::new();
    for ((slot, _), m) in &chosen {
        for f in &m.files {
            paths.push(f.path.clone());
            slots.push(*slot);
        }
    }
    if paths.is_empty() && !plan.created {
        return Ok(Vec::new());
    }
    if let Some(marks) = dead_marks_sst(plan, &chosen, dir)? {
        paths.push(marks);
        slots.push(DEAD_MARKS_SLOT);
    }
    paths.push(catalog_sst(plan, dir)?);
    slots.push(u32::MAX);
    // Files from other processes or machines: every block is verified. They are handed over
    // (the job's directory goes next), so they are hard-linked into the Db where they share
    // its filesystem, copied where they do not.
    let opts = IngestOptions {
        link_files: true,
        ..IngestOptions::default()
    };
    let _hold = match plan.table.layout {
        Layout::Columnar => Some(groups::hold_for_commit(db, plan)?),
        _ => None,
    };
    // The check and the ingest as one step: no other import's or job's commit lands between.
    let _lock = crate::pipeline::commit::CommitLock::take(db, &plan.table, plan.created);
    check_table_unchanged(db, plan)?;
    let placed = db.ingest(&paths, &opts)?;
    Ok(slots.into_iter().zip(placed).collect())
}

/// One manifest per (slot, range) — the first of each — all of `plan`'s job, their files'
/// key ranges disjoint within each slot.
pub(super) fn choose_manifests(
    plan: &JobPlan,
    manifests: Vec<RangeManifest>,
) -> Result<BTreeMap<(u32, u32), RangeManifest>, ImportError> {
    let mut chosen: BTreeMap<(u32, u32), RangeManifest> = BTreeMap::new();
    for m in manifests {
        if m.job_id != plan.job_id {
            return Err(ImportError::InvalidArgument(format!(
                "a manifest of job {} given to job {}",
                m.job_id, plan.job_id
            )));
        }
        chosen.entry((m.slot, m.range)).or_insert(m);
    }
    let mut by_slot: BTreeMap<u32, Vec<&RangeFile>> = BTreeMap::new();
    for ((slot, _), m) in &chosen {
        by_slot.entry(*slot).or_default().extend(&m.files);
    }
    for (slot, files) in &mut by_slot {
        files.sort_by(|a, b| a.smallest.cmp(&b.smallest));
        for w in files.windows(2) {
            if w[0].largest >= w[1].smallest {
                return Err(ImportError::Internal(format!(
                    "slot {slot}: files {} and {} overlap",
                    w[0].path.display(),
                    w[1].path.display()
                )));
            }
        }
    }
    Ok(chosen)
}

/// The table as the job's plan saw it ([`JobPlan::table_seqno`]): a table the job creates
/// that exists now, or an existing table whose entries or catalog entry moved since (the
/// builds checked duplicates against what was stored then), refuses the commit.
fn check_table_unchanged(db: &Db, plan: &JobPlan) -> Result<(), ImportError> {
    let t = &plan.table;
    let mut changed = crate::pipeline::commit::catalog_change(&catalog::load(db)?, t, plan.created);
    // Newer only (a compaction dropping the table's newest entries lowers it).
    if changed.is_none()
        && !plan.created
        && crate::pipeline::checkpoint::table_seqno(db, t)? > plan.table_seqno
    {
        changed = Some("was changed (rows imported, replaced or deleted)".into());
    }
    match changed {
        Some(what) => Err(ImportError::InvalidArgument(format!(
            "table {} {what} since job {} was planned, so its files were not committed and \
             nothing was changed; run the job again under a new job id",
            t.name, plan.job_id
        ))),
        None => Ok(()),
    }
}

/// A columnar table's stored row as the coordinator exports it under `last`
/// ([`JobPlan::existing_entries`]): its primary-index value `pointer` (group and position),
/// length-prefixed, then the row `vals` (its indexed columns and primary key; the other
/// columns NULL) as a row record, from which the build finds the index entries to delete.
pub(super) fn stored_columnar_value(
    t: &crate::schema::TableDef,
    pointer: &[u8],
    vals: &[crate::types::Value<'_>],
    out: &mut Vec<u8>,
) {
    let mut row = Vec::new();
    crate::row::encode_row(&mut row, t.version, vals);
    out.clear();
    out.push(pointer.len() as u8);
    out.extend_from_slice(pointer);
    out.extend_from_slice(&row);
}

/// [`stored_columnar_value`]'s parts: (pointer, row record); `None` if it is not one.
fn split_stored_columnar(v: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&n, rest) = v.split_first()?;
    (rest.len() >= n as usize).then(|| rest.split_at(n as usize))
}

/// The deletion marks of every primary manifest of `chosen` as one SST under the job's
/// directory (`None`: there are none), sorted and without repeats.
fn dead_marks_sst(
    plan: &JobPlan,
    chosen: &BTreeMap<(u32, u32), RangeManifest>,
    dir: &Path,
) -> Result<Option<PathBuf>, ImportError> {
    let mut marks: Vec<&[u8]> = (chosen.values())
        .filter(|m| m.slot == 0)
        .flat_map(|m| m.dead_marks.iter().map(Vec::as_slice))
        .collect();
    if marks.is_empty() {
        return Ok(None);
    }
    marks.sort_unstable();
    marks.dedup();
    let path = attempt_dir(dir, &plan.job_id, "commit").join("dead-marks.sst");
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ImportError::io(parent, e))?;
    }
    let mut w = SstWriter::create(&path, TableOptions::default())?;
    for m in marks {
        w.put(m, &[])?;
    }
    Ok(Some(w.finish()?.path))
}

/// The table's catalog entry, as an SST under the job's directory: a table the job creates
/// gets it, an existing one gets it again, as from every import (it moves the table's newest
/// seqno, which an interrupted `sluice import` of the table checks before it resumes).
pub(super) fn catalog_sst(plan: &JobPlan, dir: &Path) -> Result<PathBuf, ImportError> {
    let path = attempt_dir(dir, &plan.job_id, "commit").join("catalog.sst");
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ImportError::io(parent, e))?;
    }
    let mut w = SstWriter::create(&path, TableOptions::default())?;
    w.put(
        &catalog::table_key(&plan.table.name),
        &catalog::table_value(&plan.table),
    )?;
    Ok(w.finish()?.path)
}
