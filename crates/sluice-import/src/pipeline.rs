//! The import pipeline ([`Import::run`]), as numbered steps; each step is one function, and any
//! failure before step 6 leaves the Db exactly as it was (only the import's temporary
//! directory is touched, and it is removed on every exit path; a killed import leaves a
//! `sluice-import-*` directory that [`remove_leftovers`] deletes at the next open).
//!
//! 1. `bind_table`: the schema's table against the Db's catalog (same
//!    id and identical definition for an existing table; the next free id for a new one).
//! 2. `prepare`: temporary directory, whether the table already has rows,
//!    the first hidden row id.
//! 3. `parse_and_sort`: a reader thread cuts each file into
//!    record-aligned chunks; `threads` workers parse, encode and sort each chunk; this thread
//!    takes chunk outputs back *in input order* and, per index, either streams them straight
//!    into final SSTs (while every chunk sorts after the previous one: sorted input) or buffers
//!    them under the memory budget, spilling sorted runs when it is full.
//! 4. `merge`: per index, primary first, a k-way merge of runs and buffers into
//!    final SSTs cut at the target size, resolving duplicates (`--on-duplicate`) and checking
//!    unique indexes; rows dropped from the primary index take their secondary entries with them.
//! 5. `write_catalog`: the table definition in an SST of its own.
//! 6. `ingest`: every file in **one** `Db::ingest` (hard links): the import is
//!    visible entirely or not at all.
//!
//! Memory: final files are also cut at `memory / 128` entries (the filter builder holds 8 bytes
//! per key). The budget covers chunks in flight (`threads + 2` chunks of `memory / 64` bytes,
//! counted at 4× their size: input buffer plus encoded output) and the sort buffers (the rest,
//! at least a quarter of the budget); merge and writers use a few MiB on top (a read block per
//! run, one SST builder per index with its index and filter blocks).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use sluice::{Db, IngestOptions, ReadOptions, SstFileInfo, SstWriter, TableOptions, Writeback};

use crate::catalog;
use crate::input::{open_input, Boundaries, Chunker, CsvScanner, Format, LineScanner};
use crate::keycode::{decode_column, encode_prefix, encode_value, prefix, prefix_successor};
use crate::merge::{
    merge_fan_in, open_files_for_runs, reduce_runs, sample_entries, split_ranges, write_run,
    DeletionSource, FinalWriter, MemSource, Merger, RunSource, Source, DELETION_SRC,
};
use crate::parse::{parse_chunk, Chunk, ChunkOutput, Entries, FieldMap, ParseConfig, LINE_BITS};
use crate::positions::StreamedPositions;
use crate::progress::{Counters, Phase, ProgressMode, Reporter};
use crate::row::decode_row;
use crate::schema::{parse_schema, Layout, TableDef, PRIMARY_INDEX_ID};
use crate::types::{format_text, ColumnType, Value};
use crate::ImportError;

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
    /// Storage layout of the table (default: the schema's `WITH (layout = ...)`, else row). An
    /// existing table keeps its layout: a different one is an error.
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
    /// that priority too and no journal commit every 8 MiB stalls other writers' appends. It
    /// can starve the import on a machine that is never idle. Takes precedence over `nice`.
    pub idle: bool,
    /// An index with at least this many bytes to merge is merged on `threads` threads, each
    /// writing the final files of a disjoint key range (default 32 MiB; a columnar table's
    /// rows and unique indexes merge on one thread). Tests set 0 to split every merge.
    pub parallel_merge_min_bytes: u64,
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
            parallel_merge_min_bytes: 32 << 20,
        }
    }
}

/// Sets the calling thread's nice value (Linux: per thread, inherited by the threads it
/// starts afterwards).
#[cfg(target_os = "linux")]
fn set_thread_nice(nice: i32) -> std::io::Result<()> {
    rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice)
        .map_err(std::io::Error::from)
}

/// Puts the calling thread under `SCHED_IDLE` (Linux: per thread, inherited by the threads it
/// starts afterwards).
#[cfg(target_os = "linux")]
fn set_thread_idle() -> std::io::Result<()> {
    use thread_priority::unix::{
        set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
        ThreadSchedulePolicy,
    };
    let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
    match set_thread_priority_and_policy(
        thread_native_id(),
        thread_priority::ThreadPriority::Min,
        idle,
    ) {
        Ok(()) => Ok(()),
        // The crate sets the policy, then the nice value (to 0), which an unprivileged thread
        // with a higher inherited nice may not do (EACCES); nice means nothing under
        // SCHED_IDLE, so the policy is what counts.
        Err(_) if thread_priority::unix::thread_schedule_policy().ok() == Some(idle) => Ok(()),
        Err(e) => Err(std::io::Error::other(format!("{e:?}"))),
    }
}

#[cfg(not(target_os = "linux"))]
fn set_thread_idle() -> std::io::Result<()> {
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn set_thread_nice(_nice: i32) -> std::io::Result<()> {
    Ok(())
}

/// Memory of an importing process outside the pipeline's own budget (binary, Db, allocator).
const PROCESS_BASELINE: usize = 24 << 20;

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
}

/// An import: a schema, input files and options; [`Import::run`] loads them into a Db.
///
/// ```no_run
/// use sluice_import::{Import, ImportOptions};
/// let db = sluice_import::open_db("/tmp/db", true)?;
/// let import = Import::new(
///     "CREATE TABLE t (id INT PRIMARY KEY, name TEXT);",
///     vec!["t.csv".into()],
///     ImportOptions { header: true, ..ImportOptions::default() },
/// )?;
/// let summary = import.run(&db)?;
/// println!("{} rows", summary.rows);
/// # Ok::<(), sluice_import::ImportError>(())
/// ```
#[derive(Debug)]
pub struct Import {
    tables: Vec<TableDef>,
    files: Vec<PathBuf>,
    opts: ImportOptions,
}

/// Live temporary directories of this process (never removed as leftovers).
fn live_dirs() -> &'static Mutex<HashSet<PathBuf>> {
    static LIVE: std::sync::OnceLock<Mutex<HashSet<PathBuf>>> = std::sync::OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Name prefix of import temporary directories.
pub const TMP_PREFIX: &str = "sluice-import-";

/// Set (under `live_dirs`' lock) by [`remove_tmp_dirs_for_exit`]: no temporary directory is
/// made afterwards.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Removes the temporary directories of every import running in this process, for a process
/// about to exit on a signal (SIGINT, SIGTERM: an interrupted import leaves no
/// `sluice-import-*` behind); returns how many it removed. No import of this process can make
/// a temporary directory afterwards (each is made and registered under the same lock), so
/// call it only on the way out. The Db needs nothing: until its one ingest commits an import
/// has not changed it, and an interrupted ingest is recovered like a crash.
pub fn remove_tmp_dirs_for_exit() -> usize {
    let live = live_dirs().lock().unwrap_or_else(|e| e.into_inner());
    EXITING.store(true, Ordering::SeqCst);
    let mut n = 0;
    for path in live.iter() {
        // Workers may still be writing runs into it: retry until the directory is gone (a file
        // created during a pass makes that pass fail; once the directory is gone none can be).
        for _ in 0..100 {
            match std::fs::remove_dir_all(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => continue,
                _ => break,
            }
        }
        n += usize::from(!path.exists());
    }
    n
}

