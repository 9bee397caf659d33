//! Engine workloads (definitions in `bench/WORKLOADS.md`), run against `sluice::Db`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sluice::{Db, Options, ReadOptions, Trace, WriteBatch, WriteOptions};

use crate::gen::{self, Permutation, KEY_LEN, VALUE_LEN};
use crate::trace_sample::{SampleConfig, TraceSampler};
use crate::{fair, sort};

/// Latency recorder: one duration per op, percentiles at the end.
pub struct Latencies(Vec<u64>);

impl Latencies {
    /// Room for `n` samples.
    pub fn with_capacity(n: usize) -> Self {
        Latencies(Vec::with_capacity(n))
    }
    /// Samples recorded.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Adds another recorder's samples.
    pub fn extend(&mut self, other: Latencies) {
        self.0.extend(other.0);
    }
    /// Records one op that started at `t`; returns its nanoseconds.
    #[inline]
    pub fn record(&mut self, t: Instant) -> u64 {
        let nanos = t.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        self.0.push(nanos);
        nanos
    }
    /// The samples in nanoseconds, sorted ascending.
    pub fn sorted_nanos(&mut self) -> &[u64] {
        self.0.sort_unstable();
        &self.0
    }
    /// p50/p99/p99.9/p99.99 in microseconds.
    pub fn summary(mut self) -> Value {
        if self.0.is_empty() {
            return Value::Null;
        }
        self.0.sort_unstable();
        let p = |q: f64| {
            let i = ((self.0.len() as f64 * q) as usize).min(self.0.len() - 1);
            self.0[i] as f64 / 1000.0
        };
        let max = self.0[self.0.len() - 1] as f64 / 1000.0;
        json!({"p50": p(0.50), "p99": p(0.99), "p999": p(0.999), "p9999": p(0.9999), "max": max})
    }
}

fn options() -> Options {
    crate::db_options()
}

pub(crate) fn key(p: u64) -> [u8; KEY_LEN] {
    let mut k = [0u8; KEY_LEN];
    gen::key_of(p, &mut k);
    k
}

pub(crate) fn value(p: u64) -> [u8; VALUE_LEN] {
    let mut v = [0u8; VALUE_LEN];
    gen::value_of(p, &mut v);
    v
}

struct Fill {
    secs: f64,
    lat: Latencies,
}

/// Puts `n` keys in `order`; with a sampler, its picked puts run traced (trace_sample.rs).
fn fill(
    db: &Db,
    n: u64,
    order: impl Fn(u64) -> u64,
    val: impl Fn(u64) -> u64,
    mut sampler: Option<&mut TraceSampler>,
) -> sluice::Result<Fill> {
    let mut lat = Latencies::with_capacity(n as usize);
    let t0 = Instant::now();
    for i in 0..n {
        let p = order(i);
        // Key and value built outside the timed op, as the anchors do.
        let (k, v) = (key(p), value(val(p)));
        if let Some(s) = sampler.as_deref_mut().filter(|s| s.pick(i)) {
            let trace = Trace::new();
            let t = Instant::now();
            let mut b = WriteBatch::new();
            b.put(&k, &v);
            let opts = WriteOptions {
                trace: Some(&trace),
                ..Default::default()
            };
            db.write(b, opts)?;
            let nanos = lat.record(t);
            s.offer(i, &k, nanos, trace);
            continue;
        }
        let t = Instant::now();
        db.put(&k, &v)?;
        lat.record(t);
    }
    Ok(Fill {
        secs: t0.elapsed().as_secs_f64(),
        lat,
    })
}

/// fillrandom's puts, each one write batch synced to the WAL.
fn fill_synced(db: &Db, n: u64, perm: &Permutation) -> sluice::Result<Fill> {
    let mut lat = Latencies::with_capacity(n as usize);
    let t0 = Instant::now();
    for i in 0..n {
        let p = perm.apply(i);
        let (k, v) = (key(p), value(p));
        let t = Instant::now();
        let mut b = sluice::WriteBatch::new();
        b.put(&k, &v);
        db.write(
            b,
            sluice::WriteOptions {
                sync: true,
                ..Default::default()
            },
        )?;
        lat.record(t);
    }
    Ok(Fill {
        secs: t0.elapsed().as_secs_f64(),
        lat,
    })
}

