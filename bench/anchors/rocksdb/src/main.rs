//! `rocksdb-anchor`: the RocksDB side of the Sluice benchmark harness.
//!
//! Same CLI and JSON result lines as `sluice-bench`:
//!
//! ```text
//! rocksdb-anchor <sst-write|sst-scan|kv-bulkload> [--n N] [--dir DIR] [--rounds R]
//!                [--file-mib M] [--reads R]
//! rocksdb-anchor <fillseq|fillrandom|overwrite|readrandom|seekrandom|block_writer>
//!                [--n N] [--dir DIR] [--rounds R] [--reads R] [--seconds S]
//! rocksdb-anchor ingest-under-load [--n N] [--dir DIR] [--rounds R] [--seconds S] [--rate R]
//! ```
//!
//! The input is the generator of `shared/BENCH-SPEC.md` (mirrored from
//! `crates/sluice-bench/src/gen.rs`); the engine workloads are those of `bench/WORKLOADS.md`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rocksdb::statistics::{StatsLevel, Ticker};
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, IngestExternalFileOptions, Options, ReadOptions,
    SstFileWriter, WaitForCompactOptions, WriteOptions, DB,
};

mod fair;
mod l0;
#[path = "../../../../crates/sluice-bench/src/sort.rs"]
mod sort;
use serde_json::json;
use sha2::{Digest, Sha256};

