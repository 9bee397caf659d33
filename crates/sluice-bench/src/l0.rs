//! The L0 workloads of issue 15 (`bench/WORKLOADS.md`, "L0 under pressure"): out-of-order
//! writes and ingests that pile files into L0, measured by what they do to the LSM — stalls,
//! L0 sublevels and files, read and write amplification — and by how long the load takes until
//! compactions are done.
//!
//! - `l0-fillrandom`: the spec stream in random key order, in write batches of [`BATCH`] pairs.
//! - `l0-fillrandom-widefile`: the same, plus after every batch one batch of two puts at the very
//!   start and the very end of the keyspace (CockroachDB's metadata/KeyMax trap: without flush
//!   split keys every flushed L0 file spans the whole keyspace).
//! - `l0-ingest-random`: `n / ROWS_PER_FILE` SSTs of [`ROWS_PER_FILE`] spec pairs each (file j
//!   holds stream rows j·50k..(j+1)·50k, so every file spans the whole keyspace), built untimed,
//!   then ingested one after another while two paced writers put [`WRITER_RATE`] puts/s.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sluice::{Db, IngestOptions, Options, SstWriter, TableOptions, WriteBatch, WriteOptions};

use crate::engine::{key, scheduled_at, value, written_bytes, Latencies};
use crate::fair;
use crate::gen::{self, Permutation, KEY_LEN, VALUE_LEN};

/// Pairs per write batch in the fill workloads.
pub const BATCH: u64 = 1_000;
/// Pairs per external SST in `l0-ingest-random`.
pub const ROWS_PER_FILE: u64 = 50_000;
/// Total put rate of the two online writers in `l0-ingest-random`, per second.
pub const WRITER_RATE: u64 = 10_000;
/// User bytes per pair.
const KV: u64 = (KEY_LEN + VALUE_LEN) as u64;

/// The fields every L0 workload reports about stalls, from the Db's counters.
fn stalls(db: &Db, before: (u64, u64)) -> Value {
    let m = db.metrics();
    json!({"stalls": m.stall_count - before.0, "stall_micros": m.stall_micros - before.1,
           "stall_max_micros": m.stall_max_micros,
           "ingest_waits": m.ingest_waits, "ingest_wait_micros": m.ingest_wait_micros,
           "compactions": m.compactions, "subcompactions": m.subcompactions,
           "write_bytes": {"flush": m.flush_bytes, "compaction": m.compaction_bytes_written}})
}

