//! The distributed import's core (`sluice_import::distributed`) for `sluice.distributed`:
//! plans travel as JSON text (picklable), batches as Arrow (the C data interface), every call
//! that parses, sorts or writes runs without the GIL.

use std::path::PathBuf;

use arrow_array::RecordBatch;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyRecordBatch;
use sluice_import::distributed::job::{self, Fingerprint};
use sluice_import::distributed::rejects::{tally_rejects, RowReject};
use sluice_import::distributed::{
    build_range, commit, export_ranges, FromPrimary, JobPlan, RangeManifest, TextOptions,
    DEAD_MARKS_SLOT,
};
use sluice_import::OnDuplicate;

use crate::db::PyDb;
use crate::errors::{detached, invalid, Failure};

fn plan(py: Python<'_>, text: &str) -> PyResult<JobPlan> {
    JobPlan::from_json(text).map_err(|e| Failure::from(e).into_pyerr(py))
}

fn batches(data: Vec<AnyRecordBatch>) -> PyResult<Vec<RecordBatch>> {
    let mut out = Vec::new();
    for d in data {
        for b in d.into_reader()? {
            out.push(b.map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?);
        }
    }
    Ok(out)
}

fn to_py(batches: Vec<RecordBatch>) -> Vec<PyRecordBatch> {
    batches.into_iter().map(PyRecordBatch::new).collect()
}

/// Step 1: the plan (JSON) of a job loading `sources` into the schema's table.
#[pyfunction]
#[pyo3(signature = (db, schema_sql, job_id, sources, table=None, on_duplicate="error", text=None, max_errors=0))]
#[allow(clippy::too_many_arguments)]
pub fn plan_job(
    py: Python<'_>,
    db: &PyDb,
    schema_sql: String,
    job_id: String,
    sources: Vec<String>,
    table: Option<String>,
    on_duplicate: &str,
    text: Option<&Bound<'_, PyDict>>,
    max_errors: u64,
) -> PyResult<String> {
    let policy = match on_duplicate {
        "error" => OnDuplicate::Error,
        "first" => OnDuplicate::First,
        "last" => OnDuplicate::Last,
        other => {
            return Err(invalid(
                py,
                format!("on_duplicate: {other:?} is not error, first or last"),
            ))
        }
    };
    let mut t = TextOptions::default();
    if let Some(d) = text {
        for (k, v) in d.iter() {
            let k: String = k.extract()?;
            match k.as_str() {
                "format" => t.format = v.extract()?,
                "header" => t.header = v.extract()?,
                "null" => t.null = v.extract()?,
                "delimiter" => {
                    t.delimiter = v
                        .extract::<Option<String>>()?
                        .map(|s| s.bytes().next().unwrap_or(b','))
                }
                "quote" => {
                    t.quote = Some(
                        v.extract::<Option<String>>()?
                            .and_then(|s| s.bytes().next()),
                    )
                }
                other => return Err(invalid(py, format!("unknown input option {other:?}"))),
            }
        }
    }
    let handle = db.handle().map_err(|e| e.into_pyerr(py))?;
    detached(py, move || {
        sluice_import::parse::check_text_options(t.delimiter, t.quote.unwrap_or(Some(b'"')))?;
        let mut p = JobPlan::new(
            &handle,
            &schema_sql,
            table.as_deref(),
            policy,
            &job_id,
            sources,
        )?;
        p.text = t;
        p.max_errors = max_errors;
        Ok(p.to_json())
    })
}

/// Encoded batches and the rejects (JSON) of the rows refused on the way.
type EncodedPy = (Vec<PyRecordBatch>, Vec<String>);

fn rejects_json(rejects: &[RowReject]) -> Vec<String> {
    rejects.iter().map(RowReject::to_json).collect()
}

