//! Database options: one struct, every field documented with its default and unit, validated
//! at open, and recorded in an `OPTIONS-NNNNNN` file.

use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::db::events::EventListener;
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
    /// Organise L0 into sublevels (Pebble's L0): flushes are cut at split keys, L0's
    /// compaction score and the write slowdown/stop triggers count L0 *sublevels*, and L0
    /// compactions pick stacks of L0 intervals, several at once. `false`: a RocksDB-like L0 —
    /// no flush split keys, the L0 triggers count L0 *files*, and an L0 compaction takes every
    /// L0 file into the base level, one at a time, never intra-L0 (kept to reproduce and
    /// compare CockroachDB's import death spiral: `sluice-bench l0-spiral`). Reads are the
    /// same either way. Default `true`.
    pub l0_sublevels: bool,
    /// L0 *sublevel* count (L0's read amplification, not its file count: many narrow files
    /// side by side are one sublevel) at which L0 is due for compaction: L0 scores
    /// `sublevels / l0_compaction_trigger` (thin sublevels counted by their bytes while L0 is
    /// shallow: `l0_thin_sublevels_wait`); L0 *files* with `l0_sublevels` off. Default 4.
    pub l0_compaction_trigger: usize,
    /// L0 *sublevel* count (L0's read amplification; L0 files with `l0_sublevels` off) at
    /// which each write is delayed by 1 ms. Default 20.
    pub l0_slowdown_writes_trigger: usize,
    /// L0 sublevel count (files with `l0_sublevels` off) at which writes stop until compaction
    /// catches up. Default 36.
    pub l0_stop_writes_trigger: usize,
    /// Tiered L0 over a large base level (the compaction picker's policy 6): when an L0→Lbase
    /// compaction would rewrite more than this percent of its own L0 bytes in the base level,
    /// newer L0 files of similar size are merged among themselves first (intra-L0), so L0 goes
    /// down in fewer, larger steps. Out-of-order ingests of files spanning the key space are
    /// the case it serves (`l0-ingest-random`: write-amp 5.4 → 3.4). 0: off. Default 200.
    pub l0_tiering_ratio_pct: u64,
    /// Thin L0 sublevels wait (with `l0_sublevels`): while L0 is less than twice
    /// `l0_compaction_trigger` deep (and one sublevel short of `l0_slowdown_writes_trigger`),
    /// it counts as no deeper than the full flushes' worth of bytes it holds, to the nearest, so
    /// a compaction into the base level waits for about as many flushes' bytes as the trigger
    /// (from trigger − ½), as RocksDB's file-count trigger does, rather than moving down the
    /// thin stacks that flush split keys and partial L0 compactions leave. Fewer, larger
    /// L0→Lbase rounds rewrite the base level less (`l0-fillrandom` write-amp 3.95–4.04 →
    /// 3.17–3.25 in the A/B that introduced the rule); L0 may then rest at up to 2 × trigger − 1
    /// sublevels when it holds little data. A full flush's bytes are `write_buffer_size` times
    /// the measured ratio of a flush's output to its memtable: a running average over this
    /// process's flushes of at least a quarter memtable (half weight to the newest), a whole
    /// memtable until one is measured (after a reopen too), at least 1.6% of it. So compression
    /// in L0, small values and overwrites folded in memory still make one round per flush.
    /// `false`: L0's depth alone. Default `true`.
    pub l0_thin_sublevels_wait: bool,
    /// Estimated bytes compaction is behind (each level's excess over its target, L0's bytes
    /// once it is due) at which each write is delayed by 1 ms. Default 64 GiB.
    pub soft_pending_compaction_bytes_limit: u64,
    /// Pending compaction bytes at which writes stop. Default 256 GiB.
    pub hard_pending_compaction_bytes_limit: u64,
    /// A flush cuts its output where the bytes over L0's key intervals since the last cut pass
    /// this (times the sublevel count), so new L0 files are never wide. 0: no cut (nor with
    /// `l0_sublevels` off). Default 4 MiB.
    pub flush_split_bytes: u64,
    /// Target size of the base level, in bytes. Default 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels. Default 10.
    pub max_bytes_for_level_multiplier: u64,
    /// Target size of compaction outputs, in bytes. Into a level with files beneath it, an
    /// output is cut at a boundary of those files once it holds half of this or more, and may
    /// grow to twice this to reach one (as RocksDB's `level_compaction_dynamic_file_size`);
    /// into the last level with data, at this size. Default 64 MiB.
    pub target_file_size: u64,
    /// Small files merged in their level (the compaction picker's policy 7): when no level is
    /// due, 8 to 64 neighbouring files of a level, each under a 64th of `target_file_size`
    /// (under 4 KiB always), with nothing beneath them in deeper levels and every key starting
    /// with the same this many bytes, are merged into one file of that level. Ingests of small
    /// files with keys past a prefix's earlier ones leave such runs (each append into a
    /// columnar table adds one file per column, each beside that column's older files at the
    /// bottom). Keeping a run within one prefix keeps the gap after each prefix's files open,
    /// where the next append's file goes unrewritten; merging across it would send those files
    /// to L0. So would a file committed later with keys inside a merged run's span (it goes
    /// above, and is merged down by a compaction). [`crate::Db::merge_small_files`] does the same
    /// on the caller's thread for a key range, whatever this says (`sluice_import` calls it for
    /// its table, prefix 8: a table and an index id). 0: off. Default 0.
    pub small_file_merge_prefix: usize,
    /// Background threads for flushes and compactions. With 2 or more, one thread runs the
    /// flushes and the others the compactions (at most `max_background_jobs - 1` at once),
    /// the compaction threads 5 steps nicer than [`background_nice`](Self::background_nice)
    /// (unless that is 0), so that a flush comes before a compaction for the CPU (RocksDB's
    /// HIGH and LOW pools); with 1, that thread runs both (and one compaction at a time).
    /// Default 2.
    pub max_background_jobs: usize,
    /// Niceness (0..=19) the background threads (flushes, compactions and the threads they
    /// start) give themselves at start, so that foreground readers and writers win the CPU
    /// when both want it: a writer that yields a contended lock gets it back within
    /// microseconds instead of after a background thread's whole time slice (up to 4 ms seen
    /// in a profile of ingest-under-load on 2 cores; bench/profiles/README.md). The trade:
    /// under a foreground load that saturates every core, flushes and compactions get a
    /// smaller share (about a tenth each at 10) and writers meet the L0 and memtable
    /// backpressure sooner. 0 keeps the process's own priority. Linux only (elsewhere
    /// ignored); a thread can only lower its own priority, so this never needs privileges.
    /// With two or more workers the compaction threads go 5 steps further (at most 19; not
    /// when this is 0), see [`max_background_jobs`](Self::max_background_jobs). Default 10.
    pub background_nice: i32,
    /// Most threads one compaction is split into (key ranges merged in parallel, cut at input
    /// file boundaries), when its inputs exceed twice `target_file_size`. Default 2.
    pub max_subcompactions: usize,
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
    /// Write each WAL through a shared memory mapping of its preallocated space (Linux, on the
    /// real file system): an append is a copy into the page cache instead of a `write(2)`,
    /// which is over half the CPU of a single writer's puts. A write survives a process crash
    /// either way (the page cache outlives the process) and a power loss once synced. The WAL
    /// file is a memtable and a tenth long while written, its tail zeros (recovery ends the
    /// log there); a clean switch or close truncates it. Where `fallocate` or the mapping
    /// fails, the WAL is written through `write(2)`.
    ///
    /// The trade, measured (BENCHMARKS.md, "The WAL through a mapping"): single-writer put
    /// throughput about doubles (fillseq, fillrandom), but a writer that touches a WAL page
    /// the kernel is writing back, or faults while the process's address space is locked,
    /// waits in the page fault while holding the WAL: with syncs and ingests running beside
    /// the writers, their p99.9 went from about 3 ms to about 100 ms. For bulk loads through
    /// the write path with nothing else to serve; off for serving. Default `false`.
    pub wal_mmap_writes: bool,
    /// Stage the WAL through a ring in shared memory (`/dev/shm` on Linux when it is a
    /// tmpfs, on the real file system; `fs::staged`): a write copies its record into the ring,
    /// which outlives the process, and a thread writes the ring to the WAL file behind it, so
    /// a put makes no `write(2)` and still survives `kill -9` once acknowledged (a sync write
    /// drains the ring and syncs the file before it returns, as before). After a crash, the
    /// next writable open writes what the ring held to the WAL before it replays it. Needs a
    /// 2 MiB ring file per open Db; where it cannot be made, or with `wal_mmap_writes`, the WAL
    /// is written directly. The ring lives as long as the tmpfs: non-synced writes the thread
    /// had not written yet (about 100 µs of them) are lost on a reboot, as on a power loss,
    /// and when `/dev/shm` is torn down with the process (a container whose `/dev/shm` is its
    /// own); `write(2)` would have kept those. [`Db::open_read_only`](crate::Db::open_read_only)
    /// reads the ring too, without writing to it or stopping the writer: beside a live writer,
    /// or of one that was killed, it sees every write acknowledged before it opened — unless
    /// its `/dev/shm` is not the writer's (another container sharing only the Db's volume):
    /// then it misses what the ring still held. Made only on 64-bit Linux. Default `true`.
    pub wal_staging: bool,
    /// An open for writing starts a new MANIFEST that carries the current one's history of
    /// edits forward (rewritten and synced whole, never appended to in place) while that is
    /// below this size and ends cleanly; otherwise the new MANIFEST starts from a snapshot of
    /// the version (the limit plays the part of RocksDB's `max_manifest_file_size`). 0: always
    /// a snapshot. Default 64 MiB.
    pub max_manifest_file_size: u64,
    /// The file system. Default the real one.
    pub fs: Arc<dyn FileSystem>,
    /// Listeners told of flushes, compactions, ingests, write stalls, background errors and
    /// table files created and deleted, from a thread of their own (see
    /// [`events`](crate::events)). Not recorded in the OPTIONS file. Default none (no thread,
    /// no cost).
    pub listeners: Vec<Arc<dyn EventListener>>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_options_file())
    }
}

