//! The L0 workloads of issue 15 (`bench/WORKLOADS.md`, "L0 under pressure"), as sluice-bench's
//! `l0.rs` runs them: `l0-fillrandom` and `l0-fillrandom-widefile` (the spec stream in write
//! batches of 1,000 pairs; widefile adds two puts at the keyspace's ends after every batch) and
//! `l0-ingest-random` (50k-pair SSTs spanning the keyspace, ingested one after another beside
//! two paced writers).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rocksdb::statistics::Histogram;
use rocksdb::{IngestExternalFileOptions, SstFileWriter, WriteBatch};
use serde_json::json;

use crate::engine::{sluice_percentiles, write_opts, BgBytes, Engine};
use crate::{gen, peak_rss_kib, rocks_opts, table_params, tree_bytes, with, Args, Workload};

const BATCH: u64 = 1_000;
const ROWS_PER_FILE: u64 = 50_000;
const WRITER_RATE: u64 = 10_000;
const KV: u64 = gen::REC as u64;

fn pair(p: u64) -> ([u8; gen::KEY_LEN], [u8; gen::VALUE_LEN]) {
    let (mut k, mut v) = ([0u8; gen::KEY_LEN], [0u8; gen::VALUE_LEN]);
    gen::key_of(p, &mut k);
    gen::value_of(p, &mut v);
    (k, v)
}

/// Write stalls so far, from the `rocksdb.db.write.stall` histogram (one entry per delayed or
/// stopped write, with its duration): (writes stalled, total µs, longest µs).
fn stall_counts(eng: &Engine) -> (u64, u64, u64) {
    let h = eng.opts.get_histogram_data(Histogram::WriteStall);
    (h.count(), h.sum(), h.max() as u64)
}

fn bg_total(b: BgBytes) -> u64 {
    b.flush + b.compaction
}

fn finish(
    mut line: serde_json::Value,
    eng: &Engine,
    before: (BgBytes, (u64, u64, u64)),
    user: u64,
) -> serde_json::Value {
    let after = stall_counts(eng);
    line["params"] = with(
        line["params"].take(),
        crate::fair::options_file_settings(&eng.path),
    );
    line["write_amp"] =
        json!((bg_total(eng.bg_bytes()) - bg_total(before.0)) as f64 / user.max(1) as f64);
    line["user_bytes"] = json!(user);
    line["stalls"] = json!(after.0 - before.1 .0);
    line["stall_micros"] = json!(after.1 - before.1 .1);
    line["stall_max_micros"] = json!(after.2);
    line["bytes_on_disk"] = json!(tree_bytes(&eng.path));
    line["peak_rss_kib"] = json!(peak_rss_kib());
    line
}