/// Bytes written by flushes and compactions so far.
pub(crate) fn written_bytes(db: &Db) -> u64 {
    let m = db.metrics();
    m.flush_bytes + m.compaction_bytes_written
}

/// Write amplification of a timed window that started at `before` (from [`written_bytes`]):
/// flush the memtable, wait for compactions, then (flush + compaction bytes) / user bytes.
fn window_write_amp(db: &Db, before: u64, user_bytes: u64) -> sluice::Result<f64> {
    db.flush()?;
    db.wait_for_background_work()?;
    Ok((written_bytes(db) - before) as f64 / user_bytes.max(1) as f64)
}

fn base(workload: &str, n: u64, dir: &Path, db: &Db) -> Value {
    let m = db.metrics();
    json!({
        "workload": workload, "engine": "sluice",
        "params": fair::with(fair::table_params(), json!({"n": n, "wal": true, "sync": false,
            "wal_writes": wal_writes(),
            "read_amp_source": "max of (L0 sublevels + non-empty levels >= 1) from Db::metrics, polled every 20 ms during the timed phase"})),
        "stalls": m.stall_count, "stall_micros": m.stall_micros,
        "bytes_on_disk": fair::dir_bytes(dir),
        "peak_rss_kib": crate::peak_rss_kib(),
    })
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}