/// Step 2: the entries of `data` (rows `first_row`.. of input `source`) as Arrow batches, and
/// its bad rows (more than the plan's `max_errors` raise).
#[pyfunction]
#[pyo3(signature = (plan_json, data, source, first_row=0, batch_number=0))]
pub fn encode(
    py: Python<'_>,
    plan_json: &str,
    data: AnyRecordBatch,
    source: usize,
    first_row: u64,
    batch_number: u64,
) -> PyResult<EncodedPy> {
    let p = plan(py, plan_json)?;
    let input = batches(vec![data])?;
    let (out, rejects) = detached(py, move || {
        let (mut out, mut rejects) = (Vec::new(), Vec::new());
        let (mut row, mut number) = (first_row, batch_number);
        for b in &input {
            let (e, bad) = p.encode(b, source, row, number)?;
            out.push(e);
            rejects.extend(bad);
            row += b.num_rows() as u64;
            number += 1;
        }
        if let Some(e) = sluice_import::distributed::rejects::over_limit(&rejects, p.max_errors) {
            return Err(e.into());
        }
        Ok((out, rejects))
    })?;
    Ok((to_py(out), rejects_json(&rejects)))
}

/// Step 2 for a whole file: input `source` read with the import's own readers.
#[pyfunction]
pub fn encode_file(
    py: Python<'_>,
    plan_json: &str,
    path: PathBuf,
    source: usize,
) -> PyResult<EncodedPy> {
    let p = plan(py, plan_json)?;
    let (out, rejects) = detached(py, move || Ok(p.encode_file(&path, source)?))?;
    Ok((to_py(out), rejects_json(&rejects)))
}

/// The slots whose stored entries the builds must meet (a table that holds rows).
#[pyfunction]
pub fn existing_slots(py: Python<'_>, plan_json: &str) -> PyResult<Vec<usize>> {
    Ok(plan(py, plan_json)?.existing_slots())
}

/// Up to `limit` stored keys of slot `slot` after `after`, as an encoded batch, and the last
/// key (`None`: no more).
#[pyfunction]
#[pyo3(signature = (db, plan_json, slot, after=None, limit=65536))]
pub fn existing_entries<'py>(
    py: Python<'py>,
    db: &PyDb,
    plan_json: &str,
    slot: usize,
    after: Option<Vec<u8>>,
    limit: usize,
) -> PyResult<(PyRecordBatch, Option<Bound<'py, PyBytes>>)> {
    let p = plan(py, plan_json)?;
    let handle = db.handle().map_err(|e| e.into_pyerr(py))?;
    let (batch, last) = detached(py, move || {
        Ok(p.existing_entries(&handle, slot, after.as_deref(), limit)?)
    })?;
    Ok((
        PyRecordBatch::new(batch),
        last.map(|k| PyBytes::new(py, &k)),
    ))
}

/// Step 3: the plan with cut points from `samples[slot]` (encoded keys), `ranges` per slot.
#[pyfunction]
pub fn set_cuts(
    py: Python<'_>,
    plan_json: &str,
    samples: Vec<Vec<Vec<u8>>>,
    ranges: usize,
) -> PyResult<String> {
    let mut p = plan(py, plan_json)?;
    p.set_cuts(samples, ranges);
    Ok(p.to_json())
}

/// Ranges of slot `slot` under the plan's cuts.
#[pyfunction]
pub fn ranges(py: Python<'_>, plan_json: &str, slot: usize) -> PyResult<u32> {
    Ok(plan(py, plan_json)?.ranges(slot))
}

