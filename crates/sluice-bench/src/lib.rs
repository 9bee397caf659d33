//! Library side of the benchmark harness: the BENCH-SPEC input generator shared by every
//! workload (and by tests that check it against the spec's SHA-256 values).

pub mod engine;
pub mod fair;
pub mod gen;
pub mod l0;
pub mod online;
pub mod sort;
pub mod spiral;
pub mod trace_sample;

use std::sync::{Arc, OnceLock};

/// The `--events` listener, set once by `main`.
static EVENTS: OnceLock<Arc<sluice::JsonLinesListener>> = OnceLock::new();

/// Makes every Db a workload opens report its events as JSON lines appended to `path`
/// (`--events`; one file for every Db and round: each Db's job ids start again at 1).
pub fn record_events_to(path: &std::path::Path) -> std::io::Result<()> {
    let l = sluice::JsonLinesListener::create(path)?;
    let _ = EVENTS.set(Arc::new(l));
    Ok(())
}

/// The listeners of `--events` (none without it).
pub fn event_listeners() -> Vec<Arc<dyn sluice::EventListener>> {
    EVENTS
        .get()
        .map(|l| vec![Arc::clone(l) as Arc<dyn sluice::EventListener>])
        .unwrap_or_default()
}

/// The options every workload opens a Sluice Db with: the defaults, the WAL stage
/// (`Options::wal_staging`, the default, set here so that the settings say it), and the
/// `--events` listener.
pub fn db_options() -> sluice::Options {
    sluice::Options {
        wal_staging: true,
        listeners: event_listeners(),
        ..sluice::Options::default()
    }
}

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
