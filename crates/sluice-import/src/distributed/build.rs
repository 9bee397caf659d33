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

use super::JobPlan;
use crate::catalog;
use crate::error::{OtherRow, RowPlace};
use crate::merge::FinalWriter;
use crate::parse::LINE_BITS;
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
    /// Source positions of the rows the duplicate policy dropped (primary ranges): their
    /// secondary entries must be left out.
    pub dropped: Vec<u64>,
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

/// The directory of one attempt of a job: `dir/<job id>/<attempt>`.
pub fn attempt_dir(dir: &Path, job_id: &str, attempt: &str) -> PathBuf {
    dir.join(format!("sluice-job-{job_id}")).join(attempt)
}

/// Step 4: the entries of (`slot`, `range`) found in `batches` (encoded batches; entries of
/// other slots or of other ranges under the plan's cut points are skipped), sorted, the duplicate policy applied (primary) or the
/// unique values checked, entries of `drop`ped rows left out (secondary), written as SSTs
/// under `attempt_dir(dir, job, attempt)`.
pub fn build_range(
    plan: &JobPlan,
    slot: usize,
    range: u32,
    batches: &[RecordBatch],
    drop: &HashSet<u64>,
    dir: &Path,
    attempt: &str,
) -> Result<RangeManifest, ImportError> {
    let mut items: Vec<(&[u8], &[u8], u64)> = Vec::new();
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
    let mut dropped = Vec::new();
    let mut entries = 0u64;
    let t = &plan.table;
    let unique = slot > 0 && t.indexes[slot - 1].unique;
    let mut i = 0;
    while i < items.len() {
        // Entries with equal keys (primary) or equal unique values: one group.
        let group_key = |k: &[u8]| -> Vec<u8> {
            if unique {
                t.unique_prefix(slot, k)
                    .map_or_else(|| k.to_vec(), <[u8]>::to_vec)
            } else {
                k.to_vec()
            }
        };
        let g = group_key(items[i].0);
        let mut j = i + 1;
        while j < items.len() && (slot == 0 || unique) && group_key(items[j].0) == g {
            j += 1;
        }
        let group: Vec<&(&[u8], &[u8], u64)> = items[i..j]
            .iter()
            .filter(|e| slot == 0 || !drop.contains(&e.2))
            .collect();
        i = j;
        let Some(first) = group.first() else {
            continue;
        };
        let keep = if group.len() == 1 || (unique && t.unique_prefix(slot, first.0).is_none()) {
            // One row, or NULLs in a unique index (exempt): every entry stays.
            group.clone()
        } else if slot == 0 {
            match plan.on_duplicate.as_str() {
                "first" => {
                    dropped.extend(group[1..].iter().map(|e| e.2));
                    vec![group[0]]
                }
                "last" => {
                    let last = group.len() - 1;
                    dropped.extend(group[..last].iter().map(|e| e.2));
                    vec![group[last]]
                }
                _ => {
                    return Err(ImportError::DuplicateKey {
                        place: place(plan, group[1].2),
                        key: t.show_pk(first.0),
                        other: OtherRow::Input(Some(place(plan, first.2))),
                    })
                }
            }
        } else {
            return Err(ImportError::UniqueViolation {
                place: place(plan, group[1].2),
                index: t.indexes[slot - 1].name.clone(),
                value: t.show_unique_value(slot, &g),
                other: OtherRow::Input(Some(place(plan, first.2))),
            });
        };
        for e in keep {
            w.put(e.0, e.1)?;
            entries += 1;
        }
    }
    let files = w
        .finish()?
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
        dropped,
    })
}

/// Step 5: exactly one manifest per (slot, range) — the first given of each, the others
/// ignored — checked (this job's, disjoint key ranges per slot, files present), then the
/// catalog entry (a new table) and every file in **one** `Db::ingest`. Returns the files
/// ingested per slot. Every attempt directory of the job under `dir` is removed afterwards,
/// whether the commit succeeded or not.
pub fn commit(
    db: &Db,
    plan: &JobPlan,
    manifests: Vec<RangeManifest>,
    dir: &Path,
) -> Result<Vec<(u32, sluice::IngestedFile)>, ImportError> {
    let result = commit_inner(db, plan, manifests, dir);
    let job_dir = dir.join(format!("sluice-job-{}", plan.job_id));
    let _ = std::fs::remove_dir_all(job_dir);
    result
}

fn commit_inner(
    db: &Db,
    plan: &JobPlan,
    manifests: Vec<RangeManifest>,
    dir: &Path,
) -> Result<Vec<(u32, sluice::IngestedFile)>, ImportError> {
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
    let mut paths = Vec::new();
    let mut slots = Vec::new();
    let mut by_slot: BTreeMap<u32, Vec<&RangeFile>> = BTreeMap::new();
    for ((slot, _), m) in &chosen {
        for f in &m.files {
            by_slot.entry(*slot).or_default().push(f);
            paths.push(f.path.clone());
            slots.push(*slot);
        }
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
    if plan.created {
        let path = attempt_dir(dir, &plan.job_id, "commit").join("catalog.sst");
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| ImportError::io(parent, e))?;
        }
        let mut w = SstWriter::create(&path, TableOptions::default())?;
        w.put(
            &catalog::table_key(&plan.table.name),
            &catalog::table_value(&plan.table),
        )?;
        paths.push(w.finish()?.path);
        slots.push(u32::MAX);
    }
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    // Files from other processes or machines: every block is verified as it is copied in.
    let placed = db.ingest(&paths, &IngestOptions::default())?;
    Ok(slots.into_iter().zip(placed).collect())
}
