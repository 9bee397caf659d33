//! Arrow across the boundary (the Arrow C stream interface, through `pyo3-arrow`): imports of
//! anything that exports `__arrow_c_stream__` or `__arrow_c_array__`, and table scans handed
//! back as a stream of record batches with the schema's types.
//!
//! A scan runs on a thread of its own that reads the table at one snapshot and sends batches
//! through a channel of two; the stream's consumer (pyarrow, polars, DuckDB) pulls them
//! without the GIL. Dropping the stream stops the thread at its next batch.

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyRecordBatchReader;
use sluice_import::arrow_io::{create_table_sql, parquet_table_sql, BatchBuilder};
use sluice_import::{Import, ImportError, TableReader};

use crate::db::{summary_dict, PyDb};
use crate::errors::{detached, Failure};
use crate::options::import_options;

/// Imports the rows of `data` (an Arrow stream or batch) into the table of `schema_sql`, or,
/// when `schema_sql` is `None`, into a table made from the data's own columns with
/// `primary_key` as its key. Returns the summary dict of `import_files`.
#[pyfunction]
#[pyo3(signature = (db, schema_sql, data, table=None, primary_key=Vec::new(), name=None, options=None))]
#[allow(clippy::too_many_arguments)]
pub fn import_arrow<'py>(
    py: Python<'py>,
    db: &PyDb,
    schema_sql: Option<String>,
    data: AnyRecordBatch,
    table: Option<String>,
    primary_key: Vec<String>,
    name: Option<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut opts = import_options(py, options)?;
    let stream = data.into_reader()?;
    let schema_sql = match schema_sql {
        Some(s) => s,
        None => {
            let t = table.clone().unwrap_or_else(|| "data".into());
            create_table_sql(&t, &stream.schema(), &primary_key)
                .map_err(|e| Failure::from(e).into_pyerr(py))?
        }
    };
    if table.is_some() {
        opts.table = table;
    }
    let handle = db.handle().map_err(|e| e.into_pyerr(py))?;
    let s = detached(py, move || {
        Ok(Import::from_arrow(&schema_sql, stream, name, opts)?.run(&handle)?)
    })?;
    summary_dict(py, s)
}

/// `CREATE TABLE` for a Parquet file's columns with `primary_key` as the key.
#[pyfunction]
#[pyo3(signature = (path, primary_key, table=None))]
pub fn parquet_schema_sql(
    py: Python<'_>,
    path: PathBuf,
    primary_key: Vec<String>,
    table: Option<String>,
) -> PyResult<String> {
    detached(py, move || {
        Ok(parquet_table_sql(&path, table.as_deref(), &primary_key)?)
    })
}

/// Rows of `table` from `start` to `end` (prefixes of the index's columns, as text) in the
/// order of `index` (`None`: the primary key), or in storage order when `ordered` is false
/// (see `TableReader::set_any_order`), `columns` only (`None`: all; a columnar table reads
/// only their chunks), as a stream of record batches of at most `batch_rows` rows.
#[pyfunction]
#[pyo3(signature = (db, table, start=None, end=None, columns=None, index=None, batch_rows=65536, ordered=true))]
#[allow(clippy::too_many_arguments)]
pub fn table_scan(
    py: Python<'_>,
    db: &PyDb,
    table: String,
    start: Option<Vec<String>>,
    end: Option<Vec<String>>,
    columns: Option<Vec<String>>,
    index: Option<String>,
    batch_rows: usize,
    ordered: bool,
) -> PyResult<PyRecordBatchReader> {
    let handle = db.handle().map_err(|e| e.into_pyerr(py))?;
    // The table and the columns are checked here, so that a bad name raises at the call.
    let (def, cols) = detached(py, || {
        let reader = TableReader::open(&handle, Some(&table))?;
        let cols = match &columns {
            None => reader.table.visible_columns().map(|(i, _)| i).collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    reader
                        .table
                        .column(n)
                        .filter(|&i| !reader.table.columns[i].hidden)
                        .ok_or_else(|| {
                            Failure::InvalidArgument(format!(
                                "table {} has no column {n}",
                                reader.table.name
                            ))
                        })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        Ok((reader.table.clone(), cols))
    })?;

    let (tx, rx) = mpsc::sync_channel(2);
    let names: Option<Vec<String>> =
        columns.map(|_| cols.iter().map(|&i| def.columns[i].name.clone()).collect());
    let builder = BatchBuilder::new(&def, cols);
    let schema = builder.schema();
    let scan = Scan {
        db: handle,
        table,
        index,
        start,
        end,
        columns: names,
        ordered,
        batch_rows: batch_rows.max(1),
    };
    std::thread::Builder::new()
        .name("sluice-scan".into())
        .spawn(move || scan.run(builder, &tx))
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
    Ok(PyRecordBatchReader::new(Box::new(ScanStream {
        schema,
        rx,
    })))
}

/// What the scan thread reads.
struct Scan {
    db: Arc<sluice::Db>,
    table: String,
    index: Option<String>,
    start: Option<Vec<String>>,
    end: Option<Vec<String>>,
    /// The columns read (`None`: all).
    columns: Option<Vec<String>>,
    ordered: bool,
    batch_rows: usize,
}

type Sent = Result<RecordBatch, ArrowError>;

impl Scan {
    fn run(self, mut b: BatchBuilder, tx: &mpsc::SyncSender<Sent>) {
        let result = (|| -> Result<(), ImportError> {
            let mut reader = TableReader::open(&self.db, Some(&self.table))?;
            reader.set_columns(self.columns.as_deref())?;
            reader.set_any_order(!self.ordered);
            reader.scan(
                self.index.as_deref(),
                self.start.as_deref(),
                self.end.as_deref(),
                None,
                |row| {
                    b.push(row);
                    if b.rows() >= self.batch_rows {
                        send(tx, b.finish())?;
                    }
                    Ok(())
                },
            )?;
            if b.rows() > 0 {
                send(tx, b.finish())?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            if !matches!(e, ImportError::Internal(ref m) if m == STOPPED) {
                let _ = tx.send(Err(ArrowError::ExternalError(Box::new(e))));
            }
        }
    }
}

const STOPPED: &str = "the scan's reader went away";

fn send(tx: &mpsc::SyncSender<Sent>, batch: Sent) -> Result<(), ImportError> {
    tx.send(batch)
        .map_err(|_| ImportError::Internal(STOPPED.into()))
}

/// The consumer's side of a scan.
struct ScanStream {
    schema: SchemaRef,
    rx: mpsc::Receiver<Sent>,
}

impl Iterator for ScanStream {
    type Item = Sent;
    fn next(&mut self) -> Option<Sent> {
        self.rx.recv().ok()
    }
}

impl RecordBatchReader for ScanStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}
