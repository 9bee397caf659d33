//! `Db`, `Snapshot`, `WriteBatch` and the chunked scan: conversions around `sluice::Db`, the
//! GIL released for every call that reads or writes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use sluice::{DbIterator, ReadOptions, WriteBatch, WriteOptions};

use crate::errors::{detached, Failure};
use crate::options::{apply_db_options, import_options, ingest_options};

/// An open Db. Shared by Python threads: every call clones the `Arc` under a read lock and
/// works without the GIL; `close` takes it out and waits for the calls still holding it.
#[pyclass(module = "sluice._sluice", name = "Db", frozen)]
pub struct PyDb {
    db: RwLock<Option<Arc<sluice::Db>>>,
    #[pyo3(get)]
    path: PathBuf,
    #[pyo3(get)]
    read_only: bool,
}

impl PyDb {
    /// The Db, or `ClosedError`.
    pub fn handle(&self) -> Result<Arc<sluice::Db>, Failure> {
        self.db
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or(Failure::Closed("Db"))
    }
}

fn bytes_list<'py>(
    py: Python<'py>,
    items: Vec<(Vec<u8>, Vec<u8>)>,
) -> PyResult<Bound<'py, PyList>> {
    let tuples = items
        .iter()
        .map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, k), PyBytes::new(py, v)]).expect("pair"));
    PyList::new(py, tuples)
}

/// An import's summary as the dict `import_files` and `import_arrow` return.
pub fn summary_dict(py: Python<'_>, s: sluice_import::Summary) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("table", s.table)?;
    d.set_item("created", s.created)?;
    d.set_item("rows", s.rows)?;
    d.set_item("rejected", s.rejected)?;
    d.set_item("duplicates_dropped", s.duplicates_dropped)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("runs_spilled", s.runs_spilled)?;
    d.set_item("runs_premerged", s.runs_premerged)?;
    d.set_item("streamed_indexes", s.streamed_indexes)?;
    let phases = PyDict::new(py);
    phases.set_item("parse_sort", s.parse_sort_secs)?;
    phases.set_item("merge", s.merge_secs)?;
    phases.set_item("ingest", s.ingest_secs)?;
    phases.set_item("total", s.total_secs)?;
    d.set_item("phases", phases)?;
    let files = PyList::empty(py);
    for f in s.files {
        let fd = PyDict::new(py);
        fd.set_item("index", f.index)?;
        fd.set_item("level", f.level)?;
        fd.set_item("entries", f.entries)?;
        fd.set_item("bytes", f.bytes)?;
        files.append(fd)?;
    }
    d.set_item("files", files)?;
    d.set_item("resumed", s.resumed)?;
    match s.rewrite {
        Some(r) => d.set_item("rewrite", std::collections::BTreeMap::from(r.fields()))?,
        None => d.set_item("rewrite", py.None())?,
    }
    d.set_item("rewrite_error", s.rewrite_error)?;
    d.set_item("small_file_merges", s.small_file_merges)?;
    d.set_item("small_file_merge_error", s.small_file_merge_error)?;
    Ok(d)
}

#[pymethods]
impl PyDb {
    /// Opens (or creates) the Db at `path`; see `sluice.open`.
    #[staticmethod]
    #[pyo3(signature = (path, create=true, read_only=false, options=None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        create: bool,
        read_only: bool,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyDb> {
        let base = move || sluice::Options {
            create_if_missing: create && !read_only,
            ..sluice::Options::default()
        };
        // The keywords' names and types checked before touching the disk (their ranges, which
        // may depend on the Db's persisted options, by the open).
        apply_db_options(py, &mut base(), options)?;
        let p = path.clone();
        // The Db's persisted options (its OPTIONS file) first, so what the caller does not
        // name keeps the Db's value (e.g. its compression), then the caller's on top (and
        // persisted by the open). The file is read over the defaults, not over the keywords: a
        // keyword out of range is the caller's InvalidArgumentError, never the file's
        // corruption.
        let mut opts = detached(py, move || -> Result<sluice::Options, Failure> {
            if !p.join("CURRENT").exists() {
                if read_only {
                    let contents = sluice::DirContents::inspect(&sluice::fs::RealFs, &p)?;
                    if let Some(why) = contents.why_not_a_db(&p) {
                        return Err(Failure::InvalidArgument(why));
                    }
                }
                return Ok(base());
            }
            Ok(sluice::Options::load_latest(&p, base())?)
        })?;
        apply_db_options(py, &mut opts, options)?;
        let p = path.clone();
        let db = detached(py, move || -> Result<sluice::Db, Failure> {
            if read_only {
                return Ok(sluice::Db::open_read_only(&p, opts)?);
            }
            let db = sluice::Db::open(&p, opts)?;
            sluice_import::remove_leftovers(&p);
            Ok(db)
        })?;
        Ok(PyDb {
            db: RwLock::new(Some(Arc::new(db))),
            path,
            read_only,
        })
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.db.read().unwrap_or_else(|e| e.into_inner()).is_none()
    }

