//! A job's directory, `<work dir>/sluice-job-<job id>/`, and resuming a job by its id.
//!
//! What it holds:
//! - `job.json`: the job's [`Fingerprint`] and, once sampled, its plan with the cut points;
//! - `shuffle/` (written by the engine's tasks) and `shuffled`: the shuffle is complete;
//! - `<attempt>/`: each build attempt's SSTs;
//! - `done/s<slot>-r<range>.json`: the manifest of each finished range, written by the task
//!   that built it once its SSTs are durable.
//!
//! Invariants:
//! 1. Every record above is written durably: a temporary file, fsynced, renamed over the
//!    target, the directory fsynced; a record ends in its CRC-32C, and one that does not check
//!    (torn, edited) is ignored — its range is built again.
//! 2. A `done` record names only fsynced files (the SST writer fsyncs each file and its
//!    directory before the record is written), so a coordinator killed at any point finds
//!    every recorded range complete.
//! 3. A job is resumed only under an equal fingerprint: the same inputs, schema, table and
//!    index ids, Db and output-changing options. Anything else is refused, naming what
//!    changed; [`abort_job`] (or a new job id) starts over.
//! 4. The commit removes the job's directory, whether it succeeded or failed; a coordinator
//!    that dies before leaves it for a rerun with the same id. A run with another id never
//!    reads it; [`abort_job`] removes it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sluice::Db;

use super::{JobPlan, RangeManifest};
use crate::ImportError;

/// What must be equal for a rerun to reuse a job's finished ranges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Per input, in input order: for a file its name, size and modification time; for any
    /// other input what the caller vouches for (see `sluice.distributed.run`).
    pub inputs: Vec<String>,
    /// The schema as given.
    pub schema: String,
    /// The table as bound to the catalog (ids of the table and its indexes, columns).
    pub table: String,
    /// The Db: its directory (canonical path, device and inode) and, when the table already
    /// holds rows (they take part in duplicate checks), its last sequence number.
    pub db: String,
    /// Options that change the output: duplicate policy, ranges, sampling, text options,
    /// `max_errors`, file size.
    pub options: String,
}

impl Fingerprint {
    /// The fingerprint of a job over `plan` (before cuts: they come from the sample), its
    /// `inputs`' descriptions, the `schema` text and the output-changing `options` the caller
    /// adds (e.g. ranges and sampling rate).
    pub fn new(
        db: &Db,
        plan: &JobPlan,
        schema: &str,
        inputs: Vec<String>,
        options: &str,
    ) -> Result<Fingerprint, ImportError> {
        let dir = db.path();
        let canonical = dir.canonicalize().map_err(|e| ImportError::io(dir, e))?;
        let meta = std::fs::metadata(dir).map_err(|e| ImportError::io(dir, e))?;
        let mut db_id = format!("{} {}", canonical.display(), inode(&meta));
        if plan.existing_rows {
            db_id.push_str(&format!(" seqno {}", db.snapshot().seqno()));
        }
        let plan_options = serde_json::json!({
            "on_duplicate": plan.on_duplicate,
            "max_errors": plan.max_errors,
            "target_file_size": plan.target_file_size,
            "text": plan.text,
            "sources": plan.sources,
            "created": plan.created,
            "caller": options,
        });
        Ok(Fingerprint {
            inputs,
            schema: schema.to_string(),
            table: serde_json::to_string(&plan.table).unwrap_or_default(),
            db: db_id,
            options: plan_options.to_string(),
        })
    }

