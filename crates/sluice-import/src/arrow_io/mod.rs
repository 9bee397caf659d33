//! Arrow across the import's boundary: record batches as an input beside text ([`values`]:
//! typed arrays → the schema's values, no text round trip), Parquet files read as such
//! batches ([`parquet`], their pages checked first by [`parquet_pages`]), and tables read back as batches ([`export`]).
//!
//! One Arrow version serves the workspace (arrow-rs 59, the one `pyo3-arrow` in the Python
//! bindings is built on), so batches cross from Python to the pipeline without a copy.

pub mod export;
pub mod parquet;
pub mod parquet_pages;
pub mod values;

pub use arrow_array::{RecordBatch, RecordBatchReader};
pub use export::{arrow_type, BatchBuilder};
pub use parquet::{
    create_table_sql, open_parquet, parquet_schema, parquet_table_sql, unread_columns, ParquetInput,
};
pub use values::{check_type, Cells};

/// A stream of record batches handed to an import ([`crate::Import::from_arrow`]).
pub type ArrowStream = Box<dyn RecordBatchReader + Send>;
