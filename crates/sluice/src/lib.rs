//! Sluice: an embedded LSM-tree key-value store whose fast path is bulk ingestion.
//!
//! Open a [`Db`], write and read it, and bulk-load it with sorted tables: an ingest makes all
//! of its files' keys visible at once, without rewriting them through the memtable.
//!
//! ```
//! use sluice::{Db, IngestOptions, Options, ReadOptions, SstWriter, TableOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
//! db.put(b"apple", b"red").unwrap();
//! assert_eq!(db.get(b"apple").unwrap(), Some(b"red".to_vec()));
//!
//! // Bulk load: write a table in key order, then ingest it.
//! let path = dir.path().join("fruit.sst");
//! let mut w = SstWriter::create(&path, TableOptions::default()).unwrap();
//! w.put(b"banana", b"yellow").unwrap();
//! w.put(b"cherry", b"dark red").unwrap();
//! w.finish().unwrap();
//! db.ingest(&[&path], &IngestOptions::default()).unwrap();
//!
//! let mut it = db.iter(ReadOptions::default()).unwrap();
//! it.seek_to_first();
//! let mut keys = Vec::new();
//! while it.valid() {
//!     keys.push(it.key().to_vec());
//!     it.next();
//! }
//! assert_eq!(keys, [&b"apple"[..], b"banana", b"cherry"]);
//! ```
//!
//! Beneath the `Db` lie the layers of ARCHITECTURE.md; the lowest that users touch is the
//! table format: RocksDB-compatible block-based SSTables, written by [`SstWriter`] and read
//! by [`Table`] on their own too.
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

mod base;
mod compaction;
mod db;
pub mod fs;
mod memtable;
mod read;
pub mod sst;
pub mod version;
pub mod wal;

pub use base::bounds::IterBounds;
pub use base::iterator::InternalIterator;
pub use base::range_tombstone::RangeTombstone;
pub use base::trace::{Span, SpanId, Trace};
pub use base::{coding, error, key};
pub use compaction::RunningOutput;
pub use db::events;
pub use db::events::{Event, EventListener, JsonLinesListener};
#[doc(hidden)]
pub use db::fuzz;
pub use db::{
    ingest_target_level, CheckpointInfo, Db, DirContents, IngestOptions, IngestPlan, IngestedFile,
    LevelMetrics, Metrics, Options, ReadOptions, Snapshot, WriteOptions,
};
pub use error::{Error, Result};
pub use fs::{FileWrites, RateLimiter, Writeback};
pub use read::db_iter::DbIterator;
pub use sst::cache::BlockCache;
pub use sst::format::{ChecksumType, CompressionType};
pub use sst::table::{Table, TableReadOptions};
pub use sst::table_builder::{TableBuilder, TableOptions};
pub use sst::table_iter::TableIter;
pub use sst::writer::{SstFileInfo, SstWriter};
pub use wal::batch::WriteBatch;
