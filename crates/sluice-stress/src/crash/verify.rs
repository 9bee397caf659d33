//! Verifying a round: checks 1–5 of the crash module, as numbered steps of
//! [`CrashModel::verify_round`], one function each.

use std::collections::{HashMap, HashSet};

use sluice::fs::FileSystem;
use sluice::Db;

use crate::journal::{self, JOp};
use crate::keys::{make_value, parse_value, show, Key};
use crate::oracle::{KeyBase, Kind};
use crate::report::{Anomaly, Op};
use crate::stress::scan_all;

use super::{CrashModel, Loss, RoundReport};

/// Whether an operation's write to a key applied, as far as the state found tells.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tri {
    Yes,
    No,
    Unknown,
}

/// One write of the round to a key.
struct Entry {
    version: u64,
    kind: Kind,
    /// The operation, by index in the round.
    op: usize,
}

/// Per key (`k` then `z`, by index): the round's writes to it, in version order.
type PerKey = HashMap<usize, Vec<Entry>>;

/// Makes the anomalies of one round.
struct Bad<'a> {
    seed: u64,
    context: &'a str,
}

impl Bad<'_> {
    fn at(
        &self,
        op: &str,
        key: String,
        read: String,
        detail: String,
        history: String,
    ) -> Box<Anomaly> {
        Box::new(Anomaly {
            seed: self.seed,
            context: self.context.to_string(),
            op: op.to_string(),
            key,
            read,
            detail,
            history,
        })
    }
}

/// The state found on disk after the crash.
struct Found {
    /// Per key (`k` then `z`): the version on disk, `None` when absent.
    versions: Vec<Option<u64>>,
    /// The sequential keys present, in key order.
    s_present: Vec<u64>,
}

impl Found {
    /// Length of the sequential series found (contiguous once step 6 passed).
    fn s_count(&self) -> u64 {
        self.s_present.len() as u64
    }
}

/// The round's operations judged against the state found.
struct Round {
    ops: Vec<JOp>,
    /// `z` keys below this may hold data (written in this round or an earlier one).
    z_hi: u32,
    /// Per key: the round's writes to it, in version order.
    per_key: PerKey,
    /// Every sequential write: (index in the series, operation).
    s_writes: Vec<(u64, usize)>,
    /// Per operation: whether each of its visible writes applied.
    applied: Vec<Vec<Tri>>,
    /// Per operation: it must have survived (check 1).
    required: Vec<bool>,
    /// Why required operations are required, for reports.
    why_required: String,
}

impl CrashModel {
    /// Verifies the reopened database against the round's journals (checks 1–5 of the module
    /// docs) and, if all hold, makes the state found the next round's initial state. Steps:
    /// 1. the round's operations, from the journals;
    /// 2. the state on disk: a full scan, cross-checked by a point read of every key;
    /// 3. what the round wrote to each key, what of it applied, and which operations must
    ///    have survived (check 1);
    /// 4. check 2: every key holds its initial state or a version the round allows;
    /// 5. check 3: multi-key operations are all-or-nothing;
    /// 6. check 4: the sequential series is contiguous and reaches every required write;
    /// 7. check 5: no table file outside the current version is left;
    /// 8. the state found becomes the next round's start.
    pub fn verify_round(
        &mut self,
        db: &Db,
        fs: &dyn FileSystem,
        journals: &[Vec<String>],
        seed: u64,
        context: &str,
    ) -> Result<RoundReport, Box<Anomaly>> {
        let bad = Bad { seed, context };
        let ops = journal::parse(journals)
            .map_err(|e| bad.at("journal", "-".into(), String::new(), e, String::new()))?;
        let z_hi = self.z_written(&ops);
        let found = self.read_found(db, z_hi, &bad)?;
        let round = self.judge(ops, z_hi, &found);
        self.check_keys(&round, &found, &bad)?;
        round.check_all_or_nothing(&bad)?;
        self.check_sequential(&round, &found, &bad)?;
        self.check_no_leftover_tables(db, fs, &bad)?;
        Ok(self.carry_forward(&round, &found))
    }

