//! `sluice-bench`: named workloads, each printing one JSON result line.
//!
//! Workloads so far: `sst-write` and `sst-scan` (the table layer on its own). The engine
//! workloads arrive with the engine.

use sluice_bench::gen;

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Parser, ValueEnum};
use serde_json::json;
use sluice::{InternalIterator, IterBounds, SstWriter, Table, TableOptions, TableReadOptions};

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
enum Workload {
    /// Write N sorted 16-byte-key / 100-byte-value entries into ~256 MiB SSTs.
    SstWrite,
    /// Write as sst-write (untimed), then scan every file front to back.
    SstScan,
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base)?;
    let t0 = Instant::now();
    let input = sorted_input(args.n);
    let gen_secs = t0.elapsed().as_secs_f64();
    let input_mb = input.len() as f64 / 1e6;
    for round in 0..args.rounds {
        let dir = tempfile::tempdir_in(&base)?;
        let t = Instant::now();
        let files = write_files(&input, dir.path(), args.file_mib << 20)?;
        let write_secs = t.elapsed().as_secs_f64();
        let params = json!({"n": args.n, "key_bytes": 16, "value_bytes": 100, "file_mib": args.file_mib,
                            "compression": "none", "bloom_bits": 10, "block_size": 4096});
        match args.workload {
            Workload::SstWrite => {
                println!(
                    "{}",
                    json!({"workload": "sst-write", "engine": "sluice", "round": round, "params": params,
                           "seconds": {"generate": gen_secs, "write": write_secs},
                           "mb_per_s": input_mb / write_secs, "ops_per_s": args.n as f64 / write_secs,
                           "files": files.len(), "bytes_on_disk": dir_bytes(&files), "peak_rss_kib": peak_rss_kib()})
                );
            }
            Workload::SstScan => {
                let t = Instant::now();
                let mut entries = 0u64;
                let mut bytes = 0u64;
                for f in &files {
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
                let scan_secs = t.elapsed().as_secs_f64();
                if entries != args.n {
                    return Err(format!("scan saw {entries} entries, wrote {}", args.n).into());
                }
                println!(
                    "{}",
                    json!({"workload": "sst-scan", "engine": "sluice", "round": round, "params": params,
                           "seconds": {"generate": gen_secs, "write": write_secs, "scan": scan_secs},
                           "mb_per_s": bytes as f64 / 1e6 / scan_secs, "ops_per_s": entries as f64 / scan_secs,
                           "files": files.len(), "bytes_on_disk": dir_bytes(&files), "peak_rss_kib": peak_rss_kib()})
                );
            }
        }
    }
    Ok(())
}
