//! The import pipeline ([`Import::run`]), as numbered steps; each step is one function, and any
//! failure before step 6 leaves the Db exactly as it was (only the import's own directory is
//! touched). A file import works in a resumable directory (`sluice-resume-*`, see `checkpoint`)
//! that survives a crash, checkpointed during step 3, during step 4 (after final files and
//! after each index) and after step 5, so `ImportOptions::resume` continues from the last
//! checkpoint; it is removed when
//! the import finishes or fails on its data, kept (less its unfinished files) on an I/O error
//! such as a full disk (`space`). An Arrow-stream import works in a `sluice-import-*`
//! directory removed on every exit path (a killed one's by [`remove_leftovers`] at the next
//! open).
//!
//! 1. `bind_table`: the schema's table against the Db's catalog (same
//!    id and identical definition for an existing table; the next free id for a new one).
//! 2. `prepare`: whether the table already has rows, the first hidden row id, the work
//!    directory (a checkpoint in it adopted with `resume`, else discarded), the memory split.
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
//! Rooms, one per step: this file holds [`Import::run`] and its steps in order; `plan` (steps 1
//! and 2: the `Plan`, per-index state), `read_sort` (step 3), `merge` (step 4) with `merge/policy`
//! beside it (duplicates, unique indexes, rejects: the policy the merge applies) and
//! `merge/progress` (where a merge stands, for checkpoints inside it), `ingest`
//! (steps 5 and 6); `checkpoint` (checkpoints, their fingerprint, resuming), `space` (the
//! pre-flight estimate, a full disk); `options` (what the caller asks and gets back), `db`
//! (opening the Db, temporary directories), `priority` (nice, `SCHED_IDLE`).
//!
//! Memory: final files are also cut at `memory / 128` entries (the filter builder holds 8 bytes
//! per key). The budget covers chunks in flight (`threads + 2` chunks of `memory / 64` bytes,
//! counted at 4× their size: input buffer plus encoded output) and the sort buffers (the rest,
//! at least a quarter of the budget); merge and writers use a few MiB on top (a read block per
//! run, one SST builder per index with its index and filter blocks).

pub(crate) mod checkpoint;
pub(crate) mod commit;
pub(crate) mod db;
mod ingest;
pub(crate) mod merge;
mod options;
mod plan;
mod priority;
mod read_sort;
mod space;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use sluice::{Db, SstFileInfo};

use crate::pipeline::checkpoint::{Progress, Stage};
use crate::pipeline::merge::policy::EmitCtx;
use crate::pipeline::plan::{IndexState, Plan};
use crate::pipeline::priority::{set_thread_idle, set_thread_nice};
use crate::progress::{Counters, Phase, Reporter};
use crate::schema::{parse_schema, TableDef};
use crate::ImportError;

pub use crate::tmp_dirs::RESUME_PREFIX;
pub use crate::tmp_dirs::TMP_PREFIX;
pub use db::{
    imports_committed, open_db, open_db_read_only, open_db_with, remove_leftovers,
    remove_tmp_dirs_for_exit, stop_commits_for_exit,
};
pub use options::{default_memory, parse_size, FileSummary, ImportOptions, OnDuplicate, Summary};

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
    /// Record batches read after the files ([`Import::from_arrow`]), taken by the one run.
    arrow: ArrowSource,
    opts: ImportOptions,
    /// The resumable work directory of the run in progress (see `checkpoint`), for the
    /// cleanup after a failure.
    owned_dir: std::sync::Mutex<Option<PathBuf>>,
}

/// An Arrow stream waiting for its import's run, and the name its rows are placed in.
struct ArrowSource {
    stream: std::sync::Mutex<Option<crate::arrow_io::ArrowStream>>,
    name: Option<String>,
}

impl std::fmt::Debug for ArrowSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrowSource")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl std::ops::Deref for ArrowSource {
    type Target = std::sync::Mutex<Option<crate::arrow_io::ArrowStream>>;
    fn deref(&self) -> &Self::Target {
        &self.stream
    }
}

/// Steps 1-5 done ([`Import::stage`]): what step 6 needs. The plan holds the temporary
/// directory, removed when this is dropped (after the ingest).
pub(crate) struct Staged {
    t0: Instant,
    pub(crate) counters: Arc<Counters>,
    pub(crate) reporter: Reporter,
    pub(crate) plan: Plan,
    pub(crate) indexes: Vec<IndexState>,
    pub(crate) catalog_file: Option<SstFileInfo>,
    pub(crate) rows: u64,
    pub(crate) rejected: u64,
    pub(crate) dropped: u64,
    pub(crate) runs_spilled: u64,
    pub(crate) t_parse: f64,
    pub(crate) t_merge: f64,
}

impl Import {
    /// Parses the schema; checks the files and options.
    pub fn new(
        schema_sql: &str,
        files: Vec<PathBuf>,
        opts: ImportOptions,
    ) -> Result<Import, ImportError> {
        if files.is_empty() {
            return Err(ImportError::InvalidArgument("no input files".into()));
        }
        Self::with_sources(schema_sql, files, None, opts)
    }

