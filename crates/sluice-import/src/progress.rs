//! Progress reporting: an `indicatif` bar on a terminal (bytes read of total, rows/s, phase,
//! ETA), plain periodic lines otherwise, or nothing. Counters are atomics the pipeline bumps;
//! a reporter thread reads them.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How to show progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, else plain lines.
    #[default]
    Auto,
    /// Plain lines on stderr every few seconds.
    Plain,
    /// Nothing.
    Off,
}

/// The pipeline's phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Reading, parsing, encoding, sorting, spilling.
    ParseSort = 0,
    /// Merging runs into final files.
    Merge = 1,
    /// The atomic ingest.
    Ingest = 2,
    /// Finished.
    Done = 3,
}

impl Phase {
    fn name(v: u8) -> &'static str {
        match v {
            0 => "parse+sort",
            1 => "merge",
            2 => "ingest",
            _ => "done",
        }
    }
}

/// Counters shared by the pipeline and the reporter.
#[derive(Debug, Default)]
pub struct Counters {
    /// Raw (possibly compressed) input bytes read.
    pub bytes_read: Arc<AtomicU64>,
    /// Raw input bytes in all.
    pub bytes_total: AtomicU64,
    /// Rows accepted.
    pub rows: AtomicU64,
    /// Entries written by the merge.
    pub merged: AtomicU64,
    /// Runs merged into bigger runs before the final merge.
    pub runs_premerged: AtomicU64,
    /// Sorted runs spilled.
    pub runs_spilled: AtomicU64,
    /// Current [`Phase`].
    pub phase: AtomicU8,
    stop: AtomicBool,
}

impl Counters {
    /// Enters a phase.
    pub fn set_phase(&self, p: Phase) {
        self.phase.store(p as u8, Ordering::Relaxed);
    }
}

/// Runs the reporter until dropped.
pub struct Reporter {
    counters: Arc<Counters>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Reporter {
    /// Starts reporting `counters` in `mode`.
    pub fn start(mode: ProgressMode, counters: Arc<Counters>) -> Reporter {
        let bar = match mode {
            ProgressMode::Off => None,
            ProgressMode::Auto if std::io::stderr().is_terminal() => Some(true),
            _ => Some(false),
        };
        let thread = bar.map(|bar| {
            let c = Arc::clone(&counters);
            std::thread::spawn(move || report(&c, bar))
        });
        Reporter { counters, thread }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.counters.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn report(c: &Counters, bar: bool) {
    let start = Instant::now();
    let total = c.bytes_total.load(Ordering::Relaxed);
    let pb = bar.then(|| {
        let pb = indicatif::ProgressBar::new(total);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg:>11} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        pb
    });
    let mut last_line = Instant::now();
    while !c.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        let read = c.bytes_read.load(Ordering::Relaxed);
        let rows = c.rows.load(Ordering::Relaxed);
        let phase = Phase::name(c.phase.load(Ordering::Relaxed));
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        if let Some(pb) = &pb {
            pb.set_position(read);
            pb.set_message(format!("{phase} {:.0}k rows/s", rows as f64 / secs / 1e3));
        } else if last_line.elapsed() >= Duration::from_secs(5) {
            last_line = Instant::now();
            let pct = if total > 0 {
                read as f64 * 100.0 / total as f64
            } else {
                100.0
            };
            eprintln!(
                "import: {phase}: {pct:.1}% of {total} bytes, {rows} rows, {:.0} rows/s, merged {}",
                rows as f64 / secs,
                c.merged.load(Ordering::Relaxed)
            );
        }
    }
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
}
