//! What an import is asked to do ([`ImportOptions`]) and what it reports ([`Summary`]).

use std::path::PathBuf;

use serde::Serialize;

use crate::input::Format;
use crate::progress::ProgressMode;
use crate::schema::Layout;

/// What to do with a row whose primary key is already taken (by an earlier row of the input or
/// by a row already in the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnDuplicate {
    /// Refuse it (a bad row: the import fails unless `max_errors` allows rejecting it).
    #[default]
    Error,
    /// Keep the first row (an existing row wins over the input).
    First,
    /// Keep the last row (the input replaces an existing row).
    Last,
}

/// Options of an import (each field says its default).
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Table to load (default: the schema's only table).
    pub table: Option<String>,
    /// Input format (default: from each file's extension: `.tsv` TSV, `.jsonl`/`.ndjson` JSON lines,
    /// else CSV).
    pub format: Option<Format>,
    /// The first record of each file names the columns (default: false). Ignored for JSON lines.
    pub header: bool,
    /// Field delimiter (default: `,` for CSV, tab for TSV).
    pub delimiter: Option<u8>,
    /// CSV quote character (default: `"`); `None` disables quoting.
    pub quote: Option<u8>,
    /// A field equal to this string is NULL (default: none), besides each format's own NULL
    /// (CSV: an unquoted empty field; TSV: `\N`; JSON: `null`): in CSV unless quoted, in JSON
    /// lines as a string, for every column type. The rules: `crate::parse`'s module doc.
    pub null: Option<String>,
    /// Parse workers (default: all cores).
    pub threads: usize,
    /// Memory budget in bytes for chunks in flight and sort buffers (default: a quarter of RAM).
    pub memory: u64,
    /// Where spilled runs and final files are written (default: a directory inside the Db directory).
    pub tmp_dir: Option<PathBuf>,
    /// Bad rows tolerated before the import fails (default: 0).
    pub max_errors: u64,
    /// Where rejected rows go (`# file:line: reason` then the record) (default: nowhere).
    pub rejects: Option<PathBuf>,
    /// Duplicate primary keys (default: error).
    pub on_duplicate: OnDuplicate,
    /// Target size of final SST files in bytes (default: 64 MiB).
    pub target_file_size: u64,
    /// Progress display (default: auto).
    pub progress: ProgressMode,
    /// Chunk size in bytes (default: memory / 64, clamped to 64 KiB..4 MiB); tests set it small.
    pub chunk_size: Option<usize>,
    /// Storage layout of the table (default: the schema's `WITH (layout = ...)`; else, for an
    /// existing table, its stored layout; else row). An existing table keeps its layout: naming
    /// a different one is an error.
    pub layout: Option<Layout>,
    /// Run the import's threads at this nice value (0..=19), e.g. to let other processes of
    /// the machine go first. The import then runs on a thread of its own — the caller's
    /// thread keeps its priority — and every thread it starts inherits the value. Linux only
    /// (elsewhere ignored). Default: none (the caller's priority). Measured: it barely lowers
    /// the tail latency of a workload served by the same process during the import
    /// (`import-online`): under Linux's EEVDF scheduler a woken thread still waits for a
    /// nice-19 thread's slice; see `idle`.
    pub nice: Option<i32>,
    /// Run the import's threads under `SCHED_IDLE` (Linux; elsewhere ignored): they get a CPU
    /// only when no other thread wants one, and any other thread waking up preempts them at
    /// once. For an import beside latency-sensitive work in the same process or machine
    /// (measured, `import-online`: p99 of paced puts and gets ~1-2 ms with nice 19, ~0.1-0.2
    /// ms idle, the import as fast on an otherwise idle machine). Its files then start their
    /// own writeback ([`sluice::Writeback::Initiate`]), so the kernel's work for them runs at
    /// that priority too and no journal commit every 8 MiB stalls other writers' appends, and
    /// it uses at most all cores but one for its workers (`threads` is capped), so a waking
    /// thread always finds a free core even where the kernel does not preempt an import
    /// thread inside a system call (`preempt=none`). It can starve the import on a machine
    /// that is never idle. Takes precedence over `nice`.
    pub idle: bool,
    /// Paces the files that hold the import's data (sorted runs, final tables), all threads
    /// together, to the limiter's rate; imports (or other writers) holding the same limiter
    /// share it (default: none, as fast as the disk takes them). Not paced: the small
    /// bookkeeping files (checkpoints, source positions, the catalog's table), and the copy
    /// of the final files into the Db when they cannot be hard-linked (a `tmp_dir` on another
    /// file system). For an import that must leave disk
    /// bandwidth to others. Measured beside a serving workload on this project's 2-vCPU VM
    /// (`import-online`, bench/import/README.md): at 100 MiB/s the import took 3× as long and
    /// the serving p99 was about as far above its baseline as unpaced (×3.4 puts, ×3.5 gets
    /// against ×5.2 and ×2.8), so pacing is not the cure for that tail. Its files also start
    /// their own writeback, as under `idle`. The reads of the input are not paced.
    pub rate_limiter: Option<std::sync::Arc<sluice::RateLimiter>>,
    /// An index with at least this many bytes to merge is merged on `threads` threads, each
    /// writing the final files of a disjoint key range (default 32 MiB; a columnar table's
    /// rows and unique indexes merge on one thread). Tests set 0 to split every merge.
    pub parallel_merge_min_bytes: u64,
    /// Continue an interrupted import of the same files into the same table from its last
    /// checkpoint (default: false). A file import always keeps checkpoints in a
    /// `sluice-resume-*` directory (in `tmp_dir`, else the Db directory) until it finishes;
    /// with `resume` the next import picks its work up (refusing with
    /// [`crate::ImportError::CannotResume`] when the input, schema, table, Db or an option that
    /// changes the result differ), without it the next import discards it. No checkpoint to
    /// resume: the import starts over, except into a table keyed by row id that holds rows,
    /// where it refuses (the interrupted import may have finished, and a second run would add
    /// its rows twice). Imports of an Arrow stream are not resumable.
    pub resume: bool,
    /// Input bytes between checkpoints of the parse step (default 256 MiB): at each, the sort
    /// buffers are spilled and the sorted input streamed so far is cut into a finished file,
    /// so a resumed import re-parses at most this much. Tests set it small.
    pub checkpoint_bytes: u64,
    /// Once an import with [`OnDuplicate::Last`] into an existing columnar table is done
    /// (replaced rows only get deletion marks there, their bytes stay in their row groups),
    /// rewrite the table's row groups in which at least this share of the rows is dead
    /// (`TableReader::rewrite_groups`), so repeated replacing imports do not keep every old
    /// copy's bytes. Default 0.5; `None`: never. Not run for an import asked to yield (`idle`,
    /// `nice`, `rate_limiter`): the rewrite would run unpaced. A rewrite that fails leaves the
    /// import done and is reported in [`Summary::rewrite_error`].
    pub rewrite_dead: Option<f64>,
    /// Tests: fail with [`crate::ImportError::Internal`] right after this many checkpoints
    /// were written by this run, as if the process had been killed there.
    #[doc(hidden)]
    pub interrupt_after_checkpoints: Option<u64>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            table: None,
            format: None,
            header: false,
            delimiter: None,
            quote: Some(b'"'),
            null: None,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            memory: default_memory(),
            tmp_dir: None,
            max_errors: 0,
            rejects: None,
            on_duplicate: OnDuplicate::Error,
            target_file_size: 64 << 20,
            progress: ProgressMode::Auto,
            chunk_size: None,
            layout: None,
            nice: None,
            idle: false,
            rate_limiter: None,
            parallel_merge_min_bytes: 32 << 20,
            resume: false,
            checkpoint_bytes: 256 << 20,
            rewrite_dead: Some(0.5),
            interrupt_after_checkpoints: None,
        }
    }
}

