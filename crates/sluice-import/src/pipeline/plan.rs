//! Steps 1 and 2: the table bound to the Db's catalog, and the plan of the run (temporary
//! directory, memory split, formats, per-index state).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use sluice::{Db, FileWrites, SstFileInfo, TableOptions, Writeback};

use crate::catalog;
use crate::input::Format;
use crate::keycode::decode_column;
use crate::merge::FinalWriter;
use crate::parse::Entries;
use crate::pipeline::checkpoint::{self, Checkpointer, State};
use crate::pipeline::db::TmpDir;
use crate::pipeline::merge::progress::MergeProgress;
use crate::pipeline::options::{OnDuplicate, PROCESS_BASELINE};
use crate::pipeline::Import;
use crate::positions::StreamedPositions;
use crate::schema::{Layout, TableDef, PRIMARY_INDEX_ID};
use crate::types::{ColumnType, Value};
use crate::ImportError;

/// Per-run state shared by the steps.
pub(crate) struct Plan {
    pub(crate) table: TableDef,
    /// Columnar: the row group ids the merge holds (released when the plan is dropped, after
    /// the ingest).
    pub(crate) group_ids: std::sync::Mutex<Option<crate::chunk::GroupIds>>,
    /// Columnar: the table's latch, held shared until the plan is dropped (after the ingest),
    /// so that no group rewrite moves a stored row whose position the merge has read.
    pub(crate) _latch: Option<crate::chunk::TableLatch>,
    pub(crate) created: bool,
    /// The Db as the import found it, checked at the commit (`commit`).
    pub(crate) baseline: super::commit::Baseline,
    pub(crate) tmp: TmpDir,
    pub(crate) existing_rows: bool,
    pub(crate) rowid_base: i64,
    /// Per input file.
    pub(crate) formats: Vec<Format>,
    pub(crate) chunk_size: usize,
    pub(crate) in_flight: usize,
    pub(crate) sort_budget: usize,
    /// Bytes for the merge's read blocks (one per open run).
    pub(crate) merge_memory: usize,
    pub(crate) file_names: Vec<String>,
    pub(crate) pool: Arc<crate::parse::BufferPool>,
    pub(crate) max_file_entries: u64,
    /// Checkpoints (file imports; `None` for an Arrow stream, which cannot be read again).
    pub(crate) ck: Option<Checkpointer>,
    /// The checkpoint this run resumes from.
    pub(crate) resume: Option<State>,
    /// Numbers of the files step 3 writes (runs, streamed files) and of those step 4 writes:
    /// restored on resume, so no new file takes the name of one a checkpoint names.
    pub(crate) parse_files: Arc<AtomicU64>,
    pub(crate) merge_files: Arc<AtomicU64>,
}

/// One index's place in parse+sort and merge.
pub(crate) struct IndexState {
    pub(crate) name: String,
    /// Position in [`TableDef::indexes`] + 1 (0: primary).
    pub(crate) slot: usize,
    pub(crate) unique_cols: Option<usize>,
    pub(crate) streaming: bool,
    pub(crate) last_key: Option<Vec<u8>>,
    pub(crate) writer: Option<FinalWriter>,
    /// Run files and whether their keys carry a source position.
    pub(crate) runs: Vec<(PathBuf, bool)>,
    pub(crate) mem: Vec<Entries>,
    pub(crate) mem_bytes: usize,
    pub(crate) streamed_all: bool,
    pub(crate) finals: Vec<SstFileInfo>,
    /// Its merge in progress (step 4), as the next checkpoint records it.
    pub(crate) merging: Option<MergeProgress>,
}