/// Runs one engine workload in a fresh directory under `dir`; returns its result line.
pub fn run(
    workload: &str,
    n: u64,
    reads: u64,
    seconds: u64,
    ops: Option<u64>,
    dir: &Path,
    sample: Option<SampleConfig>,
) -> Result<Value, Box<dyn std::error::Error>> {
    let mut sampler = sample.map(TraceSampler::new);
    let perm = Permutation::new(n);
    let db = Db::open(dir, options())?;
    let mb = |ops: u64, s: f64| ops as f64 * (KEY_LEN + VALUE_LEN) as f64 / 1e6 / s;
    let out = match workload {
        "fillrandom-sync" => {
            // As fillrandom, each put synced to the WAL before it returns (equal durability in
            // every engine; `bench/WORKLOADS.md`).
            let (f, shape) = fair::with_sampler(&db, || fill_synced(&db, n, &perm));
            let f = f?;
            let wa = window_write_amp(&db, 0, n * 116)?;
            let mut out = merge(
                base(workload, n, dir, &db),
                json!({
                    "write_amp": wa,
                    "seconds": {"fill": f.secs}, "ops_per_s": n as f64 / f.secs, "mb_per_s": mb(n, f.secs),
                    "latency_us": f.lat.summary(),
                }),
            );
            out["params"]["sync"] = true.into();
            let o = crate::db_options();
            out["params"]["wal_writes"] = if o.wal_mmap_writes {
                "one copy into the mapped WAL + fdatasync per put"
            } else if o.wal_staging {
                "one copy into the WAL stage's ring, then write(2) of what the ring holds + fdatasync per put"
            } else {
                "write(2) + fdatasync per put"
            }
            .into();
            merge(out, shape.json())
        }
        "fillseq" | "fillrandom" => {
            let (f, shape) = fair::with_sampler(&db, || {
                let s = sampler.as_mut();
                if workload == "fillseq" {
                    fill(&db, n, |i| i, |p| p, s)
                } else {
                    fill(&db, n, |i| perm.apply(i), |p| p, s)
                }
            });
            let mut f = f?;
            let traces = report(sampler.take(), workload, &mut f.lat);
            let wa = window_write_amp(&db, 0, n * 116)?;
            let out = merge(
                base(workload, n, dir, &db),
                json!({
                    "write_amp": wa,
                    "seconds": {"fill": f.secs}, "ops_per_s": n as f64 / f.secs, "mb_per_s": mb(n, f.secs),
                    "latency_us": f.lat.summary(), "trace_sample": traces,
                }),
            );
            merge(out, shape.json())
        }
        "overwrite" => {
            let setup = fill(&db, n, |i| perm.apply(i), |p| p, None)?;
            db.wait_for_background_work()?;
            let before = written_bytes(&db);
            let (f, shape) = fair::with_sampler(&db, || {
                fill(&db, n, |i| gen::read_row(i, n), |p| p ^ 1, sampler.as_mut())
            });
            let mut f = f?;
            let traces = report(sampler.take(), workload, &mut f.lat);
            let wa = window_write_amp(&db, before, n * 116)?;
            let out = merge(
                base(workload, n, dir, &db),
                json!({
                    "write_amp": wa,
                    "seconds": {"setup": setup.secs, "overwrite": f.secs}, "ops_per_s": n as f64 / f.secs,
                    "mb_per_s": mb(n, f.secs), "latency_us": f.lat.summary(),
                    "trace_sample": traces,
                }),
            );
            merge(out, shape.json())
        }
        "readrandom" | "seekrandom" => {
            let setup = fill(&db, n, |i| perm.apply(i), |p| p, None)?;
            let setup_wa = window_write_amp(&db, 0, n * 116)?;
            // The same LSM shape and cache state in every engine before the reads: one full
            // manual compaction, then every file read once (both untimed).
            let t = Instant::now();
            db.compact_range(None, None)?;
            db.wait_for_background_work()?;
            let compact_secs = t.elapsed().as_secs_f64();
            let t = Instant::now();
            fair::warm_dir(dir)?;
            let warm_secs = t.elapsed().as_secs_f64();
            let mut lat = Latencies::with_capacity(reads as usize);
            let (reads_result, shape) =
                fair::with_sampler(&db, || -> Result<f64, Box<dyn std::error::Error>> {
                    let t0 = Instant::now();
                    if workload == "readrandom" {
                        for i in 0..reads {
                            let p = gen::read_row(i, n);
                            // As the anchors: key and value built before the timed op, the
                            // check inside it.
                            let (k, want) = (key(p), value(p));
                            let picked = sampler.as_mut().filter(|s| s.pick(i));
                            let ok = match picked {
                                None => {
                                    let t = Instant::now();
                                    let v = db.get(&k)?;
                                    let ok = v.as_deref() == Some(&want[..]);
                                    lat.record(t);
                                    ok
                                }
                                Some(s) => {
                                    let trace = Trace::new();
                                    let ro = ReadOptions {
                                        trace: Some(&trace),
                                        ..Default::default()
                                    };
                                    let t = Instant::now();
                                    let v = db.get_opt(&k, &ro)?;
                                    let ok = v.as_deref() == Some(&want[..]);
                                    s.offer(i, &k, lat.record(t), trace);
                                    ok
                                }
                            };
                            if !ok {
                                return Err(format!("readrandom: key {p} read back wrong").into());
                            }
                        }
                    } else {
                        let mut it = db.iter(ReadOptions::default())?;
                        let mut bytes = 0usize;
                        for i in 0..reads {
                            let p = gen::read_row(i, n);
                            let (k, want) = (key(p), value(p));
                            let t = Instant::now();
                            it.seek(&k);
                            let ok = it.valid() && it.key() == k && it.value() == want;
                            if ok {
                                bytes += it.key().len() + it.value().len();
                            }
                            lat.record(t);
                            if !ok {
                                return Err(format!(
                                    "seekrandom: key {p} not found or wrong value"
                                )
                                .into());
                            }
                        }
                        std::hint::black_box(bytes);
                    }
                    Ok(t0.elapsed().as_secs_f64())
                });
            let secs = reads_result?;
            let traces = report(sampler.take(), workload, &mut lat);
            let m = db.metrics();
            let mut out = merge(
                base(workload, n, dir, &db),
                json!({
                    "seconds": {"setup": setup.secs, "setup_compact": compact_secs, "setup_warm": warm_secs, "reads": secs},
                    "ops_per_s": reads as f64 / secs, "latency_us": lat.summary(), "write_amp": setup_wa,
                    "block_cache_hits": m.block_cache_hits, "block_cache_misses": m.block_cache_misses,
                    "trace_sample": traces,
                }),
            );
            out["params"]["reads"] = reads.into();
            out["params"]["setup"] =
                "fillrandom, flush, wait for compactions, full compact_range, read every file once"
                    .into();
            merge(out, shape.json())
        }
        "block_writer" => {
            let (out, shape) =
                fair::with_sampler(&db, || block_writer(&db, n, seconds, ops, &perm, dir));
            merge(out?, shape.json())
        }
        other => return Err(format!("unknown engine workload {other}").into()),
    };
    db.close()?;
    Ok(out)
}