/// Memory of an importing process outside the pipeline's own budget (binary, Db, allocator).
pub(crate) const PROCESS_BASELINE: usize = 24 << 20;

/// A quarter of physical memory (from `/proc/meminfo`), or 1 GiB when unknown.
pub fn default_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(1 << 30, |kb| kb * 1024 / 4)
}

/// A `--memory` size: `512M`, `2G`, `1048576` → bytes (units are powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let unit = t[i..].to_ascii_lowercase();
            let m: u64 = match unit.trim_end_matches("ib").trim_end_matches('b') {
                "" => 1,
                "k" => 1 << 10,
                "m" => 1 << 20,
                "g" => 1 << 30,
                "t" => 1 << 40,
                _ => return Err(format!("--memory {s:?}: unknown unit")),
            };
            (&t[..i], m)
        }
        None => (t, 1),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("--memory {s:?} is not a size"))?;
    Ok((n * mul as f64) as u64)
}

/// Where one ingested file went.
#[derive(Debug, Clone, Serialize)]
pub struct FileSummary {
    /// `primary`, an index name, or `catalog`.
    pub index: String,
    /// Level it was placed at.
    pub level: Option<usize>,
    /// Entries.
    pub entries: u64,
    /// Bytes.
    pub bytes: u64,
}

