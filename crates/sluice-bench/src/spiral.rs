//! `l0-spiral`: CockroachDB's import death spiral, reproduced (issue 22, section 2;
//! `bench/WORKLOADS.md`). Run it with `Options::l0_sublevels` off (RocksDB's L0) and on.
//!
//! Two actors share one live Db:
//! 1. The *import*: the key space (the spec keys of rows 0..n) is cut into [`CHUNKS`] ranges,
//!    visited in a shuffled order. Each range is loaded as [`ROUNDS`] small SSTs built on the
//!    fly, round r holding the range's rows p with p mod ROUNDS = r (sorted): each SST spans its
//!    range and overlaps the range's earlier SSTs, so after the levels above the data fill, they
//!    land in L0 — narrow files, stacked over one corner of the key space, as CockroachDB's
//!    direct ingestion of out-of-order `AddSSTable` requests put them. Each is ingested on its
//!    own (`Db::ingest`, linked, no L0 admission wait: RocksDB's `IngestExternalFile` has none).
//! 2. The *housekeeping writer*: [`HOUSEKEEPING_RATE`] pairs/s of puts at the key space's first
//!    and last keys (16 × 0x00, 16 × 0xff; [`HOUSEKEEPING_VALUE`]-byte values), CockroachDB's
//!    range-local and meta keys at both ends. With a [`WRITE_BUFFER`] memtable every flush holds
//!    one key at each end: a file of a few KB as wide as the key space.
//!
//! Sublevels off, that tiny file overlaps every base-level file: the next L0 compaction takes
//! every L0 file and the whole base level — one giant compaction, during which the import piles
//! L0 files up to the stop trigger and the writer stalls; the next wide flush lands before it
//! ends, so the next one is giant again. On, flushes are cut at split keys (the tiny file
//! becomes two files at the ends), and L0 compacts the import's stacks range by range.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sluice::{Db, IngestOptions, Options, SstWriter, TableOptions, WriteBatch, WriteOptions};

use crate::engine::{key, value, written_bytes};
use crate::fair;
use crate::gen::{splitmix64, KEY_LEN, VALUE_LEN};

/// Ranges the key space is cut into; the import loads them in a shuffled order.
pub const CHUNKS: u64 = 16;
/// Overlapping SSTs per range.
pub const ROUNDS: u64 = 16;
/// Housekeeping pairs (one put at each end of the key space) per second.
pub const HOUSEKEEPING_RATE: u64 = 500;
/// Bytes of each housekeeping value.
pub const HOUSEKEEPING_VALUE: usize = 1000;
/// The workload's memtable size (`Options::write_buffer_size`): the housekeeping writer alone
/// fills one about every second.
pub const WRITE_BUFFER: usize = 1 << 20;
/// User bytes per imported pair.
const KV: u64 = (KEY_LEN + VALUE_LEN) as u64;

/// The ranges in the order the import visits them (a seeded shuffle).
pub fn chunk_order() -> Vec<u64> {
    let mut order: Vec<u64> = (0..CHUNKS).collect();
    order.sort_by_key(|&c| splitmix64(c ^ 0x0057_19a1));
    order
}

/// The options of both runs: the defaults with a small memtable, and `l0_sublevels`.
pub fn spiral_options(l0_sublevels: bool) -> Options {
    Options {
        write_buffer_size: WRITE_BUFFER,
        l0_sublevels,
        ..crate::db_options()
    }
}

/// Writes the SST of range `chunk`, round `round` (rows p of the range with p mod ROUNDS =
/// round, in key order) to `path`; returns its pair count.
fn build_sst(n: u64, chunk: u64, round: u64, path: &Path) -> sluice::Result<u64> {
    let (lo, hi) = (chunk * n / CHUNKS, (chunk + 1) * n / CHUNKS);
    let mut w = SstWriter::create(path, TableOptions::default())?;
    let mut count = 0;
    // key = BE64(p) ‖ …: row order is key order.
    for p in (lo..hi).filter(|p| p % ROUNDS == round) {
        w.put(&key(p), &value(p))?;
        count += 1;
    }
    w.finish()?;
    Ok(count)
}

/// Puts one key at each end of the key space, [`HOUSEKEEPING_RATE`] pairs/s, until `stop`.
fn housekeeping(db: &Db, stop: &AtomicBool, pairs: &AtomicU64) -> sluice::Result<()> {
    let interval = Duration::from_nanos(1_000_000_000 / HOUSEKEEPING_RATE);
    let (lo, hi) = ([0u8; KEY_LEN], [0xffu8; KEY_LEN]);
    let start = Instant::now();
    let mut j = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let scheduled = crate::engine::scheduled_at(start, interval, j);
        let now = Instant::now();
        if scheduled > now {
            std::thread::sleep(scheduled - now);
        }
        let v = vec![(j % 251) as u8; HOUSEKEEPING_VALUE];
        let mut b = WriteBatch::new();
        b.put(&lo, &v);
        b.put(&hi, &v);
        db.write(b, WriteOptions::default())?;
        pairs.fetch_add(1, Ordering::Relaxed);
        j += 1;
    }
    Ok(())
}

