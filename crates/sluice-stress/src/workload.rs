//! The worker threads: a random mix of writes, reads, snapshots, ingests, flushes and
//! compactions on one shared `Db`, every read checked against the [`Oracle`] as it happens.
//!
//! Each worker owns a seeded `StdRng` (seed, phase, thread), so a seed replays every thread's
//! operation sequence; only the interleaving differs between runs.
//!
//! Checks made here (the oracle's bounds are described in [`crate::oracle`]):
//! 1. point reads, snapshot reads and iterator entries: value within the key's bounds;
//! 2. monotonic reads: never a version older than this thread saw before for the same key;
//! 3. iterators: keys inside the bounds, strictly ordered in the direction of travel, keys
//!    skipped inside the scanned interval allowed to be absent, and a change of direction
//!    revisiting exactly the entries already returned;
//! 4. snapshots: a later re-read (point reads and an iterator through the snapshot) returns
//!    exactly what the first read returned;
//! 5. errors only while faults are injected; the sequential series always readable below
//!    what was acknowledged.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{Db, Error, IngestOptions, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use crate::journal::Journal;
use crate::keys::{make_value, show, Key};
use crate::oracle::{Kind, Oracle, Status};
use crate::report::{Anomaly, Op, Stats};
use crate::storage::{sst_options, Storage};

/// What all workers of one phase (or crash round) share.
#[derive(Debug)]
pub struct Ctx {
    /// Seed of the run.
    pub seed: u64,
    /// The database.
    pub db: Arc<Db>,
    /// Expected state.
    pub oracle: Arc<Oracle>,
    /// Counters.
    pub stats: Arc<Stats>,
    /// Set to stop every worker (deadline, anomaly, or the fault driver).
    pub stop: Arc<AtomicBool>,
    /// Anomalies found.
    pub anomalies: Arc<Mutex<Vec<Anomaly>>>,
    /// Scratch space for external files.
    pub storage: Arc<Storage>,
    /// While set, operations may fail (faults are injected).
    pub faults_on: Arc<AtomicBool>,
    /// Workers stop at this instant.
    pub deadline: Instant,
    /// Where we are (phase or round), for reports.
    pub context: String,
    /// Operations left out of the mix (replaced by point reads), to bisect a failure.
    pub disabled: Vec<Op>,
}

impl Ctx {
    /// Records an anomaly and stops every worker (the caller prints them).
    pub fn anomaly(&self, a: Anomaly) {
        self.anomalies.lock().push(a);
        self.stop.store(true, Ordering::SeqCst);
    }

    fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed) && Instant::now() < self.deadline
    }
}

/// Operation weights (per mille-ish) of the random mix.
const MIX: [(Op, u32); 14] = [
    (Op::Put, 240),
    (Op::Delete, 60),
    (Op::DeleteRange, 20),
    (Op::Batch, 80),
    (Op::Get, 220),
    (Op::Iter, 100),
    (Op::Snapshot, 30),
    (Op::SnapshotReread, 30),
    (Op::Ingest, 15),
    (Op::IngestOverlap, 10),
    (Op::IngestSmall, 10),
    (Op::IngestBehind, 3),
    (Op::Flush, 4),
    (Op::Compact, 2),
];

/// A snapshot held across later operations.
struct Held {
    snap: Snapshot,
    lo: u32,
    hi: u32,
    results: Vec<Option<Vec<u8>>>,
}

/// One worker thread.
pub struct Worker {
    id: usize,
    ctx: Arc<Ctx>,
    rng: StdRng,
    journal: Journal,
    /// Highest version this thread has read per key (monotonic reads).
    seen: HashMap<usize, u64>,
    held: Vec<Held>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("id", &self.id).finish()
    }
}

/// Seeds the RNG of thread `thread` in phase `phase` of run `seed`.
pub fn thread_seed(seed: u64, phase: u64, thread: usize) -> u64 {
    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ phase.wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
        ^ (thread as u64).wrapping_mul(0x1656_67b1_9e37_79f9)
}

fn sync_opts(sync: bool) -> WriteOptions {
    WriteOptions {
        sync,
        disable_wal: false,
    }
}

impl Worker {
    /// A worker with its own RNG seed and journal.
    pub fn new(id: usize, ctx: Arc<Ctx>, rng_seed: u64, journal: Journal) -> Self {
        Worker {
            id,
            ctx,
            rng: StdRng::seed_from_u64(rng_seed),
            journal,
            seen: HashMap::new(),
            held: Vec::new(),
        }
    }

