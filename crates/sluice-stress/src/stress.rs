//! Concurrent stress mode: N workers plus the sequential thread on one `Arc<Db>`, in phases;
//! between phases (single-threaded) every key is verified and the database is closed and
//! opened again.
//!
//! Steps of [`run`]:
//! 1. open the database (a fresh real directory or a `MemFs`) with [`stress_options`];
//! 2. run a phase: spawn the workers, join them (a panic is an anomaly);
//! 3. verify the whole key space ([`verify_full`]);
//! 4. close, reopen, and go to 2 until the time is up or an anomaly was found.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use sluice::events::check_against_manifest;
use sluice::fs::failpoints::POINTS as ENGINE_POINTS;
use sluice::fs::MemFs;
use sluice::{Db, ReadOptions};
use sluice_import::failpoints::POINTS;

use crate::imports::ImportModel;
use crate::journal::Journal;
use crate::keys::{make_value, show, Key};
use crate::oracle::Oracle;
use crate::report::{Anomaly, Op, Stats, Summary};
use crate::storage::{stress_options, EventLog, Storage};
use crate::workload::{run_seq, thread_seed, Ctx, Worker};

/// Configuration of the concurrent mode.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Seed of every thread's operation sequence and of the options.
    pub seed: u64,
    /// Worker threads (the sequential thread comes on top).
    pub threads: usize,
    /// Total running time.
    pub secs: f64,
    /// Size of the main key space.
    pub keys: u32,
    /// Capacity of the reserved ingest-behind key space.
    pub zcap: u32,
    /// A fresh real directory, or `None` for a `MemFs`.
    pub dir: Option<PathBuf>,
    /// Length of a phase (close + reopen between phases).
    pub reopen_every: f64,
    /// Operations left out of the mix.
    pub disabled: Vec<Op>,
    /// Imports run one after another beside the workload, most with an I/O error injected at
    /// a random point ([`crate::imports::ImportModel::run_faulted`]); needs `dir`.
    pub imports: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: 1,
            threads: 8,
            secs: 10.0,
            keys: 10_000,
            zcap: 20_000,
            dir: None,
            reopen_every: 5.0,
            disabled: Vec::new(),
            imports: false,
        }
    }
}

fn anomaly(seed: u64, context: &str, op: &str, key: &str, read: String, detail: String) -> Anomaly {
    Anomaly {
        seed,
        context: context.to_string(),
        op: op.to_string(),
        key: key.to_string(),
        read,
        detail,
        history: String::new(),
    }
}