/// The spec generator (a copy of `crates/sluice-bench/src/gen.rs`).
mod gen {
    /// SplitMix64 finalizer.
    #[inline]
    pub fn splitmix64(x: u64) -> u64 {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub const PERM: u64 = 0x5EED_0000_0000_0001;
    pub const KEY: u64 = 0xA5A5_A5A5_5A5A_5A5A;
    pub const VAL: u64 = 0x0123_4567_89AB_CDEF;
    pub const READ: u64 = 0x0BAD_5EED_0BAD_5EED;
    pub const KEY_LEN: usize = 16;
    pub const VALUE_LEN: usize = 100;
    pub const REC: usize = KEY_LEN + VALUE_LEN;

    /// A bijection of `0..n` (4-round Feistel over the next even bit width, cycle walking).
    #[derive(Debug, Clone, Copy)]
    pub struct Permutation {
        n: u64,
        half: u32,
        mask: u64,
    }

    impl Permutation {
        pub fn new(n: u64) -> Self {
            let bits = (64 - (n.max(2) - 1).leading_zeros()).max(2);
            let bits = bits + (bits & 1);
            let half = bits / 2;
            Permutation {
                n,
                half,
                mask: (1u64 << half) - 1,
            }
        }

        #[inline]
        pub fn apply(&self, i: u64) -> u64 {
            let mut x = i;
            loop {
                let (mut l, mut r) = (x >> self.half, x & self.mask);
                for k in 0..4 {
                    let nl = r;
                    r = l ^ (splitmix64(r ^ PERM.wrapping_add(k)) & self.mask);
                    l = nl;
                }
                x = (l << self.half) | r;
                if x < self.n {
                    return x;
                }
            }
        }
    }

    #[inline]
    pub fn key_of(p: u64, out: &mut [u8]) {
        out[..8].copy_from_slice(&p.to_be_bytes());
        out[8..16].copy_from_slice(&splitmix64(p ^ KEY).to_be_bytes());
    }

    #[inline]
    pub fn value_of(p: u64, out: &mut [u8]) {
        let mut buf = [0u8; 104];
        for j in 0..13u64 {
            let v = splitmix64(p.wrapping_mul(13).wrapping_add(j).wrapping_add(VAL));
            buf[8 * j as usize..8 * j as usize + 8].copy_from_slice(&v.to_le_bytes());
        }
        out[..VALUE_LEN].copy_from_slice(&buf[..VALUE_LEN]);
    }

    #[inline]
    pub fn read_row(i: u64, n: u64) -> u64 {
        splitmix64(i ^ READ) % n
    }

    /// Row i has key BE64(i) ‖ BE64(splitmix64(i ^ KEY)) and the spec's value (sluice-bench's
    /// `sorted_input`).
    pub fn sorted_input(n: u64) -> Vec<u8> {
        let mut buf = vec![0u8; n as usize * REC];
        for (i, chunk) in buf.chunks_exact_mut(REC).enumerate() {
            let (k, v) = chunk.split_at_mut(KEY_LEN);
            key_of(i as u64, k);
            value_of(i as u64, v);
        }
        buf
    }

    /// The spec stream: pair i is row perm(i), in generation (random key) order.
    pub fn spec_input(n: u64) -> Vec<u8> {
        let perm = Permutation::new(n);
        let mut buf = vec![0u8; n as usize * REC];
        for (i, chunk) in buf.chunks_exact_mut(REC).enumerate() {
            let p = perm.apply(i as u64);
            let (k, v) = chunk.split_at_mut(KEY_LEN);
            key_of(p, k);
            value_of(p, v);
        }
        buf
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Workload {
    SstWrite,
    SstScan,
    SstScanDb,
    L0Fillrandom,
    L0FillrandomWidefile,
    L0IngestRandom,
    KvBulkload,
    FillSeq,
    FillRandom,
    FillRandomSync,
    Overwrite,
    ReadRandom,
    SeekRandom,
    BlockWriter,
    IngestUnderLoad,
}

impl Workload {
    const ALL: [Workload; 15] = [
        Workload::L0Fillrandom,
        Workload::L0FillrandomWidefile,
        Workload::L0IngestRandom,
        Workload::SstWrite,
        Workload::SstScan,
        Workload::SstScanDb,
        Workload::KvBulkload,
        Workload::FillSeq,
        Workload::FillRandom,
        Workload::FillRandomSync,
        Workload::Overwrite,
        Workload::ReadRandom,
        Workload::SeekRandom,
        Workload::BlockWriter,
        Workload::IngestUnderLoad,
    ];

    fn name(self) -> &'static str {
        match self {
            Workload::SstWrite => "sst-write",
            Workload::SstScan => "sst-scan",
            Workload::SstScanDb => "sst-scan-db",
            Workload::L0Fillrandom => "l0-fillrandom",
            Workload::L0FillrandomWidefile => "l0-fillrandom-widefile",
            Workload::L0IngestRandom => "l0-ingest-random",
            Workload::KvBulkload => "kv-bulkload",
            Workload::FillSeq => "fillseq",
            Workload::FillRandom => "fillrandom",
            Workload::FillRandomSync => "fillrandom-sync",
            Workload::Overwrite => "overwrite",
            Workload::ReadRandom => "readrandom",
            Workload::SeekRandom => "seekrandom",
            Workload::BlockWriter => "block_writer",
            Workload::IngestUnderLoad => "ingest-under-load",
        }
    }

    /// The workloads of `bench/WORKLOADS.md`, run through the DB's normal write path
    /// (ingest-under-load: its writers; it has its own driver, `engine::ingest_under_load`).
    fn is_engine(self) -> bool {
        !matches!(
            self,
            Workload::SstWrite
                | Workload::SstScan
                | Workload::SstScanDb
                | Workload::KvBulkload
                | Workload::L0Fillrandom
                | Workload::L0FillrandomWidefile
                | Workload::L0IngestRandom
        )
    }
}

#[derive(Debug)]
struct Args {
    workload: Workload,
    n: u64,
    file_mib: Option<u64>,
    dir: Option<PathBuf>,
    rounds: u32,
    reads: u64,
    seconds: u64,
    /// block_writer: stop after this many ops instead of after `seconds` (as sluice-bench's
    /// `--ops`: the same work in every engine, for write-amp).
    ops: Option<u64>,
    /// ingest-under-load: total put rate of the two writers, per second.
    rate: u64,
}

const USAGE: &str = "usage: rocksdb-anchor <sst-write|sst-scan|kv-bulkload> [--n N] [--dir DIR] \
[--rounds R] [--file-mib M] [--reads R]
       rocksdb-anchor <fillseq|fillrandom|overwrite|readrandom|seekrandom|block_writer> [--n N] \
[--dir DIR] [--rounds R] [--reads R] [--seconds S] [--ops OPS]
       rocksdb-anchor ingest-under-load [--n N] [--dir DIR] [--rounds R] [--seconds S] [--rate R]";

fn parse_args() -> Result<Args, String> {
    let mut workload = None;
    let (mut n, mut reads, mut seconds) = (None, None, None);
    let mut args = Args {
        workload: Workload::SstWrite,
        n: 0,
        file_mib: None,
        dir: None,
        rounds: 1,
        reads: 0,
        seconds: 60,
        ops: None,
        rate: 20_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if a.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut val = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or(format!("{name} needs a value"))
        };
        let num = |s: String, name: &str| -> Result<u64, String> {
            s.replace('_', "")
                .parse::<u64>()
                .map_err(|e| format!("{name}: {e}"))
        };
        match flag.as_str() {
            "--n" => n = Some(num(val("--n")?, "--n")?),
            "--file-mib" => args.file_mib = Some(num(val("--file-mib")?, "--file-mib")?),
            "--dir" => args.dir = Some(PathBuf::from(val("--dir")?)),
            "--rounds" => args.rounds = num(val("--rounds")?, "--rounds")? as u32,
            "--reads" => reads = Some(num(val("--reads")?, "--reads")?),
            "--seconds" => seconds = Some(num(val("--seconds")?, "--seconds")?),
            "--rate" => args.rate = num(val("--rate")?, "--rate")?,
            "--ops" => args.ops = Some(num(val("--ops")?, "--ops")?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => match Workload::ALL.iter().find(|w| w.name() == other) {
                Some(&w) if workload.is_none() => workload = Some(w),
                _ => return Err(format!("unexpected argument '{other}'")),
            },
        }
    }
    args.workload = workload.ok_or("missing workload")?;
    // Defaults: the kv-bulkload harness uses N = 10M and 1M reads; bench/WORKLOADS.md uses
    // N = 1M and reads = N/10.
    let engine = args.workload.is_engine();
    args.n = n.unwrap_or(if engine { 1_000_000 } else { 10_000_000 });
    args.reads = reads.unwrap_or(if engine {
        (args.n / 10).max(1)
    } else {
        1_000_000
    });
    if args.n == 0 {
        return Err("--n must be at least 1".into());
    }
    // block_writer runs 60 s; ingest-under-load 20 s per phase (as sluice-bench).
    let iul = args.workload == Workload::IngestUnderLoad;
    args.seconds = seconds.unwrap_or(if iul { 20 } else { 60 });
    if (args.workload == Workload::BlockWriter || iul) && args.seconds == 0 {
        return Err("--seconds must be at least 1".into());
    }
    if args.ops == Some(0) {
        return Err("--ops must be at least 1".into());
    }
    if iul && args.rate == 0 {
        return Err("--rate must be at least 1".into());
    }
    Ok(args)
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn tree_bytes(p: &Path) -> u64 {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::read_dir(p)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| tree_bytes(&e.path()))
                    .sum()
            })
            .unwrap_or(0),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Block cache of every DB: 32 MiB, as Sluice's default `block_cache_bytes` (RocksDB's own
/// default is the same size; set explicitly so it is printed and checked).
const CACHE_BYTES: usize = 32 << 20;
/// Memtable size of every DB (`write_buffer_size`).
const MEMTABLE_BYTES: usize = 64 << 20;

/// The settings every anchor prints in `params` and `bench/test_params.py` compares with
/// Sluice's: block size, Bloom bits, cache bytes, compression, memtable bytes.
fn table_params() -> serde_json::Value {
    json!({"key_bytes": 16, "value_bytes": 100, "compression": "none", "bloom_bits": 10,
           "filter": "full", "block_size": 4096, "format_version": 5,
           "cache_bytes": CACHE_BYTES, "memtable_bytes": MEMTABLE_BYTES,
           "file_write_buffer": "1 MiB (writable_file_max_buffer_size default)",
           "index": "one index block per table, kept out of the block cache (cache_index_and_filter_blocks false); filter likewise",
           "l0_stop_writes": 36,
           "intra_l0": "when an L0->L1 compaction cannot run (its default leveled picker)",
           "l0_trigger": "4 L0 files (level0_file_num_compaction_trigger, its default)",
           "background_priority": "the process's (RocksDB's default: Env::LowerThreadPoolCPUPriority not called); WAL preallocated 1.1 x write_buffer_size (its default)",
           "rocksdb": "11.8.1 (librocksdb-sys 0.19.0, rocksdb crate 0.25.0)"})
}

/// Adds `extra`'s fields to `base` (an object).
fn with(mut base: serde_json::Value, extra: serde_json::Value) -> serde_json::Value {
    if let (Some(b), serde_json::Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

/// Table options shared by the SST writers and the DB: no compression, full-filter Bloom
/// 10 bits/key, format_version 5, 4 KiB blocks, a 32 MiB block cache, 64 MiB memtables.
fn rocks_opts() -> Options {
    let mut bb = BlockBasedOptions::default();
    bb.set_block_cache(&Cache::new_lru_cache(CACHE_BYTES));
    bb.set_block_size(4096);
    bb.set_bloom_filter(10.0, false); // false = full (not block-based) filter
    bb.set_format_version(5);
    let mut o = Options::default();
    o.set_block_based_table_factory(&bb);
    o.set_compression_type(DBCompressionType::None);
    o.set_bottommost_compression_type(DBCompressionType::None);
    o.set_write_buffer_size(MEMTABLE_BYTES);
    o
}

/// Writes `rows` (sorted records of `gen::REC` bytes, produced by `row(i)`) into SSTs of about
/// `file_bytes` in `dir`, names prefixed with `prefix`.
fn write_ssts<'a>(
    rows: impl Iterator<Item = &'a [u8]>,
    dir: &Path,
    prefix: &str,
    file_bytes: u64,
) -> Result<Vec<PathBuf>, rocksdb::Error> {
    let opts = rocks_opts();
    let mut sink = SstSink::new(&opts, dir, prefix, file_bytes);
    for rec in rows {
        sink.put(rec)?;
    }
    sink.finish()
}

/// SstFileWriters in turn, each file closed once it reaches `file_bytes`.
struct SstSink<'o> {
    opts: &'o Options,
    dir: &'o Path,
    prefix: String,
    file_bytes: u64,
    files: Vec<PathBuf>,
    w: Option<SstFileWriter<'o>>,
}

impl<'o> SstSink<'o> {
    fn new(opts: &'o Options, dir: &'o Path, prefix: &str, file_bytes: u64) -> Self {
        Self {
            opts,
            dir,
            prefix: prefix.to_string(),
            file_bytes,
            files: Vec::new(),
            w: None,
        }
    }

