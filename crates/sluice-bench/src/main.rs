//! `sluice-bench`: named workloads, each printing one JSON result line.
//!
//! Workloads so far: `sst-write` and `sst-scan` (the table layer on its own). The engine
//! workloads arrive with the engine.

use sluice_bench::trace_sample::SampleConfig;
use sluice_bench::{engine, fair, gen, l0, online, sort, spiral};

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Parser, ValueEnum};
use serde_json::json;
use sluice::{
    Db, IngestOptions, InternalIterator, IterBounds, ReadOptions, SstWriter, Table, TableOptions,
    TableReadOptions,
};

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
enum Workload {
    /// Write N sorted 16-byte-key / 100-byte-value entries into ~256 MiB SSTs.
    SstWrite,
    /// Write as sst-write (untimed), then scan every file front to back.
    SstScan,
    /// Write as sst-write, ingest into a fresh Db (untimed), then scan it with one Db iterator.
    #[value(name = "sst-scan-db")]
    SstScanDb,
    /// Sequential puts through the write path.
    Fillseq,
    /// Random-order puts through the write path.
    Fillrandom,
    /// As fillrandom, each put synced to the WAL (default N 5,000 in bench/run).
    #[value(name = "fillrandom-sync")]
    FillrandomSync,
    /// Random overwrites of existing keys.
    Overwrite,
    /// Random point reads after fillrandom.
    Readrandom,
    /// Random seeks after fillrandom.
    Seekrandom,
    /// CockroachDB's block_writer pattern: inserts plus a written-then-deleted record per op.
    #[value(name = "block_writer", alias = "block-writer")]
    BlockWriter,
    /// Physical limits: in-memory radix sort of the N spec keys.
    Limits,
    /// Paced writers with and without an ingest every second: foreground latency.
    #[value(name = "ingest-under-load")]
    IngestUnderLoad,
    /// The BENCH-SPEC stream loaded by the fastest path, then random reads.
    #[value(name = "kv-bulkload")]
    KvBulkload,
    /// 10M random-order pairs in write batches of 1,000 until compactions are done (L0 shape).
    #[value(name = "l0-fillrandom")]
    L0Fillrandom,
    /// As l0-fillrandom, plus two puts at the keyspace's ends after every batch.
    #[value(name = "l0-fillrandom-widefile")]
    L0FillrandomWidefile,
    /// 50k-pair SSTs spanning the keyspace ingested one after another beside online writers.
    #[value(name = "l0-ingest-random")]
    L0IngestRandom,
    /// CockroachDB's import death spiral: small overlapping SSTs ingested range by range in a
    /// shuffled order while a writer puts a key at each end of the key space (wide flushes);
    /// run with `--l0-sublevels off` and `on`.
    #[value(name = "l0-spiral")]
    L0Spiral,
    /// A table import (`sluice_import`) into a Db serving paced writers and readers on another
    /// key space: their latency without and during the import.
    #[value(name = "import-online")]
    ImportOnline,
}