/// Removes `sluice-import-*` directories an earlier, killed import left in `dir` (the Db
/// directory): the Db lock held by the caller proves no other process is importing into it.
pub fn remove_leftovers(dir: &Path) -> usize {
    let live = live_dirs().lock().map(|l| l.clone()).unwrap_or_default();
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            let is_ours = e.file_name().to_string_lossy().starts_with(TMP_PREFIX);
            if is_ours && p.is_dir() && !live.contains(&p) && std::fs::remove_dir_all(&p).is_ok() {
                n += 1;
            }
        }
    }
    n
}

/// Opens (or creates) a Db with its persisted options (defaults for a new one) and removes
/// what a killed import left in it.
pub fn open_db(dir: impl AsRef<Path>, create: bool) -> Result<Db, ImportError> {
    let dir = dir.as_ref();
    let base = sluice::Options {
        create_if_missing: create,
        ..sluice::Options::default()
    };
    let opts = if dir.join("CURRENT").exists() {
        sluice::Options::load_latest(dir, base)?
    } else {
        base
    };
    let db = Db::open(dir, opts)?;
    remove_leftovers(dir);
    Ok(db)
}

/// Opens an existing Db read-only (for scans and gets beside a writer): nothing is written or
/// removed.
pub fn open_db_read_only(dir: impl AsRef<Path>) -> Result<Db, ImportError> {
    let dir = dir.as_ref();
    if !dir.join("CURRENT").exists() {
        let contents = sluice::DirContents::inspect(&sluice::fs::RealFs, dir)?;
        if let Some(why) = contents.why_not_a_db(dir) {
            return Err(ImportError::Usage(why));
        }
    }
    let opts = sluice::Options::load_latest(dir, sluice::Options::default())?;
    Ok(Db::open_read_only(dir, opts)?)
}

/// The import's temporary directory, removed on drop.
struct TmpDir {
    path: PathBuf,
}

impl TmpDir {
    fn create(parent: &Path) -> Result<TmpDir, ImportError> {
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{TMP_PREFIX}{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let path = parent.join(name);
        std::fs::create_dir_all(parent).map_err(|e| ImportError::io(parent, e))?;
        // Made and registered under one lock: `remove_tmp_dirs_for_exit` sees it, or stops it.
        let mut live = live_dirs().lock().unwrap_or_else(|e| e.into_inner());
        if EXITING.load(Ordering::SeqCst) {
            return Err(ImportError::Usage("the process is exiting".into()));
        }
        // Created new (never an existing directory) and private: the import later ingests the
        // files in it without re-verifying their keys, so no other user may place or swap one.
        let mut b = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&path).map_err(|e| ImportError::io(&path, e))?;
        live.insert(path.clone());
        Ok(TmpDir { path })
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        if let Ok(mut l) = live_dirs().lock() {
            l.remove(&self.path);
        }
    }
}

/// Steps 1-5 done ([`Import::stage`]): what step 6 needs. The plan holds the temporary
/// directory, removed when this is dropped (after the ingest).
struct Staged {
    t0: Instant,
    counters: Arc<Counters>,
    reporter: Reporter,
    plan: Plan,
    indexes: Vec<IndexState>,
    catalog_file: Option<SstFileInfo>,
    rows: u64,
    rejected: u64,
    dropped: u64,
    runs_spilled: u64,
    t_parse: f64,
    t_merge: f64,
}

/// Per-run state shared by the steps.
struct Plan {
    table: TableDef,
    created: bool,
    tmp: TmpDir,
    existing_rows: bool,
    rowid_base: i64,
    /// Per input file.
    formats: Vec<Format>,
    chunk_size: usize,
    in_flight: usize,
    sort_budget: usize,
    /// Bytes for the merge's read blocks (one per open run).
    merge_memory: usize,
    file_names: Vec<String>,
    pool: Arc<crate::parse::BufferPool>,
    max_file_entries: u64,
}

/// One index's place in parse+sort and merge.
struct IndexState {
    name: String,
    /// Position in [`TableDef::indexes`] + 1 (0: primary).
    slot: usize,
    unique_cols: Option<usize>,
    streaming: bool,
    last_key: Option<Vec<u8>>,
    writer: Option<FinalWriter>,
    /// Run files and whether their keys carry a source position.
    runs: Vec<(PathBuf, bool)>,
    mem: Vec<Entries>,
    mem_bytes: usize,
    streamed_all: bool,
    finals: Vec<SstFileInfo>,
}

/// Shared state of the emit functions (duplicates, suppressions, rejects).
struct EmitCtx<'a> {
    db: &'a Db,
    table: &'a TableDef,
    opts: &'a ImportOptions,
    files: &'a [String],
    existing_rows: bool,
    /// Per secondary slot: keys to drop (count), from rows the primary index dropped.
    suppress: Vec<HashMap<Vec<u8>, u32>>,
    /// Per secondary slot: keys of replaced existing rows to delete.
    deletions: Vec<Vec<Vec<u8>>>,
    /// The deletions (sorted) of the secondary index being merged (taken out of `deletions`).
    merging_deletions: Arc<Vec<Vec<u8>>>,
    rejects: Option<std::io::BufWriter<std::fs::File>>,
    /// A parallel merge worker's rejects, replayed in key-range order by the caller.
    reject_log: Option<Vec<(String, Vec<u8>)>>,
    rejected: u64,
    dropped: u64,
    rows: u64,
    first_error: Option<String>,
    /// Per slot: the last unique key written, the length of its unique prefix and its row's
    /// source position.
    last_unique: Vec<Option<(Vec<u8>, usize, u64)>>,
    /// Per slot: the positions of what it streamed before the input turned out unsorted.
    streamed: Vec<Option<Arc<StreamedPositions>>>,
}

impl Import {
    /// Parses the schema; checks the files and options.
    pub fn new(
        schema_sql: &str,
        files: Vec<PathBuf>,
        opts: ImportOptions,
    ) -> Result<Import, ImportError> {
        let tables = parse_schema(schema_sql).map_err(ImportError::Schema)?;
        if opts.threads == 0 {
            return Err(ImportError::Usage("--threads must be at least 1".into()));
        }
        if opts.nice.is_some_and(|n| !(0..=19).contains(&n)) {
            return Err(ImportError::Usage("--nice must be within 0..=19".into()));
        }
        if opts.memory < (8 << 20) {
            return Err(ImportError::Usage("--memory must be at least 8 MiB".into()));
        }
        if files.is_empty() {
            return Err(ImportError::Usage("no input files".into()));
        }
        for f in &files {
            match std::fs::metadata(f) {
                Ok(m) if m.is_dir() => {
                    return Err(ImportError::Usage(format!(
                        "{}: is a directory (name the files in it, e.g. {}/*.csv)",
                        f.display(),
                        f.display()
                    )))
                }
                Ok(_) => {}
                Err(e) => return Err(ImportError::io(f, e)),
            }
        }
        Ok(Import {
            tables,
            files,
            opts,
        })
    }

    /// Runs the import into `db` (see the module documentation for the steps).
    pub fn run(&self, db: &Db) -> Result<Summary, ImportError> {
        if self.opts.nice.is_none() && !self.opts.idle {
            return self.run_here(db);
        }
        // Steps 1-5 at the asked priority; the ingest (step 6) on the caller's thread: it holds
        // Db locks (the MANIFEST, the write queue) that the Db's other users wait on, and a
        // SCHED_IDLE thread on a busy machine could be starved while holding them.
        let staged = std::thread::scope(|s| {
            s.spawn(|| {
                if self.opts.idle {
                    set_thread_idle().map_err(|e| {
                        ImportError::Usage(format!("--idle: cannot set the policy: {e}"))
                    })?;
                } else if let Some(nice) = self.opts.nice {
                    set_thread_nice(nice).map_err(|e| {
                        ImportError::Usage(format!("--nice {nice}: cannot set the priority: {e}"))
                    })?;
                }
                self.stage(db)
            })
            .join()
            .unwrap_or_else(|_| Err(ImportError::Usage("the import thread panicked".into())))
        })?;
        self.install(db, staged)
    }