fn fill(
    n: u64,
    widefile: bool,
    dir: &Path,
) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    let eng = Engine::open(&dir.join("db"))?;
    let perm = gen::Permutation::new(n);
    let before = (eng.bg_bytes(), stall_counts(&eng));
    let wo = write_opts();
    let (lo, hi) = ([0u8; gen::KEY_LEN], [0xffu8; gen::KEY_LEN]);
    let mut lat = Vec::with_capacity((n / BATCH + 1) as usize);
    let mut user = 0u64;
    let start = Instant::now();
    let (res, shape) = eng.with_l0_sampler(|| -> Result<(), rocksdb::Error> {
        let (mut i, mut b) = (0u64, 0u64);
        while i < n {
            let mut batch = WriteBatch::default();
            for _ in 0..BATCH.min(n - i) {
                let (k, v) = pair(perm.apply(i));
                batch.put(k, v);
                i += 1;
                user += KV;
            }
            let t = Instant::now();
            eng.db.write_opt(batch, &wo)?;
            if widefile {
                let (_, v) = pair(b);
                let mut edges = WriteBatch::default();
                edges.put(lo, v);
                edges.put(hi, v);
                eng.db.write_opt(edges, &wo)?;
                user += 2 * KV;
            }
            lat.push(t.elapsed().as_nanos() as u64);
            b += 1;
        }
        Ok(())
    });
    res?;
    let write_secs = start.elapsed().as_secs_f64();
    let (settle, settle_shape) = eng.with_l0_sampler(|| eng.settle(true));
    settle?;
    let total = start.elapsed().as_secs_f64();
    if std::env::var_os("ANCHOR_DUMP_STATS").is_some() {
        eprintln!(
            "{}",
            eng.db.property_value("rocksdb.stats")?.unwrap_or_default()
        );
        // The compactions one by one (EVENT_LOG_v1 lines of the LOG), for comparing their
        // sequence with Sluice's `--events`.
        if let Ok(log) = std::fs::read_to_string(eng.path.join("LOG")) {
            for l in log.lines().filter(|l| l.contains("EVENT_LOG_v1")) {
                eprintln!("{l}");
            }
        }
    }
    let max_write_ms = lat.iter().max().copied().unwrap_or(0) as f64 / 1e6;
    let mut line = json!({
        "workload": if widefile { "l0-fillrandom-widefile" } else { "l0-fillrandom" }, "engine": "rocksdb",
        "params": with(table_params(), json!({"n": n, "batch": BATCH, "widefile": widefile, "wal": true, "sync": false,
            "max_background_jobs": 2, "max_subcompactions": 2, "target_file_mib": 64,
            "write_amp_method": "(flush + compaction bytes from the first batch until flushed and compactions done) / user bytes"})),
        "seconds": {"write": write_secs, "settle": total - write_secs, "total": total},
        "ops_per_s": n as f64 / total, "mb_per_s": user as f64 / 1e6 / total,
        "write_ops_per_s": n as f64 / write_secs,
        "latency_us": sluice_percentiles(&mut lat), "max_write_ms": max_write_ms,
    });
    shape.max(settle_shape).put(&mut line);
    Ok(finish(line, &eng, before, user))
}

fn build_files(n: u64, dir: &Path) -> Result<Vec<PathBuf>, rocksdb::Error> {
    let perm = gen::Permutation::new(n);
    let opts = rocks_opts();
    let mut files = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + ROWS_PER_FILE).min(n);
        let mut rows: Vec<u64> = (start..end).map(|i| perm.apply(i)).collect();
        rows.sort_unstable();
        let p = dir.join(format!("{:04}.sst", files.len()));
        let mut w = SstFileWriter::create(&opts);
        w.open(&p)?;
        for r in rows {
            let (k, v) = pair(r);
            w.put(k, v)?;
        }
        w.finish()?;
        files.push(p);
        start = end;
    }
    Ok(files)
}

/// Two writers at WRITER_RATE puts/s in total until `stop`: (latencies ns from each put's
/// scheduled start, puts).
fn online_writers(eng: &Engine, n: u64, stop: &AtomicBool) -> Result<(Vec<u64>, u64), String> {
    let interval = Duration::from_nanos(2 * 1_000_000_000 / WRITER_RATE);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..2u64)
            .map(|t| {
                s.spawn(move || -> Result<(Vec<u64>, u64), String> {
                    let wo = write_opts();
                    let mut lat = Vec::with_capacity(1 << 16);
                    let start = Instant::now();
                    let mut j = 0u64;
                    let mut key = [0u8; 1 + gen::KEY_LEN];
                    key[0] = b'w';
                    while !stop.load(Ordering::Relaxed) {
                        let scheduled = start + interval * j as u32;
                        let now = Instant::now();
                        if scheduled > now {
                            std::thread::sleep(scheduled - now);
                        }
                        let (k, v) = pair(gen::read_row(t + 2 * j, n));
                        key[1..].copy_from_slice(&k);
                        eng.db
                            .put_opt(key, v, &wo)
                            .map_err(|e| format!("put: {e}"))?;
                        lat.push(scheduled.elapsed().as_nanos() as u64);
                        j += 1;
                    }
                    Ok((lat, j))
                })
            })
            .collect();
        let mut all = Vec::new();
        let mut puts = 0;
        for h in hs {
            let (l, j) = h.join().map_err(|_| "writer panicked".to_string())??;
            all.extend(l);
            puts += j;
        }
        Ok((all, puts))
    })
}

