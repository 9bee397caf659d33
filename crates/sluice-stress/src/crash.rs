//! Crash mode: what must survive a process kill or a power loss, checked from the journals.
//!
//! A round: the workload runs (in a child process killed with SIGKILL, or in process on a
//! `MemFs` that then loses power), the database is opened again, and [`CrashModel::verify_round`]
//! compares every key with the journals of the round:
//! 1. *Required* operations must have applied. With a process kill: every acknowledged one
//!    (the WAL is handed to the OS before the acknowledgement). With a power loss: every
//!    acknowledged durability point (synced write, ingest, flush, compaction) and every
//!    operation acknowledged before some operation that survived (or a durability point)
//!    was issued — the prefix property of a log.
//! 2. Per key: the state on disk is the round's initial state (only when no required operation
//!    wrote the key) or a version at or above the last required one, among those started.
//! 3. Multi-key operations (batches, range deletions, ingests) are all-or-nothing.
//! 4. The sequential series is contiguous from 0 and reaches every required write.
//! 5. After background work settles, no table file outside the current version is left.
//!
//! The verified state becomes the next round's initial state ([`KeyBase`] per key), and the
//! next free version of every key carries over, so versions name writes across rounds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use sluice::fs::FileSystem;
use sluice::Db;

use crate::journal::{self, JOp, Journal};
use crate::keys::{make_value, parse_value, show, Key};
use crate::oracle::{KeyBase, Kind, Oracle};
use crate::report::{Anomaly, Op, Stats, Summary};
use crate::storage::{stress_options, Storage};
use crate::stress::{run_phase, scan_all};
use crate::workload::Ctx;

/// What the crash loses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// SIGKILL: the OS keeps everything written; only the process dies.
    ProcessKill,
    /// Power loss: unsynced bytes and names are lost (`MemFs::crashed_copy`).
    PowerLoss,
}

/// The state carried from one crash round to the next.
#[derive(Debug, Clone)]
pub struct CrashModel {
    /// Size of the main key space.
    pub keys: u32,
    /// Capacity of the `z` space.
    pub zcap: u32,
    /// Per key (`k` then `z`): the verified state and the next version.
    pub bases: Vec<KeyBase>,
    /// Next unused `z` key.
    pub z_next: u32,
    /// Length of the sequential series on disk.
    pub s_next: u64,
    /// What the crash loses.
    pub loss: Loss,
    /// Run check 5 (leftover table files).
    pub check_leaks: bool,
}

/// What a verified round counted.
#[derive(Debug, Default, Clone)]
pub struct RoundReport {
    /// Journaled operations (writes, ingests, flushes, compactions).
    pub ops: u64,
    /// Of which acknowledged.
    pub acked: u64,
    /// Of which failed.
    pub failed: u64,
    /// Keys checked.
    pub keys: u64,
    /// Journaled operations per kind.
    pub per_op: Vec<(Op, u64)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tri {
    Yes,
    No,
    Unknown,
}

struct Entry {
    version: u64,
    kind: Kind,
    op: usize,
}

impl CrashModel {
    /// Every key absent.
    pub fn new(keys: u32, zcap: u32, loss: Loss) -> Self {
        CrashModel {
            keys,
            zcap,
            bases: vec![KeyBase::ABSENT; (keys + zcap) as usize],
            z_next: 0,
            s_next: 0,
            loss,
            check_leaks: true,
        }
    }

    /// An oracle starting from the verified state.
    pub fn oracle(&self) -> Oracle {
        Oracle::new(self.keys, self.zcap, &self.bases, self.z_next, self.s_next)
    }