/// The import: every range in [`chunk_order`], [`ROUNDS`] SSTs each, built and ingested one
/// at a time. Returns (pairs, SSTs).
fn import(n: u64, db: &Db, staging: &Path) -> sluice::Result<(u64, u64)> {
    let opts = IngestOptions {
        verify_checksums: false,
        verify_keys: false,
        link_files: true,
        wait_for_l0: false,
        ..Default::default()
    };
    let (mut pairs, mut files) = (0, 0);
    for chunk in chunk_order() {
        for round in 0..ROUNDS {
            let path = staging.join(format!("{chunk:03}-{round:03}.sst"));
            pairs += build_sst(n, chunk, round, &path)?;
            db.ingest(std::slice::from_ref(&path), &opts)?;
            std::fs::remove_file(&path).map_err(|e| sluice::Error::io(&path, e))?;
            files += 1;
        }
    }
    Ok((pairs, files))
}

/// `l0-spiral`: the import beside the housekeeping writer, then until flushed and compactions
/// are done. The Db is left at `keep` when given (for `sluice lsm --db DIR --html`).
pub fn spiral(
    n: u64,
    l0_sublevels: bool,
    dir: &Path,
    keep: Option<&Path>,
) -> Result<Value, Box<dyn std::error::Error>> {
    let staging = dir.join("staging");
    std::fs::create_dir_all(&staging)?;
    let db_dir: PathBuf = keep.map_or_else(|| dir.join("db"), Path::to_path_buf);
    let db = Db::open(&db_dir, spiral_options(l0_sublevels))?;
    let m0 = db.metrics();
    let stop = AtomicBool::new(false);
    let hk_pairs = AtomicU64::new(0);
    let start = Instant::now();
    let ((imported, hk), shape) = fair::with_sampler(&db, || {
        std::thread::scope(|s| {
            let writer = s.spawn(|| housekeeping(&db, &stop, &hk_pairs));
            let r = import(n, &db, &staging);
            stop.store(true, Ordering::Relaxed);
            (r, writer.join().expect("housekeeping writer"))
        })
    });
    let (pairs, files) = imported?;
    hk?;
    let import_secs = start.elapsed().as_secs_f64();
    let (settle, settle_shape) = fair::with_sampler(&db, || -> sluice::Result<()> {
        db.flush()?;
        db.wait_for_background_work()
    });
    settle?;
    let total = start.elapsed().as_secs_f64();
    let hk = hk_pairs.load(Ordering::Relaxed);
    let user = pairs * KV + hk * 2 * (KEY_LEN + HOUSEKEEPING_VALUE) as u64;
    let m = db.metrics();
    let out = json!({
        "workload": "l0-spiral", "engine": "sluice",
        "params": fair::with(fair::table_params(), json!({"n": n, "l0_sublevels": l0_sublevels,
            "chunks": CHUNKS, "rounds": ROUNDS, "ssts": files, "memtable_bytes": WRITE_BUFFER,
            "housekeeping_pairs_per_s": HOUSEKEEPING_RATE, "housekeeping_value_bytes": HOUSEKEEPING_VALUE,
            "ingest": "Db::ingest, one SST per call, linked, no re-verification, wait_for_l0 off",
            "write_amp_method": "(flush + compaction bytes from the start until flushed and compactions done) / (imported + housekeeping user bytes)"})),
        "seconds": {"import": import_secs, "settle": total - import_secs, "total": total},
        "imported_pairs": pairs, "housekeeping_pairs": hk,
        "mb_per_s": (pairs * KV) as f64 / 1e6 / total,
        "stalls": m.stall_count - m0.stall_count, "stall_micros": m.stall_micros - m0.stall_micros,
        "stall_max_micros": m.stall_max_micros,
        "compactions": m.compactions, "write_bytes": {"flush": m.flush_bytes, "compaction": m.compaction_bytes_written},
        "write_amp": written_bytes(&db) as f64 / user.max(1) as f64, "user_bytes": user,
        "db": keep.map(|p| p.display().to_string()),
    });
    let out = fair::with(out, shape.max(settle_shape).json());
    db.close()?;
    Ok(out)
}
