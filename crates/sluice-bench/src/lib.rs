//! Library side of the benchmark harness: the BENCH-SPEC input generator shared by every
//! workload (and by tests that check it against the spec's SHA-256 values).

pub mod engine;
pub mod fair;
pub mod gen;
pub mod l0;
pub mod online;
pub mod trace_sample;

/// Peak resident set size of this process, KiB (from /proc).
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
