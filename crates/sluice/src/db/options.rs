//! Database options: one struct, every field documented with its default and unit, validated
//! at open, and recorded in an `OPTIONS-NNNNNN` file.

use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::fs::{FileSystem, RealFs};
use crate::sst::format::{ChecksumType, CompressionType};
use crate::sst::table_builder::TableOptions;
use crate::version::NUM_LEVELS;

/// Options of a [`Db`](super::Db).
#[derive(Clone)]
pub struct Options {
    /// Create the database if it does not exist. Default `true`.
    pub create_if_missing: bool,
    /// Fail if the database already exists. Default `false`.
    pub error_if_exists: bool,
    /// Memtable size, in bytes, at which it becomes immutable and is flushed. Default 64 MiB.
    pub write_buffer_size: usize,
    /// Most memtables (active + immutable) held before writes stall. Default 2.
    pub max_write_buffer_number: usize,
    /// L0 file count that triggers an L0 compaction. Default 4.
    pub l0_compaction_trigger: usize,
    /// L0 file count at which each write is delayed by 1 ms. Default 20.
    pub l0_slowdown_writes_trigger: usize,
    /// L0 file count at which writes stop until compaction catches up. Default 36.
    pub l0_stop_writes_trigger: usize,
    /// Target size of the base level, in bytes. Default 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels. Default 10.
    pub max_bytes_for_level_multiplier: u64,
    /// Target size of compaction outputs, in bytes. Default 64 MiB.
    pub target_file_size: u64,
    /// Background threads for flushes and compactions. Default 2.
    pub max_background_jobs: usize,
    /// Table files kept open at once (the table cache bound). Default 1000.
    pub max_open_files: usize,
    /// Block cache capacity, in bytes. Default 32 MiB.
    pub block_cache_bytes: usize,
    /// Data block size, in bytes. Default 4096.
    pub block_size: usize,
    /// Entries between restart points. Default 16.
    pub block_restart_interval: usize,
    /// Block checksum. Default CRC32c.
    pub checksum: ChecksumType,
    /// Compression per level L0..L6. Default none everywhere.
    pub compression_per_level: [CompressionType; NUM_LEVELS],
    /// Bloom filter bits per key per level; `None` = no filter. Default 10 everywhere.
    pub bloom_bits_per_level: [Option<f64>; NUM_LEVELS],
    /// Verify block checksums on every read. Default `true`.
    pub verify_checksums: bool,
    /// The file system. Default the real one.
    pub fs: Arc<dyn FileSystem>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_options_file())
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            l0_compaction_trigger: 4,
            l0_slowdown_writes_trigger: 20,
            l0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10,
            target_file_size: 64 << 20,
            max_background_jobs: 2,
            max_open_files: 1000,
            block_cache_bytes: 32 << 20,
            block_size: 4096,
            block_restart_interval: 16,
            checksum: ChecksumType::Crc32c,
            compression_per_level: [CompressionType::None; NUM_LEVELS],
            bloom_bits_per_level: [Some(10.0); NUM_LEVELS],
            verify_checksums: true,
            fs: Arc::new(RealFs),
        }
    }
}

