//! The sequential thread: the prefix check of a log (`s0, s1, …` written strictly in order).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::{IngestOptions, WriteBatch};

use crate::journal::Journal;
use crate::keys::{make_value, show, Key};
use crate::oracle::Kind;
use crate::report::{Anomaly, Op};
use crate::storage::sst_options;

use super::{sync_opts, Ctx};

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
                    seq_error(&ctx, id, i, &e, "sequential write failed without a fault");
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
                Err(e) => seq_error(&ctx, id, j, &e, "read failed without a fault"),
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Counts a failed sequential operation on `s<j>`; an anomaly unless faults are injected.
fn seq_error(ctx: &Ctx, thread: usize, j: u64, e: &sluice::Error, detail: &str) {
    ctx.stats.errors.fetch_add(1, Ordering::Relaxed);
    if !ctx.faults_on.load(Ordering::SeqCst) {
        seq_anomaly(ctx, thread, j, format!("error: {e}"), detail.into());
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