/// The sampler's report (null when not sampling): its kept traces go to stderr.
fn report(sampler: Option<TraceSampler>, workload: &str, lat: &mut Latencies) -> Value {
    sampler.map_or(Value::Null, |s| s.report(workload, lat.sorted_nanos()))
}

/// How the WAL is written with the benchmark's options, for the printed settings.
fn wal_writes() -> &'static str {
    let o = crate::db_options();
    if o.wal_mmap_writes {
        "one copy per batch into a shared mapping of the preallocated WAL (Options::wal_mmap_writes on): no system call, and, like a write(2), it survives a process crash"
    } else if o.wal_staging {
        "one copy per batch into a 2 MiB ring on /dev/shm (Options::wal_staging, the default): no system call on the writer's thread, and, like a write(2), it survives a process crash; a thread writes the ring to the WAL file with write(2) (what Pebble's NoSync flusher does, minus losing acknowledged writes on kill -9)"
    } else {
        "one write(2) per batch (no user-space WAL buffer)"
    }
}

fn txn_key(i: u64) -> Vec<u8> {
    let mut k = b"\x00txn/".to_vec();
    k.extend_from_slice(&(u64::MAX - i).to_be_bytes());
    k
}

/// CockroachDB's block_writer pattern for `seconds`, or, with `ops`, until that many ops are
/// done (the same work in every engine, for write-amp).
fn block_writer(
    db: &Db,
    n: u64,
    seconds: u64,
    ops: Option<u64>,
    perm: &Permutation,
    dir: &Path,
) -> Result<Value, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let mut per_second: Vec<u64> = Vec::new();
    let mut ops_this_second = 0u64;
    let mut next_tick = start + Duration::from_secs(1);
    let mut i = 0u64;
    let mut touched_max = 0u64;
    let more = |i: u64, seconds_done: usize| match ops {
        Some(ops) => i < ops,
        None => seconds_done < seconds as usize,
    };
    while more(i, per_second.len()) {
        let tk = txn_key(i);
        let mut upper = tk.clone();
        upper.push(0xff);
        let mut it = db.iter(ReadOptions {
            snapshot: None,
            lower_bound: Some(tk.clone()),
            upper_bound: Some(upper),
            ..Default::default()
        })?;
        it.seek(&tk);
        if it.valid() {
            return Err("block_writer: found a transaction record that should not exist".into());
        }
        touched_max = touched_max.max(it.entries_touched());
        drop(it);
        db.put(&tk, &i.to_le_bytes())?;
        let p = perm.apply(i % n);
        db.put(&key(p), &value(p))?;
        db.delete(&tk)?;
        i += 1;
        ops_this_second += 1;
        if Instant::now() >= next_tick {
            println!(
                "{}",
                json!({"workload": "block_writer", "engine": "sluice", "second": per_second.len() + 1, "ops": ops_this_second})
            );
            per_second.push(ops_this_second);
            ops_this_second = 0;
            next_tick += Duration::from_secs(1);
        }
    }
    if per_second.is_empty() {
        per_second.push(ops_this_second); // an --ops run shorter than a second
    }
    let w = (per_second.len() / 6).clamp(1, 10);
    let first: f64 = per_second[..w].iter().sum::<u64>() as f64 / w as f64;
    let last: f64 = per_second[per_second.len() - w..].iter().sum::<u64>() as f64 / w as f64;
    let run_secs = start.elapsed().as_secs_f64();
    // Each op: the txn put (13 + 8 bytes), the pair (116), the txn delete (13).
    let wa = window_write_amp(db, 0, i * 150)?;
    let m = db.metrics();
    let mut out = merge(
        base("block_writer", n, dir, db),
        json!({
            "write_amp": wa, "per_second_ops": per_second,
            "write_bytes": {"flush": m.flush_bytes, "compaction": m.compaction_bytes_written, "user": i * 150},
            "seconds": {"run": run_secs}, "ops_per_s": i as f64 / run_secs,
            "first10_ops_per_s": first, "last10_ops_per_s": last, "ratio": last / first,
            "max_entries_touched_per_seek": touched_max, "window_seconds": w,
        }),
    );
    out["params"]["ops_target"] = json!(ops);
    Ok(out)
}