impl IndexState {
    pub(crate) fn new(
        name: String,
        slot: usize,
        unique_cols: Option<usize>,
        streaming: bool,
    ) -> Self {
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
            merging: None,
        }
    }

    /// Input out of order: what was streamed becomes a run of the merge.
    /// Turns what was streamed into runs (without source positions: the lookup of their
    /// positions is returned, for messages).
    pub(crate) fn stop_streaming(&mut self) -> Result<Option<StreamedPositions>, ImportError> {
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

impl Import {
    /// What is worth a warning before the import runs: each Parquet input that lacks columns
    /// of the table (they read as NULL) while it has columns the table lacks (not read),
    /// which is what a misspelled column name looks like.
    pub fn input_warnings(&self) -> Vec<String> {
        let Ok(def) = catalog::choose(&self.tables, self.opts.table.as_deref()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for f in &self.files {
            if self.opts.format.unwrap_or_else(|| Format::from_path(f)) != Format::Parquet {
                continue;
            }
            let Ok(schema) = crate::arrow_io::parquet_schema(f) else {
                continue;
            };
            let (missing, unread) = crate::arrow_io::unread_columns(&schema, &def);
            if !missing.is_empty() && !unread.is_empty() {
                out.push(format!(
                    "{}: has no column {} of table {} (stored as NULL), and its column(s) {} \
                     are not the table's (not read): a misspelled name?",
                    f.display(),
                    missing.join(", "),
                    def.name,
                    unread.join(", ")
                ));
            }
        }
        out
    }

    /// Step 1.
    pub(crate) fn bind_table(&self, db: &Db) -> Result<(TableDef, bool), ImportError> {
        let mut def = catalog::choose(&self.tables, self.opts.table.as_deref())?;
        if let Some(l) = self.opts.layout {
            def.layout = l;
            def.layout_stated = true;
        }
        let existing = catalog::load(db)?;
        catalog::bind(&existing, def)
    }

    /// `resume` found no checkpoint in `dir`: the import starts over, except into a table
    /// keyed by row id that already holds rows. There the interrupted import may have finished
    /// (its ingest committed, then its directory was removed before it could say so), and
    /// running it again would add every row a second time under new row ids, silently; it
    /// refuses instead. (With a primary key a second run is harmless or loud: `first` and
    /// `last` leave the same rows, `error` refuses the duplicates.)
    fn nothing_to_resume(
        &self,
        dir: &Path,
        table: &TableDef,
        existing_rows: bool,
    ) -> Result<(), ImportError> {
        if existing_rows && table.has_rowid() {
            // A directory made for this run only goes (a kept one was emptied already).
            let _ = std::fs::remove_dir(dir);
            return Err(ImportError::CannotResume {
                dir: dir.to_path_buf(),
                reason: format!(
                    "there is no checkpoint to resume, and table {} (keyed by row id, no \
                     primary key) already holds rows: the interrupted import may have finished \
                     before its checkpoint was removed, and running it again would add its rows \
                     twice; check the table, then import again without resume",
                    table.name
                ),
            });
        }
        self.note(&format!(
            "no checkpoint to resume in {}: starting the import",
            dir.display()
        ));
        Ok(())
    }

    /// Step 2.
    pub(crate) fn prepare(
        &self,
        db: &Db,
        table: TableDef,
        created: bool,
    ) -> Result<Plan, ImportError> {
        let latch = (table.layout == Layout::Columnar)
            .then(|| crate::chunk::TableLatch::for_import(db, &table));
        // Before any row is read, with the latch held (see `commit`).
        let baseline = super::commit::Baseline::take(db, &table, created)?;
        let mut it = crate::catalog::index_iter(db, table.id, PRIMARY_INDEX_ID)?;
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
        let parent = self
            .opts
            .tmp_dir
            .clone()
            .unwrap_or_else(|| db.path().to_path_buf());
        let dir = checkpoint::dir_for(&parent, db.path(), &table.name);
        if self.arrow.name.is_none() && !self.opts.resume {
            // Also where imports put them by default: their space may be what this one needs.
            self.discard_checkpoints(&parent, db.path())?;
            if parent != db.path() {
                self.discard_checkpoints(db.path(), db.path())?;
            }
        }
        let (tmp, ck, resume) = if self.arrow.name.is_some() {
            (TmpDir::create(&parent)?, None, None)
        } else if !checkpoint::claim(&dir) {
            self.note(&format!(
                "another import of this process works in {}: this one keeps no checkpoints",
                dir.display()
            ));
            (TmpDir::create(&parent)?, None, None)
        } else {
            let existed = dir.is_dir();
            let tmp = TmpDir::resumable(dir)?;
            *self.owned_dir.lock().unwrap_or_else(|e| e.into_inner()) = Some(tmp.path.clone());
            let now = self.fingerprint(db, &table, created, existing_rows, rowid_base)?;
            let resume = match (existed, self.opts.resume) {
                (true, true) => {
                    let r = self.adopt_checkpoint(&tmp.path, &now)?;
                    if r.is_none() {
                        self.nothing_to_resume(&tmp.path, &table, existing_rows)?;
                    }
                    r
                }
                (true, false) => {
                    // Made again since the discard above (by another process's import): start
                    // from nothing.
                    checkpoint::remove_unnamed(&tmp.path, None);
                    None
                }
                (false, resume) => {
                    if resume {
                        self.nothing_to_resume(&tmp.path, &table, existing_rows)?;
                    }
                    None
                }
            };
            let ck = Checkpointer::new(now, resume.as_ref());
            (tmp, Some(ck), resume)
        };
        self.warn_if_short_of_space(&tmp.path, resume.is_some());
        if existing_rows
            && table.layout == Layout::Cells
            && self.opts.on_duplicate == OnDuplicate::Last
        {
            // Replacing a stored row would leave the old cells of the columns the new row has
            // NULL (cells are written for non-NULL values only): refuse rather than bring old
            // values back. (The columnar layout marks the replaced row's position deleted.)
            return Err(ImportError::InvalidArgument(format!(
                "--on-duplicate last is not supported yet for table {} (cells layout) once it \
                 holds rows: a replaced row's NULL columns would keep their old cells; the \
                 columnar layout supports it",
                table.name
            )));
        }
        // Each file's own format (from its extension) unless one is given for all.
        let mut formats: Vec<Format> = self
            .files
            .iter()
            .map(|f| self.opts.format.unwrap_or_else(|| Format::from_path(f)))
            .collect();
        let mut file_names: Vec<String> =
            self.files.iter().map(|f| f.display().to_string()).collect();
        if let Some(name) = &self.arrow.name {
            formats.push(Format::Arrow);
            file_names.push(name.clone());
        }
        // The budget is the process's: leave room for what is there anyway (code, the open Db,
        // allocator slack), measured at 10-20 MiB.
        let memory = usize::try_from(self.opts.memory).unwrap_or(usize::MAX);
        let memory = memory.saturating_sub(PROCESS_BASELINE).max(memory / 2);
        // A resumed import cuts its input into the same chunks as the run it continues.
        let chunk_size = resume.as_ref().map_or_else(
            || {
                self.opts
                    .chunk_size
                    .unwrap_or((memory / 64).clamp(64 << 10, 4 << 20))
            },
            |r| r.chunk_size,
        );
        let in_flight = self.opts.threads + 2;
        // A chunk in flight costs its input buffer (up to 2× its size in capacity) plus its
        // encoded output (≈ 2.5× for narrow rows with one secondary index).
        let chunks_reserved = in_flight * chunk_size * 4 + (8 << 20);
        let mut reserved = chunks_reserved;
        if table.layout.by_column() {
            // The merge's cell writers (their own buffers, beside the sort buffers it drains).
            reserved += if table.layout == Layout::Columnar {
                crate::merge::chunk_writers_memory(table.columns.len(), self.opts.threads)
            } else {
                crate::merge::cell_writers_memory(table.columns.len(), self.opts.threads)
            };
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
            group_ids: std::sync::Mutex::new(None),
            _latch: latch,
            baseline,
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
            file_names,
            parse_files: Arc::new(AtomicU64::new(resume.as_ref().map_or(0, |r| r.parse_files))),
            merge_files: Arc::new(AtomicU64::new(
                resume.as_ref().map_or(1 << 20, |r| r.merge_files),
            )),
            ck,
            resume,
        })
    }

    /// Each index's state: new, or as the checkpoint resumed from left it.
    pub(crate) fn index_states(&self, plan: &Plan) -> Result<Vec<IndexState>, ImportError> {
        let mut v = self.new_index_states(plan);
        let Some(r) = plan.resume.as_ref() else {
            return Ok(v);
        };
        let dir = &plan.tmp.path;
        for (st, ck) in v.iter_mut().zip(&r.indexes) {
            st.streaming = ck.streaming;
            st.streamed_all = ck.streamed_all;
            st.last_key = ck.last_key.clone();
            if !ck.streamed.is_empty() {
                let mut w = self.final_writer(plan, st.slot, &plan.parse_files);
                for f in &ck.streamed {
                    w.files.push(f.restore(dir)?);
                }
                if let Some(r) = &ck.recorder {
                    let path = checkpoint::positions_path(dir, st.slot);
                    w.resume_positions(path.clone(), r.clone())
                        .map_err(|e| match e {
                            sluice::Error::Io { source, .. } if checkpoint::damaged(&source) => {
                                ImportError::CannotResume {
                                    dir: dir.to_path_buf(),
                                    reason: format!("{}: {source}", path.display()),
                                }
                            }
                            e => e.into(),
                        })?;
                }
                st.writer = Some(w);
            }
            for (name, with_src) in &ck.runs {
                let p = dir.join(name);
                checkpoint::check_file(dir, &p, None)?;
                st.runs.push((p, *with_src));
            }
            for f in &ck.finals {
                st.finals.push(f.restore(dir)?);
            }
            if let Some(m) = &ck.merging {
                if r.stage != checkpoint::Stage::Merge || st.slot != r.next_slot {
                    return Err(ImportError::CannotResume {
                        dir: dir.clone(),
                        reason: format!(
                            "it records a merge in progress of index {} out of turn",
                            st.name
                        ),
                    });
                }
                let states = r
                    .merge_state
                    .as_ref()
                    .map(|f| checkpoint::load_merge_state(dir, f))
                    .transpose()?;
                st.merging = Some(m.restore(dir, states)?);
            }
        }
        Ok(v)
    }

    fn new_index_states(&self, plan: &Plan) -> Vec<IndexState> {
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

    pub(crate) fn final_options(&self) -> TableOptions {
        TableOptions::default()
    }

    /// How the import's files are written. An import under `SCHED_IDLE` or a write rate starts
    /// its files' writeback itself (see [`Writeback::Initiate`]): the kernel's work stays at
    /// its priority, the disk sees the paced writes as they are made, and no journal commit
    /// every 8 MiB stalls a serving workload's log appends. The spilled runs and the final
    /// files are paced by `ImportOptions::rate_limiter`; its docs name what is not.
    pub(crate) fn writes(&self) -> FileWrites {
        FileWrites {
            writeback: if self.opts.idle || self.opts.rate_limiter.is_some() {
                Writeback::Initiate
            } else {
                Writeback::SyncThread
            },
            rate_limiter: self.opts.rate_limiter.clone(),
        }
    }

    pub(crate) fn final_writer(
        &self,
        plan: &Plan,
        slot: usize,
        counter: &Arc<AtomicU64>,
    ) -> FinalWriter {
        let mut w = FinalWriter::new(
            &plan.tmp.path,
            format!("final-{slot}"),
            self.opts.target_file_size,
            self.final_options(),
            Arc::clone(counter),
        );
        w.max_entries = plan.max_file_entries;
        w.writes = self.writes();
        w
    }
}