    /// Adds one record (key then value).
    fn put(&mut self, rec: &[u8]) -> Result<(), rocksdb::Error> {
        if self.w.is_none() {
            let p = self
                .dir
                .join(format!("{}{:06}.sst", self.prefix, self.files.len()));
            let wr = SstFileWriter::create(self.opts);
            wr.open(&p)?;
            self.files.push(p);
            self.w = Some(wr);
        }
        let wr = self.w.as_mut().expect("writer");
        wr.put(&rec[..gen::KEY_LEN], &rec[gen::KEY_LEN..])?;
        if wr.file_size() >= self.file_bytes {
            self.w.take().expect("writer").finish()?;
        }
        Ok(())
    }

    /// Closes the last file; returns every file written.
    fn finish(mut self) -> Result<Vec<PathBuf>, rocksdb::Error> {
        if let Some(mut wr) = self.w.take() {
            wr.finish()?;
        }
        Ok(self.files)
    }
}

fn open_db(path: &Path) -> Result<DB, rocksdb::Error> {
    let mut o = rocks_opts();
    o.create_if_missing(true);
    DB::open(&o, path)
}

fn ingest(db: &DB, files: &[PathBuf]) -> Result<(), rocksdb::Error> {
    let mut io = IngestExternalFileOptions::default();
    io.set_move_files(true);
    db.ingest_external_file_opts(&io, files.to_vec())
}

/// SHA-256 over key‖value of a full forward scan, and the entry count.
fn scan_sha256(db: &DB) -> Result<(String, u64), rocksdb::Error> {
    let mut h = Sha256::new();
    let mut it = db.raw_iterator();
    it.seek_to_first();
    let mut n = 0u64;
    while let Some((k, v)) = it.item() {
        h.update(k);
        h.update(v);
        n += 1;
        it.next();
    }
    it.status()?;
    Ok((hex(&h.finalize()), n))
}

/// `sorted[min(floor(len × q), len - 1)]` in µs, the rule of every engine in the harness.
fn percentile_us(sorted_ns: &[u64], q: f64) -> f64 {
    if sorted_ns.is_empty() {
        return 0.0;
    }
    let idx = ((sorted_ns.len() as f64 * q) as usize).min(sorted_ns.len() - 1);
    sorted_ns[idx] as f64 / 1e3
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base)?;
    if args.workload == Workload::IngestUnderLoad {
        return engine::ingest_under_load(args, &base);
    }
    if args.workload.is_engine() {
        return engine::run(args, &base);
    }
    if matches!(
        args.workload,
        Workload::L0Fillrandom | Workload::L0FillrandomWidefile | Workload::L0IngestRandom
    ) {
        return l0::run(args, &base);
    }
    let default_mib = if args.workload == Workload::KvBulkload {
        128
    } else {
        256
    };
    let file_mib = args.file_mib.unwrap_or(default_mib);
    let file_bytes = file_mib << 20;

    let t0 = Instant::now();
    let input = match args.workload {
        Workload::KvBulkload => gen::spec_input(args.n),
        _ => gen::sorted_input(args.n),
    };
    let gen_secs = t0.elapsed().as_secs_f64();
    let input_mb = input.len() as f64 / 1e6;