    /// Runs the random mix until the deadline or a stop.
    pub fn run(mut self) {
        let total: u32 = MIX.iter().map(|m| m.1).sum();
        while self.ctx.running() {
            let mut r = self.rng.gen_range(0..total);
            let mut op = Op::Get;
            for (o, w) in MIX {
                if r < w {
                    op = o;
                    break;
                }
                r -= w;
            }
            if self.ctx.disabled.contains(&op) {
                op = Op::Get;
            }
            self.step(op);
            self.ctx.stats.count(op);
        }
    }

    fn step(&mut self, op: Op) {
        match op {
            Op::Put => self.single_write(Kind::Put),
            Op::Delete => self.single_write(Kind::Delete),
            Op::DeleteRange => self.delete_range(),
            Op::Batch => self.batch(),
            Op::Get => self.gets(),
            Op::Iter => self.iterate(),
            Op::Snapshot => self.take_snapshot(),
            Op::SnapshotReread => self.reread_snapshot(),
            Op::Ingest | Op::IngestOverlap | Op::IngestSmall => self.ingest(op),
            Op::IngestBehind => self.ingest_behind(),
            Op::Flush => self.flush_or_compact(false),
            Op::Compact => self.flush_or_compact(true),
            _ => self.gets(),
        }
    }

    // ------------------------------------------------------------------ helpers

    fn keys(&self) -> u32 {
        self.ctx.oracle.keys()
    }

    /// A key: uniform, or (30%) from the hot first 5% of the space.
    fn pick(&mut self) -> u32 {
        let n = self.keys();
        if self.rng.gen_bool(0.3) {
            self.rng.gen_range(0..(n / 20).max(1))
        } else {
            self.rng.gen_range(0..n)
        }
    }

    fn tolerate_errors(&self) -> bool {
        self.ctx.faults_on.load(Ordering::SeqCst)
    }

    fn report(&self, op: &str, key: Option<Key>, read: String, detail: String) {
        let history = key
            .and_then(|k| self.ctx.oracle.idx(k))
            .map_or(String::new(), |i| self.ctx.oracle.history(i));
        self.ctx.anomaly(Anomaly {
            seed: self.ctx.seed,
            context: format!("{}, thread {}", self.ctx.context, self.id),
            op: op.to_string(),
            key: key.map_or("-".into(), |k| k.to_string()),
            read,
            detail,
            history,
        });
    }

    /// Counts an error; an anomaly unless faults are being injected.
    fn on_error(&self, op: &str, key: Option<Key>, e: &Error) {
        self.ctx.stats.errors.fetch_add(1, Ordering::Relaxed);
        if !self.tolerate_errors() {
            self.report(
                op,
                key,
                format!("error: {e}"),
                "operation failed although no fault was injected".into(),
            );
        }
    }

    /// Checks one read of `key` (bounds noted around it); `monotonic` also applies and updates
    /// this thread's per-key floor.
    fn verify(
        &mut self,
        op: &str,
        key: Key,
        lower: u64,
        upper: u64,
        got: Option<&[u8]>,
        monotonic: bool,
    ) -> bool {
        let Some(idx) = self.ctx.oracle.idx(key) else {
            self.report(
                op,
                Some(key),
                got.map_or("absent".into(), show),
                "read returned a key outside the key space".into(),
            );
            return false;
        };
        let seen = if monotonic {
            self.seen.get(&idx).copied().unwrap_or(0)
        } else {
            0
        };
        match self.ctx.oracle.check(idx, lower, upper, seen, got) {
            Ok(v) => {
                if monotonic {
                    let e = self.seen.entry(idx).or_insert(0);
                    *e = (*e).max(v);
                }
                true
            }
            Err(why) => {
                self.report(op, Some(key), got.map_or("absent".into(), show), why);
                false
            }
        }
    }

    fn begin(&mut self, op: Op, writes: &[(Key, Kind)]) -> Vec<(Key, u64, Kind)> {
        let o = &self.ctx.oracle;
        writes
            .iter()
            .map(|&(k, kind)| {
                let idx = o.idx(k).expect("key in space");
                (k, o.begin(idx, kind, op.name(), self.id), kind)
            })
            .collect()
    }

