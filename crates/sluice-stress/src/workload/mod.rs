//! The worker threads: a random mix of writes, reads, snapshots, ingests, flushes and
//! compactions on one shared `Db`, every read checked against the [`Oracle`] as it happens.
//!
//! Each worker owns a seeded `StdRng` (seed, phase, thread), so a seed replays every thread's
//! operation sequence; only the interleaving differs between runs.
//!
//! Checks made here (the oracle's bounds are described in [`crate::oracle`]):
//! 1. point reads, snapshot reads, iterator entries and point reads through a read-only open
//!    beside the writer: value within the key's bounds (for the read-only open, the bounds
//!    around the open: it sees the Db as of then);
//! 2. monotonic reads: never a version older than this thread saw before for the same key;
//! 3. iterators: keys inside the bounds, strictly ordered in the direction of travel, keys
//!    skipped inside the scanned interval allowed to be absent, and a change of direction
//!    revisiting exactly the entries already returned;
//! 4. snapshots: a later re-read (point reads and an iterator through the snapshot) returns
//!    exactly what the first read returned;
//! 5. errors only while faults are injected; the sequential series always readable below
//!    what was acknowledged.
//!
//! One room per kind of operation: `writes.rs` (put, delete, range deletion, batch, flush,
//! compaction), `ingests.rs`, `reads.rs` (point reads and scans: checks 1–3), `snapshots.rs`
//! (check 4) and `sequential.rs` (the sequential thread); here the shared context, the mix,
//! and the bookkeeping every operation goes through (oracle, journal, reports).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{Db, Error, WriteOptions};

use crate::journal::Journal;
use crate::keys::{show, Key};
use crate::oracle::{Kind, Oracle, Status};
use crate::report::{Anomaly, Op, Stats};
use crate::storage::Storage;

mod ingests;
mod reads;
mod sequential;
mod snapshots;
mod writes;

pub use sequential::run_seq;

use snapshots::Held;

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
const MIX: [(Op, u32); 15] = [
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
    (Op::ReadOnlyOpen, 2),
];

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

fn sync_opts(sync: bool) -> WriteOptions<'static> {
    WriteOptions {
        sync,
        disable_wal: false,
        ..Default::default()
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
            Op::ReadOnlyOpen => self.read_only_open(),
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
}