/// Step 4: one range's SSTs; returns its manifest (JSON). `dropped` and `deletions`: what the
/// primary ranges decided (secondary ranges only).
#[pyfunction]
#[pyo3(signature = (plan_json, slot, range, data, dropped, dir, attempt, deletions=Vec::new()))]
#[allow(clippy::too_many_arguments)]
pub fn build(
    py: Python<'_>,
    plan_json: &str,
    slot: usize,
    range: u32,
    data: Vec<AnyRecordBatch>,
    dropped: Vec<u64>,
    dir: PathBuf,
    attempt: String,
    deletions: Vec<(u32, Vec<u8>)>,
) -> PyResult<String> {
    let p = plan(py, plan_json)?;
    let input = batches(data)?;
    detached(py, move || {
        let from = FromPrimary {
            dropped: dropped.into_iter().collect(),
            deletions,
        };
        let m = build_range(&p, slot, range, &input, &from, &dir, &attempt)?;
        // Durable before the task reports it: a rerun of the job reuses it.
        job::record_done(&dir, &m)?;
        Ok(m.to_json())
    })
}

fn manifests(py: Python<'_>, texts: &[String]) -> PyResult<Vec<RangeManifest>> {
    texts
        .iter()
        .map(|m| RangeManifest::from_json(m))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::from(e).into_pyerr(py))
}

/// Step 5, `output="files"`: the ranges' SSTs moved into `out` with `out/ranges.json`;
/// returns that manifest (JSON).
#[pyfunction]
pub fn export_job(
    py: Python<'_>,
    plan_json: &str,
    manifest_texts: Vec<String>,
    dir: PathBuf,
    out: PathBuf,
) -> PyResult<String> {
    let p = plan(py, plan_json)?;
    let ms = manifests(py, &manifest_texts)?;
    detached(py, move || Ok(export_ranges(&p, ms, &dir, &out)?.to_json()))
}

/// Starts or resumes job `plan.job_id` under `work_dir` (see `job` in the core): returns
/// `{"plan": plan with cuts or None, "shuffled": bool, "done": [manifest JSON]}`; raises when
/// an earlier run of the job had another fingerprint.
#[pyfunction]
pub fn begin_job<'py>(
    py: Python<'py>,
    db: &PyDb,
    plan_json: &str,
    schema_sql: String,
    inputs: Vec<String>,
    options: String,
    work_dir: PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let p = plan(py, plan_json)?;
    let handle = db.handle().map_err(|e| e.into_pyerr(py))?;
    let resumed = detached(py, move || {
        let f = Fingerprint::new(&handle, &p, &schema_sql, inputs, &options)?;
        Ok(job::begin_job(&work_dir, &p, &f)?)
    })?;
    let d = PyDict::new(py);
    d.set_item("plan", resumed.plan.map(|p| p.to_json()))?;
    d.set_item("shuffled", resumed.shuffled)?;
    let done: Vec<String> = resumed.done.iter().map(RangeManifest::to_json).collect();
    d.set_item("done", done)?;
    Ok(d)
}

/// Records the plan with its cut points in the job's directory.
#[pyfunction]
pub fn save_job_plan(py: Python<'_>, plan_json: &str, work_dir: PathBuf) -> PyResult<()> {
    let p = plan(py, plan_json)?;
    detached(py, move || Ok(job::save_plan(&work_dir, &p)?))
}

/// Records that job `job_id`'s shuffle is complete.
#[pyfunction]
pub fn job_shuffled(py: Python<'_>, work_dir: PathBuf, job_id: String) -> PyResult<()> {
    detached(py, move || Ok(job::mark_shuffled(&work_dir, &job_id)?))
}

/// Removes job `job_id`'s directory under `work_dir`; whether there was one.
#[pyfunction]
pub fn abort_job_dir(py: Python<'_>, work_dir: PathBuf, job_id: String) -> PyResult<bool> {
    detached(py, move || Ok(job::abort_job(&work_dir, &job_id)?))
}

/// The ids of the unfinished jobs under `work_dir`.
#[pyfunction]
pub fn jobs(work_dir: PathBuf) -> Vec<String> {
    job::list_jobs(&work_dir)
}