    /// Records the outcome of a write in the oracle and the journal; false on error.
    fn finish(
        &mut self,
        op: Op,
        jid: u64,
        assigned: &[(Key, u64, Kind)],
        r: &sluice::Result<()>,
        rejected: bool,
    ) -> bool {
        let status = match (r, rejected) {
            (Ok(()), _) => Status::Applied,
            (Err(_), true) => Status::NotApplied,
            (Err(_), false) => Status::Ambiguous,
        };
        for &(k, v, _) in assigned {
            let idx = self.ctx.oracle.idx(k).expect("key in space");
            self.ctx.oracle.finish(idx, v, status);
        }
        match r {
            Ok(()) => {
                self.journal.ack(jid);
                true
            }
            Err(e) => {
                self.journal.fail(jid);
                if rejected {
                    self.ctx.stats.rejected.fetch_add(1, Ordering::Relaxed);
                } else {
                    self.on_error(op.name(), assigned.first().map(|w| w.0), e);
                }
                false
            }
        }
    }

    // ------------------------------------------------------------------ writes

    fn single_write(&mut self, kind: Kind) {
        let i = self.pick();
        let sync = self.rng.gen_bool(0.1);
        let op = if kind == Kind::Put {
            Op::Put
        } else {
            Op::Delete
        };
        let ctx = Arc::clone(&self.ctx);
        let _locks = ctx.oracle.lock_keys(&[i]);
        let a = self.begin(op, &[(Key::K(i), kind)]);
        let key = Key::K(i).bytes();
        let jid = self.journal.start(op, sync, &a);
        let r = match (kind, sync) {
            (Kind::Put, false) => ctx.db.put(&key, &make_value(&key, a[0].1)),
            (_, false) => ctx.db.delete(&key),
            (_, true) => {
                let mut b = WriteBatch::new();
                if kind == Kind::Put {
                    b.put(&key, &make_value(&key, a[0].1));
                } else {
                    b.delete(&key);
                }
                ctx.db.write(b, sync_opts(true))
            }
        };
        self.finish(op, jid, &a, &r, false);
    }

    /// Deletes `[a, b)`; the bounds are sometimes not keys themselves (`k…~` sorts between two
    /// keys), so that range-deletion ends fall between a file's keys.
    fn delete_range(&mut self) {
        let n = self.keys();
        let a = self.rng.gen_range(0..n);
        let b = (a + self.rng.gen_range(1..=40)).min(n);
        let start = if a > 0 && self.rng.gen_bool(0.4) {
            let mut s = Key::K(a - 1).bytes();
            s.push(b'~');
            s
        } else {
            Key::K(a).bytes()
        };
        let end = if self.rng.gen_bool(0.4) {
            let mut e = Key::K(b - 1).bytes();
            e.push(b'~');
            e
        } else {
            Key::K(b).bytes()
        };
        let range: Vec<u32> = (a..b).collect();
        let sync = self.rng.gen_bool(0.1);
        let use_batch = sync || self.rng.gen_bool(0.3);
        let ctx = Arc::clone(&self.ctx);
        let _locks = ctx.oracle.lock_keys(&range);
        let writes: Vec<(Key, Kind)> = range.iter().map(|&i| (Key::K(i), Kind::Delete)).collect();
        let a = self.begin(Op::DeleteRange, &writes);
        let jid = self.journal.start(Op::DeleteRange, sync, &a);
        let r = if use_batch {
            let mut b = WriteBatch::new();
            b.delete_range(&start, &end);
            ctx.db.write(b, sync_opts(sync))
        } else {
            ctx.db.delete_range(&start, &end)
        };
        self.finish(Op::DeleteRange, jid, &a, &r, false);
    }

    fn batch(&mut self) {
        let mut keys: Vec<u32> = (0..self.rng.gen_range(2..=8))
            .map(|_| self.pick())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let sync = self.rng.gen_bool(0.15);
        let writes: Vec<(Key, Kind)> = keys
            .iter()
            .map(|&i| {
                let kind = if self.rng.gen_bool(0.8) {
                    Kind::Put
                } else {
                    Kind::Delete
                };
                (Key::K(i), kind)
            })
            .collect();
        let ctx = Arc::clone(&self.ctx);
        let _locks = ctx.oracle.lock_keys(&keys);
        let a = self.begin(Op::Batch, &writes);
        let mut b = WriteBatch::new();
        for &(k, v, kind) in &a {
            let key = k.bytes();
            if kind == Kind::Put {
                b.put(&key, &make_value(&key, v));
            } else {
                b.delete(&key);
            }
        }
        let jid = self.journal.start(Op::Batch, sync, &a);
        let r = ctx.db.write(b, sync_opts(sync));
        self.finish(Op::Batch, jid, &a, &r, false);
    }

