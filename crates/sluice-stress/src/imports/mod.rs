//! Imports under process kills: the crash mode's child runs `sluice-import` imports (row and
//! columnar layouts, secondary and unique indexes, every `--on-duplicate` policy, spills under
//! an 8 MiB budget, parallel merges, temporary directories in and outside the Db) one after
//! another beside the journaled foreground workload, and is killed at a random moment — in any
//! phase of an import: reading, sorting, spilling, merging, writing final files, ingesting.
//!
//! After each kill the driver checks ([`ImportModel::verify_round`]), besides the workload's
//! own verification (nothing acknowledged to the writers lost):
//! 1. every import the child logged as done is in its table, and every one it logged as
//!    failed is not — compared with the same import run, uninterrupted, on a fresh Db holding
//!    the table's verified rows (the *reference*; a failed import must fail there too);
//! 2. the import in flight at the kill is in its table entirely or not at all: the table
//!    equals the reference before it or the reference after it;
//! 3. every table equals its model, and every secondary and unique index holds exactly the
//!    entries its table's rows make — no more, no fewer;
//! 4. once the next open has cleaned up (what `sluice_import::open_db` does), no
//!    `sluice-import-*` directory is left in the Db directory; and one a killed import left in
//!    the imports' other temporary directory (`--tmp-dir`) is gone once the next import there
//!    is done.
//!
//! 5. an interrupted import found absent is, one time in two, run again by the next child with
//!    `resume` (up to three times in a row), after the driver *tore* what a power loss could
//!    have torn of its checkpoint directory: every file the `CHECKPOINT` does not name (those
//!    were never fsynced, or not yet named) truncated, damaged or deleted. The resumed import
//!    is checked against the same reference as any other (1 and 2): a resume that skipped,
//!    repeated or trusted unsynced data makes a table that differs. The faults mode does the
//!    same after an injected error. A resume with no checkpoint left (killed before its first)
//!    into a table that holds rows is refused by design (the import might have finished);
//!    the import then runs again without `resume`, as a user would ([`import_resuming`]).
//!
//! Imports are numbered across rounds and drawn from `(seed, number)` ([`spec::ImportSpec`]),
//! so the driver re-creates each one from the child's log: `start N`, then `done N` or
//! `failed N: reason`, each line synced before the import starts or after it returns.

mod child;
mod log;
pub mod spec;

use child::import_resuming;
pub use child::run_child_imports;
use log::{read_log, LogEntry};

use std::io::{Seek as _, Write as _};
use std::path::{Path, PathBuf};

use rand::{Rng as _, SeedableRng as _};
use sluice::{Db, ReadOptions};
use sluice_import::keycode::{encode_value, prefix, prefix_successor};
use sluice_import::{find_tmp_dirs, remove_leftovers, Import, ImportOptions, OnDuplicate};
use sluice_import::{Layout, OutputFormat, ProgressMode, TableReader};

use crate::report::{Anomaly, ImportCounts};
use spec::{ImportSpec, TABLES};

/// The child's log of imports, in the run's directory (beside the journal directory, whose
/// files are all thread journals).
pub const LOG: &str = "imports.log";

/// The file in the run's directory naming the import the next child resumes.
pub const RESUME: &str = "resume-next";

/// Where imports whose spec says so put their temporary directory (outside the Db).
pub fn outside_tmp(root: &Path) -> PathBuf {
    root.join("import-tmp")
}

fn inputs_dir(root: &Path) -> PathBuf {
    root.join("inputs")
}

/// A fair coin drawn from the run's seed, an import's number and a salt.
fn coin(seed: u64, number: u64, salt: u64) -> bool {
    let mut rng = rand::rngs::StdRng::seed_from_u64(
        seed ^ number.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03),
    );
    rng.gen_bool(0.5)
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

/// How an import of the child's log ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Done,
    Failed(String),
    /// Started, no end logged: the kill came during it (or just after it returned).
    InFlight,
    /// Failed on an injected I/O error (the faults mode): must have changed nothing.
    Faulted(String),
}