    for round in 0..args.rounds {
        let dir = base.join(format!("rocksdb-anchor-{}-{round}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let mut params = with(table_params(), json!({"n": args.n, "file_mib": file_mib}));
        let line = match args.workload {
            Workload::SstWrite | Workload::SstScan | Workload::SstScanDb => {
                let t = Instant::now();
                let files = write_ssts(input.chunks_exact(gen::REC), &dir, "", file_bytes)?;
                let write_secs = t.elapsed().as_secs_f64();
                let bytes_on_disk = files.iter().map(|f| tree_bytes(f)).sum::<u64>();
                let common = json!({"workload": args.workload.name(), "engine": "rocksdb", "round": round,
                                    "files": files.len(), "bytes_on_disk": bytes_on_disk});
                if args.workload == Workload::SstWrite {
                    with(
                        common,
                        json!({"params": params,
                           "seconds": {"generate": gen_secs, "write": write_secs},
                           "mb_per_s": input_mb / write_secs, "ops_per_s": args.n as f64 / write_secs,
                           "peak_rss_kib": peak_rss_kib()}),
                    )
                } else {
                    // The same cache state in every engine: each file read once, untimed
                    // (SstFileWriter evicts what it wrote from the page cache).
                    let (mut entries, mut bytes) = (0u64, 0u64);
                    let mut seconds = json!({"generate": gen_secs, "write": write_secs});
                    let scan_secs = if args.workload == Workload::SstScan {
                        params["reader"] = json!("rocksdb::SstFileReader::NewTableIterator per file (C++ shim: raw table iterator)");
                        let t = Instant::now();
                        fair::warm_files(&files)?;
                        seconds["warm"] = json!(t.elapsed().as_secs_f64());
                        let t = Instant::now();
                        for f in &files {
                            fair::scan_sst(f, &mut entries, &mut bytes)?;
                        }
                        t.elapsed().as_secs_f64()
                    } else {
                        params["reader"] = json!("ingest (move_files, untimed) into a fresh DB, then one DB iterator (default ReadOptions)");
                        let t = Instant::now();
                        let db = open_db(&dir.join("db"))?;
                        ingest(&db, &files)?;
                        seconds["ingest"] = json!(t.elapsed().as_secs_f64());
                        let t = Instant::now();
                        fair::warm_dir(&dir.join("db"))?;
                        seconds["warm"] = json!(t.elapsed().as_secs_f64());
                        let t = Instant::now();
                        // Default ReadOptions, as Sluice's and Pebble's default iterators.
                        let mut it = db.raw_iterator_opt(ReadOptions::default());
                        it.seek_to_first();
                        while let Some((k, v)) = it.item() {
                            entries += 1;
                            bytes += (k.len() + v.len()) as u64;
                            it.next();
                        }
                        it.status()?;
                        t.elapsed().as_secs_f64()
                    };
                    seconds["scan"] = json!(scan_secs);
                    if entries != args.n {
                        return Err(format!("scan saw {entries} entries, wrote {}", args.n).into());
                    }
                    with(
                        common,
                        json!({"params": params, "seconds": seconds,
                           "mb_per_s": bytes as f64 / 1e6 / scan_secs, "ops_per_s": entries as f64 / scan_secs,
                           "peak_rss_kib": peak_rss_kib()}),
                    )
                }
            }
            Workload::KvBulkload => {
                params["reads"] = json!(args.reads);
                params["writer_threads"] = json!(2);
                params["recipe"] = json!("sort index; 2 SstFileWriter threads on disjoint key ranges; one ingest_external_file (move_files)");
                params["sort"] = json!(sort::SORT);
                params["cache_state"] = json!("every DB file read once (untimed) before the reads");
                let ssts = dir.join("ssts");
                std::fs::create_dir_all(&ssts)?;
                let db_path = dir.join("db");
                // --- load: from the generated pairs in memory to the data being readable.
                let t = Instant::now();
                // Keys start with BE64(p), p unique: sorting by that prefix sorts the keys.
                let mut idx: Vec<(u64, u32)> = input
                    .chunks_exact(gen::REC)
                    .enumerate()
                    .map(|(i, r)| (u64::from_be_bytes(r[..8].try_into().expect("8")), i as u32))
                    .collect();
                sort::radix_sort(&mut idx);
                let sort_secs = t.elapsed().as_secs_f64();
                let mid = idx.len() / 2;
                let (lo, hi) = idx.split_at(mid);
                // Each writer takes its records in batches gathered by one tight copy loop
                // (`sort::gather`), as Sluice's and Pebble's drivers do.
                let gathered = |part: &[(u64, u32)], prefix: &str| {
                    let opts = rocks_opts();
                    let mut buf = Vec::with_capacity(sort::GATHER_BATCH * gen::REC);
                    let mut sink = SstSink::new(&opts, &ssts, prefix, file_bytes);
                    for batch in part.chunks(sort::GATHER_BATCH) {
                        sort::gather(
                            &input,
                            gen::REC,
                            batch.iter().map(|j| j.1 as usize),
                            &mut buf,
                        );
                        for r in buf.chunks_exact(gen::REC) {
                            sink.put(r)?;
                        }
                    }
                    sink.finish()
                };
                let (fa, fb) = std::thread::scope(|s| {
                    let a = s.spawn(|| gathered(lo, "a"));
                    let b = s.spawn(|| gathered(hi, "b"));
                    (a.join().expect("writer a"), b.join().expect("writer b"))
                });
                let mut files = fa?;
                files.extend(fb?);
                let write_secs = t.elapsed().as_secs_f64() - sort_secs;
                let t_open = Instant::now();
                let db = open_db(&db_path)?;
                params = with(params, fair::options_file_settings(&db_path));
                let open_secs = t_open.elapsed().as_secs_f64();
                let t_ing = Instant::now();
                ingest(&db, &files)?;
                let ingest_secs = t_ing.elapsed().as_secs_f64();
                let load_secs = t.elapsed().as_secs_f64();
                drop(idx);
                // --- the same cache state in every engine: each file read once, untimed.
                let t_warm = Instant::now();
                fair::warm_dir(&db_path)?;
                let warm_secs = t_warm.elapsed().as_secs_f64();
                // --- reads
                let mut key = [0u8; gen::KEY_LEN];
                let mut lat = Vec::with_capacity(args.reads as usize);
                let ro = ReadOptions::default();
                let mut missing = 0u64;
                let t = Instant::now();
                for i in 0..args.reads {
                    gen::key_of(gen::read_row(i, args.n), &mut key);
                    let s = Instant::now();
                    let got = db.get_pinned_opt(key, &ro)?;
                    lat.push(s.elapsed().as_nanos() as u64);
                    match got {
                        Some(v) if v.len() == gen::VALUE_LEN => {}
                        _ => missing += 1,
                    }
                }
                let reads_secs = t.elapsed().as_secs_f64();
                if missing > 0 {
                    return Err(format!(
                        "{missing} of {} reads did not find their key",
                        args.reads
                    )
                    .into());
                }
                lat.sort_unstable();
                // --- untimed: full scan checksum
                let (sha, entries) = scan_sha256(&db)?;
                let read_amp = fair::read_amp(&fair::level_files(&db));
                if entries != args.n {
                    return Err(format!("scan saw {entries} entries, loaded {}", args.n).into());
                }
                drop(db);
                json!({"workload": "kv-bulkload", "engine": "rocksdb", "round": round, "params": params,
                       "seconds": {"generate": gen_secs, "load": load_secs, "reads": reads_secs,
                                   "sort": sort_secs, "write_ssts": write_secs, "open_db": open_secs, "ingest": ingest_secs, "warm": warm_secs},
                       "mb_per_s": input_mb / load_secs,
                       "ops_per_s": if reads_secs > 0.0 { args.reads as f64 / reads_secs } else { 0.0 },
                       "latency_us": {"p50": percentile_us(&lat, 0.50), "p99": percentile_us(&lat, 0.99),
                                      "p999": percentile_us(&lat, 0.999), "p9999": percentile_us(&lat, 0.9999),
                                      "max": lat.last().map_or(0.0, |&x| x as f64 / 1e3)},
                       "scan_sha256": sha, "read_amp": read_amp,
                       "files": files.len(), "bytes_on_disk": tree_bytes(&db_path), "peak_rss_kib": peak_rss_kib()})
            }
            _ => unreachable!("engine workloads are run by engine::run"),
        };
        println!("{line}");
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}

/// The engine workloads of `bench/WORKLOADS.md` (fillseq, fillrandom, overwrite, readrandom,
/// seekrandom, block_writer, ingest-under-load) through RocksDB's normal write path:
/// `put`/`delete` one key at a time, WAL on, sync off.
mod engine {
    use super::*;

    /// User bytes per key-value put (16-byte key + 100-byte value).
    const KV_BYTES: u64 = gen::REC as u64;
    /// block_writer user bytes per op: put(txn 13 B, 8 B) + put(16 B, 100 B) + delete(txn 13 B).
    const BW_OP_BYTES: u64 = 13 + 8 + KV_BYTES + 13;
    const TXN_LEN: usize = 13;
    const L0_POLL: Duration = Duration::from_millis(20);

    /// DB options: the table options of `rocks_opts` (no compression, full Bloom 10 bits/key,
    /// 4 KiB blocks, 64 MiB memtable) plus 2 background jobs, 64 MiB target files and
    /// statistics tickers (for the flush/compaction write bytes).
    fn db_opts() -> Options {
        let mut o = rocks_opts();
        o.create_if_missing(true);
        o.set_max_background_jobs(2);
        o.set_max_subcompactions(2);
        o.set_target_file_size_base(64 << 20);
        o.enable_statistics();
        // Tickers for the flush/compaction bytes and the WRITE_STALL histogram (one entry per
        // stalled write with its duration); no timers.
        o.set_statistics_level(StatsLevel::ExceptTimers);
        o
    }

    /// WAL on, sync off (the defaults, spelled out).
    pub(crate) fn write_opts() -> WriteOptions {
        let mut wo = WriteOptions::default();
        wo.set_sync(false);
        wo.disable_wal(false);
        wo
    }

    /// The largest L0 file count and read amplification seen during a phase.
    #[derive(Clone, Copy)]
    pub(crate) struct MaxShape {
        pub(crate) l0_files: u64,
        pub(crate) read_amp: u64,
    }

    impl MaxShape {
        /// The larger of each figure.
        pub(crate) fn max(self, o: MaxShape) -> MaxShape {
            MaxShape {
                l0_files: self.l0_files.max(o.l0_files),
                read_amp: self.read_amp.max(o.read_amp),
            }
        }

        /// `read_amp`, `max_l0_files` and `max_l0_sublevels` (RocksDB has no sublevels: null).
        pub(crate) fn put(self, line: &mut serde_json::Value) {
            line["read_amp"] = json!(self.read_amp);
            line["max_l0_files"] = json!(self.l0_files);
            line["max_l0_sublevels"] = serde_json::Value::Null;
        }
    }

    pub(crate) struct Engine {
        pub(crate) db: DB,
        /// The options the DB was opened with; they share its Statistics object.
        pub(crate) opts: Options,
        pub(crate) path: PathBuf,
    }

    /// Bytes written by flushes and by compactions so far.
    #[derive(Clone, Copy, Default)]
    pub(crate) struct BgBytes {
        pub(crate) flush: u64,
        pub(crate) compaction: u64,
    }

    impl Engine {
        pub(crate) fn open(path: &Path) -> Result<Self, rocksdb::Error> {
            let opts = db_opts();
            let db = DB::open(&opts, path)?;
            Ok(Engine {
                db,
                opts,
                path: path.to_path_buf(),
            })
        }

        pub(crate) fn bg_bytes(&self) -> BgBytes {
            BgBytes {
                flush: self.opts.get_ticker_count(Ticker::FlushWriteBytes),
                compaction: self.opts.get_ticker_count(Ticker::CompactWriteBytes),
            }
        }

        /// (L0 files, tables a point read may consult) now.
        fn shape(&self) -> (u64, u64) {
            let levels = fair::level_files(&self.db);
            (levels[0], fair::read_amp(&levels))
        }

        /// Optionally flushes the memtable, then waits until no flush or compaction is pending
        /// or running.
        pub(crate) fn settle(&self, flush: bool) -> Result<f64, rocksdb::Error> {
            let t = Instant::now();
            if flush {
                self.db.flush()?;
            }
            self.db
                .wait_for_compact(&WaitForCompactOptions::default())?;
            Ok(t.elapsed().as_secs_f64())
        }

        /// Runs `f` while a thread polls the LSM shape every 20 ms; returns f's result and the
        /// maxima seen.
        pub(crate) fn with_l0_sampler<R>(&self, f: impl FnOnce() -> R) -> (R, MaxShape) {
            let stop = AtomicBool::new(false);
            let (l0, ra) = self.shape();
            let max_l0 = AtomicU64::new(l0);
            let max_ra = AtomicU64::new(ra);
            let sample = || {
                let (l0, ra) = self.shape();
                max_l0.fetch_max(l0, Ordering::Relaxed);
                max_ra.fetch_max(ra, Ordering::Relaxed);
            };
            let r = std::thread::scope(|s| {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        sample();
                        std::thread::sleep(L0_POLL);
                    }
                });
                let r = f();
                stop.store(true, Ordering::Relaxed);
                r
            });
            sample();
            (
                r,
                MaxShape {
                    l0_files: max_l0.into_inner(),
                    read_amp: max_ra.into_inner(),
                },
            )
        }

        fn sst_files(&self) -> usize {
            std::fs::read_dir(&self.path)
                .map(|rd| {
                    rd.filter_map(|e| e.ok())
                        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
                        .count()
                })
                .unwrap_or(0)
        }
    }

