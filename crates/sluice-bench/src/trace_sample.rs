//! `--trace-slowest N`: traces of the slowest operations of a workload, without tracing every
//! operation.
//!
//! Tracing an operation costs (a clock read and a short lock per span, a few allocations), so
//! tracing all of them would change the latencies being explained. Instead a fixed, seeded
//! fraction of the operations (`--trace-rate`, default 1%, chosen by hashing the operation's
//! index, so the same operations are picked in every round and every binary) runs with a
//! [`Trace`] attached; every other operation runs exactly as without the flag. The N slowest
//! traced operations are kept and printed to stderr with their traces. The JSON line gains
//! `trace_sample`: how many were traced, their median latency beside the untraced median (the
//! tracing overhead per traced operation), the workload's p99.99 over all operations, and how
//! many of the kept traces are at or above it (the slowest 0.01% that the sample caught; with a
//! 1% sample about 1 in 100 of them). Re-running a slow key traced afterwards was rejected: the
//! re-run meets a different memtable, cache and LSM shape, not what made the original slow.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde_json::{json, Value};
use sluice::Trace;

use crate::gen::splitmix64;

/// What `--trace-slowest` and `--trace-rate` asked for.
#[derive(Clone, Copy, Debug)]
pub struct SampleConfig {
    /// How many of the slowest traced operations to keep and print.
    pub keep: usize,
    /// Fraction of operations traced, in (0, 1].
    pub rate: f64,
}

/// One round's sampler.
pub struct TraceSampler {
    keep: usize,
    threshold: u64,
    /// Min-heap of the slowest kept: (nanos, op index).
    slowest: BinaryHeap<Reverse<(u64, u64)>>,
    kept: Vec<Kept>,
    traced_nanos: Vec<u64>,
}

struct Kept {
    op: u64,
    nanos: u64,
    key: Vec<u8>,
    trace: Trace,
}

const SEED: u64 = 0x7ACE_5A3F_1E00_0001;

impl TraceSampler {
    /// A sampler for one round.
    pub fn new(cfg: SampleConfig) -> Self {
        let rate = cfg.rate.clamp(0.0, 1.0);
        TraceSampler {
            keep: cfg.keep,
            threshold: (rate * u64::MAX as f64) as u64,
            slowest: BinaryHeap::new(),
            kept: Vec::new(),
            traced_nanos: Vec::new(),
        }
    }

    /// Whether operation `op` runs traced (deterministic in `op`).
    #[inline]
    pub fn pick(&self, op: u64) -> bool {
        splitmix64(op ^ SEED) <= self.threshold
    }

    /// Offers a traced operation that took `nanos`; kept if among the slowest.
    pub fn offer(&mut self, op: u64, key: &[u8], nanos: u64, trace: Trace) {
        self.traced_nanos.push(nanos);
        if self.keep == 0 {
            return;
        }
        if self.slowest.len() == self.keep {
            match self.slowest.peek() {
                Some(Reverse((fastest, _))) if *fastest < nanos => {
                    let Reverse((_, gone)) = self.slowest.pop().expect("full heap");
                    self.kept.retain(|k| k.op != gone);
                }
                _ => return,
            }
        }
        self.slowest.push(Reverse((nanos, op)));
        self.kept.push(Kept {
            op,
            nanos,
            key: key.to_vec(),
            trace,
        });
    }

    /// Prints the kept traces (slowest first) to stderr and returns the summary for the JSON
    /// line. `all_nanos`: every operation's latency, traced or not, sorted ascending.
    pub fn report(mut self, workload: &str, all_nanos: &[u64]) -> Value {
        let pct = |v: &[u64], q: f64| -> f64 {
            if v.is_empty() {
                return 0.0;
            }
            v[((v.len() as f64 * q) as usize).min(v.len() - 1)] as f64 / 1000.0
        };
        self.traced_nanos.sort_unstable();
        let p9999 = pct(all_nanos, 0.9999);
        self.kept.sort_by_key(|k| Reverse(k.nanos));
        let in_top = self
            .kept
            .iter()
            .filter(|k| k.nanos as f64 / 1000.0 >= p9999)
            .count();
        for (rank, k) in self.kept.iter().enumerate() {
            eprintln!(
                "[trace] {workload} #{} op {} key {} {:.1} us{}",
                rank + 1,
                k.op,
                hex(&k.key),
                k.nanos as f64 / 1000.0,
                if k.nanos as f64 / 1000.0 >= p9999 {
                    " (slowest 0.01%)"
                } else {
                    ""
                }
            );
            eprint!("{}", k.trace.render());
        }
        json!({
            "traced": self.traced_nanos.len(),
            "traced_p50_us": pct(&self.traced_nanos, 0.5),
            "all_p50_us": pct(all_nanos, 0.5),
            "all_p9999_us": p9999,
            "kept": self.kept.len(),
            "kept_in_slowest_0.01pct": in_top,
            "slowest_us": self.kept.iter().map(|k| k.nanos as f64 / 1000.0).collect::<Vec<_>>(),
        })
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_slowest_traced_operations() {
        let mut s = TraceSampler::new(SampleConfig { keep: 2, rate: 1.0 });
        for (op, nanos) in [(0, 5), (1, 50), (2, 7), (3, 40), (4, 1)] {
            s.offer(op, b"k", nanos, Trace::new());
        }
        let mut kept: Vec<u64> = s.kept.iter().map(|k| k.op).collect();
        kept.sort_unstable();
        assert_eq!(kept, [1, 3]);
        let v = s.report("w", &[1, 5, 7, 40, 50]);
        assert_eq!(v["traced"], 5);
        assert_eq!(v["slowest_us"], json!([0.05, 0.04]));
    }

    #[test]
    fn picks_about_the_rate_and_the_same_ops_every_time() {
        let s = TraceSampler::new(SampleConfig {
            keep: 1,
            rate: 0.01,
        });
        let picked: Vec<u64> = (0..100_000).filter(|&i| s.pick(i)).collect();
        assert!((800..1200).contains(&picked.len()), "{}", picked.len());
        let again: Vec<u64> = (0..100_000).filter(|&i| s.pick(i)).collect();
        assert_eq!(picked, again);
        let none = TraceSampler::new(SampleConfig { keep: 1, rate: 0.0 });
        assert!((0..100_000).filter(|&i| none.pick(i)).count() <= 1);
    }
}