    /// The `z` keys below the returned one may hold data: those written before the round, and
    /// those the round's operations name.
    fn z_written(&self, ops: &[JOp]) -> u32 {
        ops.iter()
            .flat_map(|o| o.writes.iter())
            .filter_map(|w| match w.0 {
                Key::Z(z) => Some(z + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0)
            .max(self.z_next)
            .min(self.zcap)
    }

    /// Step 2: the state on disk, by a full scan (every value must name its key and be
    /// intact), cross-checked by a point read of every key that may hold data.
    fn read_found(&self, db: &Db, z_hi: u32, bad: &Bad<'_>) -> Result<Found, Box<Anomaly>> {
        let scan = scan_all(db).map_err(|e| {
            bad.at(
                "scan after recovery",
                "-".into(),
                format!("error: {e}"),
                "full scan failed".into(),
                String::new(),
            )
        })?;
        let mut versions: Vec<Option<u64>> = vec![None; self.bases.len()];
        let mut s_present: Vec<u64> = Vec::new();
        for (k, v) in &scan {
            let key = Key::parse(k).ok_or_else(|| {
                bad.at(
                    "scan after recovery",
                    show(k),
                    show(v),
                    "unknown key".into(),
                    String::new(),
                )
            })?;
            if let Key::S(j) = key {
                if *v != make_value(k, 1) {
                    return Err(bad.at(
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
                bad.at(
                    "scan after recovery",
                    key.to_string(),
                    show(v),
                    "key outside the key space".into(),
                    String::new(),
                )
            })?;
            match parse_value(v) {
                Some((vk, ver)) if vk == k.as_slice() && *v == make_value(k, ver) => {
                    versions[idx] = Some(ver)
                }
                _ => {
                    return Err(bad.at(
                        "scan after recovery",
                        key.to_string(),
                        show(v),
                        "value does not belong to the key or is damaged".into(),
                        String::new(),
                    ))
                }
            }
        }
        for idx in (0..self.keys as usize).chain(self.keys as usize..(self.keys + z_hi) as usize) {
            let key = self.key_at(idx);
            let got = db.get(&key.bytes()).map_err(|e| {
                bad.at(
                    "get after recovery",
                    key.to_string(),
                    format!("error: {e}"),
                    "read failed".into(),
                    String::new(),
                )
            })?;
            let got_ver = got.as_deref().and_then(parse_value).map(|(_, v)| v);
            if got_ver != versions[idx] || got.is_some() != versions[idx].is_some() {
                return Err(bad.at(
                    "get after recovery",
                    key.to_string(),
                    got.as_deref().map_or("absent".into(), show),
                    format!(
                        "point read disagrees with the scan (version {:?})",
                        versions[idx]
                    ),
                    String::new(),
                ));
            }
        }
        Ok(Found {
            versions,
            s_present,
        })
    }

    /// Step 3: the round's writes per key and to the sequential series, whether each applied,
    /// and which operations are required (check 1).
    fn judge(&self, ops: Vec<JOp>, z_hi: u32, found: &Found) -> Round {
        let (per_key, s_writes) = self.writes_per_key(&ops);
        let applied: Vec<Vec<Tri>> = ops
            .iter()
            .map(|o| {
                o.writes
                    .iter()
                    .filter(|w| w.2 != Kind::Hidden)
                    .map(|w| self.applied(w.0, w.1, o.acked.is_some(), found, &per_key))
                    .collect()
            })
            .collect();
        let (required, horizon_op) = self.required(&ops, &applied);
        let mut round = Round {
            ops,
            z_hi,
            per_key,
            s_writes,
            applied,
            required,
            why_required: String::new(),
        };
        round.why_required = match (self.loss, horizon_op) {
            (Loss::ProcessKill, _) => {
                "every acknowledged write survives a process kill".to_string()
            }
            (Loss::PowerLoss, Some(h)) => format!(
                "power loss: durability points survive, and so does every write acknowledged before {} was issued",
                round.describe(h)
            ),
            (Loss::PowerLoss, None) => "power loss: durability points survive".to_string(),
        };
        round
    }

    /// Step 3a: the round's writes per key, in version order, and its sequential writes.
    fn writes_per_key(&self, ops: &[JOp]) -> (PerKey, Vec<(u64, usize)>) {
        let mut per_key = PerKey::new();
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
        (per_key, s_writes)
    }

    /// Step 3b: whether an operation's write of `version` to `k` applied, from the state
    /// found. A later version implies it only for an acknowledged operation: a failed one may
    /// never have reached the log, and a later write to the key may have succeeded after it.
    fn applied(&self, k: Key, version: u64, acked: bool, found: &Found, per_key: &PerKey) -> Tri {
        if let Key::S(j) = k {
            return if j < found.s_count() {
                Tri::Yes
            } else {
                Tri::No
            };
        }
        let idx = self.idx(k).expect("journaled key in space");
        match found.versions[idx] {
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

    /// Step 3c (check 1): which operations are required, and the operation whose survival set
    /// the power-loss horizon (every operation acknowledged before it was issued is required).
    fn required(&self, ops: &[JOp], applied: &[Vec<Tri>]) -> (Vec<bool>, Option<usize>) {
        let durable = |o: &JOp| o.acked.is_some() && (o.sync || o.op.is_durability_point());
        let mut horizon: u128 = 0;
        let mut horizon_op: Option<usize> = None;
        for (oi, o) in ops.iter().enumerate() {
            if (durable(o) || applied[oi].contains(&Tri::Yes)) && o.start >= horizon {
                horizon = o.start;
                horizon_op = Some(oi);
            }
        }
        let required = ops
            .iter()
            .map(|o| match o.acked {
                None => false,
                Some(_) if self.loss == Loss::ProcessKill => true,
                Some(a) => durable(o) || a < horizon,
            })
            .collect();
        (required, horizon_op)
    }

    /// Step 4 (check 2): every key holds the round's initial state (only when no required
    /// operation wrote it) or a version at or above the last required one, among those started.
    fn check_keys(&self, round: &Round, found: &Found, bad: &Bad<'_>) -> Result<(), Box<Anomaly>> {
        let bases = &self.bases[..(self.keys + round.z_hi) as usize];
        for (idx, &base) in bases.iter().enumerate() {
            let empty = Vec::new();
            let entries = round.per_key.get(&idx).unwrap_or(&empty);
            let visible = || entries.iter().filter(|e| e.kind != Kind::Hidden);
            let floor = visible()
                .filter(|e| round.required[e.op])
                .map(|e| e.version)
                .max();
            let base_ok = floor.is_none();
            let mut allowed = visible().filter(|e| floor.is_none_or(|f| e.version >= f));
            let ok = match found.versions[idx] {
                Some(u) => {
                    allowed.any(|e| e.version == u && e.kind == Kind::Put)
                        || (base_ok && base.present && base.version == u)
                }
                None => allowed.any(|e| e.kind == Kind::Delete) || (base_ok && !base.present),
            };
            if ok {
                continue;
            }
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
                    round.describe(e.op)
                ));
            }
            return Err(bad.at(
                "recovery",
                self.key_at(idx).to_string(),
                found.versions[idx].map_or("absent".into(), |v| format!("version {v}")),
                match floor {
                    Some(f) => format!(
                        "must be at or above required version {f} ({})",
                        round.why_required
                    ),
                    None => "not the initial state nor any version written in the round".into(),
                },
                hist,
            ));
        }
        Ok(())
    }

    /// Step 6 (check 4): the sequential series is contiguous from 0, reaches every required
    /// write, and is no longer than ever written.
    fn check_sequential(
        &self,
        round: &Round,
        found: &Found,
        bad: &Bad<'_>,
    ) -> Result<(), Box<Anomaly>> {
        for (n, j) in found.s_present.iter().enumerate() {
            if *j != n as u64 {
                return Err(bad.at(
                    "recovery",
                    Key::S(n as u64).to_string(),
                    "absent".into(),
                    format!("sequential series has a gap: {} is present", Key::S(*j)),
                    String::new(),
                ));
            }
        }
        let s_count = found.s_count();
        let s_started = round
            .s_writes
            .iter()
            .map(|w| w.0 + 1)
            .max()
            .unwrap_or(0)
            .max(self.s_next);
        let s_required = round
            .s_writes
            .iter()
            .filter(|w| round.required[w.1])
            .map(|w| w.0 + 1)
            .max()
            .unwrap_or(0)
            .max(self.s_next);
        if s_count >= s_required && s_count <= s_started {
            return Ok(());
        }
        let (j, why) = if s_count < s_required {
            let w = round
                .s_writes
                .iter()
                .find(|w| w.0 == s_count && round.required[w.1]);
            (
                s_count,
                format!(
                    "sequential series ends at {s_count} but {s_required} must survive ({}; {})",
                    w.map_or("present before the round".into(), |w| round.describe(w.1)),
                    round.why_required
                ),
            )
        } else {
            (
                s_started,
                format!("series longer ({s_count}) than ever written ({s_started})"),
            )
        };
        Err(bad.at(
            "recovery",
            Key::S(j).to_string(),
            "absent".into(),
            why,
            String::new(),
        ))
    }

    /// Step 7 (check 5): once background work settles, no table file outside the current
    /// version is left in the directory.
    fn check_no_leftover_tables(
        &self,
        db: &Db,
        fs: &dyn FileSystem,
        bad: &Bad<'_>,
    ) -> Result<(), Box<Anomaly>> {
        if !self.check_leaks || db.wait_for_background_work().is_err() {
            return Ok(());
        }
        let live: HashSet<u64> = db
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
        if leaked.is_empty() {
            return Ok(());
        }
        Err(bad.at(
            "recovery",
            "-".into(),
            format!("{leaked:?}"),
            "table files outside the current version left in the directory after recovery and background work".into(),
            String::new(),
        ))
    }

    /// Step 8: the state found is the next round's start; the next free version of every key
    /// carries over, so versions name writes across rounds.
    fn carry_forward(&mut self, round: &Round, found: &Found) -> RoundReport {
        for (idx, base) in self.bases.iter_mut().enumerate() {
            let top = round
                .per_key
                .get(&idx)
                .and_then(|es| es.last())
                .map_or(0, |e| e.version);
            let next = base.next.max(top + 1);
            *base = match found.versions[idx] {
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
        self.z_next = self.z_next.max(round.z_hi);
        self.s_next = found.s_count();
        let mut per_op: HashMap<Op, u64> = HashMap::new();
        for o in &round.ops {
            *per_op.entry(o.op).or_default() += 1;
        }
        RoundReport {
            ops: round.ops.len() as u64,
            acked: round.ops.iter().filter(|o| o.acked.is_some()).count() as u64,
            failed: round.ops.iter().filter(|o| o.failed).count() as u64,
            keys: (self.keys + round.z_hi) as u64 + found.s_count(),
            per_op: per_op.into_iter().collect(),
        }
    }
}

impl Round {
    /// An operation as a report names it: kind, id, sync, times, outcome, required.
    fn describe(&self, oi: usize) -> String {
        let o = &self.ops[oi];
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
            if self.required[oi] { " [required]" } else { "" }
        )
    }

    /// Step 5 (check 3): a batch, range deletion or ingest applied all of its writes or none.
    fn check_all_or_nothing(&self, bad: &Bad<'_>) -> Result<(), Box<Anomaly>> {
        for (oi, o) in self.ops.iter().enumerate() {
            let t = &self.applied[oi];
            if t.contains(&Tri::Yes) && t.contains(&Tri::No) {
                let detail: Vec<String> = o
                    .writes
                    .iter()
                    .filter(|w| w.2 != Kind::Hidden)
                    .zip(t)
                    .map(|(w, t)| format!("{}=v{}:{:?}", w.0, w.1, t))
                    .collect();
                return Err(bad.at(
                    "recovery",
                    o.writes[0].0.to_string(),
                    detail.join(" "),
                    format!("{} half applied", self.describe(oi)),
                    String::new(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sluice::fs::MemFs;
    use sluice::Db;

    use super::super::{CrashModel, Loss, RoundReport};
    use crate::keys::{make_value, Key};
    use crate::report::Anomaly;
    use crate::storage::stress_options;

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
}