/// Refuses a rejects file the job would destroy: one of its inputs, or a file inside the
/// Db's directory (as `sluice import --rejects` refuses them).
#[pyfunction]
pub fn check_job_rejects(
    py: Python<'_>,
    path: PathBuf,
    inputs: Vec<PathBuf>,
    db_dir: PathBuf,
) -> PyResult<()> {
    sluice_import::check_rejects_path(&path, &inputs, &db_dir)
        .map_err(|e| Failure::from(e).into_pyerr(py))
}

/// Every task's rejects added up and written to `path` (if any); raises past `max_errors`
/// (the file then holds the rows up to the one that went over), else returns how many there
/// were.
#[pyfunction]
#[pyo3(signature = (bad, duplicates, max_errors, path=None))]
pub fn tally_job_rejects(
    py: Python<'_>,
    bad: Vec<String>,
    duplicates: Vec<String>,
    max_errors: u64,
    path: Option<PathBuf>,
) -> PyResult<u64> {
    let parse = |texts: Vec<String>| -> PyResult<Vec<RowReject>> {
        texts
            .iter()
            .map(|t| RowReject::from_json(t).map_err(|e| Failure::from(e).into_pyerr(py)))
            .collect()
    };
    let (bad, duplicates) = (parse(bad)?, parse(duplicates)?);
    detached(py, move || {
        Ok(tally_rejects(bad, duplicates, max_errors, path.as_deref())?)
    })
}

/// Step 5: one ingest of every range's files; returns per file its slot (`None` for the catalog's
/// and the deletion marks'), kind (`primary`, `index`, `catalog`, `marks`), level and entries.
#[pyfunction]
pub fn commit_job<'py>(
    py: Python<'py>,
    db: &PyDb,
    plan_json: &str,
    manifest_texts: Vec<String>,
    dir: PathBuf,
) -> PyResult<Bound<'py, PyList>> {
    let p = plan(py, plan_json)?;
    let ms = manifests(py, &manifest_texts)?;
    let handle = db.handle().map_err(|e| e.into_pyerr(py))?;
    let placed = detached(py, move || Ok(commit(&handle, &p, ms, &dir)?))?;
    let out = PyList::empty(py);
    for (slot, f) in placed {
        let d = PyDict::new(py);
        let kind = match slot {
            u32::MAX => "catalog",
            DEAD_MARKS_SLOT => "marks",
            0 => "primary",
            _ => "index",
        };
        let special = matches!(kind, "catalog" | "marks");
        d.set_item("slot", if special { None } else { Some(slot) })?;
        d.set_item("kind", kind)?;
        d.set_item("level", f.level)?;
        d.set_item("entries", f.entries)?;
        out.append(d)?;
    }
    Ok(out)
}

/// After `commit_job`: the job's table's small files merged (`sluice import` does the same
/// after its commit); returns the merges run, raises if one failed (the job is committed).
#[pyfunction]
pub fn merge_job_small_files(py: Python<'_>, db: &PyDb, plan_json: &str) -> PyResult<usize> {
    let p = plan(py, plan_json)?;
    let handle = db.handle().map_err(|e| e.into_pyerr(py))?;
    detached(py, move || {
        Ok(sluice_import::distributed::merge_small_files(&handle, &p)?)
    })
}

/// The keys of an encoded batch's rows `rows` of slot `slot`, as bytes (a sample).
#[pyfunction]
pub fn sample_keys<'py>(
    py: Python<'py>,
    data: AnyRecordBatch,
    every: usize,
) -> PyResult<Vec<(u32, Bound<'py, PyBytes>)>> {
    use arrow_array::cast::AsArray;
    let mut out = Vec::new();
    for b in batches(vec![data])? {
        let slots = b.column(0).as_primitive::<arrow_array::types::UInt32Type>();
        let keys = b.column(2).as_binary::<i32>();
        for i in (0..b.num_rows()).step_by(every.max(1)) {
            out.push((slots.value(i), PyBytes::new(py, keys.value(i))));
        }
    }
    Ok(out)
}
