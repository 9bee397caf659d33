//! `SstWriter`: an external SST file (RocksDB's block-based format) written in key order, to
//! be ingested by `Db.ingest` — by Sluice or by RocksDB.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors::{detached, Failure};
use crate::options::table_options;

/// Writes one SST file; see `sluice.SstWriter`.
#[pyclass(module = "sluice._sluice", name = "SstWriter", frozen)]
pub struct PySstWriter {
    w: Mutex<Option<sluice::SstWriter>>,
    #[pyo3(get)]
    path: PathBuf,
}

impl PySstWriter {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut sluice::SstWriter) -> sluice::Result<T> + Send,
    ) -> PyResult<T> {
        detached(py, || {
            let mut g = self.w.lock().unwrap_or_else(|e| e.into_inner());
            let w = g.as_mut().ok_or(Failure::Closed("SstWriter"))?;
            Ok(f(w)?)
        })
    }
}

#[pymethods]
impl PySstWriter {
    #[new]
    #[pyo3(signature = (path, **options))]
    fn new(py: Python<'_>, path: PathBuf, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let opts = table_options(py, options)?;
        let p = path.clone();
        let w = detached(py, move || Ok(sluice::SstWriter::create(&p, opts)?))?;
        Ok(PySstWriter {
            w: Mutex::new(Some(w)),
            path,
        })
    }

    /// Adds `key → value`; keys must be strictly increasing.
    fn put(&self, py: Python<'_>, key: &[u8], value: &[u8]) -> PyResult<()> {
        self.with(py, |w| w.put(key, value))
    }

    /// Adds a deletion of `key` (it hides older values of the key once ingested).
    fn delete(&self, py: Python<'_>, key: &[u8]) -> PyResult<()> {
        self.with(py, |w| w.delete(key))
    }

    /// Adds a deletion of every key in `[start, end)`, in any order relative to the points.
    fn delete_range(&self, py: Python<'_>, start: &[u8], end: &[u8]) -> PyResult<()> {
        self.with(py, |w| w.delete_range(start, end))
    }

    /// Entries added so far.
    #[getter]
    fn entries(&self) -> u64 {
        self.w
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0, |w| w.entries())
    }

    /// Writes the index, filter and footer, fsyncs, and puts the file at `path`; returns
    /// `{"path", "smallest_key", "largest_key", "entries", "file_size"}`.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let info = detached(py, || {
            let w = self
                .w
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .ok_or(Failure::Closed("SstWriter"))?;
            Ok(w.finish()?)
        })?;
        let d = PyDict::new(py);
        d.set_item("path", info.path)?;
        d.set_item("smallest_key", PyBytes::new(py, &info.smallest_key))?;
        d.set_item("largest_key", PyBytes::new(py, &info.largest_key))?;
        d.set_item("entries", info.entries)?;
        d.set_item("file_size", info.file_size)?;
        Ok(d)
    }

    /// Abandons the file: nothing is left at `path` (nor the temporary file). Idempotent.
    fn abort(&self, py: Python<'_>) {
        let w = self.w.lock().unwrap_or_else(|e| e.into_inner()).take();
        py.detach(move || drop(w));
    }

    /// Whether `finish` or `abort` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.w.lock().unwrap_or_else(|e| e.into_inner()).is_none()
    }
}