/// Sluice benchmark workloads; one JSON line per run on stdout.
#[derive(Parser, Debug)]
#[command(name = "sluice-bench")]
struct Args {
    /// The workload to run.
    #[arg(value_enum)]
    workload: Workload,
    /// Number of entries.
    #[arg(long, default_value_t = 10_000_000)]
    n: u64,
    /// Target SST file size in MiB.
    #[arg(long, default_value_t = 256)]
    file_mib: u64,
    /// Directory for the files (a fresh temp dir under it is used and removed).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Repetitions; one result line each.
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// Reads for readrandom/seekrandom (default n/10).
    #[arg(long)]
    reads: Option<u64>,
    /// Duration of block_writer in seconds (ingest-under-load: of each phase).
    #[arg(long)]
    seconds: Option<u64>,
    /// block_writer: stop after this many ops instead of after `--seconds` (the same work in
    /// every engine, for write-amp).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    ops: Option<u64>,
    /// Total put rate of ingest-under-load's writers, per second.
    #[arg(long, default_value_t = 20_000)]
    rate: u64,
    /// Append the events of every Sluice Db the workload opens (flushes, compactions,
    /// ingests, write stalls, table files) to FILE, one JSON object per line.
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
    /// Trace a sample of the operations (see --trace-rate) and print the N slowest traced
    /// ones with their traces to stderr (fillseq, fillrandom, overwrite, readrandom).
    #[arg(long, value_name = "N")]
    trace_slowest: Option<usize>,
    /// Fraction of operations traced with --trace-slowest.
    #[arg(long, default_value_t = 0.01, requires = "trace_slowest")]
    trace_rate: f64,
    /// `Options::l0_tiering_ratio_pct` of every Db (0: no tiered L0, for A/B runs; default:
    /// the engine's).
    #[arg(long, value_name = "PCT")]
    l0_tiering_ratio_pct: Option<u64>,
    /// l0-fillrandom(-widefile): pace the batches to this many pairs a second (diagnosis: the
    /// L0's shape at another engine's write rate). Default: as fast as the Db takes them.
    #[arg(long, value_name = "OPS")]
    fill_rate: Option<u64>,
    /// l0-spiral: `Options::l0_sublevels` (off: RocksDB's L0).
    #[arg(long, default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    l0_sublevels: bool,
    /// l0-spiral: leave the Db in DIR (which must not hold one yet) instead of a temp dir, for
    /// `sluice lsm --db DIR --html OUT.html`; one round only.
    #[arg(long, value_name = "DIR")]
    keep_db: Option<PathBuf>,
    #[command(flatten)]
    online: OnlineArgs,
}

/// Settings of `import-online` (its baseline window is `--seconds`, default 10).
#[derive(clap::Args, Debug)]
struct OnlineArgs {
    /// SQL schema file of the imported table.
    #[arg(long)]
    schema: Option<PathBuf>,
    /// CSV file(s) to import (repeatable).
    #[arg(long)]
    input: Vec<PathBuf>,
    /// Column of the imported table whose sum is checked.
    #[arg(long, default_value = "s_quantity")]
    sum_col: String,
    /// Paced writer threads.
    #[arg(long, default_value_t = 2)]
    writers: u64,
    /// Puts per second of each writer.
    #[arg(long, default_value_t = 2_000)]
    write_rate: u64,
    /// Paced point-reader threads.
    #[arg(long, default_value_t = 2)]
    readers: u64,
    /// Gets per second of each reader.
    #[arg(long, default_value_t = 2_000)]
    read_rate: u64,
    /// Orders rows written and flushed before the baseline window.
    #[arg(long, default_value_t = 200_000)]
    preload: u64,
    /// Parse workers of the import.
    #[arg(long, default_value_t = 2)]
    import_threads: usize,
    /// Nice value of the import's threads (`ImportOptions::nice`; none: the caller's).
    #[arg(long)]
    import_nice: Option<i32>,
    /// Run the import's threads under SCHED_IDLE (`ImportOptions::idle`).
    #[arg(long)]
    import_idle: bool,
    /// Pace the import's file writes to this many bytes a second (`ImportOptions::rate_limiter`,
    /// as `sluice import --write-rate`; e.g. 100M). Default: unpaced.
    #[arg(long, value_name = "SIZE")]
    import_write_rate: Option<String>,
    /// Memory budget of the import (`512M`, `1G`, as `sluice import --memory`).
    #[arg(long, default_value = "1G")]
    memory: String,
    /// Diagnosis: the paced threads run a no-op instead of their put or get, in both windows
    /// (the machine's floor during the import, against the same run's without).
    #[arg(long)]
    noop_ops: bool,
}