    /// [`Import::run`] on the calling thread.
    fn run_here(&self, db: &Db) -> Result<Summary, ImportError> {
        let staged = self.stage(db)?;
        self.install(db, staged)
    }

    /// Steps 1 to 5: every file written, nothing in the Db yet.
    fn stage(&self, db: &Db) -> Result<Staged, ImportError> {
        let t0 = Instant::now();
        let counters = Arc::new(Counters::default());
        let total: u64 = self
            .files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        counters.bytes_total.store(total, Ordering::Relaxed);
        let reporter = Reporter::start(self.opts.progress, Arc::clone(&counters));
        // Steps 1 and 2.
        let (table, created) = self.bind_table(db)?;
        let plan = self.prepare(db, table, created)?;
        let mut ctx = EmitCtx::new(db, &plan, &self.opts)?;
        let mut indexes = self.index_states(&plan);
        // Step 3.
        let runs_spilled = self.parse_and_sort(&plan, &counters, &mut ctx, &mut indexes)?;
        let t_parse = t0.elapsed().as_secs_f64();
        plan.pool.clear();
        // Step 4.
        counters.set_phase(Phase::Merge);
        self.merge(&plan, &counters, &mut ctx, &mut indexes)?;
        let t_merge = t0.elapsed().as_secs_f64() - t_parse;
        if let Some(w) = ctx.rejects.as_mut() {
            w.flush()
                .map_err(|e| ImportError::io(Path::new("rejects"), e))?;
        }
        let (rows, rejected, dropped) = (ctx.rows, ctx.rejected, ctx.dropped);
        drop(ctx);
        // Step 5.
        counters.set_phase(Phase::Ingest);
        let catalog_file = self.write_catalog(&plan)?;
        Ok(Staged {
            t0,
            counters,
            reporter,
            plan,
            indexes,
            catalog_file,
            rows,
            rejected,
            dropped,
            runs_spilled,
            t_parse,
            t_merge,
        })
    }

    /// Step 6, and the summary.
    fn install(&self, db: &Db, s: Staged) -> Result<Summary, ImportError> {
        let files = self.ingest(db, &s.indexes, s.catalog_file)?;
        s.counters.set_phase(Phase::Done);
        drop(s.reporter);
        let t_total = s.t0.elapsed().as_secs_f64();
        Ok(Summary {
            table: s.plan.table.name.clone(),
            created: s.plan.created,
            rows: s.rows,
            rejected: s.rejected,
            duplicates_dropped: s.dropped,
            bytes: s.counters.bytes_read.load(Ordering::Relaxed),
            runs_spilled: s.runs_spilled,
            runs_premerged: s.counters.runs_premerged.load(Ordering::Relaxed),
            streamed_indexes: s
                .indexes
                .iter()
                .filter(|i| i.streamed_all)
                .map(|i| i.name.clone())
                .collect(),
            parse_sort_secs: s.t_parse,
            merge_secs: s.t_merge,
            ingest_secs: t_total - s.t_parse - s.t_merge,
            total_secs: t_total,
            files,
        })
    }

    /// Step 1.
    fn bind_table(&self, db: &Db) -> Result<(TableDef, bool), ImportError> {
        let mut def = catalog::choose(&self.tables, self.opts.table.as_deref())?;
        if let Some(l) = self.opts.layout {
            def.layout = l;
        }
        let existing = catalog::load(db)?;
        catalog::bind(&existing, def)
    }

    /// Step 2.
    fn prepare(&self, db: &Db, table: TableDef, created: bool) -> Result<Plan, ImportError> {
        let parent = self
            .opts
            .tmp_dir
            .clone()
            .unwrap_or_else(|| db.path().to_path_buf());
        let tmp = TmpDir::create(&parent)?;
        let p = prefix(table.id, PRIMARY_INDEX_ID);
        let mut it = db.iter(ReadOptions {
            snapshot: None,
            lower_bound: Some(p.clone()),
            upper_bound: prefix_successor(&p),
        })?;
        it.seek_to_first();
        let existing_rows = it.valid();
        let mut rowid_base = 0i64;
        if existing_rows && table.has_rowid() {
            it.seek_to_last();
            if it.valid() {
                let mut k = &it.key()[8..];
                if let Ok(Value::Int(v)) = decode_column(&mut k, &ColumnType::BigInt) {
                    rowid_base = v.saturating_add(1);
                }
            }
        }
        it.status()?;
        drop(it);
        if existing_rows
            && table.layout == Layout::Columnar
            && self.opts.on_duplicate == OnDuplicate::Last
        {
            // Replacing a stored columnar row would leave the old cells of the columns the new
            // row has NULL (cells are written for non-NULL values only): refuse rather than
            // bring old values back.
            return Err(ImportError::Usage(format!(
                "--on-duplicate last is not supported yet for table {} (columnar layout) once it \
                 holds rows: a replaced row's NULL columns would keep their old cells",
                table.name
            )));
        }
        // Each file's own format (from its extension) unless one is given for all.
        let formats = self
            .files
            .iter()
            .map(|f| self.opts.format.unwrap_or_else(|| Format::from_path(f)))
            .collect();
        // The budget is the process's: leave room for what is there anyway (code, the open Db,
        // allocator slack), measured at 10-20 MiB.
        let memory = usize::try_from(self.opts.memory).unwrap_or(usize::MAX);
        let memory = memory.saturating_sub(PROCESS_BASELINE).max(memory / 2);
        let chunk_size = self
            .opts
            .chunk_size
            .unwrap_or((memory / 64).clamp(64 << 10, 4 << 20));
        let in_flight = self.opts.threads + 2;
        // A chunk in flight costs its input buffer (up to 2× its size in capacity) plus its
        // encoded output (≈ 2.5× for narrow rows with one secondary index).
        let chunks_reserved = in_flight * chunk_size * 4 + (8 << 20);
        let mut reserved = chunks_reserved;
        if table.layout == Layout::Columnar {
            // The merge's cell writers (their own buffers, beside the sort buffers it drains).
            reserved += crate::merge::cell_writers_memory(table.columns.len(), self.opts.threads);
        }
        // Sort buffers are freed and allocated again by several threads: the allocator keeps
        // some of what they free (per-thread arenas, fragmentation). A 4 GB import under
        // `--memory 256M` peaked at 281 MiB with the whole remainder as sort budget; 85% of
        // it keeps the peak under the budget.
        let sort_budget = (memory.saturating_sub(reserved) / 100 * 85).max(memory / 4);
        // The chunks' buffers are freed before the merge (step 4): their share of the budget
        // holds the merge's read blocks (see `merge::reduce_runs`).
        let merge_memory = chunks_reserved;
        Ok(Plan {
            table,
            created,
            tmp,
            existing_rows,
            rowid_base,
            formats,
            chunk_size,
            in_flight,
            sort_budget,
            merge_memory,
            pool: Arc::new(crate::parse::BufferPool::new(chunks_reserved)),
            // Filter hashes (8 bytes a key, doubled by vector growth) stay under memory / 8.
            max_file_entries: (memory as u64 / 8 / 16).max(1 << 16),
            file_names: self.files.iter().map(|f| f.display().to_string()).collect(),
        })
    }