    fn flush_or_compact(&mut self, compact: bool) {
        let op = if compact { Op::Compact } else { Op::Flush };
        let jid = self.journal.start(op, false, &[]);
        let r = if compact && self.rng.gen_bool(0.5) {
            let n = self.keys();
            let a = self.rng.gen_range(0..n);
            let b = (a + self.rng.gen_range(1..=n / 4 + 1)).min(n - 1);
            self.ctx
                .db
                .compact_range(Some(&Key::K(a).bytes()), Some(&Key::K(b).bytes()))
        } else if compact {
            self.ctx.db.compact_range(None, None)
        } else {
            self.ctx.db.flush()
        };
        self.finish(op, jid, &[], &r, false);
    }

    // ------------------------------------------------------------------ ingests

    /// Builds the files of an ingest over a random range: disjoint chunks (`Ingest`),
    /// overlapping random subsets (`IngestOverlap`), or either with some tiny files applied as
    /// batches (`IngestSmall`). A key in several overlapping files is visible only from the
    /// last one (later files are newer); its earlier copies are `Hidden`.
    fn ingest_plan(&mut self, op: Op) -> (Vec<Vec<(u32, bool)>>, bool) {
        let n = self.keys();
        let len = self.rng.gen_range(4..=80).min(n);
        let a = self.rng.gen_range(0..=n - len);
        let overlap = op == Op::IngestOverlap || (op == Op::IngestSmall && self.rng.gen_bool(0.4));
        let nfiles = match op {
            Op::Ingest => self.rng.gen_range(1..=3),
            _ => self.rng.gen_range(2..=4),
        };
        let mut files: Vec<Vec<(u32, bool)>> = vec![Vec::new(); nfiles];
        if overlap {
            for f in files.iter_mut() {
                for i in a..a + len {
                    if self.rng.gen_bool(0.45) {
                        f.push((i, self.rng.gen_bool(0.9)));
                    }
                }
            }
        } else {
            let mut cuts: Vec<u32> = (1..nfiles)
                .map(|_| self.rng.gen_range(a..a + len))
                .collect();
            cuts.sort_unstable();
            for i in a..a + len {
                if self.rng.gen_bool(0.7) {
                    let f = cuts.iter().filter(|&&c| c <= i).count();
                    files[f].push((i, self.rng.gen_bool(0.9)));
                }
            }
        }
        if op == Op::IngestSmall {
            // One or two tiny files (1–2 keys) anywhere in the list, the rest as they are.
            for _ in 0..self.rng.gen_range(1..=2) {
                let at = self.rng.gen_range(0..files.len());
                let keep = self.rng.gen_range(1..=2).min(files[at].len());
                files[at].truncate(keep);
            }
        }
        files.retain(|f| !f.is_empty());
        if !overlap && self.rng.gen_bool(0.5) {
            // Order of the file list should not matter for disjoint files.
            files.reverse();
        }
        (files, overlap)
    }

