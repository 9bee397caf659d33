//! The process-kill crash mode: the driver kills a child running the journaled workload with
//! SIGKILL at a random moment, reopens the database and verifies it, round after round; and
//! the child.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use sluice::Db;

use crate::imports::{self, ImportModel};
use crate::journal::{self, Journal};
use crate::report::{Anomaly, Op, Stats, Summary};
use crate::storage::{stress_options, Storage};
use crate::stress::run_phase;
use crate::workload::Ctx;

use super::{CrashModel, Loss, RoundReport};

/// Configuration of the process-kill crash mode.
#[derive(Debug, Clone)]
pub struct CrashConfig {
    /// The `sluice-stress` binary to run as the child.
    pub bin: PathBuf,
    /// Seed of the run.
    pub seed: u64,
    /// Kills (rounds).
    pub kills: u64,
    /// A fresh real directory (a temporary one when `None`).
    pub dir: Option<PathBuf>,
    /// Size of the main key space.
    pub keys: u32,
    /// Capacity of the `z` space.
    pub zcap: u32,
    /// Worker threads of the child.
    pub threads: usize,
    /// The child is killed after a uniform random time in `[min_ms, max_ms]`.
    pub min_ms: u64,
    /// See `min_ms`.
    pub max_ms: u64,
    /// Operations left out of the mix.
    pub disabled: Vec<Op>,
    /// Check for leftover table files after each recovery.
    pub check_leaks: bool,
    /// The child also runs imports one after another ([`crate::imports`]), verified after
    /// each kill.
    pub imports: bool,
}

/// Applies a round's report to the counters.
fn count_round(stats: &Stats, r: &RoundReport) {
    for &(op, n) in &r.per_op {
        stats.add(op, n);
    }
    stats.rounds.fetch_add(1, Ordering::Relaxed);
    stats.verified_keys.fetch_add(r.keys, Ordering::Relaxed);
}

fn setup_anomaly(seed: u64, context: String, op: &str, read: String, detail: String) -> Anomaly {
    Anomaly::without_key(seed, context, op, read, detail)
}

/// `a,b,c` from operation names (the `--disable` argument).
pub fn names(ops: &[Op]) -> String {
    ops.iter().map(|o| o.name()).collect::<Vec<_>>().join(",")
}

/// Parses [`names`]' output (an empty string is no operation).
pub fn parse_names(s: &str) -> Result<Vec<Op>, String> {
    s.split(',')
        .filter(|n| !n.is_empty())
        .map(|n| Op::from_name(n).ok_or_else(|| format!("unknown operation {n:?}")))
        .collect()
}

fn boxed(seed: u64, context: String, op: &str, read: String, detail: String) -> Box<Anomaly> {
    Box::new(setup_anomaly(seed, context, op, read, detail))
}

