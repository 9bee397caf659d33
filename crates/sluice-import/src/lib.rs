//! `sluice-import`: load CSV, TSV and JSON-lines files described by a SQL schema into a Sluice
//! Db through sorted SSTables and **one** atomic ingest, and read tables back by key.
//!
//! Data flow (see [`pipeline`] for the numbered steps):
//! ```text
//! files (.gz/.zst) → chunker (record-aligned, quote-aware) → parse workers (typed values →
//! order-preserving keys + row values, sorted per chunk) → in input order: straight to final
//! SSTs while the input is sorted, else sort buffers under the memory budget → spilled runs
//! (plain SSTs) → k-way merge (duplicates, unique indexes) → final SSTs, one set per index,
//! + a catalog SST → one Db::ingest → visible
//! ```
//!
//! Key layout ([`keycode`]): `table_id u32 BE ‖ index_id u32 BE ‖ memcomparable columns`.
//! Table 0 is the catalog ([`catalog`]); index 1 of a table is its primary key (value: the row,
//! [`row`]); secondary indexes are 2.. (key: index columns then primary key columns; empty
//! value).
//!
//! ```no_run
//! use sluice_import::{open_db, Import, ImportOptions, TableReader};
//! let db = open_db("/tmp/db", true)?;
//! let schema = "CREATE TABLE t (id INT PRIMARY KEY, name TEXT); CREATE INDEX by_name ON t (name);";
//! let import = Import::new(schema, vec!["t.csv".into()], ImportOptions::default())?;
//! let summary = import.run(&db)?;
//! let reader = TableReader::open(&db, Some("t"))?;
//! let row = reader.get(&["42".to_string()])?;
//! # Ok::<(), sluice_import::ImportError>(())
//! ```

pub mod arrow_io;
pub mod catalog;
pub mod chunk;
pub(crate) mod commit_lock;
pub mod distributed;
pub(crate) mod durable;
pub mod error;
#[doc(hidden)]
pub mod failpoints;
#[doc(hidden)]
pub mod fuzz;
pub mod input;
pub mod keycode;
pub mod merge;
pub mod parse;
pub mod pipeline;
pub mod positions;
pub mod progress;
pub mod query;
pub mod row;
pub mod schema;
pub mod tmp_dirs;
pub mod types;
pub(crate) mod workers;

pub use error::{BadRow, ImportError, OtherRow, RowPlace};
pub use input::Format;
pub use pipeline::merge::policy::{check_rejects_path, same_file};
pub use pipeline::{
    default_memory, imports_committed, open_db, open_db_read_only, open_db_with, parse_size,
    remove_leftovers, remove_tmp_dirs_for_exit, stop_commits_for_exit, FileSummary, Import,
    ImportOptions, OnDuplicate, Summary,
};
pub use progress::ProgressMode;
pub use query::{ColumnSum, CountSum, OutputFormat, RewriteSummary, TableReader};
pub use schema::{parse_schema, Layout, SchemaError, TableDef};
pub use tmp_dirs::{find_tmp_dirs, TmpDirFound};