fn ingest_random(n: u64, dir: &Path) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    let staging = dir.join("staging");
    std::fs::create_dir_all(&staging)?;
    let t = Instant::now();
    let files = build_files(n, &staging)?;
    let build_secs = t.elapsed().as_secs_f64();
    // The same cache state in every engine: each staged file read once, untimed
    // (SstFileWriter drops what it wrote from the page cache).
    crate::fair::warm_files(&files)?;
    let eng = Engine::open(&dir.join("db"))?;
    let before = (eng.bg_bytes(), stall_counts(&eng));
    let mut io = IngestExternalFileOptions::default();
    io.set_move_files(true);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let mut ingest_ms = Vec::with_capacity(files.len());
    let ((ingested, writers), shape) = eng.with_l0_sampler(|| {
        std::thread::scope(|s| {
            let w = s.spawn(|| online_writers(&eng, n, &stop));
            let mut r = Ok(());
            for f in &files {
                let t = Instant::now();
                r = eng.db.ingest_external_file_opts(&io, vec![f]);
                ingest_ms.push(t.elapsed().as_secs_f64() * 1e3);
                if r.is_err() {
                    break;
                }
            }
            stop.store(true, Ordering::Relaxed);
            (r, w.join().map_err(|_| "writers panicked".to_string()))
        })
    });
    ingested?;
    let (mut lat, puts) = writers??;
    let ingest_secs = start.elapsed().as_secs_f64();
    let (settle, settle_shape) = eng.with_l0_sampler(|| eng.settle(true));
    settle?;
    let total = start.elapsed().as_secs_f64();
    let mut sorted_ms = ingest_ms.clone();
    sorted_ms.sort_by(f64::total_cmp);
    let mut line = json!({
        "workload": "l0-ingest-random", "engine": "rocksdb",
        "params": with(table_params(), json!({"n": n, "rows_per_file": ROWS_PER_FILE, "files": files.len(),
            "writer_rate": WRITER_RATE, "writers": 2, "wal": true, "sync": false,
            "max_background_jobs": 2, "max_subcompactions": 2, "target_file_mib": 64,
            "ingest": "ingest_external_file_opts, one file per call, move_files (default: no checksum verification)",
            "write_amp_method": "(flush + compaction bytes from the first ingest until flushed and compactions done) / (ingested + online user bytes)"})),
        "seconds": {"build_untimed": build_secs, "ingest": ingest_secs, "settle": total - ingest_secs, "total": total},
        "ops_per_s": n as f64 / total, "mb_per_s": (n * KV) as f64 / 1e6 / total,
        "ingest_ms": {"p50": sorted_ms.get(sorted_ms.len() / 2), "max": sorted_ms.last()},
        "online_puts": puts, "latency_us": sluice_percentiles(&mut lat),
    });
    shape.max(settle_shape).put(&mut line);
    Ok(finish(line, &eng, before, n * KV + puts * (KV + 1)))
}

/// Runs one of the L0 workloads `args.rounds` times, one result line each.
pub fn run(args: &Args, base: &Path) -> Result<(), Box<dyn std::error::Error>> {
    for round in 0..args.rounds {
        let dir = base.join(format!("rocksdb-anchor-{}-{round}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let mut line = match args.workload {
            Workload::L0Fillrandom => fill(args.n, false, &dir)?,
            Workload::L0FillrandomWidefile => fill(args.n, true, &dir)?,
            Workload::L0IngestRandom => ingest_random(args.n, &dir)?,
            _ => unreachable!("not an L0 workload"),
        };
        line["round"] = json!(round);
        println!("{line}");
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}