/// A table's verified rows (CSV lines in primary key order); `None`: not in the catalog.
type TableState = Option<Vec<String>>;

/// The driver's model of the imported tables, carried from round to round.
#[derive(Debug)]
pub struct ImportModel {
    seed: u64,
    /// The number of the next import the child starts.
    pub next: u64,
    tables: Vec<TableState>,
    /// What was verified so far.
    pub counts: ImportCounts,
    /// Killed imports' directories in the other temporary directory, found at the last
    /// verification: the next import done there must have removed them.
    stale_outside: Vec<PathBuf>,
    /// The import the next child resumes, and how many times in a row it was asked to.
    resuming: Option<(u64, u32)>,
    /// The last import found interrupted and absent.
    last_absent: Option<u64>,
}

impl ImportModel {
    /// No table imported yet.
    pub fn new(seed: u64) -> Self {
        ImportModel {
            seed,
            next: 0,
            tables: vec![None; TABLES.len()],
            counts: ImportCounts::default(),
            stale_outside: Vec::new(),
            resuming: None,
            last_absent: None,
        }
    }

    /// Checks 1-4 of the module doc for the round whose child logged into `root` (the run's
    /// directory), on the reopened `db`.
    pub fn verify_round(
        &mut self,
        db: &Db,
        root: &Path,
        context: &str,
    ) -> Result<(), Box<Anomaly>> {
        let seed = self.seed;
        let bad = |op: &str, read: String, detail: String| {
            Box::new(Anomaly::without_key(
                seed,
                context.to_string(),
                op,
                read,
                detail,
            ))
        };
        let log =
            read_log(&root.join(LOG)).map_err(|e| bad("import log", e, "malformed".into()))?;
        if let Some(why) = log.rewrite_failed {
            return Err(bad(
                "group rewrite",
                why,
                "failed with no fault injected".into(),
            ));
        }
        self.counts.groups_rewritten += log.groups_rewritten;
        let log = log.imports;
        // Steps 1 and 2: each logged import against the reference.
        for (i, (n, outcome, resumed)) in log.iter().enumerate() {
            if *n != self.next {
                return Err(bad(
                    "import log",
                    format!("import {n}"),
                    format!("expected import {} next", self.next),
                ));
            }
            if *outcome == Outcome::InFlight && i + 1 != log.len() {
                return Err(bad(
                    "import log",
                    format!("import {n}"),
                    "started twice".into(),
                ));
            }
            let spec = ImportSpec::new(self.seed, *n);
            if self.resuming.is_some_and(|(r, _)| r == *n) {
                self.counts.resume_runs += 1;
                self.counts.resumed += u64::from(*resumed);
            }
            self.check_one(db, root, &spec, outcome)
                .map_err(|(read, detail)| bad(&spec.describe(), read, detail))?;
            self.next += 1;
        }
        // Step 3: every table and index against the model.
        self.check_tables(db)
            .map_err(|(op, read, detail)| bad(op, read, detail))?;
        // Step 4: leftovers. In the Db directory, once the next open has cleaned up; in the
        // other temporary directory, which no open looks into, once an import there is done.
        remove_leftovers(db.path());
        let outside_done = log
            .iter()
            .any(|(n, o, _)| *o == Outcome::Done && ImportSpec::new(self.seed, *n).outside_tmp);
        self.check_leftovers(db, root, outside_done)
            .map_err(|(read, detail)| bad("leftovers", read, detail))?;
        // Step 5: the next child resumes the interrupted import, or starts the next one.
        self.resuming = self.next_resume(&log);
        match self.resuming {
            Some((n, attempt)) => {
                self.next = n;
                let spec = ImportSpec::new(self.seed, n);
                self.tear_unsynced(db.path(), root, &spec, u64::from(attempt))
                    .map_err(|e| bad("tear", e.to_string(), "harness I/O failed".into()))?;
                std::fs::write(root.join(RESUME), n.to_string()).map_err(|e| {
                    bad("resume marker", e.to_string(), "harness I/O failed".into())
                })?;
            }
            None => {
                let _ = std::fs::remove_file(root.join(RESUME));
                let _ = std::fs::remove_dir_all(inputs_dir(root));
            }
        }
        Ok(())
    }