    /// What differs from `other`, in words (empty: nothing).
    pub fn differences(&self, other: &Fingerprint) -> Vec<String> {
        let mut out = Vec::new();
        if self.inputs.len() != other.inputs.len() {
            out.push(format!(
                "the inputs ({} then, {} now)",
                self.inputs.len(),
                other.inputs.len()
            ));
        } else if let Some((a, b)) = self.inputs.iter().zip(&other.inputs).find(|(a, b)| a != b) {
            out.push(format!("input {a:?} (now {b:?})"));
        }
        for (what, a, b) in [
            ("the schema", &self.schema, &other.schema),
            ("the table's catalog entry", &self.table, &other.table),
            ("the Db", &self.db, &other.db),
            ("the options", &self.options, &other.options),
        ] {
            if a != b {
                out.push(what.to_string());
            }
        }
        out
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!("dev {} inode {}", meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> String {
    String::new()
}

/// `job.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct JobRecord {
    fingerprint: Fingerprint,
    /// The plan with its cut points, once the sample is taken.
    plan: Option<JobPlan>,
}

/// What a rerun finds of an earlier run of its job.
#[derive(Debug, Default)]
pub struct Resumed {
    /// The plan with the earlier run's cut points (`None`: it had not cut yet).
    pub plan: Option<JobPlan>,
    /// Whether its shuffle completed.
    pub shuffled: bool,
    /// Its finished ranges.
    pub done: Vec<RangeManifest>,
}

/// `work_dir/sluice-job-<job id>`.
pub fn job_dir(work_dir: &Path, job_id: &str) -> PathBuf {
    work_dir.join(format!("sluice-job-{job_id}"))
}

/// Starts job `plan.job_id` under `work_dir`, or resumes it (invariant 3): a new job records
/// its fingerprint; an existing one with an equal fingerprint returns what it finished; one
/// with a different fingerprint is refused.
pub fn begin_job(
    work_dir: &Path,
    plan: &JobPlan,
    fingerprint: &Fingerprint,
) -> Result<Resumed, ImportError> {
    let dir = job_dir(work_dir, &plan.job_id);
    let record_path = dir.join("job.json");
    if let Some(text) = read_record(&record_path)? {
        let old: JobRecord = serde_json::from_str(&text)
            .map_err(|e| ImportError::Internal(format!("{}: {e}", record_path.display())))?;
        let changed = old.fingerprint.differences(fingerprint);
        if !changed.is_empty() {
            return Err(ImportError::InvalidArgument(format!(
                "job {} cannot be resumed: {} changed since its first run (abort it with \
                 sluice.distributed.abort, or use another job id)",
                plan.job_id,
                changed.join(", ")
            )));
        }
        return Ok(Resumed {
            shuffled: old.plan.is_some() && dir.join("shuffled").exists(),
            plan: old.plan,
            done: load_done(&dir, &plan.job_id),
        });
    }
    if dir.exists() {
        // A directory without a valid record: a run that died before recording anything.
        std::fs::remove_dir_all(&dir).map_err(|e| ImportError::io(&dir, e))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| ImportError::io(&dir, e))?;
    let record = JobRecord {
        fingerprint: fingerprint.clone(),
        plan: None,
    };
    write_record(
        &record_path,
        &serde_json::to_string(&record).unwrap_or_default(),
    )?;
    Ok(Resumed::default())
}

/// Records the plan with its cut points (after the sample), so a rerun cuts the same ranges.
pub fn save_plan(work_dir: &Path, plan: &JobPlan) -> Result<(), ImportError> {
    let path = job_dir(work_dir, &plan.job_id).join("job.json");
    let text = read_record(&path)?.ok_or_else(|| {
        ImportError::Internal(format!(
            "{}: no job record to add the plan to",
            path.display()
        ))
    })?;
    let mut record: JobRecord = serde_json::from_str(&text)
        .map_err(|e| ImportError::Internal(format!("{}: {e}", path.display())))?;
    record.plan = Some(plan.clone());
    write_record(&path, &serde_json::to_string(&record).unwrap_or_default())
}

/// Records that the shuffle of job `job_id` is complete.
pub fn mark_shuffled(work_dir: &Path, job_id: &str) -> Result<(), ImportError> {
    write_record(&job_dir(work_dir, job_id).join("shuffled"), "")
}

/// Records a finished range (invariant 2), under the job's directory in `work_dir`.
pub fn record_done(work_dir: &Path, m: &RangeManifest) -> Result<(), ImportError> {
    let dir = job_dir(work_dir, &m.job_id).join("done");
    std::fs::create_dir_all(&dir).map_err(|e| ImportError::io(&dir, e))?;
    write_record(
        &dir.join(format!("s{}-r{}.json", m.slot, m.range)),
        &m.to_json(),
    )
}

/// The finished ranges recorded in `dir` whose records check and whose files are all there
/// with their sizes; anything else is built again.
fn load_done(dir: &Path, job_id: &str) -> Vec<RangeManifest> {
    let Ok(entries) = std::fs::read_dir(dir.join("done")) else {
        return Vec::new();
    };
    let mut out: Vec<RangeManifest> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| read_record(&e.path()).ok().flatten())
        .filter_map(|text| RangeManifest::from_json(&text).ok())
        .filter(|m| m.job_id == job_id)
        .filter(|m| {
            m.files
                .iter()
                .all(|f| std::fs::metadata(&f.path).is_ok_and(|meta| meta.len() == f.bytes))
        })
        .collect();
    out.sort_by_key(|m| (m.slot, m.range));
    out
}

/// Removes job `job_id`'s directory under `work_dir` (an abandoned job); `false` if there was
/// none.
pub fn abort_job(work_dir: &Path, job_id: &str) -> Result<bool, ImportError> {
    let dir = job_dir(work_dir, job_id);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ImportError::io(&dir, e)),
    }
}

/// The ids of the jobs with a directory under `work_dir` (finished jobs leave none).
pub fn list_jobs(work_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(work_dir) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("job.json").exists())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("sluice-job-"))
                .map(str::to_string)
        })
        .collect();
    out.sort();
    out
}

const CRC_TAG: &str = "\ncrc32c ";

/// Writes `body` and its checksum durably to `path` (invariant 1).
fn write_record(path: &Path, body: &str) -> Result<(), ImportError> {
    use std::io::Write as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("record"),
        std::process::id()
    ));
    let text = format!("{body}{CRC_TAG}{:08x}\n", crc32c::crc32c(body.as_bytes()));
    let io = |e| ImportError::io(path, e);
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io)
}

/// The body of a record written by [`write_record`]; `None` when there is none or it does not
/// check.
fn read_record(path: &Path) -> Result<Option<String>, ImportError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => return Ok(None),
        Err(e) => return Err(ImportError::io(path, e)),
    };
    let Some((body, tail)) = text.rsplit_once(CRC_TAG) else {
        return Ok(None);
    };
    let ok = u32::from_str_radix(tail.trim_end(), 16)
        .is_ok_and(|crc| crc == crc32c::crc32c(body.as_bytes()));
    Ok(ok.then(|| body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_that_does_not_check_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r");
        write_record(&p, "{\"a\": 1}").unwrap();
        assert_eq!(read_record(&p).unwrap().as_deref(), Some("{\"a\": 1}"));
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replace('1', "2")).unwrap();
        assert_eq!(read_record(&p).unwrap(), None);
        std::fs::write(&p, "{\"a\": 1}").unwrap();
        assert_eq!(read_record(&p).unwrap(), None);
    }
}