    fn ingest(&mut self, op: Op) {
        let (files, overlap) = self.ingest_plan(op);
        if files.is_empty() {
            return;
        }
        let mut writes = Vec::new();
        let mut puts = Vec::new();
        for (fi, f) in files.iter().enumerate() {
            for &(i, put) in f {
                let later = files[fi + 1..].iter().any(|g| g.iter().any(|e| e.0 == i));
                let kind = match (later, put) {
                    (true, _) => Kind::Hidden,
                    (false, true) => Kind::Put,
                    (false, false) => Kind::Delete,
                };
                writes.push((Key::K(i), kind));
                puts.push(put);
            }
        }
        let lo = writes
            .iter()
            .map(|w| k_index(w.0))
            .min()
            .expect("non-empty");
        let hi = writes
            .iter()
            .map(|w| k_index(w.0))
            .max()
            .expect("non-empty");
        let range: Vec<u32> = (lo..=hi).collect();
        let ctx = Arc::clone(&self.ctx);
        let _locks = ctx.oracle.lock_keys(&range);
        let a = self.begin(op, &writes);
        // Build the files from the assigned versions.
        let mut paths = Vec::new();
        let mut sizes = Vec::new();
        let mut at = 0;
        for f in &files {
            let entries: Vec<(Vec<u8>, Option<Vec<u8>>)> = (at..at + f.len())
                .map(|j| {
                    let key = a[j].0.bytes();
                    let val = puts[j].then(|| make_value(&key, a[j].1));
                    (key, val)
                })
                .collect();
            at += f.len();
            match ctx.storage.write_sst(&entries, sst_options()) {
                Ok((p, size)) => {
                    paths.push(p);
                    sizes.push(size);
                }
                Err(e) => {
                    for p in &paths {
                        ctx.storage.remove_sst(p);
                    }
                    for &(k, v, _) in &a {
                        let idx = ctx.oracle.idx(k).expect("key");
                        ctx.oracle.finish(idx, v, Status::NotApplied);
                    }
                    if !self.tolerate_errors() {
                        self.report(
                            op.name(),
                            None,
                            e,
                            "harness could not write an external file".into(),
                        );
                    }
                    return;
                }
            }
        }
        let small_file_threshold = if op == Op::IngestSmall {
            // Above the tiny files, below the others where possible.
            let tiny = sizes
                .iter()
                .zip(&files)
                .filter(|(_, f)| f.len() <= 2)
                .map(|(s, _)| *s)
                .max()
                .unwrap_or(0);
            tiny + 1
        } else {
            0
        };
        let opts = IngestOptions {
            allow_overlap: overlap || self.rng.gen_bool(0.3),
            small_file_threshold,
            link_files: self.rng.gen_bool(0.5),
            ..IngestOptions::default()
        };
        let jid = self.journal.start(op, false, &a);
        let r = ctx.db.ingest(&paths, &opts).map(|_| ());
        for p in &paths {
            ctx.storage.remove_sst(p);
        }
        self.finish(op, jid, &a, &r, false);
    }

