//! The table layer: RocksDB's block-based table format, written by Sluice as `format_version`
//! 5 (6 on request) and read in versions 1 to 7 (RocksDB ≥ 8.6 writes 6 by default, ≥ 11
//! writes 7).
//!
//! * [`format`](mod@format): handles, trailers, checksums, compression framing; [`footer`] the footer and
//!   the context-aware checksums of format_version ≥ 6.
//! * [`block`]: prefix-compressed blocks with restart points.
//! * [`filter`]: the Bloom and Ribbon filters; [`xxph3`] their key hash; [`table_filter`] a
//!   table's full or partitioned filter.
//! * [`properties`]: the `rocksdb.properties` block.
//! * [`table_builder`] / [`table`]: streaming writer and reader; [`index_iter`] the single or
//!   partitioned index, [`table_iter`] the table iterator.
//! * [`cache`]: the shared block cache.
//! * [`writer`]: the public [`SstWriter`](writer::SstWriter) for external files.

pub mod block;
pub mod cache;
pub mod filter;
pub mod footer;
pub mod format;
pub mod fuzz;
pub mod index_iter;
pub mod properties;
pub mod table;
pub mod table_builder;
pub mod table_filter;
pub mod table_iter;
pub mod writer;
pub mod xxph3;

#[cfg(test)]
mod rocksdb_tests;
#[cfg(test)]
mod table_tests;