/// `l0-fillrandom` (`widefile = false`) and `l0-fillrandom-widefile`; `rate` paces the batches
/// to that many pairs a second (none: as fast as the Db takes them).
pub fn fill(
    n: u64,
    widefile: bool,
    rate: Option<u64>,
    dir: &Path,
) -> Result<Value, Box<dyn std::error::Error>> {
    let db = Db::open(dir, crate::db_options())?;
    let perm = Permutation::new(n);
    let m0 = db.metrics();
    let stall0 = (m0.stall_count, m0.stall_micros);
    let (lo, hi) = ([0u8; KEY_LEN], [0xffu8; KEY_LEN]);
    let mut lat = Latencies::with_capacity((n / BATCH + 1) as usize);
    let mut max_write = Duration::ZERO;
    let mut user = 0u64;
    // Batch b of a paced fill is due at start + b × BATCH / rate.
    let batch_interval = rate
        .filter(|&r| r > 0)
        .map(|r| Duration::from_secs_f64(BATCH as f64 / r as f64));
    let start = Instant::now();
    let (res, shape) = fair::with_sampler(&db, || -> sluice::Result<()> {
        let mut i = 0;
        let mut b = 0u64;
        while i < n {
            if let Some(per_batch) = batch_interval {
                let due = scheduled_at(start, per_batch, b);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            let mut batch = WriteBatch::new();
            for _ in 0..BATCH.min(n - i) {
                let (k, v) = {
                    let p = perm.apply(i);
                    (key(p), value(p))
                };
                batch.put(&k, &v);
                i += 1;
                user += KV;
            }
            let t = Instant::now();
            db.write(batch, WriteOptions::default())?;
            if widefile {
                let v = value(b);
                let mut edges = WriteBatch::new();
                edges.put(&lo, &v);
                edges.put(&hi, &v);
                db.write(edges, WriteOptions::default())?;
                user += 2 * KV;
            }
            max_write = max_write.max(t.elapsed());
            lat.record(t);
            b += 1;
        }
        Ok(())
    });
    res?;
    let write_secs = start.elapsed().as_secs_f64();
    // Until the data is flushed and compactions are done (still sampling the shape).
    let (settle, settle_shape) = fair::with_sampler(&db, || -> sluice::Result<()> {
        db.flush()?;
        db.wait_for_background_work()
    });
    settle?;
    let total = start.elapsed().as_secs_f64();
    let shape = shape.max(settle_shape);
    let name = if widefile {
        "l0-fillrandom-widefile"
    } else {
        "l0-fillrandom"
    };
    let out = json!({
        "workload": name, "engine": "sluice",
        "params": fair::with(fair::table_params(), json!({"n": n, "batch": BATCH, "widefile": widefile, "fill_rate": rate,
            "wal": true, "sync": false, "flush_split_bytes": Options::default().flush_split_bytes,
            "write_amp_method": "(flush + compaction bytes from the first batch until flushed and compactions done) / user bytes"})),
        "seconds": {"write": write_secs, "settle": total - write_secs, "total": total},
        "ops_per_s": n as f64 / total, "mb_per_s": user as f64 / 1e6 / total,
        "write_ops_per_s": n as f64 / write_secs,
        "latency_us": lat.summary(), "max_write_ms": max_write.as_secs_f64() * 1e3,
        "write_amp": written_bytes(&db) as f64 / user.max(1) as f64, "user_bytes": user,
        "bytes_on_disk": fair::dir_bytes(dir), "peak_rss_kib": crate::peak_rss_kib(),
    });
    let out = fair::with(fair::with(out, shape.json()), stalls(&db, stall0));
    db.close()?;
    Ok(out)
}

/// Builds the external SSTs of `l0-ingest-random` (untimed): file j = stream rows
/// j·ROWS_PER_FILE.., sorted by key.
fn build_files(n: u64, dir: &Path) -> sluice::Result<Vec<PathBuf>> {
    let perm = Permutation::new(n);
    let mut files = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + ROWS_PER_FILE).min(n);
        let mut rows: Vec<u64> = (start..end).map(|i| perm.apply(i)).collect();
        rows.sort_unstable(); // key = BE64(p) ‖ …: row order is key order
        let p = dir.join(format!("{:04}.sst", files.len()));
        let mut w = SstWriter::create(&p, TableOptions::default())?;
        for r in rows {
            let (k, v) = (key(r), value(r));
            w.put(&k, &v)?;
        }
        w.finish()?;
        files.push(p);
        start = end;
    }
    Ok(files)
}

/// Two writers putting `"w" ‖ key(read(i))` at [`WRITER_RATE`] puts/s in total until `stop`;
/// latencies from each put's scheduled start. Returns (latencies, puts).
fn online_writers(db: &Arc<Db>, n: u64, stop: &AtomicBool) -> (Latencies, u64) {
    let interval = Duration::from_nanos(2 * 1_000_000_000 / WRITER_RATE);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..2u64)
            .map(|t| {
                s.spawn(move || {
                    let mut lat = Latencies::with_capacity(1 << 16);
                    let start = Instant::now();
                    let mut j = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let scheduled = start + interval * j as u32;
                        let now = Instant::now();
                        if scheduled > now {
                            std::thread::sleep(scheduled - now);
                        }
                        let p = gen::read_row(t + 2 * j, n);
                        let (k, v) = (key(p), value(p));
                        let mut key = b"w".to_vec();
                        key.extend_from_slice(&k);
                        db.put(&key, &v).expect("online put");
                        lat.record(scheduled);
                        j += 1;
                    }
                    (lat, j)
                })
            })
            .collect();
        let mut all = Latencies::with_capacity(1 << 17);
        let mut puts = 0;
        for h in hs {
            let (l, j) = h.join().expect("writer");
            all.extend(l);
            puts += j;
        }
        (all, puts)
    })
}