    /// Step 5's choice: the import the log ends in, when it was found interrupted and absent,
    /// one time in two (and at most three times in a row); the one asked for already when the
    /// child was killed before it started it.
    fn next_resume(&self, log: &[LogEntry]) -> Option<(u64, u32)> {
        match log.last() {
            None => self.resuming,
            Some((n, Outcome::InFlight, _)) if self.last_absent == Some(*n) => {
                let attempt = match self.resuming {
                    Some((r, a)) if r == *n => a + 1,
                    _ => 1,
                };
                (attempt <= 3 && coin(self.seed, *n, u64::from(attempt))).then_some((*n, attempt))
            }
            _ => None,
        }
    }

    /// Tears what a power loss could have torn of `spec`'s checkpoint directories (in the Db
    /// directory and in the other temporary directory): each file its `CHECKPOINT` does not
    /// name — never fsynced, or written after the checkpoint — is truncated at a random length,
    /// damaged in the middle, or deleted. Files it names were fsynced before it named them,
    /// and its own replacement is atomic: those a power loss leaves whole. (What this checks
    /// is that a resume never reads the unnamed ones — it deletes them first; whether the
    /// named ones really were fsynced a kill cannot tell: the page cache survives it.)
    fn tear_unsynced(
        &mut self,
        db_dir: &Path,
        root: &Path,
        spec: &ImportSpec,
        salt: u64,
    ) -> std::io::Result<()> {
        let suffix = format!("-{}", spec.table_name());
        let dirs = find_tmp_dirs(db_dir)
            .into_iter()
            .chain(find_tmp_dirs(&outside_tmp(root)))
            .filter(|d| d.resumable && d.path.to_string_lossy().ends_with(&suffix));
        let mut rng = rand::rngs::StdRng::seed_from_u64(
            self.seed ^ spec.number.wrapping_mul(0xA24B_AED4_963E_E407) ^ salt,
        );
        for d in dirs {
            let named = std::fs::read(d.path.join("CHECKPOINT")).unwrap_or_default();
            let named = String::from_utf8_lossy(&named);
            for e in std::fs::read_dir(&d.path)?.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                // A positions file is kept by an index's recorder without being quoted by name
                // (its synced length is in the checkpoint): a power loss leaves what was synced.
                if name == "CHECKPOINT"
                    || name.starts_with("positions-")
                    || named.contains(&format!("\"{name}\""))
                {
                    continue;
                }
                let path = e.path();
                let len = e.metadata()?.len();
                match rng.gen_range(0..3) {
                    0 => std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)?
                        .set_len(rng.gen_range(0..=len))?,
                    1 if len > 0 => {
                        let mut f = std::fs::OpenOptions::new().write(true).open(&path)?;
                        f.seek(std::io::SeekFrom::Start(rng.gen_range(0..len)))?;
                        f.write_all(&[0xA5; 64])?;
                    }
                    _ => std::fs::remove_file(&path)?,
                }
                self.counts.torn += 1;
            }
        }
        Ok(())
    }

    /// Step 3: every table equals its model; its indexes hold exactly its rows' entries.
    /// Returns the failing step, what was found and why it is wrong.
    pub fn check_tables(&mut self, db: &Db) -> Result<(), (&'static str, String, String)> {
        (0..TABLES.len()).try_for_each(|t| self.check_table(db, t))
    }

    /// Step 3 for table `t`.
    fn check_table(&mut self, db: &Db, t: usize) -> Result<(), (&'static str, String, String)> {
        let found =
            table_state(db, t).map_err(|e| ("read table", e, "table unreadable".to_string()))?;
        if found != self.tables[t] {
            return Err((
                "read table",
                TABLES[t].0.to_string(),
                format!("differs from the model: {}", diff(&self.tables[t], &found)),
            ));
        }
        self.counts.rows_checked += found.map_or(0, |r| r.len() as u64);
        Ok(())
    }

    /// Step 4: no import temporary directory in the Db directory; none of those a killed
    /// import left in the other temporary directory once an import there is done
    /// (`outside_done`).
    fn check_leftovers(
        &mut self,
        db: &Db,
        root: &Path,
        outside_done: bool,
    ) -> Result<(), (String, String)> {
        // (A resumable import's checkpoint directory, `sluice-resume-*`, is kept after a
        // kill or a failure by design, for `--resume`; the next import without it discards
        // it — `sluice-import`'s resume tests check that.)
        let left: Vec<_> = find_tmp_dirs(db.path())
            .into_iter()
            .filter(|d| !d.resumable)
            .collect();
        if !left.is_empty() {
            return Err((
                left.iter()
                    .map(|d| d.describe())
                    .collect::<Vec<_>>()
                    .join("; "),
                "import temporary directories left in the Db directory".into(),
            ));
        }
        if outside_done {
            if let Some(p) = self.stale_outside.iter().find(|p| p.exists()) {
                return Err((
                    p.display().to_string(),
                    "a killed import's temporary directory is still there after an import with the same temporary directory".into(),
                ));
            }
        }
        self.stale_outside = find_tmp_dirs(&outside_tmp(root))
            .into_iter()
            .filter(|d| !d.resumable && d.process_running != Some(true))
            .map(|d| d.path)
            .collect();
        Ok(())
    }

    /// One import of the faults mode, run on `db` beside the workload with `fault` (a point of
    /// [`sluice_import::failpoints::POINTS`] and its `fail` action) configured, then checked
    /// at once: its table as the reference says when it succeeded, as before when it failed,
    /// and no temporary directory left either way. (The other tables: [`Self::check_tables`]
    /// at the end of each phase.)
    pub fn run_faulted(
        &mut self,
        db: &Db,
        root: &Path,
        fault: Option<(&str, String)>,
        context: &str,
    ) -> Result<(), Box<Anomaly>> {
        let (seed, spec) = (self.seed, ImportSpec::new(self.seed, self.next));
        let bad = |read: String, detail: String| {
            Box::new(Anomaly::without_key(
                seed,
                context.to_string(),
                &spec.describe(),
                read,
                detail,
            ))
        };
        let files = spec
            .write_inputs(&inputs_dir(root))
            .map_err(|e| bad(e.to_string(), "harness I/O failed".into()))?;
        if let Some((point, action)) = &fault {
            fail::cfg(*point, action).map_err(|e| bad(e, "bad failpoint".into()))?;
        }
        let fired_before = sluice_import::failpoints::fired() + sluice::fs::failpoints::fired();
        let r = Import::new(spec.schema(), files, spec.options(&outside_tmp(root)))
            .and_then(|i| i.run(db));
        if let Some((point, _)) = &fault {
            fail::remove(*point);
        }
        let fired =
            sluice_import::failpoints::fired() + sluice::fs::failpoints::fired() > fired_before;
        if fired && r.is_ok() {
            // Every point sits where the import has written part of its work: an error there
            // that did not fail the import was swallowed.
            return Err(bad(
                format!("{fault:?}"),
                "an injected fault fired and the import still succeeded".into(),
            ));
        }
        let outcome = match r {
            Ok(_) => Outcome::Done,
            Err(e) => {
                let msg = one_line(&e.to_string());
                // The injected errors: EIO (os error 5) and ENOSPC (os error 28).
                if fault.is_some()
                    && (msg.contains("(os error 5)") || msg.contains("(os error 28)"))
                {
                    // A user must be told where: the file or directory the error hit.
                    if !msg.contains(&*root.to_string_lossy()) {
                        return Err(bad(msg, "the import's error names no file".into()));
                    }
                    Outcome::Faulted(msg)
                } else {
                    Outcome::Failed(msg)
                }
            }
        };
        let faulted = matches!(outcome, Outcome::Faulted(_));
        let mut done = outcome == Outcome::Done;
        self.check_one(db, root, &spec, &outcome)
            .map_err(|(read, detail)| bad(read, detail))?;
        if faulted && coin(self.seed, spec.number, 0) {
            // Resumed at once, the fault gone, after a power loss's tearing: as the reference.
            self.tear_unsynced(db.path(), root, &spec, 0)
                .map_err(|e| bad(e.to_string(), "harness I/O failed".into()))?;
            let opts = ImportOptions {
                resume: true,
                ..spec.options(&outside_tmp(root))
            };
            let r = import_resuming(&spec, spec.input_paths(&inputs_dir(root)), opts, db);
            self.counts.resume_runs += 1;
            let again = match r {
                Ok(s) => {
                    self.counts.resumed += u64::from(s.resumed);
                    Outcome::Done
                }
                Err(e) => Outcome::Failed(one_line(&e.to_string())),
            };
            done = again == Outcome::Done;
            self.check_one(db, root, &spec, &again)
                .map_err(|(read, detail)| bad(format!("resumed: {read}"), detail))?;
        }
        self.next += 1;
        self.check_table(db, spec.table)
            .map_err(|(_, read, detail)| bad(read, detail))?;
        self.check_leftovers(db, root, done && spec.outside_tmp)
            .map_err(|(read, detail)| bad(read, detail))?;
        let _ = std::fs::remove_dir_all(inputs_dir(root));
        Ok(())
    }

    /// One logged import: its reference result, compared with what the child logged (and, for
    /// the one in flight, with the table found).
    fn check_one(
        &mut self,
        db: &Db,
        root: &Path,
        spec: &ImportSpec,
        outcome: &Outcome,
    ) -> Result<(), (String, String)> {
        let before = self.tables[spec.table].clone();
        let after = reference(&before, spec, root)
            .map_err(|e| (e, "reference import could not run".into()))?;
        match (outcome, after) {
            (Outcome::Done, Ok(rows)) => {
                self.tables[spec.table] = Some(rows);
                self.counts.done += 1;
            }
            (Outcome::Done, Err(e)) => {
                return Err((
                    "logged done".into(),
                    format!("the reference import fails: {e}"),
                ))
            }
            (Outcome::Failed(why), Ok(_)) => {
                return Err((
                    format!("logged failed: {why}"),
                    "the reference import succeeds".into(),
                ))
            }
            (Outcome::Failed(_), Err(_)) => self.counts.failed += 1,
            (Outcome::Faulted(why), _) => {
                let found =
                    table_state(db, spec.table).map_err(|e| (e, "table unreadable".into()))?;
                if found != before {
                    return Err((
                        format!("failed on an injected fault: {why}"),
                        format!("the import changed its table: {}", diff(&before, &found)),
                    ));
                }
                self.counts.faulted += 1;
            }
            (Outcome::InFlight, after) => {
                let found =
                    table_state(db, spec.table).map_err(|e| (e, "table unreadable".into()))?;
                match after {
                    Ok(rows) if found.as_ref() == Some(&rows) => {
                        self.tables[spec.table] = Some(rows);
                        self.counts.interrupted_applied += 1;
                    }
                    _ if found == before => {
                        self.counts.interrupted_absent += 1;
                        self.last_absent = Some(spec.number);
                    }
                    after => {
                        let after = after.ok();
                        return Err((
                            format!("interrupted: {}", diff(&before, &found)),
                            format!(
                                "the table is neither as before the import nor as after it (after: {})",
                                diff(&after, &found)
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The import of `spec`, uninterrupted, into a fresh Db holding `before`: the table's rows
/// after it, or the import's error. (`Err` of the outer result: the harness failed.)
fn reference(
    before: &TableState,
    spec: &ImportSpec,
    root: &Path,
) -> Result<Result<Vec<String>, String>, String> {
    let scratch = root.join("reference");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let db = sluice_import::open_db(scratch.join("db"), true).map_err(|e| e.to_string())?;
    let quiet = ImportOptions {
        table: Some(spec.table_name().into()),
        header: true,
        on_duplicate: OnDuplicate::Error,
        progress: ProgressMode::Off,
        memory: 64 << 20,
        ..ImportOptions::default()
    };
    if let Some(rows) = before {
        let header = spec::header(spec.table);
        let path = scratch.join("before.csv");
        std::fs::write(&path, format!("{header}{}\n", rows.join("\n")))
            .map_err(|e| e.to_string())?;
        Import::new(spec.schema(), vec![path], quiet)
            .and_then(|i| i.run(&db))
            .map_err(|e| format!("loading the rows before the import: {e}"))?;
    }
    let files = spec.write_inputs(&scratch).map_err(|e| e.to_string())?;
    let r = Import::new(spec.schema(), files, spec.options(&scratch)).and_then(|i| i.run(&db));
    let out = match r {
        Ok(_) => Ok(table_state(&db, spec.table)?.unwrap_or_default()),
        Err(e) => Err(one_line(&e.to_string())),
    };
    db.close().map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(out)
}

/// The rows of table `t` in primary key order, after checking that each of its indexes holds
/// exactly the entries its rows make; `None` when the catalog has no such table.
fn table_state(db: &Db, t: usize) -> Result<TableState, String> {
    let name = TABLES[t].0;
    let tables = TableReader::tables(db).map_err(|e| e.to_string())?;
    if !tables.iter().any(|d| d.name == name) {
        return Ok(None);
    }
    let r = TableReader::open(db, Some(name)).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    let mut want: Vec<Vec<Vec<u8>>> = vec![Vec::new(); r.table.indexes.len()];
    r.scan(None, None, None, None, |row| {
        rows.push(r.format_row(row, OutputFormat::Csv));
        for (ix, keys) in r.table.indexes.iter().zip(&mut want) {
            let mut k = prefix(r.table.id, ix.id);
            for &c in ix.columns.iter().chain(&r.table.primary_key) {
                encode_value(&mut k, &row[c]);
            }
            keys.push(k);
        }
        Ok(())
    })
    .map_err(|e| format!("scan of {name}: {e}"))?;
    if r.table.layout == Layout::Columnar {
        // A storage-order scan reads the chunks without the primary index: it must give the
        // same rows (deleted, replaced and rewritten groups' rows skipped, none twice).
        let mut any = TableReader::open(db, Some(name)).map_err(|e| e.to_string())?;
        any.set_any_order(true);
        let mut stored = Vec::new();
        any.scan(None, None, None, None, |row| {
            stored.push(any.format_row(row, OutputFormat::Csv));
            Ok(())
        })
        .map_err(|e| format!("storage-order scan of {name}: {e}"))?;
        stored.sort();
        let mut keyed = rows.clone();
        keyed.sort();
        if stored != keyed {
            let extra = stored.iter().find(|r| keyed.binary_search(r).is_err());
            let missing = keyed.iter().find(|r| stored.binary_search(r).is_err());
            return Err(format!(
                "a storage-order scan of {name} gives {} rows, the key-order scan {}; a row only \
                 it gives: {extra:?}; a row it misses: {missing:?}",
                stored.len(),
                keyed.len(),
            ));
        }
    }
    for (ix, mut want) in r.table.indexes.iter().zip(want) {
        want.sort();
        let got = raw_keys(db, r.table.id, ix.id).map_err(|e| format!("index {}: {e}", ix.name))?;
        if got != want {
            let extra = got.iter().find(|k| want.binary_search(k).is_err());
            let missing = want.iter().find(|k| got.binary_search(k).is_err());
            return Err(format!(
                "index {} of {name} has {} entries for {} rows; an entry no row makes: {:?}; a row's entry missing: {:?}",
                ix.name,
                got.len(),
                want.len(),
                extra.map(|k| k.escape_ascii().to_string()),
                missing.map(|k| k.escape_ascii().to_string()),
            ));
        }
    }
    Ok(Some(rows))
}

fn raw_keys(db: &Db, table: u32, index: u32) -> sluice::Result<Vec<Vec<u8>>> {
    let p = prefix(table, index);
    let mut it = db.iter(ReadOptions {
        upper_bound: prefix_successor(&p),
        lower_bound: Some(p),
        ..Default::default()
    })?;
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push(it.key().to_vec());
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// A short account of how `found` differs from `want`.
fn diff(want: &TableState, found: &TableState) -> String {
    match (want, found) {
        (None, None) => "both absent".into(),
        (None, Some(f)) => format!("expected no table, found {} rows", f.len()),
        (Some(w), None) => format!("expected {} rows, found no table", w.len()),
        (Some(w), Some(f)) => {
            let first = w.iter().zip(f).position(|(a, b)| a != b);
            match first {
                Some(i) => format!(
                    "{} rows expected, {} found; row {i}: expected {:?}, found {:?}",
                    w.len(),
                    f.len(),
                    w[i],
                    f[i]
                ),
                None if w.len() == f.len() => "equal".into(),
                None => format!(
                    "{} rows expected, {} found (a prefix agrees)",
                    w.len(),
                    f.len()
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_import_half_applied_or_missing_is_caught() {
        // The reference of import 0 run for real, then the model told it was done while the
        // Db holds nothing: verification must fail; and a Db holding the rows passes.
        let root = tempfile::tempdir().unwrap();
        let journal = root.path();
        let seed = (0..200)
            .find(|&s| {
                let (a, b) = (ImportSpec::new(s, 0), ImportSpec::new(s, 1));
                a.rows < 2_000 && a.on_duplicate != OnDuplicate::Error && b.rows < 2_000
            })
            .unwrap();
        std::fs::write(journal.join(LOG), "start 0\ndone 0\n").unwrap();
        let db = sluice_import::open_db(root.path().join("db"), true).unwrap();
        let mut m = ImportModel::new(seed);
        let e = m.verify_round(&db, root.path(), "t").unwrap_err();
        assert!(e.to_string().contains("differs from the model"), "{e}");

        let spec = ImportSpec::new(seed, 0);
        let files = spec.write_inputs(&root.path().join("in")).unwrap();
        Import::new(spec.schema(), files, spec.options(root.path()))
            .unwrap()
            .run(&db)
            .unwrap();
        let mut m = ImportModel::new(seed);
        m.verify_round(&db, root.path(), "t").unwrap();
        assert_eq!(m.counts.done, 1);
        assert_eq!(m.next, 1);

        // Interrupted: applied or not, both pass; a stray index entry does not.
        std::fs::write(journal.join(LOG), "start 1\n").unwrap();
        let mut m2 = ImportModel {
            next: 1,
            ..ImportModel::new(seed)
        };
        m2.tables = m.tables.clone();
        m2.verify_round(&db, root.path(), "t").unwrap();
        let t = TableReader::open(&db, Some(spec.table_name()))
            .unwrap()
            .table;
        let mut k = prefix(t.id, t.indexes[0].id);
        k.extend_from_slice(b"\x01stray");
        db.put(&k, b"").unwrap();
        let mut m3 = ImportModel {
            next: 1,
            ..ImportModel::new(seed)
        };
        m3.tables = m.tables.clone();
        let e = m3.verify_round(&db, root.path(), "t").unwrap_err();
        assert!(e.to_string().contains("an entry no row makes"), "{e}");
    }
}