    /// Ingests a fresh block of reserved `z` keys behind everything (each key once, ever).
    fn ingest_behind(&mut self) {
        let n = self.rng.gen_range(2..=12u32);
        let o = Arc::clone(&self.ctx.oracle);
        let z0 = o.z_next.fetch_add(n, Ordering::SeqCst);
        if z0 + n > o.zcap() {
            return;
        }
        let writes: Vec<(Key, Kind)> = (z0..z0 + n).map(|z| (Key::Z(z), Kind::Put)).collect();
        let a = self.begin(Op::IngestBehind, &writes);
        let entries: Vec<(Vec<u8>, Option<Vec<u8>>)> = a
            .iter()
            .map(|&(k, v, _)| {
                let key = k.bytes();
                let val = make_value(&key, v);
                (key, Some(val))
            })
            .collect();
        let (path, _) = match self.ctx.storage.write_sst(&entries, sst_options()) {
            Ok(p) => p,
            Err(e) => {
                for &(k, v, _) in &a {
                    o.finish(o.idx(k).expect("key"), v, Status::NotApplied);
                }
                if !self.tolerate_errors() {
                    self.report("ingest_behind", None, e, "harness could not write".into());
                }
                return;
            }
        };
        let opts = IngestOptions {
            ingest_behind: true,
            link_files: self.rng.gen_bool(0.5),
            ..IngestOptions::default()
        };
        let jid = self.journal.start(Op::IngestBehind, false, &a);
        let r = self.ctx.db.ingest(&[&path], &opts).map(|_| ());
        self.ctx.storage.remove_sst(&path);
        // The engine may refuse (bottom level busy in the range): then nothing applied.
        let rejected = matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("bottom level"));
        self.finish(Op::IngestBehind, jid, &a, &r, rejected);
    }

    // ------------------------------------------------------------------ reads

    fn gets(&mut self) {
        let n = if self.rng.gen_bool(0.2) {
            self.rng.gen_range(2..=8)
        } else {
            1
        };
        for _ in 0..n {
            let zn = self.ctx.oracle.z_next.load(Ordering::SeqCst);
            let key = if zn > 0 && self.rng.gen_bool(0.1) {
                Key::Z(self.rng.gen_range(0..zn.min(self.ctx.oracle.zcap())))
            } else {
                Key::K(self.pick())
            };
            let idx = self.ctx.oracle.idx(key).expect("key in space");
            let lower = self.ctx.oracle.committed(idx);
            let r = self.ctx.db.get(&key.bytes());
            let upper = self.ctx.oracle.pending(idx);
            match r {
                Ok(v) => {
                    if !self.verify("get", key, lower, upper, v.as_deref(), true) {
                        return;
                    }
                }
                Err(e) => self.on_error("get", Some(key), &e),
            }
        }
    }

    /// A bounded scan of `[lo, hi)`, forward or backward, from an end or a seek, with an
    /// optional change of direction (check 3).
    fn iterate(&mut self) {
        let n = self.keys();
        let len = self.rng.gen_range(1..=200).min(n);
        let lo = self.rng.gen_range(0..=n - len);
        let hi = lo + len;
        let o = Arc::clone(&self.ctx.oracle);
        let lowers: Vec<u64> = (lo..hi).map(|i| o.committed(i as usize)).collect();
        let opts = ReadOptions {
            snapshot: None,
            lower_bound: Some(Key::K(lo).bytes()),
            upper_bound: Some(Key::K(hi).bytes()),
        };
        let mut it = match self.ctx.db.iter(opts) {
            Ok(it) => it,
            Err(e) => return self.on_error("iter", None, &e),
        };
        let mode = self.rng.gen_range(0..4);
        let target = self.rng.gen_range(lo.saturating_sub(3)..(hi + 3).min(n));
        let forward = mode < 2;
        // The first key the scan may return, in its direction.
        let first = match mode {
            0 => {
                it.seek_to_first();
                lo as i64
            }
            1 => {
                it.seek(&Key::K(target).bytes());
                target.max(lo) as i64
            }
            2 => {
                it.seek_to_last();
                hi as i64 - 1
            }
            _ => {
                it.seek_for_prev(&Key::K(target).bytes());
                (target as i64).min(hi as i64 - 1)
            }
        };
        let what = [
            "iter seek_to_first+next",
            "iter seek+next",
            "iter seek_to_last+prev",
            "iter seek_for_prev+prev",
        ][mode];
        let steps = self.rng.gen_range(1..=len as usize + 1);
        let mut got: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        while it.valid() && got.len() < steps {
            got.push((it.key().to_vec(), it.value().to_vec()));
            if got.len() < steps {
                if forward {
                    it.next();
                } else {
                    it.prev();
                }
            }
        }
        let exhausted = !it.valid();
        // Change of direction: the entries already returned, in reverse, identical.
        if !exhausted && got.len() > 1 && self.rng.gen_bool(0.4) {
            let back = self.rng.gen_range(1..got.len());
            for j in 1..=back {
                if forward {
                    it.prev();
                } else {
                    it.next();
                }
                let want = &got[got.len() - 1 - j];
                let ok =
                    it.valid() && it.key() == want.0.as_slice() && it.value() == want.1.as_slice();
                if !ok {
                    let read = if it.valid() {
                        format!("{} = {}", show(it.key()), show(it.value()))
                    } else {
                        "end of iteration".into()
                    };
                    self.report(
                        &format!("{what}, then {} step(s) back", j),
                        Key::parse(&want.0),
                        read,
                        format!(
                            "changing direction should revisit {} = {}",
                            show(&want.0),
                            show(&want.1)
                        ),
                    );
                    return;
                }
            }
        }
        if let Err(e) = it.status() {
            return self.on_error(what, None, &e);
        }
        drop(it);
        let uppers: Vec<u64> = (lo..hi).map(|i| o.pending(i as usize)).collect();
        // Checks 1–3 on every returned entry.
        let mut prev: Option<i64> = None;
        let mut returned = std::collections::HashSet::new();
        for (k, v) in &got {
            let i = match Key::parse(k) {
                Some(Key::K(i)) if i >= lo && i < hi => i,
                _ => {
                    self.report(
                        what,
                        Key::parse(k),
                        format!("{} = {}", show(k), show(v)),
                        format!("key outside the bounds [{}, {})", Key::K(lo), Key::K(hi)),
                    );
                    return;
                }
            };
            let ii = i as i64;
            if let Some(p) = prev {
                if (forward && ii <= p) || (!forward && ii >= p) {
                    self.report(
                        what,
                        Some(Key::K(i)),
                        show(k),
                        format!("out of order after {}", Key::K(p as u32)),
                    );
                    return;
                }
            } else if (forward && ii < first) || (!forward && ii > first) {
                self.report(
                    what,
                    Some(Key::K(i)),
                    show(k),
                    format!("first key returned is before the seek position {first}"),
                );
                return;
            }
            prev = Some(ii);
            returned.insert(i);
            let j = (i - lo) as usize;
            if !self.verify(what, Key::K(i), lowers[j], uppers[j], Some(v), true) {
                return;
            }
        }
        // Keys inside the scanned interval that were not returned must be allowed absent.
        let (from, to) = match (forward, exhausted, prev) {
            (true, true, _) => (first, hi as i64 - 1),
            (true, false, Some(p)) => (first, p),
            (false, true, _) => (lo as i64, first),
            (false, false, Some(p)) => (p, first),
            (_, false, None) => return,
        };
        for ii in from.max(lo as i64)..=to.min(hi as i64 - 1) {
            let i = ii as u32;
            if returned.contains(&i) {
                continue;
            }
            let j = (i - lo) as usize;
            if !self.verify(
                &format!("{what} (key skipped)"),
                Key::K(i),
                lowers[j],
                uppers[j],
                None,
                true,
            ) {
                return;
            }
        }
    }

    fn take_snapshot(&mut self) {
        if self.held.len() >= 3 {
            self.reread_snapshot();
        }
        let n = self.keys();
        let len = self.rng.gen_range(1..=32).min(n);
        let lo = self.rng.gen_range(0..=n - len);
        let hi = lo + len;
        let o = Arc::clone(&self.ctx.oracle);
        let lowers: Vec<u64> = (lo..hi).map(|i| o.committed(i as usize)).collect();
        let snap = self.ctx.db.snapshot();
        let uppers: Vec<u64> = (lo..hi).map(|i| o.pending(i as usize)).collect();
        let mut results = Vec::new();
        for i in lo..hi {
            let ro = ReadOptions {
                snapshot: Some(&snap),
                ..ReadOptions::default()
            };
            match self.ctx.db.get_opt(&Key::K(i).bytes(), &ro) {
                Ok(v) => {
                    let j = (i - lo) as usize;
                    if !self.verify(
                        "snapshot get",
                        Key::K(i),
                        lowers[j],
                        uppers[j],
                        v.as_deref(),
                        true,
                    ) {
                        return;
                    }
                    results.push(v);
                }
                Err(e) => return self.on_error("snapshot get", Some(Key::K(i)), &e),
            }
        }
        self.held.push(Held {
            snap,
            lo,
            hi,
            results,
        });
    }

    /// Check 4: a held snapshot, read again by point reads and by an iterator.
    fn reread_snapshot(&mut self) {
        if self.held.is_empty() {
            return self.take_snapshot();
        }
        let h = self.held.remove(self.rng.gen_range(0..self.held.len()));
        let what = format!("snapshot re-read (seqno {})", h.snap.seqno());
        for i in h.lo..h.hi {
            let ro = ReadOptions {
                snapshot: Some(&h.snap),
                ..ReadOptions::default()
            };
            let first = &h.results[(i - h.lo) as usize];
            match self.ctx.db.get_opt(&Key::K(i).bytes(), &ro) {
                Ok(v) if &v == first => {}
                Ok(v) => {
                    return self.report(
                        &what,
                        Some(Key::K(i)),
                        v.as_deref().map_or("absent".into(), show),
                        format!(
                            "the same snapshot returned {} before",
                            first.as_deref().map_or("absent".into(), show)
                        ),
                    )
                }
                Err(e) => return self.on_error(&what, Some(Key::K(i)), &e),
            }
        }
        let ro = ReadOptions {
            snapshot: Some(&h.snap),
            lower_bound: Some(Key::K(h.lo).bytes()),
            upper_bound: Some(Key::K(h.hi).bytes()),
        };
        let mut it = match self.ctx.db.iter(ro) {
            Ok(it) => it,
            Err(e) => return self.on_error(&what, None, &e),
        };
        let mut want: Vec<(Vec<u8>, &Vec<u8>)> = (h.lo..h.hi)
            .zip(&h.results)
            .filter_map(|(i, r)| r.as_ref().map(|v| (Key::K(i).bytes(), v)))
            .collect();
        let forward = self.rng.gen_bool(0.5);
        if forward {
            it.seek_to_first();
        } else {
            it.seek_to_last();
            want.reverse();
        }
        for (k, v) in &want {
            if !it.valid() || it.key() != k.as_slice() || it.value() != v.as_slice() {
                let read = if it.valid() {
                    format!("{} = {}", show(it.key()), show(it.value()))
                } else {
                    "end of iteration".into()
                };
                return self.report(
                    &format!("{what} by iterator"),
                    Key::parse(k),
                    read,
                    format!("expected {} = {} as read before", show(k), show(v)),
                );
            }
            if forward {
                it.next();
            } else {
                it.prev();
            }
        }
        if it.valid() {
            let read = format!("{} = {}", show(it.key()), show(it.value()));
            return self.report(
                &format!("{what} by iterator"),
                Key::parse(it.key()),
                read,
                "an extra key the point reads found absent".into(),
            );
        }
        if let Err(e) = it.status() {
            self.on_error(&what, None, &e);
        }
    }
}