/// What an import did.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Summary {
    /// Table loaded.
    pub table: String,
    /// Whether the import created the table.
    pub created: bool,
    /// Rows now in the import (after duplicates were resolved).
    pub rows: u64,
    /// Rows rejected as bad (`--max-errors`).
    pub rejected: u64,
    /// Rows dropped by `--on-duplicate first|last`.
    pub duplicates_dropped: u64,
    /// Raw input bytes read.
    pub bytes: u64,
    /// Sorted runs spilled.
    pub runs_spilled: u64,
    /// Runs merged into bigger runs before the final merge, so that it reads a bounded number
    /// of them (multi-level merge; 0 when the runs were few enough).
    pub runs_premerged: u64,
    /// Indexes whose input was already in key order and went straight to final files.
    pub streamed_indexes: Vec<String>,
    /// Seconds in parse+sort.
    pub parse_sort_secs: f64,
    /// Seconds in the merge.
    pub merge_secs: f64,
    /// Seconds in the ingest.
    pub ingest_secs: f64,
    /// Seconds in all.
    pub total_secs: f64,
    /// Files ingested.
    pub files: Vec<FileSummary>,
    /// Whether the import went on from a checkpoint of an interrupted one (`resume`); the
    /// counts then cover both runs, the times this run only.
    pub resumed: bool,
    /// The row-group rewrite run after the import ([`ImportOptions::rewrite_dead`]); `None`:
    /// none ran (not asked for, not a replacing import into an existing columnar table, or it
    /// failed).
    pub rewrite: Option<crate::query::RewriteSummary>,
    /// Why that rewrite failed (the import is done all the same; the table reads the same).
    pub rewrite_error: Option<String>,
    /// Merges of the table's small files run after the commit (each merged up to 64
    /// neighbouring small files of one index or column into one, in their level); 0 when one
    /// failed.
    pub small_file_merges: usize,
    /// Why such a merge failed, or found the Db failed by other background work (the import
    /// is committed all the same, but the Db is poisoned as after a failed compaction: its next
    /// write says so, until it is reopened; the row-group rewrite is then not tried).
    pub small_file_merge_error: Option<String>,
}

impl ImportOptions {
    /// Whether the import was asked to yield to other work (`idle`, `nice`, a write rate):
    /// then it follows its commit with no unpaced work at the caller's priority (the
    /// small-file merges, the row-group rewrite).
    pub(crate) fn yields(&self) -> bool {
        self.idle || self.nice.is_some() || self.rate_limiter.is_some()
    }

    /// The worker threads an import with these options runs: `threads`, or for an
    /// [`idle`](Self::idle) import at most all cores but one (and at least one), so a thread of
    /// the serving workload that wakes always finds a core no import thread holds. Under
    /// `SCHED_IDLE` a waking thread preempts an import thread at once only while that thread
    /// is in user mode; on kernels that do not preempt kernel code (`preempt=none` or
    /// `voluntary`, most servers') it waits until the import thread's system call is done: a
    /// page-cache copy of a MiB, a file sync. Measured in `import-online` (W = 10, 2 cores, 6
    /// alternated runs each): p99 of paced puts during the import 641–2,712 µs with 2 threads,
    /// 304–587 µs with 1; the import 1.2 → 1.45 s.
    pub fn worker_threads(&self) -> usize {
        if !self.idle {
            return self.threads;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        idle_threads(self.threads, cores)
    }
}

/// `threads`, at most all of `cores` but one, at least one.
fn idle_threads(threads: usize, cores: usize) -> usize {
    threads.min(cores.saturating_sub(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_import_leaves_a_core_free() {
        assert_eq!(idle_threads(8, 2), 1);
        assert_eq!(idle_threads(2, 2), 1);
        assert_eq!(idle_threads(4, 16), 4);
        assert_eq!(idle_threads(16, 4), 3);
        assert_eq!(idle_threads(3, 1), 1);
        let o = ImportOptions {
            threads: 64,
            idle: true,
            ..ImportOptions::default()
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(o.worker_threads(), (cores - 1).max(1));
        let busy = ImportOptions { idle: false, ..o };
        assert_eq!(busy.worker_threads(), 64);
    }
}