impl Options {
    /// Checks every field; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if self.write_buffer_size < 4096 {
            return bad(format!(
                "write_buffer_size must be at least 4096 bytes, got {}",
                self.write_buffer_size
            ));
        }
        if self.max_write_buffer_number < 2 {
            return bad(format!(
                "max_write_buffer_number must be at least 2, got {}",
                self.max_write_buffer_number
            ));
        }
        if self.l0_compaction_trigger == 0
            || self.l0_slowdown_writes_trigger < self.l0_compaction_trigger
            || self.l0_stop_writes_trigger < self.l0_slowdown_writes_trigger
        {
            return bad(format!(
                "need 0 < l0_compaction_trigger ({}) <= l0_slowdown_writes_trigger ({}) <= l0_stop_writes_trigger ({})",
                self.l0_compaction_trigger, self.l0_slowdown_writes_trigger, self.l0_stop_writes_trigger
            ));
        }
        if self.max_bytes_for_level_multiplier < 2 {
            return bad("max_bytes_for_level_multiplier must be at least 2".into());
        }
        if self.max_bytes_for_level_base < 1024 || self.target_file_size < 1024 {
            return bad(
                "max_bytes_for_level_base and target_file_size must be at least 1024 bytes".into(),
            );
        }
        if self.max_background_jobs == 0 || self.max_background_jobs > 64 {
            return bad(format!(
                "max_background_jobs must be in 1..=64, got {}",
                self.max_background_jobs
            ));
        }
        if self.max_open_files < 16 {
            return bad(format!(
                "max_open_files must be at least 16, got {}",
                self.max_open_files
            ));
        }
        for l in 0..NUM_LEVELS {
            self.table_options(l).validate()?;
        }
        Ok(())
    }

    /// Table options for files written to `level`.
    pub fn table_options(&self, level: usize) -> TableOptions {
        TableOptions {
            block_size: self.block_size,
            restart_interval: self.block_restart_interval,
            compression: self.compression_per_level[level],
            checksum: self.checksum,
            bloom_bits_per_key: self.bloom_bits_per_level[level],
        }
    }

    /// Renders the OPTIONS file (`name=value` lines).
    pub fn to_options_file(&self) -> String {
        let mut s = String::from("# Sluice options\n");
        let mut kv = |k: &str, v: String| {
            s.push_str(k);
            s.push('=');
            s.push_str(&v);
            s.push('\n');
        };
        kv("write_buffer_size", self.write_buffer_size.to_string());
        kv(
            "max_write_buffer_number",
            self.max_write_buffer_number.to_string(),
        );
        kv(
            "l0_compaction_trigger",
            self.l0_compaction_trigger.to_string(),
        );
        kv(
            "l0_slowdown_writes_trigger",
            self.l0_slowdown_writes_trigger.to_string(),
        );
        kv(
            "l0_stop_writes_trigger",
            self.l0_stop_writes_trigger.to_string(),
        );
        kv(
            "max_bytes_for_level_base",
            self.max_bytes_for_level_base.to_string(),
        );
        kv(
            "max_bytes_for_level_multiplier",
            self.max_bytes_for_level_multiplier.to_string(),
        );
        kv("target_file_size", self.target_file_size.to_string());
        kv("max_background_jobs", self.max_background_jobs.to_string());
        kv("max_open_files", self.max_open_files.to_string());
        kv("block_cache_bytes", self.block_cache_bytes.to_string());
        kv("block_size", self.block_size.to_string());
        kv(
            "block_restart_interval",
            self.block_restart_interval.to_string(),
        );
        kv("checksum", self.checksum.name().to_string());
        kv(
            "compression_per_level",
            self.compression_per_level
                .iter()
                .map(|c| c.rocksdb_name())
                .collect::<Vec<_>>()
                .join(","),
        );
        kv(
            "bloom_bits_per_level",
            self.bloom_bits_per_level
                .iter()
                .map(|b| b.map_or("none".to_string(), |b| b.to_string()))
                .collect::<Vec<_>>()
                .join(","),
        );
        kv("verify_checksums", self.verify_checksums.to_string());
        s
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// fsync the WAL before acknowledging. Default `false`.
    pub sync: bool,
    /// Skip the WAL (the write is lost on a crash unless flushed). Default `false`.
    pub disable_wal: bool,
}

/// Options of a read.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions<'a> {
    /// Read as of this snapshot (default: the latest state).
    pub snapshot: Option<&'a super::Snapshot>,
    /// Smallest key an iterator returns (inclusive).
    pub lower_bound: Option<Vec<u8>>,
    /// First key an iterator does not return (exclusive).
    pub upper_bound: Option<Vec<u8>>,
}
