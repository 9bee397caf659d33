//! The distributed import's core (`sluice_import::distributed`) for `sluice.distributed`:
//! plans travel as JSON text (picklable), batches as Arrow (the C data interface), every call
//! that parses, sorts or writes runs without the GIL.

use std::collections::HashSet;
use std::path::PathBuf;

use arrow_array::RecordBatch;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyRecordBatch;
use sluice_import::distributed::{build_range, commit, JobPlan, RangeManifest, TextOptions};
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
#[pyo3(signature = (db, schema_sql, job_id, sources, table=None, on_duplicate="error", text=None))]
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
        let mut p = JobPlan::new(
            &handle,
            &schema_sql,
            table.as_deref(),
            policy,
            &job_id,
            sources,
        )?;
        p.text = t;
        Ok(p.to_json())
    })
}

/// Step 2: the entries of `data` (rows `first_row`.. of input `source`) as Arrow batches.
#[pyfunction]
#[pyo3(signature = (plan_json, data, source, first_row=0, batch_number=0))]
pub fn encode(
    py: Python<'_>,
    plan_json: &str,
    data: AnyRecordBatch,
    source: usize,
    first_row: u64,
    batch_number: u64,
) -> PyResult<Vec<PyRecordBatch>> {
    let p = plan(py, plan_json)?;
    let input = batches(vec![data])?;
    let out = detached(py, move || {
        let mut out = Vec::new();
        let (mut row, mut number) = (first_row, batch_number);
        for b in &input {
            out.push(p.encode(b, source, row, number)?);
            row += b.num_rows() as u64;
            number += 1;
        }
        Ok(out)
    })?;
    Ok(to_py(out))
}

/// Step 2 for a whole file: input `source` read with the import's own readers.
#[pyfunction]
pub fn encode_file(
    py: Python<'_>,
    plan_json: &str,
    path: PathBuf,
    source: usize,
) -> PyResult<Vec<PyRecordBatch>> {
    let p = plan(py, plan_json)?;
    let out = detached(py, move || Ok(p.encode_file(&path, source)?))?;
    Ok(to_py(out))
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

/// Step 4: one range's SSTs; returns its manifest (JSON).
#[pyfunction]
#[pyo3(signature = (plan_json, slot, range, data, dropped, dir, attempt))]
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
) -> PyResult<String> {
    let p = plan(py, plan_json)?;
    let input = batches(data)?;
    detached(py, move || {
        let drop: HashSet<u64> = dropped.into_iter().collect();
        Ok(build_range(&p, slot, range, &input, &drop, &dir, &attempt)?.to_json())
    })
}

/// Step 5: one ingest of every range's files; returns `(slot, level)` per file.
#[pyfunction]
pub fn commit_job<'py>(
    py: Python<'py>,
    db: &PyDb,
    plan_json: &str,
    manifests: Vec<String>,
    dir: PathBuf,
) -> PyResult<Bound<'py, PyList>> {
    let p = plan(py, plan_json)?;
    let ms = manifests
        .iter()
        .map(|m| RangeManifest::from_json(m))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::from(e).into_pyerr(py))?;
    let handle = db.handle().map_err(|e| e.into_pyerr(py))?;
    let placed = detached(py, move || Ok(commit(&handle, &p, ms, &dir)?))?;
    let out = PyList::empty(py);
    for (slot, f) in placed {
        let d = PyDict::new(py);
        d.set_item("slot", if slot == u32::MAX { None } else { Some(slot) })?;
        d.set_item("level", f.level)?;
        d.set_item("entries", f.entries)?;
        out.append(d)?;
    }
    Ok(out)
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
