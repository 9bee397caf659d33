//! `import-online` (`bench/import/README.md`): a table loaded by `sluice_import::Import::run`
//! into a Db that is serving paced writers and point readers on another key space (an
//! `orders`-like table of plain key/value pairs), and those ops' latency without and during the
//! import.
//!
//! 1. `open_and_preload`: a fresh Db (`sluice_import::open_db`, as `sluice import` opens it);
//!    `preload` orders rows written in batches, flushed, compactions waited for.
//! 2. `paced_noop_floor`: the same threads with a no-op op for `FLOOR_SECS` (the machine's
//!    floor: sleep wake-up and scheduling), then `serve` for `baseline_secs`: the baseline window.
//! 3. `serve` while this thread runs the import: the window closes when `Import::run` returns.
//! 4. `check`: the table's rows and column sum read back in this process through
//!    `TableReader::count_sum` (what `sluice scan --table T --count --sum C` prints), and every
//!    put a writer saw acknowledged read back with its value.
//!
//! Invariants:
//! 1. Key spaces are disjoint: orders keys are `o ‖ BE32(writer) ‖ BE64(seq)` (writer 0: the
//!    preloaded rows, 1..=W: the writers' puts); the import's keys begin with a BE32 table id
//!    (0 catalog, 1 the first table), far below `o` (0x6f). The import's one ingest therefore
//!    never overlaps the memtable holding the writers' puts.
//! 2. Every op due inside a window runs and is measured, latency counted from when it was due
//!    ([`engine::paced`]); a window's end is set once, when it closes.
//!
//! Threads: W writers and R readers, each paced at its own rate, one op at a time; this thread
//! runs the import (which starts its own parse workers; the Db runs its background jobs). They
//! share the Db by reference (scoped threads) and the window; nothing else.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sluice::{Db, WriteBatch, WriteOptions};
use sluice_import::{ColumnSum, Format, Import, ImportOptions, ProgressMode, TableReader};

use crate::engine::{self, Latencies};
use crate::fair;
use crate::gen;

/// Settings of one `import-online` run (all printed in its result line).
#[derive(Debug, Clone)]
pub struct OnlineConfig {
    /// The schema (one table, its indexes) given to the import.
    pub schema_sql: String,
    /// CSV files to import.
    pub inputs: Vec<PathBuf>,
    /// The imported table's column to sum in the check.
    pub sum_col: String,
    /// Writer threads.
    pub writers: u64,
    /// Puts per second of each writer (one put per write batch).
    pub write_rate: u64,
    /// Reader threads.
    pub readers: u64,
    /// Gets per second of each reader.
    pub read_rate: u64,
    /// Orders rows written (and flushed) before the baseline window.
    pub preload: u64,
    /// Length of the baseline window, seconds.
    pub baseline_secs: u64,
    /// The import's parse workers.
    pub import_threads: usize,
    /// Nice value of the import's threads (`ImportOptions::nice`).
    pub import_nice: Option<i32>,
    /// Import threads under SCHED_IDLE (`ImportOptions::idle`).
    pub import_idle: bool,
    /// The import's file writes paced to this many bytes a second (`ImportOptions::rate_limiter`).
    pub import_write_rate: Option<u64>,
    /// The import's memory budget, bytes.
    pub memory: u64,
    /// Diagnosis: no-op ops instead of puts and gets (the floor during the import).
    pub noop_ops: bool,
}

/// Prefix byte of the orders key space (invariant 1).
const ORDERS: u8 = b'o';
/// Length of the no-op floor measurement, seconds.
const FLOOR_SECS: u64 = 2;
/// Orders rows per preload write batch.
const PRELOAD_BATCH: u64 = 1_000;
/// Latency samples reserved per thread and window: this many seconds of ops (invariant 2's
/// measurement must not reallocate inside a window in any run shorter than this).
const RESERVE_SECS: u64 = 600;

