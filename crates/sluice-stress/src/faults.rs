//! In-process fault mode on a [`MemFs`]: the workload runs, faults are switched on at a
//! random moment (writes failing after some bytes, syncs failing, table creation failing),
//! operations fail while every read is still checked (errors are fine, wrong answers and panics
//! are not), then power is lost (`MemFs::crashed_copy`: unsynced bytes dropped, torn tails),
//! the faults clear, and the reopened database is verified with the crash rules of
//! [`crate::crash`] in [`Loss::PowerLoss`] mode. Several rounds per seed, on the same files.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::fs::{FaultConfig, MemFs};
use sluice::Db;

use crate::crash::{CrashModel, Loss};
use crate::journal::Journal;
use crate::report::{Anomaly, Op, Stats, Summary};
use crate::storage::{stress_options, Storage};
use crate::stress::run_phase;
use crate::workload::Ctx;

/// Configuration of the fault mode.
#[derive(Debug, Clone)]
pub struct FaultsConfig {
    /// First seed.
    pub seed: u64,
    /// Number of seeds (`seed..seed + seeds`).
    pub seeds: u64,
    /// Crash rounds per seed.
    pub rounds: u64,
    /// Worker threads.
    pub threads: usize,
    /// Size of the main key space.
    pub keys: u32,
    /// Capacity of the `z` space.
    pub zcap: u32,
    /// Each round runs this long (ms); faults are switched on between its first and last
    /// quarter (in four rounds of five; the fifth loses power without faults).
    pub round_ms: u64,
    /// Operations left out of the mix.
    pub disabled: Vec<Op>,
    /// Check for leftover table files after each recovery.
    pub check_leaks: bool,
}

/// A random fault, described for reports.
fn pick_fault(rng: &mut StdRng) -> (FaultConfig, String) {
    match rng.gen_range(0..4) {
        0 => {
            let n = rng.gen_range(0..256u64 << 10);
            (
                FaultConfig {
                    fail_writes_after_bytes: Some(n),
                    ..FaultConfig::default()
                },
                format!("writes fail after {n} bytes"),
            )
        }
        1 => (
            FaultConfig {
                fail_syncs: true,
                ..FaultConfig::default()
            },
            "syncs fail".into(),
        ),
        2 => {
            let n = rng.gen_range(0..64u64 << 10);
            (
                FaultConfig {
                    fail_writes_after_bytes: Some(n),
                    fail_syncs: true,
                    ..FaultConfig::default()
                },
                format!("writes fail after {n} bytes and syncs fail"),
            )
        }
        _ => (
            FaultConfig {
                fail_create_containing: Some(".sst".into()),
                ..FaultConfig::default()
            },
            "creating table files fails".into(),
        ),
    }
}

fn anomaly(seed: u64, context: String, op: &str, read: String, detail: String) -> Box<Anomaly> {
    Box::new(Anomaly::without_key(seed, context, op, read, detail))
}

/// Runs every seed; stops at the first anomaly.
pub fn run_faults(cfg: &FaultsConfig) -> Summary {
    let mut summary = Summary::default();
    for seed in cfg.seed..cfg.seed + cfg.seeds {
        if let Err(a) = run_seed(cfg, seed, &summary.stats) {
            summary.anomalies.push(*a);
            break;
        }
    }
    summary
}

fn run_seed(cfg: &FaultsConfig, seed: u64, stats: &Stats) -> Result<(), Box<Anomaly>> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xfa17);
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut fs = MemFs::new();
    let mut model = CrashModel::new(cfg.keys, cfg.zcap, Loss::PowerLoss);
    model.check_leaks = cfg.check_leaks;
    for round in 0..cfg.rounds {
        let context = format!("seed {seed} round {round}");
        let storage = Arc::new(Storage::mem(fs.clone(), scratch.path()));
        let db = Db::open(storage.db_dir(), stress_options(seed, storage.fs())).map_err(|e| {
            anomaly(
                seed,
                context.clone(),
                "open",
                format!("error: {e}"),
                "open failed".into(),
            )
        })?;
        let db = Arc::new(db);
        let anomalies = Arc::new(Mutex::new(Vec::new()));
        let faults_on = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let round_stats = Arc::new(Stats::default());
        let ctx = Arc::new(Ctx {
            seed,
            db: Arc::clone(&db),
            oracle: Arc::new(model.oracle()),
            stats: Arc::clone(&round_stats),
            stop: Arc::clone(&stop),
            anomalies: Arc::clone(&anomalies),
            storage,
            faults_on: Arc::clone(&faults_on),
            deadline: Instant::now() + Duration::from_millis(cfg.round_ms),
            context: context.clone(),
            disabled: cfg.disabled.clone(),
        });
        // The fault switch, at a random moment of the round (never in one round of five).
        let fault = (!rng.gen_bool(0.2)).then(|| pick_fault(&mut rng));
        let at = Duration::from_millis(rng.gen_range(cfg.round_ms / 4..=cfg.round_ms * 3 / 4));
        let description = fault
            .as_ref()
            .map_or("no fault".to_string(), |f| f.1.clone());
        let switch = {
            let (fs, faults_on, stop) = (fs.clone(), Arc::clone(&faults_on), Arc::clone(&stop));
            std::thread::spawn(move || {
                let t = Instant::now();
                while t.elapsed() < at && !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                if let Some((f, _)) = fault {
                    faults_on.store(true, Ordering::SeqCst);
                    fs.set_faults(f);
                }
            })
        };
        let lines: Vec<Arc<Mutex<Vec<String>>>> = (0..=cfg.threads)
            .map(|_| Arc::new(Mutex::new(Vec::new())))
            .collect();
        let epoch = Instant::now();
        run_phase(&ctx, cfg.threads, round, |t| {
            Journal::mem(Arc::clone(&lines[t]), epoch, t as u64)
        });
        stop.store(true, Ordering::SeqCst);
        let _ = switch.join();
        stats.merge(&round_stats);
        if faults_on.load(Ordering::SeqCst) {
            stats.faults.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(a) = anomalies.lock().first() {
            let mut a = Box::new(a.clone());
            a.context = format!("{} ({description})", a.context);
            return Err(a);
        }
        // Power loss now; the old instance keeps the old files (and its faults) to itself.
        let crashed = fs.crashed_copy(Some(rng.gen()));
        drop(ctx);
        drop(db);
        fs = crashed;
        let storage = Storage::mem(fs.clone(), scratch.path());
        let db = Db::open(storage.db_dir(), stress_options(seed, storage.fs())).map_err(|e| {
            anomaly(
                seed,
                format!("{context} ({description})"),
                "open after power loss",
                format!("error: {e}"),
                "recovery failed".into(),
            )
        })?;
        let journals: Vec<Vec<String>> = lines.iter().map(|l| l.lock().clone()).collect();
        let report = model.verify_round(
            &db,
            &*storage.fs(),
            &journals,
            seed,
            &format!("{context} ({description}), after power loss"),
        )?;
        stats.rounds.fetch_add(1, Ordering::Relaxed);
        stats
            .verified_keys
            .fetch_add(report.keys, Ordering::Relaxed);
        db.close().map_err(|e| {
            anomaly(
                seed,
                context.clone(),
                "close",
                format!("error: {e}"),
                "close after verification failed".into(),
            )
        })?;
    }
    Ok(())
}