/// Runs the concurrent mode; the summary holds the counters and any anomaly.
pub fn run(cfg: &RunConfig) -> Summary {
    let summary = Summary::default();
    let scratch = match tempfile::tempdir() {
        Ok(t) => t,
        Err(e) => return fail(summary, cfg.seed, format!("tempdir: {e}")),
    };
    let storage = match &cfg.dir {
        Some(d) if d.join("db").exists() => {
            return fail(
                summary,
                cfg.seed,
                format!(
                    "{} already holds a database; use a fresh directory",
                    d.display()
                ),
            )
        }
        Some(d) => match Storage::real(d) {
            Ok(s) => s,
            Err(e) => return fail(summary, cfg.seed, format!("{}: {e}", d.display())),
        },
        None => Storage::mem(MemFs::new(), scratch.path()),
    };
    let storage = Arc::new(storage);
    let events = Arc::new(EventLog::default());
    let mut opts = stress_options(cfg.seed, storage.fs());
    opts.listeners.push(events.clone());
    eprintln!(
        "seed {}: max_background_jobs {} (up to {} compactions at once)",
        cfg.seed,
        opts.max_background_jobs,
        opts.max_background_jobs - 1
    );
    let mut db = match Db::open(storage.db_dir(), opts.clone()) {
        Ok(db) => Arc::new(db),
        Err(e) => return fail(summary, cfg.seed, format!("open: {e}")),
    };
    let imports = match (&cfg.dir, cfg.imports) {
        (Some(d), true) => Some((d.clone(), Arc::new(Mutex::new(ImportModel::new(cfg.seed))))),
        (None, true) => return fail(summary, cfg.seed, "imports need a real directory".into()),
        _ => None,
    };
    let oracle = Arc::new(Oracle::fresh(cfg.keys, cfg.zcap));
    let stats = Arc::new(Stats::default());
    let anomalies = Arc::new(Mutex::new(Vec::new()));
    let end = Instant::now() + Duration::from_secs_f64(cfg.secs);
    for phase in 0u64.. {
        let deadline = (Instant::now() + Duration::from_secs_f64(cfg.reopen_every)).min(end);
        let ctx = Arc::new(Ctx {
            seed: cfg.seed,
            db: Arc::clone(&db),
            oracle: Arc::clone(&oracle),
            stats: Arc::clone(&stats),
            stop: Arc::new(AtomicBool::new(false)),
            anomalies: Arc::clone(&anomalies),
            storage: Arc::clone(&storage),
            faults_on: Arc::new(AtomicBool::new(false)),
            deadline,
            context: format!("phase {phase}"),
            disabled: cfg.disabled.clone(),
        });
        let importer = imports.as_ref().map(|(root, model)| {
            let (ctx, root, model) = (Arc::clone(&ctx), root.clone(), Arc::clone(model));
            std::thread::spawn(move || faulted_imports(&ctx, &root, &model, phase))
        });
        run_phase(&ctx, cfg.threads, phase, |_| Journal::off());
        if let Some(h) = importer {
            if h.join().is_err() {
                ctx.anomaly(anomaly(
                    cfg.seed,
                    &ctx.context,
                    "import",
                    "-",
                    String::new(),
                    "the import thread panicked".into(),
                ));
            }
        }
        if anomalies.lock().is_empty() {
            if let Some(a) = verify_full(&db, &oracle, cfg.seed, &ctx.context) {
                ctx.anomaly(a);
            }
        }
        drop(ctx);
        if !anomalies.lock().is_empty() {
            break;
        }
        // The last phase too is closed, its events checked and counted; then no reopen.
        let last = Instant::now() >= end;
        // Single-threaded: close and open again; the oracle carries over unchanged.
        let Ok(d) = Arc::try_unwrap(db) else {
            unreachable!("every worker joined")
        };
        if let Err(e) = d.close() {
            anomalies.lock().push(anomaly(
                cfg.seed,
                &format!("phase {phase}"),
                "close",
                "-",
                format!("error: {e}"),
                "close failed".into(),
            ));
            break;
        }
        // Every event of the session closed matches what its MANIFEST says.
        let events = events.take();
        if let Err(why) = check_against_manifest(&events, &*storage.fs(), storage.db_dir()) {
            anomalies.lock().push(anomaly(
                cfg.seed,
                &format!("phase {phase}"),
                "close",
                "-",
                format!("{} events", events.len()),
                format!("the events disagree with the MANIFEST: {why}"),
            ));
            break;
        }
        let begun = |kind| {
            events
                .iter()
                .filter(|e| matches!(e, sluice::Event::CompactionBegin(c) if c.kind == kind))
                .count() as u64
        };
        use sluice::events::CompactionKind;
        let relaxed = std::sync::atomic::Ordering::Relaxed;
        stats
            .intra_l0
            .fetch_add(begun(CompactionKind::IntraL0), relaxed);
        stats
            .small_files
            .fetch_add(begun(CompactionKind::SmallFiles), relaxed);
        if last {
            break;
        }
        stats.count(Op::Reopen);
        db = match Db::open(storage.db_dir(), opts.clone()) {
            Ok(d) => Arc::new(d),
            Err(e) => {
                anomalies.lock().push(anomaly(
                    cfg.seed,
                    &format!("phase {phase}"),
                    "reopen",
                    "-",
                    format!("error: {e}"),
                    "reopen after a clean close failed".into(),
                ));
                break;
            }
        };
    }
    let s = Summary {
        stats: Stats::default(),
        anomalies: std::mem::take(&mut *anomalies.lock()),
        imports: imports
            .map(|(_, m)| m.lock().counts.clone())
            .unwrap_or_default(),
    };
    s.stats.merge(&stats);
    s
}