/// Key of orders row `seq` of `writer` (0: preloaded).
pub fn order_key(writer: u32, seq: u64) -> [u8; 13] {
    let mut k = [0u8; 13];
    k[0] = ORDERS;
    k[1..5].copy_from_slice(&writer.to_be_bytes());
    k[5..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// Value of orders row `seq` of `writer`: the spec's 100-byte value of a logical row unique to
/// the pair.
pub fn order_value(writer: u32, seq: u64) -> [u8; gen::VALUE_LEN] {
    engine::value((u64::from(writer) << 40) | seq)
}

/// The preloaded row read by op `j` of reader `r`.
pub fn read_target(r: u64, j: u64, preload: u64) -> u64 {
    gen::read_row((r << 40) | j, preload.max(1))
}

/// Time between two ops of a thread paced at `rate` ops per second.
pub fn interval(rate: u64) -> Duration {
    Duration::from_nanos(1_000_000_000 / rate.max(1))
}

/// A measurement window (invariant 2): opened at `start`, its end set once by `close`.
struct Window {
    start: Instant,
    end: OnceLock<Instant>,
}

impl Window {
    fn open() -> Window {
        Window {
            start: Instant::now(),
            end: OnceLock::new(),
        }
    }

    fn close(&self) -> Instant {
        *self.end.get_or_init(Instant::now)
    }

    fn admits(&self, due: Instant) -> bool {
        self.end.get().is_none_or(|end| due < *end)
    }
}

/// One thread's ops in a window.
struct ThreadOps {
    lat: Latencies,
    ops: u64,
    /// When its last op completed.
    last_done: Instant,
    /// Reads that found no value or a wrong one.
    misses: u64,
}

/// One kind of op (writes or reads) over all its threads in a window.
#[derive(Default)]
struct KindOps {
    lat: Option<Latencies>,
    ops: u64,
    last_done: Option<Instant>,
    misses: u64,
}

impl KindOps {
    fn add(&mut self, t: ThreadOps) {
        match self.lat.as_mut() {
            Some(l) => l.extend(t.lat),
            None => self.lat = Some(t.lat),
        }
        self.ops += t.ops;
        self.last_done = self.last_done.max(Some(t.last_done));
        self.misses += t.misses;
    }

    /// ops, achieved ops/s (ops over the time from the window's start to the last op's
    /// completion), the target rate, and the latency percentiles.
    fn json(self, start: Instant, target: u64) -> Value {
        let secs = self
            .last_done
            .map_or(0.0, |t| t.duration_since(start).as_secs_f64());
        json!({
            "ops": self.ops,
            "ops_per_s": if secs > 0.0 { self.ops as f64 / secs } else { 0.0 },
            "target_ops_per_s": target,
            "latency_us": self.lat.map_or(Value::Null, Latencies::summary),
        })
    }
}

/// What `serve` measured in one window.
struct Served {
    window_secs: f64,
    writes: Value,
    reads: Value,
    read_misses: u64,
}

/// Runs the `import-online` workload in `dir`; returns its result line.
pub fn import_online(
    cfg: &OnlineConfig,
    dir: &std::path::Path,
) -> Result<Value, Box<dyn std::error::Error>> {
    // Step 1.
    let db_dir = dir.join("db");
    let (db, preload_secs) = open_and_preload(&db_dir, cfg)?;
    let floor = paced_noop_floor(cfg);
    let mut next_seq = vec![0u64; cfg.writers as usize];
    // Step 2.
    let baseline_len = Duration::from_secs(cfg.baseline_secs);
    let (baseline, ()) = serve(&db, cfg, &mut next_seq, || std::thread::sleep(baseline_len));
    // Step 3.
    let import = Import::new(&cfg.schema_sql, cfg.inputs.clone(), import_options(cfg))?;
    let (during, summary) = serve(&db, cfg, &mut next_seq, || import.run(&db));
    let summary = summary?;
    let import_secs = summary.total_secs;
    // Step 4.
    let check = check(&db, cfg, &summary.table, &next_seq)?;
    let m = db.metrics();
    let out = json!({
        "workload": "import-online", "engine": "sluice",
        "params": params(cfg),
        "latency_from": "each op's scheduled send time (coordinated-omission-safe: a late op's wait counts)",
        "overhead": {"paced_noop_us": floor, "paced_noop_seconds": FLOOR_SECS,
                     "what": "the paced loop with a no-op op on all writer+reader threads at their rates (sleep wake-up, scheduling)"},
        "seconds": {"preload": preload_secs, "baseline_window": baseline.window_secs,
                    "import": import_secs, "during_window": during.window_secs},
        "baseline": {"writes": baseline.writes, "reads": baseline.reads},
        "during": {"writes": during.writes, "reads": during.reads},
        "import": {"seconds": import_secs, "rows": summary.rows, "parse_sort_secs": summary.parse_sort_secs,
                   "merge_secs": summary.merge_secs, "ingest_secs": summary.ingest_secs,
                   "runs_spilled": summary.runs_spilled, "files": summary.files.len()},
        "check": fair::with(check, json!({"read_misses": baseline.read_misses + during.read_misses})),
        "stalls": m.stall_count, "stall_micros": m.stall_micros,
        "peak_rss_kib": crate::peak_rss_kib(),
    });
    db.close()?;
    Ok(out)
}

fn import_options(cfg: &OnlineConfig) -> ImportOptions {
    ImportOptions {
        format: Some(Format::Csv),
        threads: cfg.import_threads,
        memory: cfg.memory,
        nice: cfg.import_nice,
        idle: cfg.import_idle,
        rate_limiter: cfg
            .import_write_rate
            .map(|r| std::sync::Arc::new(sluice::RateLimiter::new(r))),
        progress: ProgressMode::Off,
        ..ImportOptions::default()
    }
}

fn params(cfg: &OnlineConfig) -> Value {
    fair::with(
        fair::table_params(),
        json!({
            "writers": cfg.writers, "write_rate_per_writer": cfg.write_rate,
            "readers": cfg.readers, "read_rate_per_reader": cfg.read_rate,
            "preload_rows": cfg.preload, "baseline_seconds": cfg.baseline_secs,
            "import_threads": cfg.import_threads,
            "import_worker_threads": import_options(cfg).worker_threads(),
            "import_nice": cfg.import_nice, "import_idle": cfg.import_idle, "import_write_rate_bytes_per_sec": cfg.import_write_rate, "memory_bytes": cfg.memory,
            "inputs": cfg.inputs, "sum_col": cfg.sum_col,
            "wal": true, "sync": false, "write_batch": 1, "noop_ops": cfg.noop_ops,
            "key_bytes": 13, "value_bytes": gen::VALUE_LEN,
            "orders_key": "o ‖ BE32(writer) ‖ BE64(seq), 13 bytes; value 100 bytes",
            "reads": "Db::get of a uniformly random preloaded orders key, value checked",
            "import": "sluice_import::Import::run on the serving Db (same process; CSV, no header)",
            "db_open": "sluice_import::open_db (defaults for a new Db)",
        }),
    )
}

/// Step 1: a fresh Db with `preload` orders rows, flushed and compacted.
fn open_and_preload(
    dir: &std::path::Path,
    cfg: &OnlineConfig,
) -> Result<(Db, f64), Box<dyn std::error::Error>> {
    let db = sluice_import::open_db_with(dir, true, |o| o.listeners = crate::event_listeners())?;
    let t = Instant::now();
    let mut seq = 0;
    while seq < cfg.preload {
        let mut b = WriteBatch::new();
        for s in seq..(seq + PRELOAD_BATCH).min(cfg.preload) {
            b.put(&order_key(0, s), &order_value(0, s));
        }
        db.write(b, WriteOptions::default())?;
        seq += PRELOAD_BATCH;
    }
    db.flush()?;
    db.wait_for_background_work()?;
    Ok((db, t.elapsed().as_secs_f64()))
}

/// Steps 2 and 3: the writers and readers serve while `work` runs on this thread; the window
/// closes when it returns. `next_seq[w]`: writer w+1's next sequence number (advanced).
fn serve<T>(
    db: &Db,
    cfg: &OnlineConfig,
    next_seq: &mut [u64],
    work: impl FnOnce() -> T,
) -> (Served, T) {
    let window = Window::open();
    let (w_int, r_int) = (interval(cfg.write_rate), interval(cfg.read_rate));
    let (w_cap, r_cap) = (
        (cfg.write_rate * RESERVE_SECS) as usize,
        (cfg.read_rate * RESERVE_SECS) as usize,
    );
    let (mut writes, mut reads) = (KindOps::default(), KindOps::default());
    let (result, end) = std::thread::scope(|s| {
        let window = &window;
        let writers: Vec<_> = next_seq
            .iter()
            .enumerate()
            .map(|(w, &first)| {
                let writer = w as u32 + 1;
                s.spawn(move || {
                    paced_thread(window, w_int, w_cap, |j| {
                        if cfg.noop_ops {
                            return false;
                        }
                        let seq = first + j;
                        db.put(&order_key(writer, seq), &order_value(writer, seq))
                            .unwrap_or_else(|e| panic!("orders put failed: {e}"));
                        false
                    })
                })
            })
            .collect();
        let readers: Vec<_> = (0..cfg.readers)
            .map(|r| {
                s.spawn(move || {
                    paced_thread(window, r_int, r_cap, |j| {
                        if cfg.noop_ops {
                            return false;
                        }
                        let seq = read_target(r, j, cfg.preload);
                        let v = db
                            .get(&order_key(0, seq))
                            .unwrap_or_else(|e| panic!("orders get failed: {e}"));
                        v.as_deref() != Some(&order_value(0, seq)[..])
                    })
                })
            })
            .collect();
        let result = work();
        let end = window.close();
        for (w, h) in writers.into_iter().enumerate() {
            let t = h.join().expect("writer thread");
            // No-op writers put nothing: nothing to read back.
            next_seq[w] += if cfg.noop_ops { 0 } else { t.ops };
            writes.add(t);
        }
        for h in readers {
            reads.add(h.join().expect("reader thread"));
        }
        (result, end)
    });
    let read_misses = reads.misses;
    let served = Served {
        window_secs: end.duration_since(window.start).as_secs_f64(),
        writes: writes.json(window.start, cfg.writers * cfg.write_rate),
        reads: reads.json(window.start, cfg.readers * cfg.read_rate),
        read_misses,
    };
    (served, result)
}

/// One paced thread's ops in `window` (invariant 2); `op(j)` runs op j and returns whether it
/// missed (a read that found no value or a wrong one).
fn paced_thread(
    window: &Window,
    interval: Duration,
    capacity: usize,
    mut op: impl FnMut(u64) -> bool,
) -> ThreadOps {
    let (mut last_done, mut misses) = (window.start, 0);
    let more = |_, due| window.admits(due);
    let lat = engine::paced(window.start, interval, capacity, more, |j| {
        misses += u64::from(op(j));
        last_done = Instant::now();
    });
    ThreadOps {
        ops: lat.len() as u64,
        lat,
        last_done,
        misses,
    }
}

/// The machine's floor under every paced op: the same threads and rates with a no-op op for
/// `FLOOR_SECS` (sleep wake-up and scheduling, no Db call), before the baseline.
fn paced_noop_floor(cfg: &OnlineConfig) -> Value {
    let window = Window::open();
    let rates = (0..cfg.writers)
        .map(|_| cfg.write_rate)
        .chain((0..cfg.readers).map(|_| cfg.read_rate));
    let mut all = KindOps::default();
    std::thread::scope(|s| {
        let window = &window;
        let threads: Vec<_> = rates
            .map(|rate| {
                let cap = (rate * FLOOR_SECS) as usize + 1;
                s.spawn(move || paced_thread(window, interval(rate), cap, |_| false))
            })
            .collect();
        std::thread::sleep(Duration::from_secs(FLOOR_SECS));
        window.close();
        for h in threads {
            all.add(h.join().expect("no-op thread"));
        }
    });
    all.lat.map_or(Value::Null, Latencies::summary)
}

/// Step 4: the imported table's rows and sum, and every acknowledged put read back.
fn check(
    db: &Db,
    cfg: &OnlineConfig,
    table: &str,
    next_seq: &[u64],
) -> Result<Value, Box<dyn std::error::Error>> {
    let reader = TableReader::open(db, Some(table))?;
    let col = reader
        .table
        .column(&cfg.sum_col)
        .ok_or_else(|| format!("table {table} has no column {}", cfg.sum_col))?;
    let cs = reader.count_sum(None, None, None, None, Some(col))?;
    let (mut acked, mut missing) = (0u64, 0u64);
    for (w, &n) in next_seq.iter().enumerate() {
        let writer = w as u32 + 1;
        for seq in 0..n {
            let v = db.get(&order_key(writer, seq))?;
            missing += u64::from(v.as_deref() != Some(&order_value(writer, seq)[..]));
        }
        acked += n;
    }
    Ok(json!({
        "table": table, "rows": cs.rows, "sum": sum_json(cs.sum),
        "acked_writes": acked, "acked_writes_missing": missing,
    }))
}

/// A column sum as a JSON number (a string if it does not fit in an i64, for a DECIMAL — its
/// exact text — and for a double JSON has no number for).
fn sum_json(sum: Option<ColumnSum>) -> Value {
    match sum {
        None | Some(ColumnSum::Null) => Value::Null,
        Some(ColumnSum::Int(v)) => {
            i64::try_from(v).map_or_else(|_| v.to_string().into(), Value::from)
        }
        Some(ColumnSum::Double(v)) if v.is_finite() => v.into(),
        Some(other) => other.to_string().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_keys_sort_after_every_import_key_and_apart_per_writer() {
        // Invariant 1: import keys start with a BE32 table id (catalog 0, tables from 1).
        let import_key = [0u8, 0, 0, 200, 0, 0, 0, 1];
        assert!(order_key(0, 0).as_slice() > import_key.as_slice());
        assert!(order_key(0, u64::MAX) < order_key(1, 0));
        assert!(order_key(1, 1) < order_key(1, 256));
        assert_ne!(order_value(0, 5), order_value(1, 5));
    }

    #[test]
    fn read_targets_stay_in_the_preloaded_rows() {
        for r in 0..3 {
            for j in 0..1000 {
                assert!(read_target(r, j, 17) < 17);
            }
        }
        assert_eq!(read_target(0, 5, 0), 0);
    }

    #[test]
    fn a_window_admits_what_is_due_before_it_closes() {
        let w = Window::open();
        let later = w.start + Duration::from_secs(3600);
        assert!(w.admits(later));
        let end = w.close();
        assert!(!w.admits(later));
        assert!(w.admits(w.start) || end == w.start);
        assert_eq!(w.close(), end, "the end is set once");
    }

    #[test]
    fn paced_runs_every_due_op_and_stops_at_the_bound() {
        let start = Instant::now();
        let mut seen = Vec::new();
        let lat = engine::paced(start, Duration::ZERO, 8, |j, _| j < 5, |j| seen.push(j));
        assert_eq!(seen, vec![0, 1, 2, 3, 4]);
        assert_eq!(lat.len(), 5);
        assert_eq!(
            engine::scheduled_at(start, interval(4), 3),
            start + Duration::from_millis(750)
        );
    }

    #[test]
    fn sums_fit_json() {
        assert_eq!(sum_json(Some(ColumnSum::Int(42))), json!(42));
        assert_eq!(
            sum_json(Some(ColumnSum::Int(i128::from(i64::MAX) + 1))),
            json!("9223372036854775808")
        );
        assert_eq!(sum_json(None), Value::Null);
        assert_eq!(sum_json(Some(ColumnSum::Null)), Value::Null);
        let dec = ColumnSum::Decimal {
            unscaled: 35.into(),
            scale: 2,
        };
        assert_eq!(sum_json(Some(dec)), json!("0.35"));
        assert_eq!(sum_json(Some(ColumnSum::Double(f64::NAN))), json!("nan"));
    }
}
