//! `sluice._sluice`: the Python extension module of the `sluice` package.
//!
//! A thin layer: it converts Python values to the Rust crates' types and back, releases the
//! GIL around every call that touches the disk or does real work, and maps every Rust error
//! variant to one exception class of `sluice._errors`. The Pythonic surface (`sluice.open`,
//! context managers, typed table rows) is the pure-Python package in `python/sluice/`.

mod arrow;
mod db;
mod distributed;
mod errors;
mod options;
mod sst;
mod table;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _sluice(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<db::PyDb>()?;
    m.add_class::<db::PySnapshot>()?;
    m.add_class::<db::PyWriteBatch>()?;
    m.add_class::<db::PyScan>()?;
    m.add_class::<sst::PySstWriter>()?;
    m.add_function(wrap_pyfunction!(arrow::import_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::table_scan, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::parquet_schema_sql, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::plan_job, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::encode, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::encode_file, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::set_cuts, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::ranges, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::build, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::commit_job, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::merge_job_small_files, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::sample_keys, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::existing_slots, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::existing_entries, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::export_job, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::begin_job, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::save_job_plan, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::job_shuffled, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::abort_job_dir, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::jobs, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::tally_job_rejects, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::check_job_rejects, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