    /// Closes the Db: waits for calls in progress in other threads, then for background work;
    /// flushes writes that skipped the WAL; releases the directory lock. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.db.write().unwrap_or_else(|e| e.into_inner()).take();
        let Some(mut arc) = taken else {
            return Ok(());
        };
        detached(py, move || loop {
            match Arc::try_unwrap(arc) {
                Ok(db) => return Ok(db.close()?),
                Err(a) => {
                    arc = a;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    }

    #[pyo3(signature = (key, snapshot=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &[u8],
        snapshot: Option<&PySnapshot>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        let v = detached(py, || match snapshot {
            None => Ok(db.get(key)?),
            Some(s) => {
                let guard = s.snap.read().unwrap_or_else(|e| e.into_inner());
                let snap = guard.as_ref().ok_or(Failure::Closed("Snapshot"))?;
                let ro = ReadOptions {
                    snapshot: Some(snap),
                    ..ReadOptions::default()
                };
                Ok(db.get_opt(key, &ro)?)
            }
        })?;
        Ok(v.map(|v| PyBytes::new(py, &v)))
    }

    fn put(&self, py: Python<'_>, key: &[u8], value: &[u8]) -> PyResult<()> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        detached(py, || Ok(db.put(key, value)?))
    }

    fn delete(&self, py: Python<'_>, key: &[u8]) -> PyResult<()> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        detached(py, || Ok(db.delete(key)?))
    }

    fn delete_range(&self, py: Python<'_>, start: &[u8], end: &[u8]) -> PyResult<()> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        detached(py, || Ok(db.delete_range(start, end)?))
    }

    #[pyo3(signature = (batch, sync=false, disable_wal=false))]
    fn write(
        &self,
        py: Python<'_>,
        batch: &PyWriteBatch,
        sync: bool,
        disable_wal: bool,
    ) -> PyResult<()> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        let b = batch
            .batch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        detached(py, move || {
            Ok(db.write(
                b,
                WriteOptions {
                    sync,
                    disable_wal,
                    ..Default::default()
                },
            )?)
        })
    }

    fn snapshot(&self, py: Python<'_>) -> PyResult<PySnapshot> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        let s = detached(py, || Ok(db.snapshot()))?;
        Ok(PySnapshot {
            snap: RwLock::new(Some(s)),
        })
    }

    /// A scan positioned at its first entry; `next_chunk` hands out entries in chunks.
    #[pyo3(signature = (start=None, end=None, reverse=false, snapshot=None))]
    fn scan(
        slf: Bound<'_, Self>,
        start: Option<Vec<u8>>,
        end: Option<Vec<u8>>,
        reverse: bool,
        snapshot: Option<&PySnapshot>,
    ) -> PyResult<PyScan> {
        let py = slf.py();
        let this = slf.get();
        let db = this.handle().map_err(|e| e.into_pyerr(py))?;
        let it = detached(py, || {
            let guard = snapshot.map(|s| s.snap.read().unwrap_or_else(|e| e.into_inner()));
            let snap = match &guard {
                Some(g) => Some(g.as_ref().ok_or(Failure::Closed("Snapshot"))?),
                None => None,
            };
            let ro = ReadOptions {
                snapshot: snap,
                lower_bound: start,
                upper_bound: end,
                ..Default::default()
            };
            let mut it = db.iter(ro)?;
            if reverse {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
            it.status()?;
            Ok(it)
        })?;
        Ok(PyScan {
            db: slf.clone().unbind(),
            it: Mutex::new(Some(it)),
            reverse,
        })
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        detached(py, || Ok(db.flush()?))
    }

    #[pyo3(signature = (start=None, end=None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> PyResult<()> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        detached(py, || Ok(db.compact_range(start, end)?))
    }

    fn checkpoint<'py>(&self, py: Python<'py>, dir: PathBuf) -> PyResult<Bound<'py, PyDict>> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        let info = detached(py, || Ok(db.checkpoint(&dir)?))?;
        let d = PyDict::new(py);
        d.set_item("tables", info.tables)?;
        d.set_item("bytes", info.bytes)?;
        d.set_item("last_sequence", info.last_sequence)?;
        Ok(d)
    }

    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        let m = detached(py, || Ok(db.metrics()))?;
        let d = PyDict::new(py);
        let levels = PyList::empty(py);
        for l in &m.levels {
            let ld = PyDict::new(py);
            ld.set_item("files", l.files)?;
            ld.set_item("bytes", l.bytes)?;
            ld.set_item("score", l.score_x100 as f64 / 100.0)?;
            levels.append(ld)?;
        }
        d.set_item("levels", levels)?;
        d.set_item("memtable_bytes", m.memtable_bytes)?;
        d.set_item("immutable_memtables", m.immutable_memtables)?;
        d.set_item("read_amplification", m.read_amplification)?;
        d.set_item("l0_sublevels", m.l0_sublevels)?;
        d.set_item("pending_compaction_bytes", m.pending_compaction_bytes)?;
        d.set_item("write_amplification", m.write_amplification)?;
        d.set_item("user_bytes", m.user_bytes)?;
        d.set_item("flush_bytes", m.flush_bytes)?;
        d.set_item("flushes", m.flushes)?;
        d.set_item("compactions", m.compactions)?;
        d.set_item("subcompactions", m.subcompactions)?;
        d.set_item("compaction_bytes_read", m.compaction_bytes_read)?;
        d.set_item("compaction_bytes_written", m.compaction_bytes_written)?;
        d.set_item("stall_count", m.stall_count)?;
        d.set_item("stall_micros", m.stall_micros)?;
        d.set_item("stall_max_micros", m.stall_max_micros)?;
        d.set_item("ingest_waits", m.ingest_waits)?;
        d.set_item("ingest_wait_micros", m.ingest_wait_micros)?;
        d.set_item("last_sequence", m.last_sequence)?;
        d.set_item("block_cache_hits", m.block_cache_hits)?;
        d.set_item("block_cache_misses", m.block_cache_misses)?;
        d.set_item("background_error", m.background_error)?;
        Ok(d)
    }

    /// Ingests SST files atomically; returns where each went.
    #[pyo3(signature = (paths, options=None))]
    fn ingest<'py>(
        &self,
        py: Python<'py>,
        paths: Vec<PathBuf>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let opts = ingest_options(options)?;
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        let files = detached(py, || Ok(db.ingest(&paths, &opts)?))?;
        let out = PyList::empty(py);
        for f in files {
            let d = PyDict::new(py);
            d.set_item("source", f.source)?;
            d.set_item("level", f.level)?;
            d.set_item("seqno", f.seqno)?;
            d.set_item("number", f.number)?;
            d.set_item("entries", f.entries)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Runs an import (`sluice_import::Import`); returns its summary as a dict.
    #[pyo3(signature = (schema_sql, files, options=None))]
    fn import_files<'py>(
        &self,
        py: Python<'py>,
        schema_sql: String,
        files: Vec<PathBuf>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let opts = import_options(py, options)?;
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        let s = detached(py, move || {
            let import = sluice_import::Import::new(&schema_sql, files, opts)?;
            Ok(import.run(&db)?)
        })?;
        summary_dict(py, s)
    }

    /// The catalog: one dict per table (name, columns with their types, primary key, indexes).
    fn tables<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        let tables = detached(py, || Ok(sluice_import::TableReader::tables(&db)?))?;
        let out = PyList::empty(py);
        for t in &tables {
            out.append(crate::table::table_dict(py, t)?)?;
        }
        Ok(out)
    }

    /// The row of `table` whose primary key columns are `pk` (as text), as
    /// `(column names, type tags, values)`; `None` when absent. The Python layer makes the
    /// values typed.
    fn table_get<'py>(
        &self,
        py: Python<'py>,
        table: String,
        pk: Vec<String>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        let found = detached(py, || {
            let reader = sluice_import::TableReader::open(&db, Some(&table))?;
            Ok(reader.get(&pk)?.map(|row| (reader.table.clone(), row)))
        })?;
        match found {
            None => Ok(None),
            Some((t, row)) => Ok(Some(crate::table::row_list(py, &t, &row)?)),
        }
    }

    /// Deletes the row of `table` whose primary key columns are `pk` (as text), with its
    /// index entries, in one write (`sync`: fsync the WAL first); whether it was there.
    #[pyo3(signature = (table, pk, sync=false))]
    fn table_delete(
        &self,
        py: Python<'_>,
        table: String,
        pk: Vec<String>,
        sync: bool,
    ) -> PyResult<bool> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        detached(py, || {
            let reader = sluice_import::TableReader::open(&db, Some(&table))?;
            Ok(reader.delete(&pk, sync)?)
        })
    }

    /// Rewrites the row groups of columnar `table` in which at least `min_dead` of the rows
    /// are deleted or replaced (see `sluice_import::TableReader::rewrite_groups`); what was
    /// done, by name.
    #[pyo3(signature = (table, min_dead=0.5, sync=false))]
    fn table_rewrite_groups(
        &self,
        py: Python<'_>,
        table: String,
        min_dead: f64,
        sync: bool,
    ) -> PyResult<std::collections::BTreeMap<&'static str, u64>> {
        let db = self.handle().map_err(|e| e.into_pyerr(py))?;
        detached(py, || {
            let reader = sluice_import::TableReader::open(&db, Some(&table))?;
            let s = reader.rewrite_groups(min_dead, sync)?;
            Ok(std::collections::BTreeMap::from(s.fields()))
        })
    }
}