    fn index_states(&self, plan: &Plan) -> Vec<IndexState> {
        let t = &plan.table;
        // Secondary entries of replaced rows become deletions, merged in step 4: such
        // indexes cannot stream.
        let can_stream_secondary =
            !(plan.existing_rows && self.opts.on_duplicate == OnDuplicate::Last);
        let mut v = vec![IndexState::new("primary".into(), 0, None, true)];
        for (n, idx) in t.indexes.iter().enumerate() {
            let unique = idx.unique.then_some(idx.columns.len());
            v.push(IndexState::new(
                idx.name.clone(),
                n + 1,
                unique,
                can_stream_secondary,
            ));
        }
        v
    }

    fn final_options(&self) -> TableOptions {
        TableOptions::default()
    }

    /// Step 3. Returns the number of runs spilled.
    fn parse_and_sort(
        &self,
        plan: &Plan,
        counters: &Arc<Counters>,
        ctx: &mut EmitCtx<'_>,
        indexes: &mut [IndexState],
    ) -> Result<u64, ImportError> {
        // One parse configuration per format (indexed by `Format as usize`).
        let cfgs: Vec<ParseConfig> = [Format::Csv, Format::Tsv, Format::Jsonl]
            .into_iter()
            .map(|format| ParseConfig {
                table: plan.table.clone(),
                format,
                delimiter: self.opts.delimiter.unwrap_or(match format {
                    Format::Tsv => b'\t',
                    _ => b',',
                }),
                quote: self.opts.quote,
                null: self.opts.null.as_ref().map(|s| s.as_bytes().to_vec()),
                files: plan.file_names.clone(),
                rowid_base: plan.rowid_base,
                pool: Some(Arc::clone(&plan.pool)),
            })
            .collect();
        let abort = AtomicBool::new(false);
        let file_counter = Arc::new(AtomicU64::new(0));
        let mut runs = 0u64;
        let (chunk_tx, chunk_rx) = mpsc::sync_channel::<Chunk>(self.opts.threads);
        let chunk_rx = Mutex::new(chunk_rx);
        std::thread::scope(|s| -> Result<(), ImportError> {
            let (out_tx, out_rx) = mpsc::channel::<Result<ChunkOutput, ImportError>>();
            let (permit_tx, permit_rx) = mpsc::sync_channel::<()>(plan.in_flight);
            for _ in 0..plan.in_flight {
                let _ = permit_tx.send(());
            }
            {
                let out_tx = out_tx.clone();
                let (cfgs, abort, counters) = (&cfgs, &abort, counters);
                s.spawn(move || {
                    if let Err(e) =
                        self.read_files(plan, cfgs, chunk_tx, &permit_rx, abort, counters)
                    {
                        let _ = out_tx.send(Err(e));
                    }
                });
            }
            for _ in 0..self.opts.threads {
                let out_tx = out_tx.clone();
                let (cfgs, chunk_rx) = (&cfgs, &chunk_rx);
                s.spawn(move || loop {
                    let next = chunk_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok(chunk)) = next else {
                        return;
                    };
                    let cfg = &cfgs[plan.formats[chunk.file] as usize];
                    if out_tx.send(Ok(parse_chunk(cfg, chunk))).is_err() {
                        return;
                    }
                });
            }
            drop(out_tx);
            let result = (|| {
                let mut pending: BTreeMap<u64, ChunkOutput> = BTreeMap::new();
                let mut next = 0u64;
                for msg in &out_rx {
                    let out = msg?;
                    pending.insert(out.seq, out);
                    while let Some(out) = pending.remove(&next) {
                        next += 1;
                        counters.rows.fetch_add(out.rows, Ordering::Relaxed);
                        self.take_chunk(plan, ctx, indexes, out, &file_counter, &mut runs)?;
                        let _ = permit_tx.send(());
                    }
                }
                Ok(())
            })();
            if result.is_err() {
                abort.store(true, Ordering::Relaxed);
            }
            drop(permit_tx);
            drop(out_rx);
            result
        })?;
        Ok(runs)
    }

    /// The reader thread: every file, chunk by chunk, in order.
    fn read_files(
        &self,
        plan: &Plan,
        cfgs: &[ParseConfig],
        tx: mpsc::SyncSender<Chunk>,
        permits: &mpsc::Receiver<()>,
        abort: &AtomicBool,
        counters: &Counters,
    ) -> Result<(), ImportError> {
        let mut seq = 0u64;
        let mut global = 0u64;
        // A permit is taken before a chunk is read and handed on with the chunk. The end of a
        // file (or an empty file) reads no chunk: its permit is kept for the next file's first
        // chunk rather than lost (losing one per file once deadlocked imports of more files
        // than there are permits).
        let mut permit = false;
        for (fi, path) in self.files.iter().enumerate() {
            let name = &plan.file_names[fi];
            let cfg = &cfgs[plan.formats[fi] as usize];
            let r = open_input(path, Arc::clone(&counters.bytes_read))
                .map_err(|e| ImportError::io(path, e))?;
            let bounds = match cfg.format {
                Format::Csv => Boundaries::Csv(CsvScanner::new(cfg.delimiter, cfg.quote)),
                _ => Boundaries::Lines(LineScanner::default()),
            };
            let mut chunker = Chunker::new(r, bounds, plan.chunk_size);
            let scan_err = |e: crate::input::ChunkError| match e {
                crate::input::ChunkError::Io(e) => ImportError::io(path, e),
                crate::input::ChunkError::Scan(s) => ImportError::BadInput(format!(
                    "{name}:{}: field {}: {}",
                    s.line, s.field, s.reason
                )),
            };
            let map = if self.opts.header && cfg.format != Format::Jsonl {
                match chunker.next_chunk(true).map_err(scan_err)? {
                    Some(h) => header_map(&plan.table, cfg, name, &h.data)?,
                    None => default_map(&plan.table),
                }
            } else {
                default_map(&plan.table)
            };
            let map = Arc::new(map);
            let mut file_len = 0u64;
            loop {
                if abort.load(Ordering::Relaxed) {
                    return Ok(());
                }
                if !permit {
                    if permits.recv().is_err() {
                        return Ok(());
                    }
                    permit = true;
                }
                let Some(raw) = chunker.next_chunk(false).map_err(scan_err)? else {
                    break;
                };
                permit = false;
                file_len = raw.file_offset + raw.data.len() as u64;
                let chunk = Chunk {
                    seq,
                    file: fi,
                    data: raw.data,
                    first_line: raw.first_line,
                    offset: global + raw.file_offset,
                    map: Arc::clone(&map),
                };
                seq += 1;
                if tx.send(chunk).is_err() {
                    return Ok(());
                }
            }
            global += file_len + 1;
        }
        Ok(())
    }

    /// Takes one chunk output, in input order.
    fn take_chunk(
        &self,
        plan: &Plan,
        ctx: &mut EmitCtx<'_>,
        indexes: &mut [IndexState],
        out: ChunkOutput,
        file_counter: &Arc<AtomicU64>,
        runs: &mut u64,
    ) -> Result<(), ImportError> {
        for r in out.rejects {
            ctx.reject(&r.message, &r.record)?;
        }
        ctx.rows += out.rows;
        for (slot, entries) in out.indexes.into_iter().enumerate() {
            let primary_streaming = indexes[0].streaming;
            let st = &mut indexes[slot];
            if entries.items.is_empty() {
                continue;
            }
            // Sorted input: this chunk's keys all follow the last key written.
            let in_order = st.streaming
                && (slot == 0 || primary_streaming)
                && entries.distinct()
                && st
                    .last_key
                    .as_deref()
                    .is_none_or(|last| entries.key(0) > last);
            if in_order {
                if st.writer.is_none() {
                    let mut w = self.final_writer(plan, slot, file_counter);
                    w.record_positions(plan.tmp.path.join(format!("positions-{slot}")))?;
                    st.writer = Some(w);
                }
                let w = st.writer.as_mut().expect("just set");
                for i in 0..entries.items.len() {
                    let (k, v, src) = (entries.key(i), entries.value(i), entries.items[i].3);
                    if slot == 0 {
                        ctx.emit_primary(w, k, &[(src, v)])?;
                    } else {
                        ctx.emit_secondary(w, slot, st.unique_cols, k, &[src], false)?;
                    }
                }
                st.last_key = Some(entries.key(entries.items.len() - 1).to_vec());
                continue;
            }
            if st.streaming {
                ctx.streamed[slot] = st.stop_streaming()?.map(Arc::new);
                // What was streamed is merged again: its unique values are checked again then.
                ctx.last_unique[slot] = None;
                if slot == 0 {
                    // Secondary entries may only stream while the primary does (duplicates
                    // found later must be able to take their secondary entries with them).
                    for (n, other) in indexes.iter_mut().enumerate().skip(1) {
                        if other.streaming {
                            ctx.streamed[n] = other.stop_streaming()?.map(Arc::new);
                            ctx.last_unique[n] = None;
                        }
                    }
                }
            }
            let st = &mut indexes[slot];
            st.mem_bytes += entries.memory();
            st.mem.push(entries);
        }
        let buffered: usize = indexes.iter().map(|i| i.mem_bytes).sum();
        if buffered > plan.sort_budget {
            for st in indexes.iter_mut() {
                if st.mem.is_empty() {
                    continue;
                }
                let sources: Vec<Box<dyn Source>> = std::mem::take(&mut st.mem)
                    .into_iter()
                    .map(|e| {
                        Box::new(MemSource::new(e, Some(Arc::clone(&plan.pool)))) as Box<dyn Source>
                    })
                    .collect();
                st.mem_bytes = 0;
                let n = file_counter.fetch_add(1, Ordering::Relaxed);
                let path = plan.tmp.path.join(format!("run-{}-{n:06}.sst", st.slot));
                if let Some(p) = write_run(&path, Merger::new(sources), self.writeback())? {
                    st.runs.push((p, true));
                    *runs += 1;
                }
            }
        }
        Ok(())
    }

    /// Step 4.
    fn merge(
        &self,
        plan: &Plan,
        counters: &Counters,
        ctx: &mut EmitCtx<'_>,
        indexes: &mut [IndexState],
    ) -> Result<(), ImportError> {
        let file_counter = Arc::new(AtomicU64::new(1 << 20));
        let columnar = plan.table.layout == Layout::Columnar;
        for (slot, st) in indexes.iter_mut().enumerate() {
            if slot == 0 && columnar {
                // Streamed rows are row-layout files: merged again (one sequential pass) into
                // the columnar writer below.
                if let Some(p) = st.stop_streaming()? {
                    ctx.streamed[slot] = Some(Arc::new(p));
                }
            }
            if st.streaming {
                if let Some(w) = st.writer.take() {
                    st.finals = w.finish()?;
                }
                st.streamed_all = true;
                continue;
            }
            let cell_opts = (slot == 0 && columnar).then(|| TableOptions {
                // Cells are read by scans (a cursor per column), rarely by point reads: no
                // filter, bigger blocks.
                bloom_bits_per_key: None,
                block_size: 16 << 10,
                ..self.final_options()
            });
            // Bounded fan-in: at most `fan_in` runs are read at once by each merge thread.
            let fan_in = merge_fan_in(plan.merge_memory, open_files_for_runs(), self.opts.threads);
            let tmp = &plan.tmp.path;
            let name = || {
                let n = file_counter.fetch_add(1, Ordering::Relaxed);
                tmp.join(format!("run-{slot}-{n:06}.sst"))
            };
            let merged = reduce_runs(
                &mut st.runs,
                fan_in,
                self.opts.threads,
                &name,
                self.writeback(),
            )?;
            counters.runs_premerged.fetch_add(merged, Ordering::Relaxed);
            let bytes = st.mem_bytes as u64
                + st.runs
                    .iter()
                    .filter_map(|(p, _)| std::fs::metadata(p).ok())
                    .map(|m| m.len())
                    .sum::<u64>();
            // The index's deletions (replaced rows' old entries), sorted: merged as a source and
            // kept beside the merge, where a unique check against stored rows skips them.
            ctx.merging_deletions = Arc::new(DeletionSource::sorted(std::mem::take(
                &mut ctx.deletions[slot],
            )));
            let parallel = self.opts.threads > 1
                && cell_opts.is_none()
                && st.unique_cols.is_none()
                && bytes >= self.opts.parallel_merge_min_bytes;
            st.finals = if parallel {
                self.merge_parallel(plan, counters, ctx, st, slot, &file_counter)?
            } else {
                let mut sources: Vec<Box<dyn Source>> = Vec::new();
                for (p, with_src) in &st.runs {
                    sources.push(Box::new(RunSource::open(p, *with_src)?));
                }
                for e in std::mem::take(&mut st.mem) {
                    sources.push(Box::new(MemSource::new(e, None)));
                }
                if !ctx.merging_deletions.is_empty() {
                    sources.push(Box::new(DeletionSource::range(
                        Arc::clone(&ctx.merging_deletions),
                        &sluice::IterBounds::default(),
                    )));
                }
                let mut w = self.final_writer(plan, slot, &file_counter);
                if let Some(cell_opts) = cell_opts {
                    w.split_columns(&plan.table, cell_opts, self.opts.threads);
                }
                merge_sources(ctx, counters, slot, st.unique_cols, sources, &mut w)?;
                w.finish()?
            };
            for (p, _) in st.runs.drain(..) {
                let _ = std::fs::remove_file(p);
            }
        }
        Ok(())
    }

    /// An import under `SCHED_IDLE` starts its files' writeback itself (see
    /// [`Writeback::Initiate`]): the kernel's work stays at its priority and no journal
    /// commit every 8 MiB stalls a serving workload's log appends.
    fn writeback(&self) -> Writeback {
        if self.opts.idle {
            Writeback::Initiate
        } else {
            Writeback::SyncThread
        }
    }

    fn final_writer(&self, plan: &Plan, slot: usize, counter: &Arc<AtomicU64>) -> FinalWriter {
        let mut w = FinalWriter::new(
            &plan.tmp.path,
            format!("final-{slot}"),
            self.opts.target_file_size,
            self.final_options(),
            Arc::clone(counter),
        );
        w.max_entries = plan.max_file_entries;
        w.writeback = self.writeback();
        w
    }

    /// Step 4 on `threads` threads for one index: its key space is cut into disjoint ranges
    /// of about equal bytes (at keys sampled from the sorted lists and the runs' index
    /// blocks), and each thread merges its range of every source into final files of its own,
    /// through a copy of the emit state. The copies' effects are then combined in key-range
    /// order — rejects replayed (so `--max-errors`, the rejects file and the error reported
    /// are those of a merge on one thread), counts summed, suppressions and deletions for the
    /// later indexes gathered. Entries are placed in a range by their key alone, so every
    /// duplicate group stays in one range.
    fn merge_parallel(
        &self,
        plan: &Plan,
        counters: &Counters,
        ctx: &mut EmitCtx<'_>,
        st: &mut IndexState,
        slot: usize,
        file_counter: &Arc<AtomicU64>,
    ) -> Result<Vec<SstFileInfo>, ImportError> {
        let mem: Vec<Arc<Entries>> = std::mem::take(&mut st.mem)
            .into_iter()
            .map(Arc::new)
            .collect();
        let mut samples = Vec::new();
        for e in &mem {
            sample_entries(e, 1024, &mut samples);
        }
        for (p, _) in &st.runs {
            // A separator (a run key with its source position, or a shortened one) is a cut
            // point like any other: entries go to a range by their key alone.
            let t = sluice::Table::open_path(p, &sluice::TableReadOptions::new())?;
            samples.extend(t.index_separators()?);
        }
        let dels = Arc::clone(&ctx.merging_deletions);
        let ranges = split_ranges(samples, self.opts.threads);
        let parts = ranges.len() as u64;
        let mut suppress: Vec<HashMap<Vec<u8>, u32>> = vec![HashMap::new(); ranges.len()];
        for (k, n) in std::mem::take(&mut ctx.suppress[slot]) {
            let i = ranges.partition_point(|r| r.upper.as_deref().is_some_and(|u| u <= &k[..]));
            suppress[i.min(ranges.len() - 1)].insert(k, n);
        }
        let runs = &st.runs;
        let unique_cols = st.unique_cols;
        let base = &*ctx;
        let results: Vec<_> = std::thread::scope(|sc| {
            let handles: Vec<_> = ranges
                .iter()
                .zip(suppress)
                .map(|(range, sup)| {
                    let mut wctx = base.worker(slot, sup);
                    let (mem, dels) = (&mem, &dels);
                    sc.spawn(move || {
                        let r = (|| -> Result<Vec<SstFileInfo>, ImportError> {
                            let mut sources: Vec<Box<dyn Source>> = Vec::new();
                            for (p, with_src) in runs {
                                sources.push(Box::new(RunSource::open_range(p, *with_src, range)?));
                            }
                            for e in mem {
                                sources.push(Box::new(MemSource::range(Arc::clone(e), range)));
                            }
                            if !dels.is_empty() {
                                sources
                                    .push(Box::new(DeletionSource::range(Arc::clone(dels), range)));
                            }
                            let mut w = self.final_writer(plan, slot, file_counter);
                            // The writers fill at once: together they keep one writer's
                            // bound on filter memory.
                            w.max_entries = (plan.max_file_entries / parts).max(1 << 12);
                            merge_sources(&mut wctx, counters, slot, unique_cols, sources, &mut w)?;
                            Ok(w.finish()?)
                        })();
                        (wctx, r)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let rows_before = ctx.rows;
        let mut finals = Vec::new();
        for joined in results {
            let Ok((w, r)) = joined else {
                return Err(ImportError::Db(sluice::Error::InvalidArgument(
                    "internal error: a merge thread panicked".into(),
                )));
            };
            for (msg, rec) in w.reject_log.unwrap_or_default() {
                ctx.reject(&msg, &rec)?;
            }
            ctx.rows -= rows_before - w.rows;
            ctx.dropped += w.dropped;
            for (n, sup) in w.suppress.into_iter().enumerate() {
                for (k, c) in sup {
                    *ctx.suppress[n].entry(k).or_insert(0) += c;
                }
            }
            for (n, d) in w.deletions.into_iter().enumerate() {
                ctx.deletions[n].extend(d);
            }
            finals.extend(r?);
        }
        Ok(finals)
    }

    /// Step 5: the catalog entry in a file of its own (only when the table is new).
    fn write_catalog(&self, plan: &Plan) -> Result<Option<SstFileInfo>, ImportError> {
        if !plan.created {
            return Ok(None);
        }
        let path = plan.tmp.path.join("catalog.sst");
        let mut w = SstWriter::create(&path, self.final_options())?;
        w.put(
            &catalog::table_key(&plan.table.name),
            &catalog::table_value(&plan.table),
        )?;
        Ok(Some(w.finish()?))
    }

    /// Step 6: one atomic ingest of every file, handed over by hard link.
    fn ingest(
        &self,
        db: &Db,
        indexes: &[IndexState],
        catalog_file: Option<SstFileInfo>,
    ) -> Result<Vec<FileSummary>, ImportError> {
        let mut paths = Vec::new();
        let mut names = Vec::new();
        for st in indexes {
            for f in &st.finals {
                paths.push(f.path.clone());
                names.push((st.name.clone(), f.entries, f.file_size));
            }
        }
        if let Some(c) = catalog_file {
            paths.push(c.path.clone());
            names.push(("catalog".to_string(), c.entries, c.file_size));
        }
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let placed = db.ingest(
            &paths,
            &IngestOptions {
                link_files: true,
                // The files were written just now by this import's SstWriters (keys in order,
                // unique, seqno 0, block checksums computed as written): not read again.
                verify_checksums: false,
                verify_keys: false,
                ..IngestOptions::default()
            },
        )?;
        Ok(names
            .into_iter()
            .zip(placed)
            .map(|((index, entries, bytes), p)| FileSummary {
                index,
                level: p.level,
                entries,
                bytes,
            })
            .collect())
    }
}

/// Step 4's loop: merges `sources` of index `slot` into `w` through `ctx`, a group of equal
/// keys at a time.
fn merge_sources(
    ctx: &mut EmitCtx<'_>,
    counters: &Counters,
    slot: usize,
    unique_cols: Option<usize>,
    sources: Vec<Box<dyn Source>>,
    w: &mut FinalWriter,
) -> Result<(), ImportError> {
    let mut m = Merger::new(sources);
    let mut key = Vec::new();
    let mut group: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut spare: Vec<Vec<u8>> = Vec::new();
    while let Some(s) = m.peek() {
        key.clear();
        key.extend_from_slice(s.key());
        spare.extend(group.drain(..).map(|(_, mut v)| {
            v.clear();
            v
        }));
        let mut deletion = false;
        while let Some(s) = m.peek() {
            if s.key() != key.as_slice() {
                break;
            }
            if s.src() == DELETION_SRC {
                deletion = true;
            } else {
                let mut v = spare.pop().unwrap_or_default();
                if slot == 0 {
                    v.extend_from_slice(s.value());
                }
                group.push((s.src(), v));
            }
            m.advance()?;
        }
        if slot == 0 {
            let rows: Vec<(u64, &[u8])> = group.iter().map(|(s, v)| (*s, v.as_slice())).collect();
            ctx.emit_primary(w, &key, &rows)?;
        } else {
            let srcs: Vec<u64> = group.iter().map(|g| g.0).collect();
            ctx.emit_secondary(w, slot, unique_cols, &key, &srcs, deletion)?;
        }
        counters.merged.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

fn default_map(t: &TableDef) -> FieldMap {
    FieldMap {
        fields: t.visible_columns().map(|(i, _)| i).collect(),
    }
}

fn header_map(
    t: &TableDef,
    cfg: &ParseConfig,
    file: &str,
    data: &[u8],
) -> Result<FieldMap, ImportError> {
    let mut line = data;
    while let Some((&c, r)) = line.split_last() {
        if c == b'\n' || c == b'\r' {
            line = r;
        } else {
            break;
        }
    }
    let names: Vec<String> = match cfg.format {
        Format::Csv => {
            let mut rdr = csv::ReaderBuilder::new()
                .has_headers(false)
                .delimiter(cfg.delimiter)
                .quote(cfg.quote.unwrap_or(b'"'))
                .quoting(cfg.quote.is_some())
                .from_reader(line);
            let mut rec = csv::ByteRecord::new();
            let _ = rdr.read_byte_record(&mut rec);
            rec.iter()
                .map(|f| String::from_utf8_lossy(f).trim().to_string())
                .collect()
        }
        _ => line
            .split(|c| *c == cfg.delimiter)
            .map(|f| String::from_utf8_lossy(f).trim().to_string())
            .collect(),
    };
    let mut fields = Vec::new();
    for n in &names {
        match t.column(n) {
            Some(i) if !t.columns[i].hidden && !fields.contains(&i) => fields.push(i),
            _ => {
                return Err(ImportError::BadInput(format!(
                    "{file}:1: header names column {n:?}, which table {} does not have (or names twice)",
                    t.name
                )))
            }
        }
    }
    for (i, c) in t.visible_columns() {
        if c.not_null && !fields.contains(&i) {
            return Err(ImportError::BadInput(format!(
                "{file}:1: header lacks NOT NULL column {}",
                c.name
            )));
        }
    }
    Ok(FieldMap { fields })
}

impl IndexState {
    fn new(name: String, slot: usize, unique_cols: Option<usize>, streaming: bool) -> Self {
        IndexState {
            name,
            slot,
            unique_cols,
            streaming,
            last_key: None,
            writer: None,
            runs: Vec::new(),
            mem: Vec::new(),
            mem_bytes: 0,
            streamed_all: false,
            finals: Vec::new(),
        }
    }

    /// Input out of order: what was streamed becomes a run of the merge.
    /// Turns what was streamed into runs (without source positions: the lookup of their
    /// positions is returned, for messages).
    fn stop_streaming(&mut self) -> Result<Option<StreamedPositions>, ImportError> {
        if !self.streaming {
            return Ok(None);
        }
        self.streaming = false;
        let Some(w) = self.writer.take() else {
            return Ok(None);
        };
        let (files, positions) = w.finish_streamed()?;
        for f in files {
            self.runs.push((f.path, false));
        }
        Ok(positions)
    }
}

impl<'a> EmitCtx<'a> {
    fn new(db: &'a Db, plan: &'a Plan, opts: &'a ImportOptions) -> Result<Self, ImportError> {
        let n = 1 + plan.table.indexes.len();
        let rejects = match &opts.rejects {
            Some(p) => Some(std::io::BufWriter::new(
                std::fs::File::create(p).map_err(|e| ImportError::io(p, e))?,
            )),
            None => None,
        };
        Ok(EmitCtx {
            db,
            table: &plan.table,
            opts,
            files: &plan.file_names,
            existing_rows: plan.existing_rows,
            suppress: vec![HashMap::new(); n],
            deletions: vec![Vec::new(); n],
            merging_deletions: Arc::default(),
            rejects,
            reject_log: None,
            rejected: 0,
            dropped: 0,
            rows: 0,
            first_error: None,
            last_unique: vec![None; n],
            streamed: vec![None; n],
        })
    }

    /// A parallel merge worker's copy (see [`Import::merge_parallel`]): the same counts to
    /// start from, `suppress` as index `slot`'s suppressions in its range, empty deletions,
    /// rejects logged for the caller instead of written.
    fn worker(&self, slot: usize, suppress: HashMap<Vec<u8>, u32>) -> EmitCtx<'a> {
        let n = self.suppress.len();
        let mut sup = vec![HashMap::new(); n];
        sup[slot] = suppress;
        EmitCtx {
            db: self.db,
            table: self.table,
            opts: self.opts,
            files: self.files,
            existing_rows: self.existing_rows,
            suppress: sup,
            deletions: vec![Vec::new(); n],
            merging_deletions: Arc::clone(&self.merging_deletions),
            rejects: None,
            reject_log: Some(Vec::new()),
            rejected: self.rejected,
            dropped: 0,
            rows: self.rows,
            first_error: self.first_error.clone(),
            last_unique: vec![None; n],
            streamed: self.streamed.clone(),
        }
    }

    /// The stored row value of primary key `key` (columnar: assembled from its cells).
    fn existing_row(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ImportError> {
        let Some(v) = self.db.get(key)? else {
            return Ok(None);
        };
        if self.table.layout != Layout::Columnar {
            return Ok(Some(v));
        }
        let ropts = ReadOptions {
            snapshot: None,
            lower_bound: None,
            upper_bound: None,
        };
        let vals = crate::query::columnar_row(self.db, self.table, key, &ropts)?;
        let mut out = Vec::new();
        crate::row::encode_row(&mut out, self.table.version, &vals);
        Ok(Some(out))
    }

    /// Counts a bad row; fails once more than `max_errors` were seen.
    fn reject(&mut self, message: &str, record: &[u8]) -> Result<(), ImportError> {
        if let Some(log) = self.reject_log.as_mut() {
            // The record only matters to a rejects file (bounded: a worker stops past
            // `max_errors`).
            let rec = if self.opts.rejects.is_some() {
                record.to_vec()
            } else {
                Vec::new()
            };
            log.push((message.to_string(), rec));
        }
        self.rejected += 1;
        if self.first_error.is_none() {
            self.first_error = Some(message.to_string());
        }
        if self.rejected > self.opts.max_errors {
            return Err(if self.opts.max_errors == 0 {
                ImportError::BadInput(message.to_string())
            } else {
                ImportError::TooManyErrors {
                    count: self.rejected,
                    last: message.to_string(),
                }
            });
        }
        if let Some(w) = self.rejects.as_mut() {
            let r = writeln!(w, "# {message}")
                .and_then(|_| w.write_all(record))
                .and_then(|_| w.write_all(b"\n"));
            r.map_err(|e| ImportError::io(Path::new("rejects"), e))?;
        }
        Ok(())
    }

    /// `file:line` of the entry `key` of index `slot` from source position `src`.
    fn where_(&self, slot: usize, key: &[u8], src: u64) -> String {
        let src = if src == 0 {
            // A row streamed before the input turned out unsorted: its position was recorded
            // beside the streamed files.
            match self.streamed[slot].as_ref().and_then(|p| p.lookup(key)) {
                Some(src) => src,
                None => return "an earlier row of the input".into(),
            }
        } else {
            src
        };
        let file = (src >> LINE_BITS) as usize;
        let line = src & ((1 << LINE_BITS) - 1);
        format!(
            "{}:{line}",
            self.files.get(file).map_or("?", |s| s.as_str())
        )
    }

    fn types(&self) -> Vec<ColumnType> {
        self.table.columns.iter().map(|c| c.ty).collect()
    }

    /// `(v1, v2)` of a primary key.
    fn show_pk(&self, key: &[u8]) -> String {
        let mut k = key.get(8..).unwrap_or(&[]);
        let mut parts = Vec::new();
        for &i in &self.table.primary_key {
            let ty = &self.table.columns[i].ty;
            match decode_column(&mut k, ty) {
                Ok(v) => {
                    let mut s = String::new();
                    format_text(&v, ty, &mut s);
                    parts.push(s);
                }
                Err(_) => parts.push("?".into()),
            }
        }
        format!("({})", parts.join(", "))
    }

    /// The row as a CSV record (for the rejects file).
    fn row_record(&self, value: &[u8]) -> Vec<u8> {
        let Ok(vals) = decode_row(value, &self.types()) else {
            return Vec::new();
        };
        let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
        let fields: Vec<String> = self
            .table
            .visible_columns()
            .map(|(i, c)| {
                let mut s = String::new();
                format_text(&vals[i], &c.ty, &mut s);
                s
            })
            .collect();
        let _ = w.write_record(&fields);
        let mut out = w.into_inner().unwrap_or_default();
        while out.last() == Some(&b'\n') {
            out.pop();
        }
        out
    }

    /// The secondary keys of a row (by slot), given its primary key.
    fn secondary_keys(&self, pk_key: &[u8], value: &[u8]) -> Vec<Vec<u8>> {
        let Ok(vals) = decode_row(value, &self.types()) else {
            return Vec::new();
        };
        let pk_suffix = pk_key.get(8..).unwrap_or(&[]);
        self.table
            .indexes
            .iter()
            .map(|idx| {
                let mut k = Vec::new();
                encode_prefix(&mut k, self.table.id, idx.id);
                for &i in &idx.columns {
                    encode_value(&mut k, &vals[i]);
                }
                k.extend_from_slice(pk_suffix);
                k
            })
            .collect()
    }

    fn suppress_row(&mut self, key: &[u8], value: &[u8]) {
        for (n, k) in self.secondary_keys(key, value).into_iter().enumerate() {
            *self.suppress[n + 1].entry(k).or_insert(0) += 1;
        }
    }

    /// One primary key with its rows from the input (in input order).
    fn emit_primary(
        &mut self,
        w: &mut FinalWriter,
        key: &[u8],
        group: &[(u64, &[u8])],
    ) -> Result<(), ImportError> {
        let Some(first) = group.first() else {
            return Ok(());
        };
        let keep = match self.opts.on_duplicate {
            OnDuplicate::Error | OnDuplicate::First => 0,
            OnDuplicate::Last => group.len() - 1,
        };
        for (i, (src, value)) in group.iter().enumerate() {
            if i == keep {
                continue;
            }
            self.suppress_row(key, value);
            self.rows -= 1;
            if self.opts.on_duplicate == OnDuplicate::Error {
                let msg = format!(
                    "{}: duplicate primary key {} (also at {})",
                    self.where_(0, key, *src),
                    self.show_pk(key),
                    self.where_(0, key, first.0)
                );
                let rec = self.row_record(value);
                self.reject(&msg, &rec)?;
            } else {
                self.dropped += 1;
            }
        }
        let (src, value) = &group[keep];
        // src 0: a streamed row merged again, already checked against the table.
        if self.existing_rows && *src != 0 {
            if let Some(old) = self.existing_row(key)? {
                match self.opts.on_duplicate {
                    OnDuplicate::Error => {
                        self.suppress_row(key, value);
                        self.rows -= 1;
                        let msg = format!(
                            "{}: duplicate primary key {}: already in table {}",
                            self.where_(0, key, *src),
                            self.show_pk(key),
                            self.table.name
                        );
                        let rec = self.row_record(value);
                        return self.reject(&msg, &rec);
                    }
                    OnDuplicate::First => {
                        self.suppress_row(key, value);
                        self.rows -= 1;
                        self.dropped += 1;
                        return Ok(());
                    }
                    OnDuplicate::Last => {
                        let new_keys = self.secondary_keys(key, value);
                        for (n, k) in self.secondary_keys(key, &old).into_iter().enumerate() {
                            if new_keys.get(n) != Some(&k) {
                                self.deletions[n + 1].push(k);
                            }
                        }
                        self.dropped += 1;
                    }
                }
            }
        }
        w.put_from(key, value, *src)?;
        Ok(())
    }

    /// Length of the unique part (prefix + index columns) of a secondary key, or `None` when
    /// one of those columns is NULL (exempt from uniqueness).
    fn unique_prefix<'k>(&self, slot: usize, key: &'k [u8]) -> Option<&'k [u8]> {
        let idx = &self.table.indexes[slot - 1];
        let mut k = key.get(8..)?;
        for &i in &idx.columns {
            match decode_column(&mut k, &self.table.columns[i].ty) {
                Ok(Value::Null) | Err(_) => return None,
                Ok(_) => {}
            }
        }
        Some(&key[..key.len() - k.len()])
    }

    /// One secondary key: the rows at `srcs` carry it; `deletion`: an existing row did.
    fn emit_secondary(
        &mut self,
        w: &mut FinalWriter,
        slot: usize,
        unique: Option<usize>,
        key: &[u8],
        srcs: &[u64],
        deletion: bool,
    ) -> Result<(), ImportError> {
        let mut count = srcs.len() as u32;
        if let Some(s) = self.suppress[slot].get_mut(key) {
            let take = (*s).min(count);
            *s -= take;
            count -= take;
            if *s == 0 {
                self.suppress[slot].remove(key);
            }
        }
        if count == 0 {
            if deletion {
                w.delete(key)?;
            }
            return Ok(());
        }
        if unique.is_some() {
            if let Some(p) = self.unique_prefix(slot, key) {
                let idx_name = &self.table.indexes[slot - 1].name;
                let src = srcs.last().copied().unwrap_or(0);
                if let Some((last, last_len, last_src)) = &self.last_unique[slot] {
                    if &last[..*last_len] == p {
                        return Err(ImportError::BadInput(format!(
                            "{}: {} violates unique index {idx_name} (also at {})",
                            self.where_(slot, key, src),
                            self.show_unique_value(slot, p),
                            self.where_(slot, last, *last_src)
                        )));
                    }
                }
                if self.existing_rows {
                    self.check_unique_existing(slot, p, key, src)?;
                }
                self.last_unique[slot] = Some((key.to_vec(), p.len(), src));
            }
        }
        w.put_from(key, &[], srcs.last().copied().unwrap_or(0))?;
        Ok(())
    }

    fn show_pk_of_secondary(&self, key: &[u8], prefix_len: usize) -> String {
        let mut pk = prefix(self.table.id, PRIMARY_INDEX_ID);
        pk.extend_from_slice(&key[prefix_len..]);
        self.show_pk(&pk)
    }

    /// `column email: "a@x"` (or `columns (a, b): ("x", "y")`) of a unique prefix.
    fn show_unique_value(&self, slot: usize, p: &[u8]) -> String {
        let idx = &self.table.indexes[slot - 1];
        let mut k = p.get(8..).unwrap_or(&[]);
        let mut names = Vec::new();
        let mut vals = Vec::new();
        for &i in &idx.columns {
            let c = &self.table.columns[i];
            names.push(c.name.clone());
            let mut s = String::new();
            if let Ok(v) = decode_column(&mut k, &c.ty) {
                format_text(&v, &c.ty, &mut s);
            }
            vals.push(format!("{s:?}"));
        }
        if names.len() == 1 {
            format!("column {}: {}", names[0], vals[0])
        } else {
            format!("columns ({}): ({})", names.join(", "), vals.join(", "))
        }
    }

    fn check_unique_existing(
        &self,
        slot: usize,
        p: &[u8],
        key: &[u8],
        src: u64,
    ) -> Result<(), ImportError> {
        let mut it = self.db.iter(ReadOptions {
            snapshot: None,
            lower_bound: Some(p.to_vec()),
            upper_bound: prefix_successor(p),
        })?;
        it.seek_to_first();
        while it.valid() {
            let k = it.key();
            // An entry this import deletes (a replaced row's old value) is not a conflict.
            if k != key
                && self
                    .merging_deletions
                    .binary_search_by(|d| d.as_slice().cmp(k))
                    .is_err()
            {
                return Err(ImportError::BadInput(format!(
                    "{}: {} violates unique index {}: existing row {} has it",
                    self.where_(slot, key, src),
                    self.show_unique_value(slot, p),
                    self.table.indexes[slot - 1].name,
                    self.show_pk_of_secondary(k, p.len())
                )));
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }
}