impl OnlineArgs {
    fn config(
        &self,
        baseline_secs: u64,
    ) -> Result<online::OnlineConfig, Box<dyn std::error::Error>> {
        let schema = self.schema.as_ref().ok_or("import-online needs --schema")?;
        if self.input.is_empty() {
            return Err("import-online needs --input".into());
        }
        Ok(online::OnlineConfig {
            schema_sql: std::fs::read_to_string(schema)
                .map_err(|e| format!("{}: {e}", schema.display()))?,
            inputs: self.input.clone(),
            sum_col: self.sum_col.clone(),
            writers: self.writers,
            write_rate: self.write_rate,
            readers: self.readers,
            read_rate: self.read_rate,
            preload: self.preload,
            baseline_secs,
            import_threads: self.import_threads,
            import_nice: self.import_nice,
            import_idle: self.import_idle,
            import_write_rate: self
                .import_write_rate
                .as_deref()
                .map(sluice_import::parse_size)
                .transpose()?
                .filter(|r| *r > 0),
            memory: sluice_import::parse_size(&self.memory)?,
            noop_ops: self.noop_ops,
        })
    }
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("expected on or off, got {s:?}")),
    }
}

/// Sorted input: row i has key BE64(i) ‖ BE64(splitmix64(i ^ KEY)), the spec's value.
fn sorted_input(n: u64) -> Vec<u8> {
    let rec = gen::KEY_LEN + gen::VALUE_LEN;
    let mut buf = vec![0u8; n as usize * rec];
    for (i, chunk) in buf.chunks_exact_mut(rec).enumerate() {
        let (k, v) = chunk.split_at_mut(gen::KEY_LEN);
        gen::key_of(i as u64, k.try_into().expect("key"));
        gen::value_of(i as u64, v.try_into().expect("value"));
    }
    buf
}

fn bench_opts() -> TableOptions {
    TableOptions::default()
}

fn write_files(input: &[u8], dir: &Path, file_bytes: u64) -> sluice::Result<Vec<PathBuf>> {
    let rec = gen::KEY_LEN + gen::VALUE_LEN;
    let mut files = Vec::new();
    let mut w: Option<SstWriter> = None;
    for chunk in input.chunks_exact(rec) {
        if w.is_none() {
            let p = dir.join(format!("{:06}.sst", files.len()));
            files.push(p.clone());
            w = Some(SstWriter::create(&p, bench_opts())?);
        }
        let wr = w.as_mut().expect("writer");
        wr.put(&chunk[..gen::KEY_LEN], &chunk[gen::KEY_LEN..])?;
        if wr.estimated_file_size() >= file_bytes {
            w.take().expect("writer").finish()?;
        }
    }
    if let Some(wr) = w {
        wr.finish()?;
    }
    Ok(files)
}

fn dir_bytes(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

/// Scans every entry of the tables, one table iterator each: (entries, user key + value bytes,
/// seconds).
fn scan_tables(files: &[PathBuf]) -> Result<(u64, u64, f64), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let (mut entries, mut bytes) = (0u64, 0u64);
    for f in files {
        let table = Table::open_path(f, &TableReadOptions::new())?;
        let mut it = table.iter(IterBounds::default());
        it.seek_to_first();
        while it.valid() {
            entries += 1;
            bytes += (it.key().len() - 8 + it.value().len()) as u64;
            it.next();
        }
        it.status()?;
    }
    Ok((entries, bytes, t.elapsed().as_secs_f64()))
}

/// Scans the whole Db with one iterator: (entries, user key + value bytes, seconds).
fn scan_db(db: &Db) -> Result<(u64, u64, f64), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let (mut entries, mut bytes) = (0u64, 0u64);
    let mut it = db.iter(ReadOptions::default())?;
    it.seek_to_first();
    while it.valid() {
        entries += 1;
        bytes += (it.key().len() + it.value().len()) as u64;
        it.next();
    }
    it.status()?;
    Ok((entries, bytes, t.elapsed().as_secs_f64()))
}

