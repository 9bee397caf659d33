//! The base layer every other folder builds on, importing from none of them: internal keys,
//! varint coding, the error type, the iterator protocol and its bounds, range tombstones, CRC
//! masking, the names of files in a Db directory and per-operation traces (Pebble's `internal/base`).

pub mod bounds;
pub mod coding;
pub mod crc;
pub mod error;
pub mod filenames;
pub mod iterator;
pub mod key;
pub mod range_tombstone;
pub mod trace;
