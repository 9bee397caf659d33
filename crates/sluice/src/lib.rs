//! Sluice: an embedded LSM-tree key-value store whose fast path is bulk ingestion.
//!
//! This crate holds the engine. Its first layer is the table format: RocksDB-compatible
//! block-based SSTables, written by [`SstWriter`] and read by [`Table`].
//!
//! ```
//! use sluice::{SstWriter, Table, TableOptions, TableReadOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("example.sst");
//! let mut w = SstWriter::create(&path, TableOptions::default()).unwrap();
//! w.put(b"apple", b"red").unwrap();
//! w.put(b"banana", b"yellow").unwrap();
//! let info = w.finish().unwrap();
//! assert_eq!(info.entries, 2);
//!
//! let table = Table::open_path(&path, &TableReadOptions::new()).unwrap();
//! let (_, v) = table.get(b"banana", sluice::key::MAX_SEQNO).unwrap().unwrap();
//! assert_eq!(v, b"yellow");
//! ```

pub mod batch;
pub mod coding;
pub mod compaction;
pub mod db;
pub mod error;
pub mod fs;
pub mod iter;
pub mod key;
pub mod log;
pub mod manifest;
pub mod memtable;
pub mod sst;

pub use batch::WriteBatch;
pub use db::{
    Db, IngestOptions, IngestedFile, LevelMetrics, Metrics, Options, ReadOptions, Snapshot,
    WriteOptions,
};
pub use error::{Error, Result};
pub use iter::db_iter::DbIterator;
pub use iter::InternalIterator;
pub use sst::cache::BlockCache;
pub use sst::format::{ChecksumType, CompressionType};
pub use sst::table::{IterBounds, Table, TableIter, TableReadOptions};
pub use sst::table_builder::{TableBuilder, TableOptions};
pub use sst::writer::{SstFileInfo, SstWriter};