/// The import thread of one phase: imports until the phase's deadline, three in four with an
/// I/O error injected at a random point of a random phase (EIO or ENOSPC at the import's own
/// points; a torn write or a failed fsync of one of its files), each checked at once, half of
/// the faulted ones then resumed ([`ImportModel::run_faulted`]).
fn faulted_imports(ctx: &Ctx, root: &Path, model: &Mutex<ImportModel>, phase: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(thread_seed(ctx.seed, phase, usize::MAX));
    let mut model = model.lock();
    while Instant::now() < ctx.deadline && !ctx.stop.load(Ordering::Relaxed) {
        let fault = rng.gen_bool(0.75).then(|| {
            // One in four: a torn write or a failed fsync of one of the import's files (the
            // engine's points, aimed at its `sluice-*` directory; the workload's files and
            // the Db's pass); else an error at one of the import's own points.
            if rng.gen_bool(0.25) {
                let point = ENGINE_POINTS[rng.gen_range(0..ENGINE_POINTS.len())];
                let (kind, skip) = match point {
                    "sst_writer::write" => ("torn", rng.gen_range(0..12)),
                    _ => ("eio", rng.gen_range(0..4)),
                };
                return (point, format!("{skip}*off->return({kind}@sluice-)"));
            }
            let point = POINTS[rng.gen_range(0..POINTS.len())];
            let kind = if rng.gen_bool(0.5) { "eio" } else { "enospc" };
            // Points reached once an import fail on their first call; those reached per
            // file (runs, final files) on one of the first few.
            let skip = match point {
                "import::spill" | "import::run_read" | "import::final_file" => rng.gen_range(0..4),
                _ => 0,
            };
            (point, format!("{skip}*off->return({kind})"))
        });
        if fault.is_some() {
            ctx.stats.faults.fetch_add(1, Ordering::Relaxed);
        }
        if let Err(a) = model.run_faulted(&ctx.db, root, fault, &ctx.context) {
            ctx.anomaly(*a);
            return;
        }
    }
    // The tables no import of the phase touched are intact too.
    if let Err((op, read, detail)) = model.check_tables(&ctx.db) {
        ctx.anomaly(anomaly(ctx.seed, &ctx.context, op, "-", read, detail));
    }
}

fn fail(mut s: Summary, seed: u64, why: String) -> Summary {
    s.anomalies
        .push(anomaly(seed, "setup", "setup", "-", String::new(), why));
    s
}

/// Spawns `threads` workers and the sequential thread, waits for all; a panic is an anomaly.
pub fn run_phase(ctx: &Arc<Ctx>, threads: usize, phase: u64, journal: impl Fn(usize) -> Journal) {
    let mut handles = Vec::new();
    for t in 0..threads {
        let w = Worker::new(
            t,
            Arc::clone(ctx),
            thread_seed(ctx.seed, phase, t),
            journal(t),
        );
        handles.push((t, std::thread::spawn(move || w.run())));
    }
    let (c, j) = (Arc::clone(ctx), journal(threads));
    let seed = thread_seed(ctx.seed, phase, threads);
    handles.push((
        threads,
        std::thread::spawn(move || run_seq(c, seed, j, threads)),
    ));
    for (t, h) in handles {
        if let Err(p) = h.join() {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            ctx.anomaly(anomaly(
                ctx.seed,
                &format!("{}, thread {t}", ctx.context),
                "thread",
                "-",
                msg,
                "worker thread panicked".into(),
            ));
        }
    }
}