    /// An import of the record batches of `stream` (columns matched to the table's by name,
    /// converted with the schema's types: see [`crate::arrow_io::values`]). `name` is how
    /// messages name the input (`arrow` if `None`); a row's place is its 1-based row number
    /// in the stream, and a bad row's message also names its batch and row in the batch.
    /// [`Import::run`] reads the stream once: a second run has no rows to import.
    pub fn from_arrow(
        schema_sql: &str,
        stream: crate::arrow_io::ArrowStream,
        name: Option<String>,
        opts: ImportOptions,
    ) -> Result<Import, ImportError> {
        Self::with_sources(schema_sql, Vec::new(), Some((stream, name)), opts)
    }

    fn with_sources(
        schema_sql: &str,
        files: Vec<PathBuf>,
        arrow: Option<(crate::arrow_io::ArrowStream, Option<String>)>,
        opts: ImportOptions,
    ) -> Result<Import, ImportError> {
        let tables = parse_schema(schema_sql).map_err(ImportError::Schema)?;
        if opts.format == Some(crate::Format::Arrow) {
            return Err(ImportError::InvalidOption {
                option: "format",
                reason:
                    "arrow is the format of an in-memory stream (Import::from_arrow), not of a file"
                        .into(),
            });
        }
        crate::parse::check_text_options(opts.delimiter, opts.quote)?;
        if opts.threads == 0 {
            return Err(ImportError::InvalidOption {
                option: "threads",
                reason: "must be at least 1".into(),
            });
        }
        if opts.nice.is_some_and(|n| !(0..=19).contains(&n)) {
            return Err(ImportError::InvalidOption {
                option: "nice",
                reason: "must be within 0..=19".into(),
            });
        }
        if opts.rewrite_dead.is_some_and(|d| !(d > 0.0 && d <= 1.0)) {
            return Err(ImportError::InvalidOption {
                option: "rewrite_dead",
                reason: "must be a share in (0, 1]".into(),
            });
        }
        if opts.memory < (8 << 20) {
            return Err(ImportError::InvalidOption {
                option: "memory",
                reason: "must be at least 8 MiB".into(),
            });
        }
        for f in &files {
            match std::fs::metadata(f) {
                Ok(m) if m.is_dir() => {
                    return Err(ImportError::InvalidArgument(format!(
                        "{}: is a directory (name the files in it, e.g. {}/*.csv)",
                        f.display(),
                        f.display()
                    )))
                }
                Ok(_) => {}
                Err(e) => return Err(ImportError::io(f, e)),
            }
        }
        let (stream, name) = match arrow {
            Some((s, n)) => (Some(s), Some(n.unwrap_or_else(|| "arrow".into()))),
            None => (None, None),
        };
        let mut opts = opts;
        opts.threads = opts.worker_threads();
        Ok(Import {
            tables,
            files,
            arrow: ArrowSource {
                stream: std::sync::Mutex::new(stream),
                name,
            },
            opts,
            owned_dir: std::sync::Mutex::new(None),
        })
    }

    /// Runs the import into `db` (see the module documentation for the steps).
    pub fn run(&self, db: &Db) -> Result<Summary, ImportError> {
        if let Some(rejects) = &self.opts.rejects {
            crate::pipeline::merge::policy::check_rejects_path(rejects, &self.files, db.path())?;
        }
        let mut s = self
            .run_prioritized(db)
            .map_err(|e| self.after_failure(e))?;
        // Not for an import asked to yield to other work (as `rewrite_after`): the merges
        // would run unpaced, at the caller's priority.
        if !self.opts.yields() {
            if let Ok(r) = crate::query::TableReader::open(db, Some(&s.table)) {
                match crate::pipeline::db::merge_small_table_files(db, r.table.id) {
                    Ok(n) => s.small_file_merges = n,
                    Err(e) => s.small_file_merge_error = Some(e.to_string()),
                }
            }
        }
        // After a failed merge the Db is poisoned: a rewrite could only fail the same way.
        if s.small_file_merge_error.is_none() {
            self.rewrite_after(db, &mut s);
        }
        Ok(s)
    }

    /// The row-group rewrite of [`ImportOptions::rewrite_dead`], once the import is done and
    /// has let go of its table's latch.
    fn rewrite_after(&self, db: &Db, s: &mut Summary) {
        let Some(min_dead) = self.opts.rewrite_dead else {
            return;
        };
        if self.opts.on_duplicate != OnDuplicate::Last || s.created {
            return;
        }
        // An import asked to yield to other work does not follow up with an unpaced rewrite
        // at the caller's priority (nor at its own: a batch holds the table's latch alone).
        if self.opts.yields() {
            return;
        }
        let r = crate::query::TableReader::open(db, Some(&s.table)).and_then(|r| {
            if r.table.layout != crate::schema::Layout::Columnar {
                return Ok(None);
            }
            r.rewrite_groups(min_dead, false).map(Some)
        });
        match r {
            Ok(r) => s.rewrite = r,
            Err(e) => s.rewrite_error = Some(e.to_string()),
        }
    }

