//! Counters and the [`Metrics`] snapshot of the LSM shape.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::compaction::picker::{self};
use crate::version::NUM_LEVELS;

use super::Inner;

/// Per-level shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelMetrics {
    /// Files in the level.
    pub files: usize,
    /// Bytes in the level.
    pub bytes: u64,
    /// Compaction score ×100 (>= 100 means the level needs compacting).
    pub score_x100: u64,
}

/// A snapshot of the engine's counters.
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    /// L0..L6.
    pub levels: Vec<LevelMetrics>,
    /// Bytes in the active memtable.
    pub memtable_bytes: u64,
    /// Immutable memtables waiting for flush.
    pub immutable_memtables: usize,
    /// Sources a point read may consult: memtables (and queued ingests) + L0 sublevels +
    /// non-empty deeper levels.
    pub read_amplification: usize,
    /// L0 sublevels (L0's share of the read amplification).
    pub l0_sublevels: usize,
    /// Estimated bytes compaction is behind (drives the pending-bytes stalls).
    pub pending_compaction_bytes: u64,
    /// Bytes written by flushes and compactions per byte of user batches.
    pub write_amplification: f64,
    /// User batch bytes written.
    pub user_bytes: u64,
    /// Bytes written by flushes.
    pub flush_bytes: u64,
    /// Flushes completed.
    pub flushes: u64,
    /// Compactions completed (trivial moves included).
    pub compactions: u64,
    /// Key ranges merged by compactions (a compaction split into subcompactions counts each).
    pub subcompactions: u64,
    /// Bytes read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: u64,
    /// Writes that had to wait (stop: L0 sublevels, compaction debt or memtables full, counted
    /// once per write however long it waited) or were delayed (slowdown: 1 ms).
    pub stall_count: u64,
    /// Total time writers spent stalled, in microseconds.
    pub stall_micros: u64,
    /// The longest single stall of one write, in microseconds.
    pub stall_max_micros: u64,
    /// Ingests that waited for L0 to drain before installing (see
    /// [`IngestOptions::wait_for_l0`](crate::IngestOptions::wait_for_l0)).
    pub ingest_waits: u64,
    /// Total time ingests spent waiting for L0, in microseconds.
    pub ingest_wait_micros: u64,
    /// Last sequence number visible to readers.
    pub last_sequence: u64,
    /// Block cache (hits, misses).
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// The background error, if the Db is in read-only error state.
    pub background_error: Option<String>,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) user_bytes: AtomicU64,
    pub(super) flush_bytes: AtomicU64,
    pub(super) flushes: AtomicU64,
    pub(super) compactions: AtomicU64,
    pub(super) subcompactions: AtomicU64,
    pub(super) compaction_read: AtomicU64,
    pub(super) compaction_written: AtomicU64,
    pub(super) stall_count: AtomicU64,
    pub(super) stall_micros: AtomicU64,
    pub(super) stall_max_micros: AtomicU64,
    pub(super) ingest_waits: AtomicU64,
    pub(super) ingest_wait_micros: AtomicU64,
}

impl Inner {
    pub(super) fn metrics(&self) -> Metrics {
        let s = self.state.lock();
        let scores = picker::level_scores(&s.version, &s.l0, &self.picker_options());
        let levels: Vec<LevelMetrics> = (0..NUM_LEVELS)
            .map(|l| LevelMetrics {
                files: s.version.levels[l].len(),
                bytes: s.version.level_bytes(l),
                score_x100: scores[l],
            })
            .collect();
        let l0_sublevels = s.l0.sublevel_count();
        let read_amp =
            1 + s.imm.len() + l0_sublevels + levels[1..].iter().filter(|l| l.files > 0).count();
        let c = &self.counters;
        let user = c.user_bytes.load(Ordering::Relaxed);
        let written =
            c.flush_bytes.load(Ordering::Relaxed) + c.compaction_written.load(Ordering::Relaxed);
        let (hits, misses) = self.block_cache.hit_stats();
        Metrics {
            memtable_bytes: s.mem.approximate_bytes(),
            immutable_memtables: s.imm.len(),
            read_amplification: read_amp,
            l0_sublevels,
            pending_compaction_bytes: s.pending_compaction_bytes,
            write_amplification: if user > 0 {
                written as f64 / user as f64
            } else {
                0.0
            },
            user_bytes: user,
            flush_bytes: c.flush_bytes.load(Ordering::Relaxed),
            flushes: c.flushes.load(Ordering::Relaxed),
            compactions: c.compactions.load(Ordering::Relaxed),
            subcompactions: c.subcompactions.load(Ordering::Relaxed),
            compaction_bytes_read: c.compaction_read.load(Ordering::Relaxed),
            compaction_bytes_written: c.compaction_written.load(Ordering::Relaxed),
            stall_count: c.stall_count.load(Ordering::Relaxed),
            stall_micros: c.stall_micros.load(Ordering::Relaxed),
            stall_max_micros: c.stall_max_micros.load(Ordering::Relaxed),
            ingest_waits: c.ingest_waits.load(Ordering::Relaxed),
            ingest_wait_micros: c.ingest_wait_micros.load(Ordering::Relaxed),
            last_sequence: self.visible_seq.load(Ordering::Acquire),
            block_cache_hits: hits,
            block_cache_misses: misses,
            background_error: s.background_error.clone(),
            levels,
        }
    }
}