/// With no operation in flight: a full scan and a point read of every key, each checked
/// against the oracle; the scan strictly ordered; the sequential series contiguous and at
/// least as long as what was acknowledged.
pub fn verify_full(db: &Db, oracle: &Oracle, seed: u64, context: &str) -> Option<Anomaly> {
    let context = format!("{context}, full verification");
    let bad = |op: &str, key: &str, read: String, detail: String, history: String| {
        Some(Anomaly {
            history,
            ..anomaly(seed, &context, op, key, read, detail)
        })
    };
    let scan = match scan_all(db) {
        Ok(s) => s,
        Err(e) => {
            return bad(
                "scan",
                "-",
                format!("error: {e}"),
                "full scan failed".into(),
                String::new(),
            )
        }
    };
    let mut found = vec![false; (oracle.keys() + oracle.zcap()) as usize];
    let mut seq_present = Vec::new();
    for w in scan.windows(2) {
        if w[0].0 >= w[1].0 {
            return bad(
                "scan",
                &show(&w[1].0),
                show(&w[1].0),
                format!("not after {}", show(&w[0].0)),
                String::new(),
            );
        }
    }
    for (k, v) in &scan {
        match Key::parse(k) {
            Some(Key::S(j)) => {
                if *v != make_value(k, 1) || j >= oracle.seq_started.load(Ordering::SeqCst) {
                    return bad(
                        "scan",
                        &show(k),
                        show(v),
                        "sequential key never written with this value".into(),
                        String::new(),
                    );
                }
                seq_present.push(j);
            }
            Some(key) => {
                let Some(idx) = oracle.idx(key) else {
                    return bad(
                        "scan",
                        &show(k),
                        show(v),
                        "key outside the key space".into(),
                        String::new(),
                    );
                };
                found[idx] = true;
                let (c, p) = oracle.settled(idx);
                if let Err(why) = oracle.check(idx, c, p, 0, Some(v)) {
                    return bad("scan", &key.to_string(), show(v), why, oracle.history(idx));
                }
            }
            None => {
                return bad(
                    "scan",
                    &show(k),
                    show(v),
                    "unknown key".into(),
                    String::new(),
                )
            }
        }
    }
    let by_key: std::collections::HashMap<&[u8], &[u8]> = scan
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let zn = oracle.z_next.load(Ordering::SeqCst).min(oracle.zcap());
    let all = (0..oracle.keys()).map(Key::K).chain((0..zn).map(Key::Z));
    for key in all {
        let idx = oracle.idx(key).expect("in space");
        let kb = key.bytes();
        let (c, p) = oracle.settled(idx);
        if !found[idx] {
            if let Err(why) = oracle.check(idx, c, p, 0, None) {
                return bad(
                    "scan",
                    &key.to_string(),
                    "absent".into(),
                    why,
                    oracle.history(idx),
                );
            }
        }
        match db.get(&kb) {
            Ok(v) if v.as_deref() == by_key.get(kb.as_slice()).copied() => {}
            Ok(v) => {
                return bad(
                    "get after scan",
                    &key.to_string(),
                    v.as_deref().map_or("absent".into(), show),
                    format!(
                        "point read disagrees with the scan ({})",
                        by_key
                            .get(kb.as_slice())
                            .map_or("absent".into(), |v| show(v))
                    ),
                    oracle.history(idx),
                )
            }
            Err(e) => {
                return bad(
                    "get",
                    &key.to_string(),
                    format!("error: {e}"),
                    "read failed".into(),
                    String::new(),
                )
            }
        }
    }
    let acked = oracle.seq_acked.load(Ordering::SeqCst);
    for (n, j) in seq_present.iter().enumerate() {
        if *j != n as u64 {
            return bad(
                "scan",
                &Key::S(n as u64).to_string(),
                "absent".into(),
                format!("sequential series has a gap: {} present", Key::S(*j)),
                String::new(),
            );
        }
    }
    if (seq_present.len() as u64) < acked {
        return bad(
            "scan",
            &Key::S(seq_present.len() as u64).to_string(),
            "absent".into(),
            format!(
                "sequential series ends at {} but {acked} were acknowledged",
                seq_present.len()
            ),
            String::new(),
        );
    }
    None
}

/// Every entry of the workload's key spaces (`k`, `s`, `z`: keys from `a` on; an import's
/// tables, under the crash mode's `--imports`, sort below them), in iteration order.
pub fn scan_all(db: &Db) -> sluice::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut it = db.iter(ReadOptions {
        lower_bound: Some(b"a".to_vec()),
        ..ReadOptions::default()
    })?;
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    Ok(out)
}