/// Runs the child workload `kills` times on one directory, killing it with SIGKILL at a random
/// moment each time, and verifies the reopened database after each kill.
pub fn run_crash(cfg: &CrashConfig) -> Summary {
    let mut summary = Summary::default();
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = cfg.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    if root.join("db").exists() {
        summary.anomalies.push(setup_anomaly(
            cfg.seed,
            "setup".into(),
            "setup",
            root.display().to_string(),
            "directory already holds a database; use a fresh one".into(),
        ));
        return summary;
    }
    let storage = match Storage::real(&root) {
        Ok(s) => s,
        Err(e) => {
            summary.anomalies.push(setup_anomaly(
                cfg.seed,
                "setup".into(),
                "setup",
                e.to_string(),
                "cannot create the directory".into(),
            ));
            return summary;
        }
    };
    let journal_dir = root.join("journal");
    let state = root.join("state");
    let stderr_path = root.join("child.stderr");
    let mut model = CrashModel::new(cfg.keys, cfg.zcap, Loss::ProcessKill);
    model.check_leaks = cfg.check_leaks;
    let mut import_model = cfg.imports.then(|| ImportModel::new(cfg.seed));
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    for round in 0..cfg.kills {
        let context = format!("kill {round}");
        let r = (|| -> Result<RoundReport, Box<Anomaly>> {
            let io = |what: &str, e: std::io::Error| {
                setup_anomaly(
                    cfg.seed,
                    context.clone(),
                    what,
                    e.to_string(),
                    "harness I/O failed".into(),
                )
            };
            model.save(&state).map_err(|e| io("save state", e))?;
            let _ = std::fs::remove_dir_all(&journal_dir);
            std::fs::create_dir_all(&journal_dir).map_err(|e| io("journal dir", e))?;
            let stderr = std::fs::File::create(&stderr_path).map_err(|e| io("stderr file", e))?;
            let mut child = Command::new(&cfg.bin)
                .arg("child")
                .arg("--dir")
                .arg(&root)
                .args([
                    "--seed",
                    &cfg.seed.to_string(),
                    "--round",
                    &round.to_string(),
                ])
                .args(["--threads", &cfg.threads.to_string()])
                .args(["--disable", &names(&cfg.disabled)])
                .args(
                    import_model
                        .as_ref()
                        .map(|m| ["--imports".to_string(), m.next.to_string()])
                        .into_iter()
                        .flatten(),
                )
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .map_err(|e| io("spawn child", e))?;
            let wait = Duration::from_millis(rng.gen_range(cfg.min_ms..=cfg.max_ms));
            let t = Instant::now();
            let mut early = None;
            while t.elapsed() < wait {
                if let Some(status) = child.try_wait().map_err(|e| io("wait child", e))? {
                    early = Some(status);
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            if let Some(status) = early {
                let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
                return Err(boxed(
                    cfg.seed,
                    context.clone(),
                    "child",
                    err,
                    format!("child exited by itself ({status}) before the kill"),
                ));
            }
            child.kill().map_err(|e| io("kill child", e))?; // SIGKILL
            let _ = child.wait();
            let mut journals = Vec::new();
            let mut names: Vec<PathBuf> = std::fs::read_dir(&journal_dir)
                .map_err(|e| io("read journals", e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            names.sort();
            for p in names {
                journals.push(journal::read_lines(&p).map_err(|e| io("read journal", e))?);
            }
            let opts = stress_options(cfg.seed, storage.fs());
            let db = Db::open(storage.db_dir(), opts).map_err(|e| {
                boxed(
                    cfg.seed,
                    context.clone(),
                    "open after kill",
                    format!("error: {e}"),
                    "recovery failed".into(),
                )
            })?;
            let report = model.verify_round(&db, &*storage.fs(), &journals, cfg.seed, &context)?;
            if let Some(m) = import_model.as_mut() {
                m.verify_round(&db, &root, &context)?;
                let _ = std::fs::remove_file(root.join(imports::LOG));
            }
            db.close().map_err(|e| {
                boxed(
                    cfg.seed,
                    context.clone(),
                    "close after verification",
                    format!("error: {e}"),
                    "close failed".into(),
                )
            })?;
            Ok(report)
        })();
        match r {
            Ok(report) => count_round(&summary.stats, &report),
            Err(a) => {
                summary.anomalies.push(*a);
                break;
            }
        }
    }
    if let Some(m) = import_model {
        summary.imports = m.counts;
    }
    summary
}

/// Arguments of the child process.
#[derive(Debug, Clone)]
pub struct ChildArgs {
    /// Root directory (database, journals, state file).
    pub dir: PathBuf,
    /// Seed of the run (options).
    pub seed: u64,
    /// Round (thread seeds).
    pub round: u64,
    /// Worker threads.
    pub threads: usize,
    /// Operations left out of the mix.
    pub disabled: Vec<Op>,
    /// Run imports too, numbered from this one.
    pub imports: Option<u64>,
}

/// The child: opens the database, runs the journaled workload until killed (or 10 minutes).
/// Returns the process exit code: 0, or 1 after an anomaly (printed on stderr).
pub fn child_main(args: &ChildArgs) -> i32 {
    let model = match CrashModel::load(&args.dir.join("state"), Loss::ProcessKill) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("child: {e}");
            return 2;
        }
    };
    let storage = match Storage::real(&args.dir) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("child: {e}");
            return 2;
        }
    };
    let db = match Db::open(storage.db_dir(), stress_options(args.seed, storage.fs())) {
        Ok(db) => Arc::new(db),
        Err(e) => {
            eprintln!(
                "ANOMALY seed={} (kill {}): child could not open the database: {e}",
                args.seed, args.round
            );
            return 1;
        }
    };
    let anomalies = Arc::new(Mutex::new(Vec::new()));
    let ctx = Arc::new(Ctx {
        seed: args.seed,
        db,
        oracle: Arc::new(model.oracle()),
        stats: Arc::new(Stats::default()),
        stop: Arc::new(AtomicBool::new(false)),
        anomalies: Arc::clone(&anomalies),
        storage,
        faults_on: Arc::new(AtomicBool::new(false)),
        deadline: Instant::now() + Duration::from_secs(600),
        context: format!("kill {} (child)", args.round),
        disabled: args.disabled.clone(),
    });
    if let Some(first) = args.imports {
        let (db, root, stop) = (Arc::clone(&ctx.db), args.dir.clone(), Arc::clone(&ctx.stop));
        let (seed, deadline) = (args.seed, ctx.deadline);
        std::thread::spawn(move || {
            if let Err(e) = imports::run_child_imports(db, root, seed, first, stop, deadline) {
                eprintln!("child: the import thread failed: {e}");
                std::process::exit(1);
            }
        });
    }
    let epoch = Instant::now();
    let jdir = args.dir.join("journal");
    run_phase(&ctx, args.threads, args.round, |t| {
        Journal::file(&jdir.join(format!("t{t:03}.log")), epoch, t as u64).expect("journal file")
    });
    let found = anomalies.lock();
    for a in found.iter().take(3) {
        eprintln!("{a}");
    }
    i32::from(!found.is_empty())
}