/// How much nicer than [`Options::background_nice`] the compaction threads run.
const COMPACTION_NICE_STEP: i32 = 5;

impl Options {
    /// The L0 depth below which thin sublevels wait for a round's bytes
    /// ([`l0_thin_sublevels_wait`](Self::l0_thin_sublevels_wait)): twice
    /// `l0_compaction_trigger`, at most one short of `l0_slowdown_writes_trigger`. `None` when
    /// the rule is off (the option, or `l0_sublevels`).
    pub fn l0_thin_sublevels_until(&self) -> Option<usize> {
        (self.l0_thin_sublevels_wait && self.l0_sublevels).then(|| {
            crate::compaction::picker::thin_sublevels_until(
                self.l0_compaction_trigger,
                self.l0_slowdown_writes_trigger,
            )
        })
    }

    /// The niceness the compaction threads give themselves: with two or more workers,
    /// [`background_nice`](Self::background_nice) plus 5 (at most 19), unless that is 0; with
    /// one worker (which runs flushes too), `background_nice`.
    pub fn compaction_nice(&self) -> i32 {
        if self.max_background_jobs > 1 && self.background_nice > 0 {
            (self.background_nice + COMPACTION_NICE_STEP).min(19)
        } else {
            self.background_nice
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            l0_sublevels: true,
            l0_compaction_trigger: 4,
            l0_slowdown_writes_trigger: 20,
            l0_stop_writes_trigger: 36,
            l0_tiering_ratio_pct: 200,
            l0_thin_sublevels_wait: true,
            soft_pending_compaction_bytes_limit: 64 << 30,
            hard_pending_compaction_bytes_limit: 256 << 30,
            flush_split_bytes: 4 << 20,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10,
            target_file_size: 64 << 20,
            small_file_merge_prefix: 0,
            max_background_jobs: 2,
            max_subcompactions: 2,
            background_nice: 10,
            max_open_files: 1000,
            block_cache_bytes: 32 << 20,
            block_size: 4096,
            block_restart_interval: 16,
            checksum: ChecksumType::Crc32c,
            compression_per_level: [CompressionType::None; NUM_LEVELS],
            bloom_bits_per_level: [Some(10.0); NUM_LEVELS],
            verify_checksums: true,
            wal_mmap_writes: false,
            wal_staging: true,
            max_manifest_file_size: 64 << 20,
            fs: Arc::new(RealFs),
            listeners: Vec::new(),
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
        if self.max_subcompactions == 0 || self.max_subcompactions > 64 {
            return bad(format!(
                "max_subcompactions must be in 1..=64, got {}",
                self.max_subcompactions
            ));
        }
        if !(0..=19).contains(&self.background_nice) {
            return bad(format!(
                "background_nice must be in 0..=19, got {}",
                self.background_nice
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

    /// The options a Db was last opened with, from its OPTIONS file (RocksDB's
    /// `LoadLatestOptions`), on top of `base` (which supplies what the file does not hold: the
    /// file system, `create_if_missing`, `error_if_exists`). Tools open a Db with these so that
    /// a `get` never rewrites a Db's OPTIONS with defaults.
    pub fn load_latest(dir: &std::path::Path, base: Options) -> Result<Options> {
        let fs = Arc::clone(&base.fs);
        let current = dir.join("CURRENT");
        let name = fs.read_all(&current).map_err(|e| Error::io(&current, e))?;
        let number = String::from_utf8_lossy(&name)
            .trim()
            .strip_prefix("MANIFEST-")
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| Error::corruption(&current, 0, "CURRENT does not name a MANIFEST"))?;
        let mut path = crate::base::filenames::options_file_name(dir, number);
        if !fs.exists(&path) {
            // A Db whose last open crashed between its CURRENT and OPTIONS writes (versions
            // before OPTIONS was written first): the newest OPTIONS file at or below CURRENT's
            // MANIFEST is the last one used (one above it is an orphan of a failed open); with
            // none at all, `base` as is (what `Db::open` itself would use).
            let newest = fs
                .list(dir)
                .map_err(|e| Error::io(dir, e))?
                .iter()
                .filter_map(|name| name.strip_prefix("OPTIONS-")?.parse::<u64>().ok())
                .filter(|&n| n <= number)
                .max();
            match newest {
                Some(n) => path = crate::base::filenames::options_file_name(dir, n),
                None => {
                    base.validate()?;
                    return Ok(base);
                }
            }
        }
        let bytes = fs.read_all(&path).map_err(|e| Error::io(&path, e))?;
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            Error::corruption(&path, e.valid_up_to() as u64, "OPTIONS file is not UTF-8")
        })?;
        let mut o = base;
        o.apply_options_file(text)
            .map_err(|(offset, e)| Error::corruption(&path, offset, e))?;
        // Values out of range are the file's fault here, not the caller's.
        o.validate().map_err(|e| match e {
            Error::InvalidArgument(m) => Error::corruption(&path, 0, m),
            e => e,
        })?;
        Ok(o)
    }

    /// Sets every field an OPTIONS file names; unknown names are ignored (a newer writer).
    /// Errors are the bad line's byte offset and a reason.
    fn apply_options_file(&mut self, text: &str) -> std::result::Result<(), (u64, String)> {
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            self.apply_options_line(line.trim())
                .map_err(|e| (offset as u64, e))?;
            offset += line.len();
        }
        Ok(())
    }

    fn apply_options_line(&mut self, line: &str) -> std::result::Result<(), String> {
        fn num<T: std::str::FromStr>(k: &str, v: &str) -> std::result::Result<T, String> {
            v.parse().map_err(|_| format!("{k}: bad value {v:?}"))
        }
        if line.is_empty() || line.starts_with('#') {
            return Ok(());
        }
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("line {line:?} is not key=value"))?;
        match k {
            "write_buffer_size" => self.write_buffer_size = num(k, v)?,
            "max_write_buffer_number" => self.max_write_buffer_number = num(k, v)?,
            "l0_sublevels" => self.l0_sublevels = num(k, v)?,
            "l0_compaction_trigger" => self.l0_compaction_trigger = num(k, v)?,
            "l0_slowdown_writes_trigger" => self.l0_slowdown_writes_trigger = num(k, v)?,
            "l0_stop_writes_trigger" => self.l0_stop_writes_trigger = num(k, v)?,
            "l0_tiering_ratio_pct" => self.l0_tiering_ratio_pct = num(k, v)?,
            "l0_thin_sublevels_wait" => self.l0_thin_sublevels_wait = num(k, v)?,
            "max_bytes_for_level_base" => self.max_bytes_for_level_base = num(k, v)?,
            "max_bytes_for_level_multiplier" => self.max_bytes_for_level_multiplier = num(k, v)?,
            "target_file_size" => self.target_file_size = num(k, v)?,
            "small_file_merge_prefix" => self.small_file_merge_prefix = num(k, v)?,
            "max_background_jobs" => self.max_background_jobs = num(k, v)?,
            "max_subcompactions" => self.max_subcompactions = num(k, v)?,
            "background_nice" => self.background_nice = num(k, v)?,
            "soft_pending_compaction_bytes_limit" => {
                self.soft_pending_compaction_bytes_limit = num(k, v)?
            }
            "hard_pending_compaction_bytes_limit" => {
                self.hard_pending_compaction_bytes_limit = num(k, v)?
            }
            "flush_split_bytes" => self.flush_split_bytes = num(k, v)?,
            "max_open_files" => self.max_open_files = num(k, v)?,
            "block_cache_bytes" => self.block_cache_bytes = num(k, v)?,
            "block_size" => self.block_size = num(k, v)?,
            "block_restart_interval" => self.block_restart_interval = num(k, v)?,
            "verify_checksums" => self.verify_checksums = num(k, v)?,
            "wal_mmap_writes" => self.wal_mmap_writes = num(k, v)?,
            "wal_staging" => self.wal_staging = num(k, v)?,
            "max_manifest_file_size" => self.max_manifest_file_size = num(k, v)?,
            "checksum" => {
                self.checksum = crate::sst::format::ChecksumType::from_name(v)
                    .ok_or_else(|| format!("{k}: unknown checksum {v:?}"))?
            }
            "compression_per_level" => {
                for (i, c) in v.split(',').enumerate().take(NUM_LEVELS) {
                    self.compression_per_level[i] = [
                        CompressionType::None,
                        CompressionType::Snappy,
                        CompressionType::Lz4,
                        CompressionType::Zstd,
                    ]
                    .into_iter()
                    .find(|t| t.rocksdb_name() == c)
                    .or_else(|| CompressionType::from_name(c))
                    .ok_or_else(|| format!("{k}: unknown compression {c:?}"))?;
                }
            }
            "bloom_bits_per_level" => {
                for (i, b) in v.split(',').enumerate().take(NUM_LEVELS) {
                    self.bloom_bits_per_level[i] = match b {
                        "none" => None,
                        b => Some(num(k, b)?),
                    };
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Renders the OPTIONS file (`name=value` lines; read back by [`Options::load_latest`]).
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
        kv("l0_sublevels", self.l0_sublevels.to_string());
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
            "l0_tiering_ratio_pct",
            self.l0_tiering_ratio_pct.to_string(),
        );
        kv(
            "l0_thin_sublevels_wait",
            self.l0_thin_sublevels_wait.to_string(),
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
        kv(
            "small_file_merge_prefix",
            self.small_file_merge_prefix.to_string(),
        );
        kv("max_background_jobs", self.max_background_jobs.to_string());
        kv("max_subcompactions", self.max_subcompactions.to_string());
        kv("background_nice", self.background_nice.to_string());
        kv(
            "soft_pending_compaction_bytes_limit",
            self.soft_pending_compaction_bytes_limit.to_string(),
        );
        kv(
            "hard_pending_compaction_bytes_limit",
            self.hard_pending_compaction_bytes_limit.to_string(),
        );
        kv("flush_split_bytes", self.flush_split_bytes.to_string());
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
        kv("wal_mmap_writes", self.wal_mmap_writes.to_string());
        kv("wal_staging", self.wal_staging.to_string());
        kv(
            "max_manifest_file_size",
            self.max_manifest_file_size.to_string(),
        );
        s
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions<'a> {
    /// fsync the WAL before acknowledging. Default `false`.
    pub sync: bool,
    /// Skip the WAL (the write is lost on a crash unless flushed). Default `false`.
    pub disable_wal: bool,
    /// Record what the write did (latch wait, group commit, stall, WAL, memtable) into this
    /// trace. Default `None`: nothing is recorded and nothing is paid.
    pub trace: Option<&'a crate::base::trace::Trace>,
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
    /// Record what the read did (memtable probes, tables, filter, blocks, entries stepped
    /// over) into this trace; an iterator records until it is dropped. Default `None`:
    /// nothing is recorded and nothing is paid.
    pub trace: Option<&'a crate::base::trace::Trace>,
}