/// The N spec keys (16 bytes each, random order) sorted in memory with kv-bulkload's sort
/// ([`sort::radix_sort`] of their 8-byte prefixes, then the keys gathered in that order): the
/// CPU floor of any bulk load that has to sort.
fn limits(n: u64) -> serde_json::Value {
    let perm = gen::Permutation::new(n);
    let keys: Vec<[u8; 16]> = (0..n)
        .map(|i| {
            let mut k = [0u8; 16];
            gen::key_of(perm.apply(i), &mut k);
            k
        })
        .collect();
    let t = Instant::now();
    // Keys are unique in their first 8 bytes (BE64 of the row), so sorting on those suffices.
    let mut items: Vec<(u64, u32)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (u64::from_be_bytes(k[..8].try_into().expect("8")), i as u32))
        .collect();
    sort::radix_sort(&mut items);
    let sorted_keys: Vec<[u8; 16]> = items.iter().map(|&(_, i)| keys[i as usize]).collect();
    let secs = t.elapsed().as_secs_f64();
    let sorted = sorted_keys.windows(2).all(|w| w[0] < w[1]);
    json!({"workload": "limits", "engine": "machine", "params": {"n": n, "sort": sort::SORT},
           "radix_sort": {"seconds": secs, "keys": n, "sorted": sorted}})
}