/// `l0-ingest-random`.
pub fn ingest_random(n: u64, dir: &Path) -> Result<Value, Box<dyn std::error::Error>> {
    let staging = dir.join("staging");
    std::fs::create_dir_all(&staging)?;
    let t = Instant::now();
    let files = build_files(n, &staging)?;
    let build_secs = t.elapsed().as_secs_f64();
    // The same cache state in every engine: each staged file read once, untimed.
    fair::warm_files(&files)?;
    let db = Arc::new(Db::open(dir.join("db"), crate::db_options())?);
    let m0 = db.metrics();
    let stall0 = (m0.stall_count, m0.stall_micros);
    let opts = IngestOptions {
        // As RocksDB's and Pebble's defaults: the block checksums are checked when read, and
        // the keys of files this process wrote with SstWriter are not scanned again (RocksDB
        // reads the properties and the first and last keys).
        verify_checksums: false,
        verify_keys: false,
        link_files: true,
        ..Default::default()
    };
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let mut ingest_ms = Vec::with_capacity(files.len());
    let ((ingested, (writer_lat, puts)), shape) = fair::with_sampler(&db, || {
        std::thread::scope(|s| {
            let writers = s.spawn(|| online_writers(&db, n, &stop));
            let mut r: sluice::Result<()> = Ok(());
            for f in &files {
                let t = Instant::now();
                r = db.ingest(std::slice::from_ref(f), &opts).map(|_| ());
                ingest_ms.push(t.elapsed().as_secs_f64() * 1e3);
                if r.is_err() {
                    break;
                }
            }
            stop.store(true, Ordering::Relaxed);
            (r, writers.join().expect("writers"))
        })
    });
    ingested?;
    let ingest_secs = start.elapsed().as_secs_f64();
    let (settle, settle_shape) = fair::with_sampler(&db, || -> sluice::Result<()> {
        db.flush()?;
        db.wait_for_background_work()
    });
    settle?;
    let total = start.elapsed().as_secs_f64();
    let user = n * KV + puts * (KV + 1);
    let max_ingest = ingest_ms.iter().cloned().fold(0.0, f64::max);
    let mut sorted_ms = ingest_ms.clone();
    sorted_ms.sort_by(f64::total_cmp);
    let out = json!({
        "workload": "l0-ingest-random", "engine": "sluice",
        "params": fair::with(fair::table_params(), json!({"n": n, "rows_per_file": ROWS_PER_FILE,
            "files": files.len(), "writer_rate": WRITER_RATE, "writers": 2, "wal": true, "sync": false,
            "ingest": "Db::ingest, one file per call, linked, no re-verification; admitted while L0 is below the slowdown trigger less one (IngestOptions::wait_for_l0, the default)",
            "write_amp_method": "(flush + compaction bytes from the first ingest until flushed and compactions done) / (ingested + online user bytes)"})),
        "seconds": {"build_untimed": build_secs, "ingest": ingest_secs, "settle": total - ingest_secs, "total": total},
        "ops_per_s": n as f64 / total, "mb_per_s": (n * KV) as f64 / 1e6 / total,
        "ingest_ms": {"p50": sorted_ms.get(sorted_ms.len() / 2), "max": max_ingest},
        "online_puts": puts, "latency_us": writer_lat.summary(),
        "write_amp": written_bytes(&db) as f64 / user.max(1) as f64, "user_bytes": user,
        "bytes_on_disk": fair::dir_bytes(&dir.join("db")), "peak_rss_kib": crate::peak_rss_kib(),
    });
    let out = fair::with(
        fair::with(out, shape.max(settle_shape).json()),
        stalls(&db, stall0),
    );
    Arc::try_unwrap(db)
        .map_err(|_| "db still shared")?
        .close()?;
    Ok(out)
}