fn k_index(k: Key) -> u32 {
    match k {
        Key::K(i) => i,
        _ => unreachable!("main-space key expected"),
    }
}

/// The prefix-check thread: writes `s0, s1, …` strictly in order, one at a time, some synced,
/// some as ingests of a few consecutive keys; reads back what it acknowledged. Stops writing
/// after the first error (the series must stay contiguous).
pub fn run_seq(ctx: Arc<Ctx>, rng_seed: u64, mut journal: Journal, id: usize) {
    let mut rng = StdRng::seed_from_u64(rng_seed);
    let o = Arc::clone(&ctx.oracle);
    let mut writing = true;
    while ctx.running() {
        let i = o.seq_started.load(Ordering::SeqCst);
        if writing {
            let ingest = !ctx.disabled.contains(&Op::SeqIngest) && rng.gen_bool(0.12);
            let n = if ingest { rng.gen_range(1..=8) } else { 1 };
            let writes: Vec<(Key, u64, Kind)> =
                (i..i + n).map(|j| (Key::S(j), 1, Kind::Put)).collect();
            let r = if ingest {
                let entries: Vec<(Vec<u8>, Option<Vec<u8>>)> = writes
                    .iter()
                    .map(|w| {
                        let k = w.0.bytes();
                        let v = make_value(&k, 1);
                        (k, Some(v))
                    })
                    .collect();
                match ctx.storage.write_sst(&entries, sst_options()) {
                    Ok((p, _)) => {
                        let jid = journal.start(Op::SeqIngest, false, &writes);
                        o.seq_started.store(i + n, Ordering::SeqCst);
                        let opts = IngestOptions {
                            link_files: rng.gen_bool(0.5),
                            ..IngestOptions::default()
                        };
                        let r = ctx.db.ingest(&[&p], &opts).map(|_| ());
                        ctx.storage.remove_sst(&p);
                        ctx.stats.count(Op::SeqIngest);
                        Some((jid, r))
                    }
                    Err(_) => None,
                }
            } else {
                let sync = rng.gen_bool(0.25);
                let jid = journal.start(Op::SeqPut, sync, &writes);
                o.seq_started.store(i + 1, Ordering::SeqCst);
                let k = Key::S(i).bytes();
                let mut b = WriteBatch::new();
                b.put(&k, &make_value(&k, 1));
                let r = ctx.db.write(b, sync_opts(sync));
                ctx.stats.count(Op::SeqPut);
                Some((jid, r))
            };
            match r {
                Some((jid, Ok(()))) => {
                    journal.ack(jid);
                    o.seq_acked.store(i + n, Ordering::SeqCst);
                }
                Some((jid, Err(e))) => {
                    journal.fail(jid);
                    writing = false;
                    ctx.stats.errors.fetch_add(1, Ordering::Relaxed);
                    if !ctx.faults_on.load(Ordering::SeqCst) {
                        seq_anomaly(
                            &ctx,
                            id,
                            i,
                            format!("error: {e}"),
                            "sequential write failed without a fault".into(),
                        );
                    }
                }
                None => writing = false,
            }
        }
        // Read back something acknowledged.
        let acked = o.seq_acked.load(Ordering::SeqCst);
        if acked > 0 && rng.gen_bool(0.2) {
            let j = rng.gen_range(0..acked);
            let k = Key::S(j).bytes();
            match ctx.db.get(&k) {
                Ok(Some(v)) if v == make_value(&k, 1) => {}
                Ok(v) => seq_anomaly(
                    &ctx,
                    id,
                    j,
                    v.as_deref().map_or("absent".into(), show),
                    format!("acknowledged sequential key (all below {acked} acknowledged)"),
                ),
                Err(e) => {
                    ctx.stats.errors.fetch_add(1, Ordering::Relaxed);
                    if !ctx.faults_on.load(Ordering::SeqCst) {
                        seq_anomaly(
                            &ctx,
                            id,
                            j,
                            format!("error: {e}"),
                            "read failed without a fault".into(),
                        );
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn seq_anomaly(ctx: &Ctx, thread: usize, j: u64, read: String, detail: String) {
    ctx.anomaly(Anomaly {
        seed: ctx.seed,
        context: format!("{}, thread {thread} (sequential)", ctx.context),
        op: "seq get".into(),
        key: Key::S(j).to_string(),
        read,
        detail,
        history: String::new(),
    });
}