/// One round of a DB workload, run in a fresh directory, returning its result line.
type RoundFn =
    Box<dyn Fn(&std::path::Path) -> Result<serde_json::Value, Box<dyn std::error::Error>>>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if let Some(pct) = args.l0_tiering_ratio_pct {
        sluice_bench::set_l0_tiering_ratio_pct(pct);
    }
    if let Some(path) = &args.events {
        sluice_bench::record_events_to(path)
            .map_err(|e| format!("--events {}: {e}", path.display()))?;
    }
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base)?;
    let engine_name = match args.workload {
        Workload::Fillseq => Some("fillseq"),
        Workload::Fillrandom => Some("fillrandom"),
        Workload::FillrandomSync => Some("fillrandom-sync"),
        Workload::Overwrite => Some("overwrite"),
        Workload::Readrandom => Some("readrandom"),
        Workload::Seekrandom => Some("seekrandom"),
        Workload::BlockWriter => Some("block_writer"),
        _ => None,
    };
    let engine_run: Option<RoundFn> = match (engine_name, args.workload) {
        (Some(w), _) => Some(Box::new(move |dir| {
            engine::run(
                w,
                args.n,
                args.reads.unwrap_or(args.n / 10).max(1),
                args.seconds.unwrap_or(60),
                args.ops,
                dir,
                args.trace_slowest.map(|keep| SampleConfig {
                    keep,
                    rate: args.trace_rate,
                }),
            )
        })),
        (None, Workload::IngestUnderLoad) => Some(Box::new(move |dir| {
            engine::ingest_under_load(args.n, args.rate, args.seconds.unwrap_or(20), dir)
        })),
        (None, Workload::L0Fillrandom | Workload::L0FillrandomWidefile) => {
            let wide = args.workload == Workload::L0FillrandomWidefile;
            Some(Box::new(move |dir| {
                l0::fill(args.n, wide, args.fill_rate, dir)
            }))
        }
        (None, Workload::L0IngestRandom) => {
            Some(Box::new(move |dir| l0::ingest_random(args.n, dir)))
        }
        (None, Workload::L0Spiral) => {
            if args.keep_db.is_some() && args.rounds > 1 {
                return Err("--keep-db takes one round".into());
            }
            let keep = args.keep_db.clone();
            let on = args.l0_sublevels;
            Some(Box::new(move |dir| {
                spiral::spiral(args.n, on, dir, keep.as_deref())
            }))
        }
        (None, Workload::ImportOnline) => {
            let cfg = args.online.config(args.seconds.unwrap_or(10))?;
            Some(Box::new(move |dir| online::import_online(&cfg, dir)))
        }
        (None, Workload::KvBulkload) => Some(Box::new(move |dir| {
            engine::kv_bulkload(
                args.n,
                args.reads.unwrap_or(1_000_000.min(args.n * 10)),
                dir,
            )
        })),
        _ => None,
    };
    if let Some(run) = engine_run {
        // One fresh directory and one result line per round.
        for round in 0..args.rounds {
            let dir = tempfile::tempdir_in(&base)?;
            let mut line = run(dir.path())?;
            line["round"] = round.into();
            println!("{line}");
        }
        return Ok(());
    }
    if args.workload == Workload::Limits {
        println!("{}", limits(args.n));
        return Ok(());
    }
    let t0 = Instant::now();
    let input = sorted_input(args.n);
    let gen_secs = t0.elapsed().as_secs_f64();
    let input_mb = input.len() as f64 / 1e6;
    for round in 0..args.rounds {
        let dir = tempfile::tempdir_in(&base)?;
        let t = Instant::now();
        let files = write_files(&input, dir.path(), args.file_mib << 20)?;
        let write_secs = t.elapsed().as_secs_f64();
        let mut params = fair::with(
            fair::table_params(),
            json!({"n": args.n, "file_mib": args.file_mib}),
        );
        match args.workload {
            Workload::SstWrite => {
                println!(
                    "{}",
                    json!({"workload": "sst-write", "engine": "sluice", "round": round, "params": params,
                           "seconds": {"generate": gen_secs, "write": write_secs},
                           "mb_per_s": input_mb / write_secs, "ops_per_s": args.n as f64 / write_secs,
                           "files": files.len(), "bytes_on_disk": dir_bytes(&files), "peak_rss_kib": sluice_bench::peak_rss_kib()})
                );
            }
            Workload::SstScan | Workload::SstScanDb => {
                let mut seconds = json!({"generate": gen_secs, "write": write_secs});
                let (entries, bytes, scan_secs) = if args.workload == Workload::SstScan {
                    params["reader"] = "sluice::Table per file (one table iterator each)".into();
                    // The same cache state in every engine: each file read once, untimed.
                    let t = Instant::now();
                    fair::warm_files(&files)?;
                    seconds["warm"] = t.elapsed().as_secs_f64().into();
                    scan_tables(&files)?
                } else {
                    params["reader"] =
                        "Db::ingest (linked, untimed) into a fresh Db, then one Db iterator".into();
                    let t = Instant::now();
                    let db = Db::open(dir.path().join("db"), sluice_bench::db_options())?;
                    db.ingest(
                        &files,
                        &IngestOptions {
                            link_files: true,
                            ..Default::default()
                        },
                    )?;
                    seconds["ingest"] = t.elapsed().as_secs_f64().into();
                    let t = Instant::now();
                    fair::warm_dir(&dir.path().join("db"))?;
                    seconds["warm"] = t.elapsed().as_secs_f64().into();
                    let r = scan_db(&db)?;
                    db.close()?;
                    r
                };
                seconds["scan"] = scan_secs.into();
                if entries != args.n {
                    return Err(format!("scan saw {entries} entries, wrote {}", args.n).into());
                }
                let name = if args.workload == Workload::SstScan {
                    "sst-scan"
                } else {
                    "sst-scan-db"
                };
                println!(
                    "{}",
                    json!({"workload": name, "engine": "sluice", "round": round, "params": params,
                           "seconds": seconds,
                           "mb_per_s": bytes as f64 / 1e6 / scan_secs, "ops_per_s": entries as f64 / scan_secs,
                           "files": files.len(), "bytes_on_disk": dir_bytes(&files), "peak_rss_kib": sluice_bench::peak_rss_kib()})
                );
            }
            _ => unreachable!("engine workloads return early"),
        }
    }
    Ok(())
}
