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

/// `--l0-tiering-ratio-pct`, set once by `main` (unset: the engine's default).
static L0_TIERING: OnceLock<u64> = OnceLock::new();

/// Opens every Db with `Options::l0_tiering_ratio_pct = pct` (0: the picker without policy 6,
/// for A/B runs).
pub fn set_l0_tiering_ratio_pct(pct: u64) {
    let _ = L0_TIERING.set(pct);
}

/// The options every workload opens a Sluice Db with: the defaults, the WAL stage
/// (`Options::wal_staging`, the default, set here so that the settings say it), the
/// `--events` listener and `--l0-tiering-ratio-pct`.
pub fn db_options() -> sluice::Options {
    let d = sluice::Options::default();
    sluice::Options {
        wal_staging: true,
        listeners: event_listeners(),
        l0_tiering_ratio_pct: L0_TIERING.get().copied().unwrap_or(d.l0_tiering_ratio_pct),
        ..d
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