    fn run_prioritized(&self, db: &Db) -> Result<Summary, ImportError> {
        if self.opts.nice.is_none() && !self.opts.idle {
            return self.run_here(db);
        }
        // Steps 1-5 at the asked priority; the ingest (step 6) on the caller's thread: it holds
        // Db locks (the MANIFEST, the write queue) that the Db's other users wait on, and a
        // SCHED_IDLE thread on a busy machine could be starved while holding them.
        let staged = std::thread::scope(|s| {
            s.spawn(|| {
                if self.opts.idle {
                    set_thread_idle().map_err(|e| ImportError::InvalidOption {
                        option: "idle",
                        reason: format!("cannot set the scheduling policy: {e}"),
                    })?;
                } else if let Some(nice) = self.opts.nice {
                    set_thread_nice(nice).map_err(|e| ImportError::InvalidOption {
                        option: "nice",
                        reason: format!("cannot set priority {nice}: {e}"),
                    })?;
                }
                self.stage(db)
            })
            .join()
            .unwrap_or_else(|_| Err(ImportError::Internal("the import thread panicked".into())))
        })?;
        self.install(db, staged)
    }

    /// [`Import::run`] on the calling thread.
    fn run_here(&self, db: &Db) -> Result<Summary, ImportError> {
        let staged = self.stage(db)?;
        self.install(db, staged)
    }

    /// Steps 1 to 5: every file written, nothing in the Db yet. A resumed import skips the
    /// steps (or the chunks of step 3, or the indexes and final files of step 4) its checkpoint
    /// covers.
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
        let mut indexes = self.index_states(&plan)?;
        let stage = plan.resume.as_ref().map(|r| r.stage);
        if let Some(r) = &plan.resume {
            ctx.restore(&plan.tmp.path, r)?;
            counters
                .runs_spilled
                .store(r.runs_spilled, Ordering::Relaxed);
            counters
                .runs_premerged
                .store(r.runs_premerged, Ordering::Relaxed);
            if r.stage != Stage::Parse {
                // All read by the run resumed.
                counters.bytes_read.store(total, Ordering::Relaxed);
            }
        }
        // Step 3.
        if stage.is_none_or(|s| s == Stage::Parse) {
            self.parse_and_sort(&plan, &counters, &mut ctx, &mut indexes)?;
        }
        let t_parse = t0.elapsed().as_secs_f64();
        plan.pool.clear();
        // Step 4.
        counters.set_phase(Phase::Merge);
        if stage != Some(Stage::Staged) {
            self.merge(&plan, &counters, &mut ctx, &mut indexes)?;
        }
        let t_merge = t0.elapsed().as_secs_f64() - t_parse;
        if let Some(w) = ctx.rejects.as_mut() {
            // Durable before the ingest commits: rejected rows are in neither place otherwise.
            let p = self
                .opts
                .rejects
                .clone()
                .unwrap_or_else(|| "rejects".into());
            w.flush().map_err(|e| ImportError::io(&p, e))?;
            crate::durable::sync_file(&w.get_ref().file, &p)?;
        }
        // Step 5.
        counters.set_phase(Phase::Ingest);
        let catalog_file = match plan
            .resume
            .as_ref()
            .filter(|_| stage == Some(Stage::Staged))
        {
            Some(r) => r
                .catalog
                .as_ref()
                .map(|c| c.restore(&plan.tmp.path))
                .transpose()?,
            None => {
                let c = self.write_catalog(&plan)?;
                let at = Progress {
                    stage: Stage::Staged,
                    next_chunk: 0,
                    next_slot: indexes.len(),
                    catalog: c.as_ref(),
                };
                self.checkpoint(&plan, &mut ctx, &mut indexes, at, &counters)?;
                c
            }
        };
        let (rows, rejected, dropped) = (ctx.rows, ctx.rejected, ctx.dropped);
        drop(ctx);
        Ok(Staged {
            t0,
            runs_spilled: counters.runs_spilled.load(Ordering::Relaxed),
            counters,
            reporter,
            plan,
            indexes,
            catalog_file,
            rows,
            rejected,
            dropped,
            t_parse,
            t_merge,
        })
    }

    /// Step 6, and the summary.
    fn install(&self, db: &Db, s: Staged) -> Result<Summary, ImportError> {
        // A signal's exit waits for the commit and for the checkpoint's removal after it, so
        // an import that says it committed leaves nothing that looks resumable.
        let files = self.ingest(db, &s.plan, &s.indexes, s.catalog_file, || {
            if s.plan.tmp.resumable {
                // Ingested: nothing is left to resume.
                self.owned_dir
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                let _ = std::fs::remove_dir_all(&s.plan.tmp.path);
            }
        })?;
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
            resumed: s.plan.resume.is_some(),
            rewrite: None,
            rewrite_error: None,
            small_file_merges: 0,
            small_file_merge_error: None,
        })
    }
}