/// `kv-bulkload`: the spec stream loaded by Sluice's fastest path (sort, two SstWriter
/// threads, one atomic ingest), then `reads` random point reads.
pub fn kv_bulkload(n: u64, reads: u64, dir: &Path) -> Result<Value, Box<dyn std::error::Error>> {
    use sha2::{Digest, Sha256};
    use sluice::{IngestOptions, SstWriter, TableOptions};
    let rec = KEY_LEN + VALUE_LEN;
    let perm = Permutation::new(n);
    let t = Instant::now();
    let mut records = vec![0u8; n as usize * rec];
    for (i, chunk) in records.chunks_exact_mut(rec).enumerate() {
        let p = perm.apply(i as u64);
        let (k, v) = chunk.split_at_mut(KEY_LEN);
        gen::key_of(p, k.try_into().expect("key"));
        gen::value_of(p, v.try_into().expect("value"));
    }
    let gen_secs = t.elapsed().as_secs_f64();

    let staging = dir.join("staging");
    std::fs::create_dir_all(&staging)?;
    let load_start = Instant::now();
    // Keys start with BE64(p), p unique: sorting by that prefix sorts the keys, as in the
    // anchors' drivers (a tie would reach SstWriter::put out of order, which refuses it).
    let mut order: Vec<(u64, u32)> = records
        .chunks_exact(rec)
        .enumerate()
        .map(|(i, r)| {
            (
                u64::from_be_bytes(r[..8].try_into().expect("8 bytes")),
                i as u32,
            )
        })
        .collect();
    sort::radix_sort(&mut order);
    let sort_secs = load_start.elapsed().as_secs_f64();
    let t = Instant::now();
    let file_bytes: u64 = 128 << 20;
    let halves: Vec<&[(u64, u32)]> = order.chunks(order.len().div_ceil(2).max(1)).collect();
    let files: Vec<std::path::PathBuf> = std::thread::scope(|s| -> Result<Vec<_>, String> {
        let handles: Vec<_> = halves
            .iter()
            .enumerate()
            .map(|(h, part)| {
                let (records, staging) = (&records, &staging);
                s.spawn(move || -> sluice::Result<Vec<std::path::PathBuf>> {
                    let mut out = Vec::new();
                    let mut w: Option<SstWriter> = None;
                    let mut buf = Vec::with_capacity(sort::GATHER_BATCH * rec);
                    for batch in part.chunks(sort::GATHER_BATCH) {
                        sort::gather(records, rec, batch.iter().map(|j| j.1 as usize), &mut buf);
                        for r in buf.chunks_exact(rec) {
                            if w.is_none() {
                                let p = staging.join(format!("{h}-{:04}.sst", out.len()));
                                out.push(p.clone());
                                w = Some(SstWriter::create(&p, TableOptions::default())?);
                            }
                            let wr = w.as_mut().expect("writer");
                            wr.put(&r[..KEY_LEN], &r[KEY_LEN..])?;
                            if wr.estimated_file_size() >= file_bytes {
                                w.take().expect("writer").finish()?;
                            }
                        }
                    }
                    if let Some(wr) = w {
                        wr.finish()?;
                    }
                    Ok(out)
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(
                h.join()
                    .map_err(|_| "writer thread panicked".to_string())?
                    .map_err(|e| e.to_string())?,
            );
        }
        Ok(all)
    })?;
    let write_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let db = Db::open(dir.join("db"), options())?;
    let open_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    db.ingest(
        &files,
        &IngestOptions {
            // Files this process has just written with SstWriter (which refuses keys out of
            // order or repeated, and writes seqno 0) are not read a second time: RocksDB's
            // IngestExternalFile reads only the properties and the first and last keys too.
            verify_checksums: false,
            verify_keys: false,
            // The files are ours to hand over, as RocksDB's anchor does with move_files.
            link_files: true,
            ..Default::default()
        },
    )?;
    let ingest_secs = t.elapsed().as_secs_f64();
    let load_secs = load_start.elapsed().as_secs_f64();
    drop(records);
    // The same cache state in every engine: each file read once, untimed.
    let t = Instant::now();
    fair::warm_dir(&dir.join("db"))?;
    let warm_secs = t.elapsed().as_secs_f64();

    let mut lat = Latencies::with_capacity(reads as usize);
    let t = Instant::now();
    for i in 0..reads {
        let p = gen::read_row(i, n);
        let t1 = Instant::now();
        let v = db.get(&key(p))?;
        lat.record(t1);
        if v.as_deref() != Some(&value(p)[..]) {
            return Err(format!("kv-bulkload: key {p} read back wrong").into());
        }
    }
    let read_secs = t.elapsed().as_secs_f64();
    let mut h = Sha256::new();
    let mut it = db.iter(ReadOptions::default())?;
    it.seek_to_first();
    let mut count = 0u64;
    while it.valid() {
        h.update(it.key());
        h.update(it.value());
        count += 1;
        it.next();
    }
    it.status()?;
    drop(it);
    if count != n {
        return Err(format!("kv-bulkload: scan saw {count} entries, loaded {n}").into());
    }
    let sha: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let out = json!({
        "workload": "kv-bulkload", "engine": "sluice",
        "params": fair::with(fair::table_params(), json!({"n": n, "reads": reads, "recipe": "radix sort (2 threads) + 2 SstWriter threads + one ingest (linked, no re-verification)", "file_mib": 128,
            "sort": sort::SORT,
            "cache_state": "every DB file read once (untimed) before the reads"})),
        "seconds": {"generate": gen_secs, "load": load_secs, "sort": sort_secs, "write_ssts": write_secs, "open_db": open_secs, "ingest": ingest_secs, "warm": warm_secs, "reads": read_secs},
        "mb_per_s": (n as f64 * rec as f64) / 1e6 / load_secs,
        "ops_per_s": reads as f64 / read_secs,
        "latency_us": lat.summary(),
        "files": files.len(), "scan_sha256": sha,
        "read_amp": fair::MaxShape::of(&db).read_amp,
        "bytes_on_disk": fair::dir_bytes(&dir.join("db")),
        "peak_rss_kib": crate::peak_rss_kib(),
    });
    db.close()?;
    Ok(out)
}

/// The scheduled start of op `j` of a paced loop started at `start`: `start + j × interval`.
pub fn scheduled_at(start: Instant, interval: Duration, j: u64) -> Instant {
    start + Duration::from_nanos(interval.as_nanos() as u64 * j)
}

/// A paced loop: op `j` (0, 1, …) is due at [`scheduled_at`]`(start, interval, j)` and runs
/// while `more(j, due)` holds (checked before sleeping until it is due and again after). Each
/// op's latency counts from when it was due, not from when it began: a slow op delays the ops
/// behind it and their wait is counted (coordinated-omission-safe). `capacity`: samples to
/// reserve up front, so no reallocation lands inside the measurement.
pub fn paced(
    start: Instant,
    interval: Duration,
    capacity: usize,
    more: impl Fn(u64, Instant) -> bool,
    mut op: impl FnMut(u64),
) -> Latencies {
    let mut lat = Latencies::with_capacity(capacity);
    let mut j = 0u64;
    loop {
        let due = scheduled_at(start, interval, j);
        if !more(j, due) {
            break;
        }
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
            if !more(j, due) {
                break;
            }
        }
        op(j);
        lat.record(due);
        j += 1;
    }
    lat
}

/// Paced writers: two threads putting at `rate` puts/s in total for `secs`; latencies measured
/// from each op's scheduled start.
fn paced_writers(db: &std::sync::Arc<Db>, rate: u64, secs: u64, n: u64, offset: u64) -> Latencies {
    let threads = 2u64;
    let per_thread = rate * secs / threads;
    let interval = Duration::from_nanos(1_000_000_000 * threads / rate.max(1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let db = std::sync::Arc::clone(db);
            std::thread::spawn(move || {
                let more = |j: u64, _| j < per_thread;
                paced(Instant::now(), interval, per_thread as usize, more, |j| {
                    let i = offset + t * per_thread + j;
                    let p = gen::read_row(i, n);
                    let mut k = b"w".to_vec();
                    k.extend_from_slice(&key(p));
                    db.put(&k, &value(p)).expect("put");
                })
            })
        })
        .collect();
    let mut all = Latencies::with_capacity((per_thread * threads) as usize);
    for h in handles {
        all.extend(h.join().expect("writer"));
    }
    all
}

/// `ingest-under-load` (see bench/WORKLOADS.md).
pub fn ingest_under_load(
    n: u64,
    rate: u64,
    secs: u64,
    dir: &Path,
) -> Result<Value, Box<dyn std::error::Error>> {
    use sluice::{IngestOptions, SstWriter, TableOptions};
    const PER_FILE: u64 = 20_000;
    let staging = dir.join("staging");
    std::fs::create_dir_all(&staging)?;
    let mut files = Vec::new();
    for j in 0..secs {
        let prefix = if j % 2 == 0 { b'w' } else { b'x' };
        let p = staging.join(format!("{j:04}.sst"));
        let mut w = SstWriter::create(&p, TableOptions::default())?;
        for r in j * PER_FILE..(j + 1) * PER_FILE {
            let mut k = vec![prefix];
            k.extend_from_slice(&key(r));
            w.put(&k, &value(r))?;
        }
        w.finish()?;
        files.push(p);
    }
    // The same cache state in every engine: each staged file read once, untimed.
    fair::warm_files(&files)?;
    let db = std::sync::Arc::new(Db::open(dir.join("db"), options())?);
    let without = paced_writers(&db, rate, secs, n, 0);
    let ingester = {
        let db = std::sync::Arc::clone(&db);
        std::thread::spawn(move || -> Result<Vec<f64>, String> {
            let mut took = Vec::new();
            let start = Instant::now();
            for (j, f) in files.iter().enumerate() {
                let at = start + Duration::from_secs(j as u64);
                let now = Instant::now();
                if at > now {
                    std::thread::sleep(at - now);
                }
                let t = Instant::now();
                // Linked, not re-verified: as RocksDB's move_files and Pebble's links.
                let opts = IngestOptions {
                    verify_checksums: false,
                    verify_keys: false,
                    link_files: true,
                    ..Default::default()
                };
                db.ingest(&[f], &opts).map_err(|e| e.to_string())?;
                took.push(t.elapsed().as_secs_f64() * 1e3);
            }
            Ok(took)
        })
    };
    let with = paced_writers(&db, rate, secs, n, rate * secs);
    let ingest_ms = ingester.join().map_err(|_| "ingest thread panicked")??;
    let a = without.summary();
    let b = with.summary();
    let ratio = b["p9999"].as_f64().unwrap_or(0.0) / a["p9999"].as_f64().unwrap_or(1.0).max(1e-9);
    let m = db.metrics();
    let out = json!({
        "workload": "ingest-under-load", "engine": "sluice",
        "params": fair::with(fair::table_params(), json!({"rate": rate, "seconds": secs, "writers": 2, "rows_per_file": PER_FILE, "n": n, "wal": true, "sync": false,
            "ingest": "Db::ingest, one file per call, linked, no re-verification"})),
        "latency_us_without": a, "latency_us_with": b, "p9999_ratio": ratio,
        "ingest_ms": ingest_ms, "stalls": m.stall_count, "stall_micros": m.stall_micros,
        "peak_rss_kib": crate::peak_rss_kib(),
    });
    drop(db);
    Ok(out)
}
