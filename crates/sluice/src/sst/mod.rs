//! The table layer: RocksDB's block-based table format (`format_version` 5), readable and
//! writable by both Sluice and RocksDB.
//!
//! * [`format`]: handles, trailers, footer, checksums, compression framing.
//! * [`block`]: prefix-compressed blocks with restart points.
//! * [`filter`]: the full Bloom filter; [`xxph3`] its key hash.
//! * [`properties`]: the `rocksdb.properties` block.
//! * [`table_builder`] / [`table`]: streaming writer and reader.
//! * [`cache`]: the shared block cache.
//! * [`writer`]: the public [`SstWriter`](writer::SstWriter) for external files.

pub mod block;
pub mod cache;
pub mod filter;
pub mod format;
pub mod fuzz;
pub mod properties;
pub mod table;
pub mod table_builder;
pub mod table_iter;
pub mod writer;
pub mod xxph3;

#[cfg(test)]
mod tests;