    /// Writes the model for a child process.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut s = format!(
            "{} {} {} {}\n",
            self.keys, self.zcap, self.z_next, self.s_next
        );
        let n = (self.keys + self.z_next.min(self.zcap)) as usize;
        for b in &self.bases[..n] {
            s.push_str(&format!(
                "{} {} {}\n",
                u8::from(b.present),
                b.version,
                b.next
            ));
        }
        std::fs::write(path, s)
    }

    /// Reads what [`CrashModel::save`] wrote.
    pub fn load(path: &Path, loss: Loss) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let bad = || format!("{}: malformed state file", path.display());
        let mut lines = text.lines();
        let head: Vec<u64> = lines
            .next()
            .ok_or_else(bad)?
            .split(' ')
            .map(|s| s.parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        let [keys, zcap, z_next, s_next] = head[..] else {
            return Err(bad());
        };
        let mut m = CrashModel::new(keys as u32, zcap as u32, loss);
        m.z_next = z_next as u32;
        m.s_next = s_next;
        for (i, line) in lines.enumerate() {
            let f: Vec<u64> = line
                .split(' ')
                .map(|s| s.parse().map_err(|_| bad()))
                .collect::<Result<_, _>>()?;
            let [p, version, next] = f[..] else {
                return Err(bad());
            };
            *m.bases.get_mut(i).ok_or_else(bad)? = KeyBase {
                present: p == 1,
                version,
                next,
            };
        }
        Ok(m)
    }

    fn idx(&self, k: Key) -> Option<usize> {
        match k {
            Key::K(i) if i < self.keys => Some(i as usize),
            Key::Z(i) if i < self.zcap => Some((self.keys + i) as usize),
            _ => None,
        }
    }

    fn key_at(&self, idx: usize) -> Key {
        let i = idx as u32;
        if i < self.keys {
            Key::K(i)
        } else {
            Key::Z(i - self.keys)
        }
    }

    /// Verifies the reopened database against the round's journals (checks 1–5 of the module
    /// docs) and, if all hold, makes the state found the next round's initial state.
    pub fn verify_round(
        &mut self,
        db: &Db,
        fs: &dyn FileSystem,
        journals: &[Vec<String>],
        seed: u64,
        context: &str,
    ) -> Result<RoundReport, Box<Anomaly>> {
        let bad = |op: &str, key: String, read: String, detail: String, history: String| {
            Box::new(Anomaly {
                seed,
                context: context.to_string(),
                op: op.to_string(),
                key,
                read,
                detail,
                history,
            })
        };
        let ops = journal::parse(journals)
            .map_err(|e| bad("journal", "-".into(), String::new(), e, String::new()))?;
        // The state on disk, by scan, cross-checked by point reads.
        let scan = scan_all(db).map_err(|e| {
            bad(
                "scan after recovery",
                "-".into(),
                format!("error: {e}"),
                "full scan failed".into(),
                String::new(),
            )
        })?;
        let n = self.bases.len();
        let mut disk: Vec<Option<u64>> = vec![None; n];
        let mut s_present: Vec<u64> = Vec::new();
        for (k, v) in &scan {
            let key = Key::parse(k).ok_or_else(|| {
                bad(
                    "scan after recovery",
                    show(k),
                    show(v),
                    "unknown key".into(),
                    String::new(),
                )
            })?;
            if let Key::S(j) = key {
                if *v != make_value(k, 1) {
                    return Err(bad(
                        "scan after recovery",
                        key.to_string(),
                        show(v),
                        "wrong value".into(),
                        String::new(),
                    ));
                }
                s_present.push(j);
                continue;
            }
            let idx = self.idx(key).ok_or_else(|| {
                bad(
                    "scan after recovery",
                    key.to_string(),
                    show(v),
                    "key outside the key space".into(),
                    String::new(),
                )
            })?;
            match parse_value(v) {
                Some((vk, ver)) if vk == k.as_slice() && *v == make_value(k, ver) => {
                    disk[idx] = Some(ver)
                }
                _ => {
                    return Err(bad(
                        "scan after recovery",
                        key.to_string(),
                        show(v),
                        "value does not belong to the key or is damaged".into(),
                        String::new(),
                    ))
                }
            }
        }
        let z_hi = ops
            .iter()
            .flat_map(|o| o.writes.iter())
            .filter_map(|w| match w.0 {
                Key::Z(z) => Some(z + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0)
            .max(self.z_next)
            .min(self.zcap);
        for idx in (0..self.keys as usize).chain(self.keys as usize..(self.keys + z_hi) as usize) {
            let key = self.key_at(idx);
            let got = db.get(&key.bytes()).map_err(|e| {
                bad(
                    "get after recovery",
                    key.to_string(),
                    format!("error: {e}"),
                    "read failed".into(),
                    String::new(),
                )
            })?;
            let got_ver = got.as_deref().and_then(parse_value).map(|(_, v)| v);
            if got_ver != disk[idx] || got.is_some() != disk[idx].is_some() {
                return Err(bad(
                    "get after recovery",
                    key.to_string(),
                    got.as_deref().map_or("absent".into(), show),
                    format!(
                        "point read disagrees with the scan (version {:?})",
                        disk[idx]
                    ),
                    String::new(),
                ));
            }
        }
        // Entries of the round per key, in version order.
        let mut per_key: HashMap<usize, Vec<Entry>> = HashMap::new();
        let mut s_writes: Vec<(u64, usize)> = Vec::new();
        for (oi, op) in ops.iter().enumerate() {
            for &(k, version, kind) in &op.writes {
                if let Key::S(j) = k {
                    s_writes.push((j, oi));
                } else if let Some(idx) = self.idx(k) {
                    per_key.entry(idx).or_default().push(Entry {
                        version,
                        kind,
                        op: oi,
                    });
                }
            }
        }
        for e in per_key.values_mut() {
            e.sort_by_key(|e| e.version);
        }
        let s_count = s_present.len() as u64;
        // Whether an operation's write to `k` applied, from the state found. A later version
        // implies it only for an acknowledged operation: a failed one may never have reached
        // the log, and a later write to the key may have succeeded after it.
        let applied = |k: Key, version: u64, acked: bool| -> Tri {
            match k {
                Key::S(j) => {
                    if j < s_count {
                        Tri::Yes
                    } else {
                        Tri::No
                    }
                }
                _ => {
                    let idx = self.idx(k).expect("journaled key in space");
                    match disk[idx] {
                        Some(u) if u == version || (u > version && acked) => Tri::Yes,
                        Some(u) if u > version => Tri::Unknown,
                        Some(_) => Tri::No,
                        None => {
                            let later_delete = per_key.get(&idx).is_some_and(|es| {
                                es.iter()
                                    .any(|e| e.kind == Kind::Delete && e.version >= version)
                            });
                            if later_delete {
                                Tri::Unknown
                            } else {
                                Tri::No
                            }
                        }
                    }
                }
            }
        };
        let op_applied: Vec<Vec<Tri>> = ops
            .iter()
            .map(|o| {
                o.writes
                    .iter()
                    .filter(|w| w.2 != Kind::Hidden)
                    .map(|w| applied(w.0, w.1, o.acked.is_some()))
                    .collect()
            })
            .collect();
        // Check 1: which operations are required.
        let durable = |o: &JOp| o.acked.is_some() && (o.sync || o.op.is_durability_point());
        let mut horizon: u128 = 0;
        let mut horizon_op: Option<usize> = None;
        for (oi, o) in ops.iter().enumerate() {
            if (durable(o) || op_applied[oi].contains(&Tri::Yes)) && o.start >= horizon {
                horizon = o.start;
                horizon_op = Some(oi);
            }
        }
        let required: Vec<bool> = ops
            .iter()
            .map(|o| match o.acked {
                None => false,
                Some(_) if self.loss == Loss::ProcessKill => true,
                Some(a) => durable(o) || a < horizon,
            })
            .collect();
        let describe = |oi: usize| {
            let o = &ops[oi];
            format!(
                "{} id {} sync={} issued {}us {}{}",
                o.op.name(),
                o.id,
                o.sync,
                o.start / 1000,
                match (o.acked, o.failed) {
                    (Some(a), _) => format!("acked {}us", a / 1000),
                    (None, true) => "failed".into(),
                    (None, false) => "in flight at the crash".into(),
                },
                if required[oi] { " [required]" } else { "" }
            )
        };
        let why_required = match (self.loss, horizon_op) {
            (Loss::ProcessKill, _) => "every acknowledged write survives a process kill".to_string(),
            (Loss::PowerLoss, Some(h)) => format!(
                "power loss: durability points survive, and so does every write acknowledged before {} was issued",
                describe(h)
            ),
            (Loss::PowerLoss, None) => "power loss: durability points survive".to_string(),
        };
        // Check 2: every key.
        for (idx, &base) in self.bases[..(self.keys + z_hi) as usize].iter().enumerate() {
            let empty = Vec::new();
            let entries = per_key.get(&idx).unwrap_or(&empty);
            let visible = || entries.iter().filter(|e| e.kind != Kind::Hidden);
            let floor = visible()
                .filter(|e| required[e.op])
                .map(|e| e.version)
                .max();
            let base_ok = floor.is_none();
            let mut allowed = visible().filter(|e| floor.is_none_or(|f| e.version >= f));
            let ok = match disk[idx] {
                Some(u) => {
                    allowed.any(|e| e.version == u && e.kind == Kind::Put)
                        || (base_ok && base.present && base.version == u)
                }
                None => allowed.any(|e| e.kind == Kind::Delete) || (base_ok && !base.present),
            };
            if !ok {
                let mut hist = format!(
                    "  initial state of the round: {}\n",
                    if base.present {
                        format!("version {}", base.version)
                    } else {
                        "absent".into()
                    }
                );
                for e in entries {
                    hist.push_str(&format!(
                        "    v{:<6} {:?} by {}\n",
                        e.version,
                        e.kind,
                        describe(e.op)
                    ));
                }
                return Err(bad(
                    "recovery",
                    self.key_at(idx).to_string(),
                    disk[idx].map_or("absent".into(), |v| format!("version {v}")),
                    match floor {
                        Some(f) => {
                            format!("must be at or above required version {f} ({why_required})")
                        }
                        None => "not the initial state nor any version written in the round".into(),
                    },
                    hist,
                ));
            }
        }
        // Check 3: all-or-nothing.
        for (oi, o) in ops.iter().enumerate() {
            let t = &op_applied[oi];
            if t.contains(&Tri::Yes) && t.contains(&Tri::No) {
                let detail: Vec<String> = o
                    .writes
                    .iter()
                    .filter(|w| w.2 != Kind::Hidden)
                    .zip(t)
                    .map(|(w, t)| format!("{}=v{}:{:?}", w.0, w.1, t))
                    .collect();
                return Err(bad(
                    "recovery",
                    o.writes[0].0.to_string(),
                    detail.join(" "),
                    format!("{} half applied", describe(oi)),
                    String::new(),
                ));
            }
        }
        // Check 4: the sequential series.
        for (n, j) in s_present.iter().enumerate() {
            if *j != n as u64 {
                return Err(bad(
                    "recovery",
                    Key::S(n as u64).to_string(),
                    "absent".into(),
                    format!("sequential series has a gap: {} is present", Key::S(*j)),
                    String::new(),
                ));
            }
        }
        let s_started = s_writes
            .iter()
            .map(|w| w.0 + 1)
            .max()
            .unwrap_or(0)
            .max(self.s_next);
        let s_required = s_writes
            .iter()
            .filter(|w| required[w.1])
            .map(|w| w.0 + 1)
            .max()
            .unwrap_or(0)
            .max(self.s_next);
        if s_count < s_required || s_count > s_started {
            let (j, why) = if s_count < s_required {
                let w = s_writes.iter().find(|w| w.0 == s_count && required[w.1]);
                (
                    s_count,
                    format!(
                        "sequential series ends at {s_count} but {s_required} must survive ({}; {why_required})",
                        w.map_or("present before the round".into(), |w| describe(w.1))
                    ),
                )
            } else {
                (
                    s_started,
                    format!("series longer ({s_count}) than ever written ({s_started})"),
                )
            };
            return Err(bad(
                "recovery",
                Key::S(j).to_string(),
                "absent".into(),
                why,
                String::new(),
            ));
        }
        // Check 5: no leftover table files.
        if self.check_leaks && db.wait_for_background_work().is_ok() {
            let live: std::collections::HashSet<u64> = db
                .current_version()
                .levels
                .iter()
                .flatten()
                .map(|f| f.number)
                .collect();
            let names = fs.list(db.path()).unwrap_or_default();
            let leaked: Vec<&String> = names
                .iter()
                .filter(|n| {
                    n.strip_suffix(".sst")
                        .and_then(|s| s.parse::<u64>().ok())
                        .is_some_and(|num| !live.contains(&num))
                })
                .collect();
            if !leaked.is_empty() {
                return Err(bad(
                    "recovery",
                    "-".into(),
                    format!("{leaked:?}"),
                    "table files outside the current version left in the directory after recovery and background work".into(),
                    String::new(),
                ));
            }
        }
        // The found state is the next round's start.
        for (idx, base) in self.bases.iter_mut().enumerate() {
            let top = per_key
                .get(&idx)
                .and_then(|es| es.last())
                .map_or(0, |e| e.version);
            let next = base.next.max(top + 1);
            *base = match disk[idx] {
                Some(u) => KeyBase {
                    present: true,
                    version: u,
                    next,
                },
                None => KeyBase {
                    present: false,
                    version: next - 1,
                    next,
                },
            };
        }
        self.z_next = self.z_next.max(z_hi);
        self.s_next = s_count;
        let mut per_op: HashMap<Op, u64> = HashMap::new();
        for o in &ops {
            *per_op.entry(o.op).or_default() += 1;
        }
        Ok(RoundReport {
            ops: ops.len() as u64,
            acked: ops.iter().filter(|o| o.acked.is_some()).count() as u64,
            failed: ops.iter().filter(|o| o.failed).count() as u64,
            keys: (self.keys + z_hi) as u64 + s_count,
            per_op: per_op.into_iter().collect(),
        })
    }
}

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
    Anomaly {
        seed,
        context,
        op: op.into(),
        key: "-".into(),
        read,
        detail,
        history: String::new(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use sluice::fs::MemFs;

    fn db_holding(fs: &MemFs, puts: &[(Key, u64)]) -> Db {
        let db = Db::open("/db", stress_options(1, Arc::new(fs.clone()))).unwrap();
        for &(k, v) in puts {
            db.put(&k.bytes(), &make_value(&k.bytes(), v)).unwrap();
        }
        db
    }

    fn lines(s: &[&str]) -> Vec<Vec<String>> {
        vec![s.iter().map(|l| format!("{l}\n")).collect()]
    }

    fn verify(loss: Loss, db: &Db, fs: &MemFs, j: &[&str]) -> Result<RoundReport, Box<Anomaly>> {
        CrashModel::new(10, 10, loss).verify_round(db, fs, &lines(j), 1, "test")
    }

    #[test]
    fn a_lost_acknowledged_write_or_half_batch_is_an_anomaly() {
        let fs = MemFs::new();
        let db = db_holding(&fs, &[(Key::K(1), 1)]);
        let k1 = ["S 1 10 put 0 k00000001=1P", "A 1 20"];
        let ok = verify(
            Loss::ProcessKill,
            &db,
            &fs,
            &[&k1[..], &["S 2 30 put 0 k00000003=1P"]].concat(),
        );
        assert!(ok.is_ok(), "an unacknowledged write may be lost: {ok:?}");
        let lost = [&k1[..], &["S 2 30 put 0 k00000003=1P", "A 2 40"]].concat();
        let e = verify(Loss::ProcessKill, &db, &fs, &lost).unwrap_err();
        assert!(
            e.detail.contains("required version 1") && e.key == "k00000003",
            "{e}"
        );
        let half = ["S 1 10 batch 0 k00000001=1P k00000002=1P"];
        let e = verify(Loss::ProcessKill, &db, &fs, &half).unwrap_err();
        assert!(e.detail.contains("half applied"), "{e}");
        let hidden = ["S 1 10 ingest_overlap 0 k00000001=1H k00000001=2P"];
        let e = verify(Loss::ProcessKill, &db, &fs, &hidden).unwrap_err();
        assert!(e.detail.contains("nor any version"), "{e}");
    }

    #[test]
    fn power_loss_allows_losing_unsynced_writes_but_not_a_gap_before_a_survivor() {
        let fs = MemFs::new();
        let db = db_holding(&fs, &[(Key::K(2), 1)]);
        let k2 = ["S 2 5 put 0 k00000002=1P", "A 2 8"];
        let unsynced = [&k2[..], &["S 1 10 put 0 k00000001=1P", "A 1 20"]].concat();
        assert!(verify(Loss::PowerLoss, &db, &fs, &unsynced).is_ok());
        assert!(verify(Loss::ProcessKill, &db, &fs, &unsynced).is_err());
        let synced = [&k2[..], &["S 1 10 put 1 k00000001=1P", "A 1 20"]].concat();
        assert!(verify(Loss::PowerLoss, &db, &fs, &synced).is_err());
        // k2's write survived and was issued after k1's was acknowledged: k1 must survive too.
        let gap = [
            "S 1 10 put 0 k00000001=1P",
            "A 1 20",
            "S 2 30 put 0 k00000002=1P",
        ];
        let e = verify(Loss::PowerLoss, &db, &fs, &gap).unwrap_err();
        assert!(e.detail.contains("acknowledged before put"), "{e}");
    }

    #[test]
    fn the_sequential_series_must_be_contiguous() {
        let fs = MemFs::new();
        let db = db_holding(&fs, &[]);
        for k in [Key::S(0), Key::S(2)] {
            db.put(&k.bytes(), &make_value(&k.bytes(), 1)).unwrap();
        }
        let e = verify(Loss::PowerLoss, &db, &fs, &[]).unwrap_err();
        assert!(e.detail.contains("gap"), "{e}");
    }

    #[test]
    fn the_model_survives_a_save_and_load() {
        let mut m = CrashModel::new(3, 4, Loss::ProcessKill);
        m.bases[1] = KeyBase {
            present: true,
            version: 7,
            next: 9,
        };
        m.z_next = 2;
        m.s_next = 11;
        let dir = tempfile::tempdir().unwrap();
        m.save(&dir.path().join("s")).unwrap();
        let l = CrashModel::load(&dir.path().join("s"), Loss::ProcessKill).unwrap();
        assert_eq!(l.bases, m.bases);
        assert_eq!((l.z_next, l.s_next), (2, 11));
    }
}