/// A point-in-time view (`db.snapshot()`); released by `release()` or when collected.
#[pyclass(module = "sluice._sluice", name = "Snapshot", frozen)]
pub struct PySnapshot {
    snap: RwLock<Option<sluice::Snapshot>>,
}

#[pymethods]
impl PySnapshot {
    /// Releases the snapshot: the versions only it kept can go.
    fn release(&self) {
        self.snap.write().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// The sequence number it reads at (`None` once released).
    #[getter]
    fn seqno(&self) -> Option<u64> {
        self.snap
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|s| s.seqno())
    }
}

/// Writes applied together by `Db.write`.
#[pyclass(module = "sluice._sluice", name = "WriteBatch", frozen)]
#[derive(Default)]
pub struct PyWriteBatch {
    batch: Mutex<WriteBatch>,
}

#[pymethods]
impl PyWriteBatch {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    fn put(&self, key: &[u8], value: &[u8]) {
        self.batch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .put(key, value);
    }

    fn delete(&self, key: &[u8]) {
        self.batch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .delete(key);
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) {
        self.batch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .delete_range(start, end);
    }

    fn clear(&self) {
        self.batch.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn __len__(&self) -> usize {
        self.batch.lock().unwrap_or_else(|e| e.into_inner()).count() as usize
    }

    /// Bytes of the encoded batch.
    #[getter]
    fn size_bytes(&self) -> usize {
        self.batch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .size_bytes()
    }
}

/// A scan in progress: entries come out in chunks (`next_chunk`), each read without the GIL.
#[pyclass(module = "sluice._sluice", name = "Scan", frozen)]
pub struct PyScan {
    db: Py<PyDb>,
    it: Mutex<Option<DbIterator>>,
    reverse: bool,
}

/// Entries per chunk at most, and bytes (keys + values) after which a chunk ends early.
const CHUNK_ENTRIES: usize = 1024;
const CHUNK_BYTES: usize = 1 << 20;

#[pymethods]
impl PyScan {
    /// The next entries (at most `limit`); an empty list when the scan is done.
    #[pyo3(signature = (limit=CHUNK_ENTRIES))]
    fn next_chunk<'py>(&self, py: Python<'py>, limit: usize) -> PyResult<Bound<'py, PyList>> {
        // A scan of a closed Db fails like any other use of it.
        self.db.get().handle().map_err(|e| e.into_pyerr(py))?;
        let reverse = self.reverse;
        let items = detached(py, || {
            let mut guard = self.it.lock().unwrap_or_else(|e| e.into_inner());
            let mut out = Vec::new();
            let Some(it) = guard.as_mut() else {
                return Ok(out);
            };
            let mut bytes = 0;
            while it.valid() && out.len() < limit.max(1) && bytes < CHUNK_BYTES {
                bytes += it.key().len() + it.value().len();
                out.push((it.key().to_vec(), it.value().to_vec()));
                if reverse {
                    it.prev();
                } else {
                    it.next();
                }
            }
            it.status()?;
            if !it.valid() {
                *guard = None; // done: let go of the tables it pins
            }
            Ok(out)
        })?;
        bytes_list(py, items)
    }

    /// Ends the scan early, letting go of what it pins.
    fn close(&self) {
        self.it.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}