    /// `count` puts of (key(k), value(v)) for (k, v) = rows(i); per-put latencies (ns) go to
    /// `lat` if given. Returns the phase's seconds.
    fn puts(
        db: &DB,
        count: u64,
        rows: impl Fn(u64) -> (u64, u64),
        lat: Option<&mut Vec<u64>>,
    ) -> Result<f64, rocksdb::Error> {
        puts_with(db, count, rows, lat, &write_opts())
    }

    /// `puts` with the given write options.
    fn puts_with(
        db: &DB,
        count: u64,
        rows: impl Fn(u64) -> (u64, u64),
        mut lat: Option<&mut Vec<u64>>,
        wo: &WriteOptions,
    ) -> Result<f64, rocksdb::Error> {
        let mut key = [0u8; gen::KEY_LEN];
        let mut val = [0u8; gen::VALUE_LEN];
        let t = Instant::now();
        for i in 0..count {
            let (k, v) = rows(i);
            gen::key_of(k, &mut key);
            gen::value_of(v, &mut val);
            let s = Instant::now();
            db.put_opt(key, val, wo)?;
            if let Some(l) = lat.as_deref_mut() {
                l.push(s.elapsed().as_nanos() as u64);
            }
        }
        Ok(t.elapsed().as_secs_f64())
    }

    fn latency_json(lat: &mut [u64]) -> serde_json::Value {
        lat.sort_unstable();
        json!({"p50": percentile_us(lat, 0.50), "p99": percentile_us(lat, 0.99),
               "p999": percentile_us(lat, 0.999), "p9999": percentile_us(lat, 0.9999),
               "max": lat.last().map_or(0.0, |&x| x as f64 / 1e3)})
    }

    fn write_amp_json(
        before: BgBytes,
        after: BgBytes,
        user_bytes: u64,
    ) -> (f64, serde_json::Value) {
        let flush = after.flush - before.flush;
        let compaction = after.compaction - before.compaction;
        let wa = if user_bytes > 0 {
            (flush + compaction) as f64 / user_bytes as f64
        } else {
            0.0
        };
        (
            wa,
            json!({"flush": flush, "compaction": compaction, "user": user_bytes}),
        )
    }

    /// `txn(i)` = "\x00txn/" ‖ BE64(2^64-1-i).
    pub(crate) fn txn_key(i: u64) -> [u8; TXN_LEN] {
        let mut k = [0u8; TXN_LEN];
        k[..5].copy_from_slice(b"\x00txn/");
        k[5..].copy_from_slice(&(u64::MAX - i).to_be_bytes());
        k
    }

    /// ingest-under-load: rows per external SST.
    const IUL_ROWS_PER_FILE: u64 = 20_000;
    /// ingest-under-load: writer threads.
    const IUL_WRITERS: u64 = 2;

    /// Percentiles of `lat` (ns) in µs, picked as sluice-bench's `Latencies::summary` does:
    /// `sorted[min(floor(len × q), len - 1)]`; `null` when empty.
    pub(crate) fn sluice_percentiles(lat: &mut [u64]) -> serde_json::Value {
        if lat.is_empty() {
            return serde_json::Value::Null;
        }
        lat.sort_unstable();
        let p = |q: f64| {
            let i = ((lat.len() as f64 * q) as usize).min(lat.len() - 1);
            lat[i] as f64 / 1e3
        };
        let max = lat[lat.len() - 1] as f64 / 1e3;
        json!({"p50": p(0.50), "p99": p(0.99), "p999": p(0.999), "p9999": p(0.9999), "max": max})
    }

    /// Paced writers (sluice-bench's `paced_writers`): `IUL_WRITERS` threads putting
    /// `"w" ‖ key(read(i))` → `value(read(i))` at `rate` puts/s in total for `secs`; thread t does
    /// ops j = 0..rate·secs/2, op j scheduled at start + j·(2/rate s), i = offset + t·per_thread + j.
    /// Each op's latency (ns) runs from its scheduled start to the end of its put.
    fn paced_writers(
        db: &DB,
        rate: u64,
        secs: u64,
        n: u64,
        offset: u64,
    ) -> Result<Vec<u64>, String> {
        let per_thread = rate * secs / IUL_WRITERS;
        let interval_ns = 1_000_000_000 * IUL_WRITERS / rate.max(1);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..IUL_WRITERS)
                .map(|t| {
                    s.spawn(move || -> Result<Vec<u64>, String> {
                        let wo = write_opts();
                        let mut lat = Vec::with_capacity(per_thread as usize);
                        let mut key = [0u8; 1 + gen::KEY_LEN];
                        key[0] = b'w';
                        let mut val = [0u8; gen::VALUE_LEN];
                        let start = Instant::now();
                        for j in 0..per_thread {
                            let scheduled = start + Duration::from_nanos(interval_ns * j);
                            let now = Instant::now();
                            if scheduled > now {
                                std::thread::sleep(scheduled - now);
                            }
                            let i = offset + t * per_thread + j;
                            let p = gen::read_row(i, n);
                            gen::key_of(p, &mut key[1..]);
                            gen::value_of(p, &mut val);
                            db.put_opt(key, val, &wo).map_err(|e| format!("put: {e}"))?;
                            lat.push(scheduled.elapsed().as_nanos() as u64);
                        }
                        Ok(lat)
                    })
                })
                .collect();
            let mut all = Vec::with_capacity((per_thread * IUL_WRITERS) as usize);
            for h in handles {
                all.extend(
                    h.join()
                        .map_err(|_| "writer thread panicked".to_string())??,
                );
            }
            Ok(all)
        })
    }

    /// `ingest-under-load` (bench/WORKLOADS.md), as sluice-bench's `ingest_under_load`:
    /// `seconds` external SSTs of 20,000 rows built first (SstFileWriter; file j = rows
    /// j·20000..(j+1)·20000, keys prefixed "w" for even j, "x" for odd j); an empty DB; phase A:
    /// paced writers for `seconds`; phase B: the same writers (next rows of the read sequence)
    /// while a thread ingests file j at its start + j s (`ingest_external_file`, default
    /// options), each ingest timed.
    pub fn ingest_under_load(args: &Args, base: &Path) -> Result<(), Box<dyn std::error::Error>> {
        for round in 0..args.rounds {
            let dir = base.join(format!("rocksdb-anchor-{}-{round}", std::process::id()));
            if dir.exists() {
                std::fs::remove_dir_all(&dir)?;
            }
            let line = ingest_under_load_round(args, &dir, round)?;
            println!("{line}");
            std::fs::remove_dir_all(&dir)?;
        }
        Ok(())
    }

    /// One round of ingest-under-load in `dir` (created here); returns the result line.
    pub(crate) fn ingest_under_load_round(
        args: &Args,
        dir: &Path,
        round: u32,
    ) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
        let (n, rate, secs) = (args.n, args.rate, args.seconds);
        let staging = dir.join("staging");
        std::fs::create_dir_all(&staging)?;
        // --- untimed: the external files.
        let sst_opts = rocks_opts();
        let mut files = Vec::with_capacity(secs as usize);
        let mut key = [0u8; 1 + gen::KEY_LEN];
        let mut val = [0u8; gen::VALUE_LEN];
        for j in 0..secs {
            key[0] = if j % 2 == 0 { b'w' } else { b'x' };
            let p = staging.join(format!("{j:04}.sst"));
            let mut w = SstFileWriter::create(&sst_opts);
            w.open(&p)?;
            for r in j * IUL_ROWS_PER_FILE..(j + 1) * IUL_ROWS_PER_FILE {
                gen::key_of(r, &mut key[1..]);
                gen::value_of(r, &mut val);
                w.put(key, val)?;
            }
            w.finish()?;
            files.push(p);
        }
        // The same cache state in every engine: each staged file read once, untimed
        // (SstFileWriter drops what it wrote from the page cache).
        fair::warm_files(&files)?;
        let eng = Engine::open(&dir.join("db"))?;
        let db = &eng.db;
        // --- phase A: writers alone.
        let mut without = paced_writers(db, rate, secs, n, 0)?;
        // --- phase B: writers + one ingest per second.
        let (mut during, ingest_ms) = std::thread::scope(|s| -> Result<_, String> {
            let ingester = s.spawn(|| -> Result<Vec<f64>, String> {
                // Moved (hard-linked), not copied, as Sluice and Pebble link their files.
                let mut io = IngestExternalFileOptions::default();
                io.set_move_files(true);
                let mut took = Vec::with_capacity(files.len());
                let start = Instant::now();
                for (j, f) in files.iter().enumerate() {
                    let at = start + Duration::from_secs(j as u64);
                    let now = Instant::now();
                    if at > now {
                        std::thread::sleep(at - now);
                    }
                    let t = Instant::now();
                    db.ingest_external_file_opts(&io, vec![f])
                        .map_err(|e| format!("ingest {}: {e}", f.display()))?;
                    took.push(t.elapsed().as_secs_f64() * 1e3);
                }
                Ok(took)
            });
            let during = paced_writers(db, rate, secs, n, rate * secs);
            let ingest_ms = ingester
                .join()
                .map_err(|_| "ingest thread panicked".to_string())?;
            Ok((during?, ingest_ms?))
        })?;
        let a = sluice_percentiles(&mut without);
        let b = sluice_percentiles(&mut during);
        let ratio =
            b["p9999"].as_f64().unwrap_or(0.0) / a["p9999"].as_f64().unwrap_or(1.0).max(1e-9);
        let line = json!({
            "workload": "ingest-under-load", "engine": "rocksdb", "round": round,
            "params": with(with(table_params(), fair::options_file_settings(&eng.path)), json!({"rate": rate, "seconds": secs, "writers": IUL_WRITERS,
                       "rows_per_file": IUL_ROWS_PER_FILE, "n": n,
                       "ingest": "ingest_external_file_opts, move_files (hard link), allow_blocking_flush, no checksum verification (defaults), one file per call",
                       "sst_writer": "SstFileWriter with the DB's table options",
                       "wal": true, "sync": false, "max_background_jobs": 2, "max_subcompactions": 2,
                       "latency": "ns from each op's scheduled start to the end of its put; percentiles as sluice-bench (sorted[min(floor(len*q), len-1)])",
            })),
            "latency_us_without": a, "latency_us_with": b, "p9999_ratio": ratio,
            "ingest_ms": ingest_ms,
            "stall_micros": eng.opts.get_ticker_count(Ticker::StallMicros),
            "files": eng.sst_files(),
            "peak_rss_kib": peak_rss_kib(),
        });
        drop(eng);
        Ok(line)
    }

    pub fn run(args: &Args, base: &Path) -> Result<(), Box<dyn std::error::Error>> {
        let w = args.workload;
        let n = args.n;
        for round in 0..args.rounds {
            let dir = base.join(format!("rocksdb-anchor-{}-{round}", std::process::id()));
            if dir.exists() {
                std::fs::remove_dir_all(&dir)?;
            }
            std::fs::create_dir_all(&dir)?;
            let eng = Engine::open(&dir.join("db"))?;
            let db = &eng.db;
            let perm = gen::Permutation::new(n);
            let random_row = |i: u64| {
                let p = perm.apply(i);
                (p, p)
            };
            let mut params = with(
                table_params(),
                json!({
                "n": n, "target_file_mib": 64, "max_background_jobs": 2, "max_subcompactions": 2,
                "compaction_threads": "1 flush + 1 compaction (max_background_jobs 2), each compaction split into <= 2 subcompactions",
                "wal": true, "sync": false,
                "wal_writes": "one write(2) per batch (no user-space WAL buffer)",
                "write_amp_source": "statistics tickers rocksdb.flush.write.bytes + rocksdb.compact.write.bytes (StatsLevel::ExceptTimers)",
                "read_amp_source": "max of (L0 files + non-empty levels >= 1) from rocksdb.num-files-at-level<N>, polled every 20 ms during the timed phase; RocksDB has no L0 sublevels, so each L0 file counts as one"}),
            );
            if w == Workload::FillRandomSync {
                params["sync"] = json!(true);
                params["wal_writes"] = json!("write(2) + fdatasync per put (WriteOptions::sync)");
            }
            let mut seconds = serde_json::Map::new();
            let mut line = json!({"workload": w.name(), "engine": "rocksdb", "round": round});
            match w {
                Workload::FillSeq
                | Workload::FillRandom
                | Workload::FillRandomSync
                | Workload::Overwrite => {
                    let mut lat = Vec::with_capacity(n as usize);
                    let before;
                    let (secs, max_l0) = if w == Workload::Overwrite {
                        let s = puts(db, n, random_row, None)?;
                        seconds.insert("setup_fill".into(), json!(s));
                        seconds.insert("setup_wait".into(), json!(eng.settle(false)?));
                        before = eng.bg_bytes();
                        let (r, m) = eng.with_l0_sampler(|| {
                            puts(
                                db,
                                n,
                                |i| {
                                    let r = gen::read_row(i, n);
                                    (r, r ^ 1)
                                },
                                Some(&mut lat),
                            )
                        });
                        (r?, m)
                    } else {
                        before = eng.bg_bytes();
                        let (r, m) = eng.with_l0_sampler(|| {
                            if w == Workload::FillSeq {
                                puts(db, n, |i| (i, i), Some(&mut lat))
                            } else if w == Workload::FillRandomSync {
                                // Each put synced to the WAL (equal durability in every engine).
                                let mut wo = write_opts();
                                wo.set_sync(true);
                                puts_with(db, n, random_row, Some(&mut lat), &wo)
                            } else {
                                puts(db, n, random_row, Some(&mut lat))
                            }
                        });
                        (r?, m)
                    };
                    seconds.insert("puts".into(), json!(secs));
                    seconds.insert("flush_wait".into(), json!(eng.settle(true)?));
                    let (wa, wb) = write_amp_json(before, eng.bg_bytes(), n * KV_BYTES);
                    params["write_amp_method"] = json!("(flush+compaction bytes from the start of the timed puts until flushed and compactions done) / (n x 116 B)");
                    line["ops_per_s"] = json!(n as f64 / secs);
                    line["mb_per_s"] = json!((n * KV_BYTES) as f64 / 1e6 / secs);
                    line["latency_us"] = latency_json(&mut lat);
                    line["write_amp"] = json!(wa);
                    line["write_bytes"] = wb;
                    max_l0.put(&mut line);
                }
                Workload::ReadRandom | Workload::SeekRandom => {
                    let reads = args.reads;
                    params["reads"] = json!(reads);
                    let before = eng.bg_bytes();
                    let s = puts(db, n, random_row, None)?;
                    seconds.insert("setup_fill".into(), json!(s));
                    seconds.insert("setup_flush_wait".into(), json!(eng.settle(true)?));
                    let (wa, wb) = write_amp_json(before, eng.bg_bytes(), n * KV_BYTES);
                    params["write_amp_method"] = json!("of the setup: (flush+compaction bytes of fillrandom + flush + compactions) / (n x 116 B)");
                    // The same LSM shape and cache state in every engine before the reads: one
                    // full manual compaction, then every file read once (both untimed).
                    let t = Instant::now();
                    db.compact_range::<&[u8], &[u8]>(None, None);
                    eng.settle(false)?;
                    seconds.insert("setup_compact".into(), json!(t.elapsed().as_secs_f64()));
                    let t = Instant::now();
                    fair::warm_dir(&eng.path)?;
                    seconds.insert("setup_warm".into(), json!(t.elapsed().as_secs_f64()));
                    params["setup"] = json!("fillrandom, flush, wait for compactions, full compact_range, read every file once");
                    let mut lat = Vec::with_capacity(reads as usize);
                    let mut key = [0u8; gen::KEY_LEN];
                    let mut val = [0u8; gen::VALUE_LEN];
                    let (res, max_l0) =
                        eng.with_l0_sampler(|| -> Result<(f64, u64), rocksdb::Error> {
                            let mut bad = 0u64;
                            let t = Instant::now();
                            if w == Workload::ReadRandom {
                                let ro = ReadOptions::default();
                                for i in 0..reads {
                                    let r = gen::read_row(i, n);
                                    gen::key_of(r, &mut key);
                                    gen::value_of(r, &mut val);
                                    let s = Instant::now();
                                    let got = db.get_pinned_opt(key, &ro)?;
                                    let ok = matches!(&got, Some(v) if v.as_ref() == val);
                                    drop(got);
                                    lat.push(s.elapsed().as_nanos() as u64);
                                    bad += u64::from(!ok);
                                }
                            } else {
                                // One iterator for all seeks (the DB does not change during the phase).
                                let mut it = db.raw_iterator_opt(ReadOptions::default());
                                for i in 0..reads {
                                    let r = gen::read_row(i, n);
                                    gen::key_of(r, &mut key);
                                    gen::value_of(r, &mut val);
                                    let s = Instant::now();
                                    it.seek(key);
                                    let ok =
                                        matches!(it.item(), Some((k, v)) if k == key && v == val);
                                    lat.push(s.elapsed().as_nanos() as u64);
                                    bad += u64::from(!ok);
                                }
                                it.status()?;
                            }
                            Ok((t.elapsed().as_secs_f64(), bad))
                        });
                    let (secs, bad) = res?;
                    if bad > 0 {
                        return Err(format!(
                            "{bad} of {reads} reads did not return their key's value"
                        )
                        .into());
                    }
                    seconds.insert("reads".into(), json!(secs));
                    if w == Workload::SeekRandom {
                        params["iterator"] =
                            json!("one raw iterator (default ReadOptions) reused for every seek");
                    }
                    params["verify"] = json!("each read's key and value compared with the generator's (inside the timed op)");
                    line["ops_per_s"] = json!(reads as f64 / secs);
                    line["mb_per_s"] = json!((reads * KV_BYTES) as f64 / 1e6 / secs);
                    line["latency_us"] = latency_json(&mut lat);
                    line["write_amp"] = json!(wa);
                    line["write_bytes"] = wb;
                    max_l0.put(&mut line);
                }
                Workload::BlockWriter => {
                    let secs_target = args.seconds;
                    let ops_target = args.ops;
                    params["seconds"] = json!(secs_target);
                    params["ops_target"] = json!(ops_target);
                    params["op_user_bytes"] = json!(BW_OP_BYTES);
                    params["txn_value"] = json!("LE64(i)");
                    let before = eng.bg_bytes();
                    let wo = write_opts();
                    let mut per_sec: Vec<u64> = Vec::with_capacity(secs_target as usize);
                    let mut lat: Vec<u64> = Vec::with_capacity(1 << 20);
                    let (res, max_l0) = eng.with_l0_sampler(
                        || -> Result<(u64, f64), Box<dyn std::error::Error>> {
                            let mut key = [0u8; gen::KEY_LEN];
                            let mut val = [0u8; gen::VALUE_LEN];
                            let mut upper = [0xFFu8; TXN_LEN + 1];
                            let mut done_at_mark = 0u64;
                            let mut i = 0u64;
                            let start = Instant::now();
                            let mut next_mark = Duration::from_secs(1);
                            loop {
                                let txn = txn_key(i);
                                upper[..TXN_LEN].copy_from_slice(&txn);
                                let p = perm.apply(i % n);
                                gen::key_of(p, &mut key);
                                gen::value_of(p, &mut val);
                                let s = Instant::now();
                                let mut ro = ReadOptions::default();
                                ro.set_iterate_lower_bound(txn);
                                ro.set_iterate_upper_bound(upper);
                                let mut it = db.raw_iterator_opt(ro);
                                it.seek(txn);
                                if it.valid() {
                                    return Err(format!("op {i}: bounded seek found a key").into());
                                }
                                it.status()?;
                                drop(it);
                                db.put_opt(txn, i.to_le_bytes(), &wo)?;
                                db.put_opt(key, val, &wo)?;
                                db.delete_opt(txn, &wo)?;
                                let e = Instant::now();
                                lat.push((e - s).as_nanos() as u64);
                                // Op i finished at e: ops finished before each whole-second mark
                                // passed belong to that second.
                                let el = e - start;
                                let cap = if ops_target.is_some() {
                                    u64::MAX
                                } else {
                                    secs_target
                                };
                                while el >= next_mark && (per_sec.len() as u64) < cap {
                                    let ops = i - done_at_mark;
                                    done_at_mark = i;
                                    per_sec.push(ops);
                                    println!("{}", json!({"second": per_sec.len(), "ops": ops}));
                                    next_mark += Duration::from_secs(1);
                                }
                                let done = match ops_target {
                                    Some(o) => i + 1 >= o,
                                    None => per_sec.len() as u64 >= secs_target,
                                };
                                if done {
                                    if per_sec.is_empty() {
                                        per_sec.push(i + 1); // an --ops run under a second
                                    }
                                    return Ok((i + 1, el.as_secs_f64()));
                                }
                                i += 1;
                            }
                        },
                    );
                    let (ops, run_secs) = res?;
                    lat.truncate(ops as usize);
                    // As sluice-bench: windows of a sixth of the seconds run, 1..10 (10 for the
                    // default 60 s).
                    let win = (per_sec.len() as u64 / 6).clamp(1, 10);
                    params["window_seconds"] = json!(win);
                    seconds.insert("run".into(), json!(run_secs));
                    seconds.insert("flush_wait".into(), json!(eng.settle(true)?));
                    let (wa, wb) = write_amp_json(before, eng.bg_bytes(), ops * BW_OP_BYTES);
                    params["write_amp_method"] = json!("(flush+compaction bytes from the start of the run until flushed and compactions done) / (ops x 150 B)");
                    let mean = |s: &[u64]| s.iter().sum::<u64>() as f64 / s.len() as f64;
                    let first = mean(&per_sec[..win as usize]);
                    let last = mean(&per_sec[per_sec.len() - win as usize..]);
                    line["ops_per_s"] = json!(ops as f64 / run_secs);
                    line["latency_us"] = latency_json(&mut lat);
                    line["per_second_ops"] = json!(per_sec);
                    line["first10_ops_per_s"] = json!(first);
                    line["last10_ops_per_s"] = json!(last);
                    line["ratio"] = json!(if first > 0.0 { last / first } else { 0.0 });
                    line["write_amp"] = json!(wa);
                    line["write_bytes"] = wb;
                    max_l0.put(&mut line);
                }
                _ => unreachable!("not an engine workload"),
            }
            line["params"] = with(params, fair::options_file_settings(&eng.path));
            line["seconds"] = serde_json::Value::Object(seconds);
            line["files"] = json!(eng.sst_files());
            line["bytes_on_disk"] = json!(tree_bytes(&eng.path));
            line["peak_rss_kib"] = json!(peak_rss_kib());
            drop(eng);
            println!("{line}");
            std::fs::remove_dir_all(&dir)?;
        }
        Ok(())
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("rocksdb-anchor {}: {e}", args.workload.name());
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_spec_check_values_for_n_1000() {
        let n = 1000;
        let input = gen::spec_input(n);
        let mut seen = vec![false; n as usize];
        for r in input.chunks_exact(gen::REC) {
            let p = u64::from_be_bytes(r[..8].try_into().unwrap()) as usize;
            assert!(!seen[p], "not a permutation");
            seen[p] = true;
        }
        assert_eq!(
            hex(&Sha256::digest(&input)),
            "d4a7cd05639e50be3c457e790d16fd4ee07906ea30a6f005a649dd5c2dcf8cdc"
        );
        let mut reads = Sha256::new();
        let mut k = [0u8; gen::KEY_LEN];
        for i in 0..1000 {
            gen::key_of(gen::read_row(i, n), &mut k);
            reads.update(k);
        }
        assert_eq!(
            hex(&reads.finalize()),
            "cb48fd96699cd44a9065b673d3564b22dcb39b0f5046a5071c67ac65513796f0"
        );
    }

    #[test]
    fn ingest_under_load_percentiles_pick_as_sluice_bench() {
        // sluice-bench: sorted[min(floor(len * q), len - 1)].
        let mut lat: Vec<u64> = (0..10_000u64).rev().map(|i| i * 1000).collect();
        let s = engine::sluice_percentiles(&mut lat);
        assert_eq!(s["p50"], 5000.0);
        assert_eq!(s["p99"], 9900.0);
        assert_eq!(s["p999"], 9990.0);
        assert_eq!(s["p9999"], 9999.0);
        assert!(engine::sluice_percentiles(&mut []).is_null());
    }

    #[test]
    fn ingest_under_load_runs_short() {
        let dir = std::env::temp_dir().join(format!("rocksdb-anchor-test-{}", std::process::id()));
        let args = Args {
            workload: Workload::IngestUnderLoad,
            n: 1000,
            file_mib: None,
            dir: Some(dir.clone()),
            rounds: 1,
            reads: 0,
            seconds: 2,
            rate: 200,
        };
        let line = engine::ingest_under_load_round(&args, &dir, 0).expect("ingest-under-load");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(line["workload"], "ingest-under-load");
        assert_eq!(line["params"]["rows_per_file"], 20_000);
        assert_eq!(line["ingest_ms"].as_array().map(Vec::len), Some(2));
        for k in ["latency_us_without", "latency_us_with"] {
            for p in ["p50", "p99", "p999", "p9999"] {
                assert!(line[k][p].as_f64().is_some_and(|v| v > 0.0), "{k}.{p}");
            }
        }
        assert!(line["p9999_ratio"].as_f64().is_some());
    }

    #[test]
    fn txn_keys_sort_newest_first_outside_each_others_bounds() {
        for i in [0u64, 1, 255, 256, 1 << 40] {
            let (t, older) = (engine::txn_key(i + 1), engine::txn_key(i));
            assert_eq!(&t[..5], b"\x00txn/");
            assert!(t < older);
            let mut upper = t.to_vec();
            upper.push(0xFF);
            assert!(
                upper.as_slice() < &older[..],
                "older record inside [txn, txn||FF)"
            );
        }
    }
}
