//! The child's side of the import mode: imports one after another beside the workload, each
//! logged (`start N`, `resumed N`, `done N` or `failed N: reason`) before the kill can land.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use sluice::Db;
use sluice_import::{Import, ImportOptions};

use super::spec::ImportSpec;
use super::{inputs_dir, one_line, outside_tmp, LOG, RESUME};

/// The child's import thread: imports numbered from `first` until `stop` or `deadline`.
pub fn run_child_imports(
    db: Arc<Db>,
    root: PathBuf,
    seed: u64,
    first: u64,
    stop: Arc<AtomicBool>,
    deadline: Instant,
) -> std::io::Result<()> {
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(root.join(LOG))?;
    let mut line = |s: String| -> std::io::Result<()> {
        log.write_all(s.as_bytes())?;
        log.sync_data()
    };
    let resume_first = std::fs::read_to_string(root.join(RESUME))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        == Some(first);
    let mut n = first;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        let spec = ImportSpec::new(seed, n);
        let resume = resume_first && n == first;
        // A resume reads the interrupted import's files as they are (the checkpoint holds
        // their sizes and modification times).
        let files = if resume {
            spec.input_paths(&inputs_dir(&root))
        } else {
            spec.write_inputs(&inputs_dir(&root))?
        };
        line(format!("start {n}\n"))?;
        let opts = ImportOptions {
            resume,
            ..spec.options(&outside_tmp(&root))
        };
        let r = import_resuming(&spec, files, opts, &db);
        match r {
            Ok(s) => {
                if s.resumed {
                    line(format!("resumed {n}\n"))?;
                }
                line(format!("done {n}\n"))?;
                // The import's own rewrite (`ImportOptions::rewrite_dead`), then the child's.
                if let Some(r) = s.rewrite {
                    line(rewrite_line(n, Ok(r)))?;
                }
                if let Some(e) = &s.rewrite_error {
                    line(rewrite_line(n, Err(e.clone())))?;
                }
                if let Some(l) = rewrite_groups(&db, &spec, n) {
                    line(l)?;
                }
            }
            Err(e) => line(format!("failed {n}: {}\n", one_line(&e.to_string())))?,
        }
        n += 1;
    }
    Ok(())
}

/// After an import into the columnar table (whose `--on-duplicate last` imports mark replaced
/// rows dead, and rewrite the groups left half dead themselves): rewrites its groups with a
/// quarter or more of their rows dead, so that kills also land inside rewrites. A rewrite
/// changes no row: the driver's check that every table equals its model, in key order and in
/// storage order, covers it. Its log line: [`rewrite_line`].
fn rewrite_groups(db: &Db, spec: &ImportSpec, n: u64) -> Option<String> {
    if spec.table_name() != "imp_col" {
        return None;
    }
    let r = sluice_import::TableReader::open(db, Some(spec.table_name()))
        .and_then(|r| r.rewrite_groups(0.25, false));
    Some(rewrite_line(n, r.map_err(|e| e.to_string())))
}

/// The log line of a group rewrite after import `n`: `rewrote N: G` (G groups rewritten) or
/// `rewrite-failed N: reason`.
fn rewrite_line(n: u64, r: Result<sluice_import::RewriteSummary, String>) -> String {
    match r {
        Ok(s) => format!("rewrote {n}: {}\n", s.groups_rewritten),
        Err(e) => format!("rewrite-failed {n}: {}\n", one_line(&e)),
    }
}

/// Runs the import of `spec`; a resume refused for want of a checkpoint (into a table that
/// holds rows: see `sluice_import::ImportOptions::resume`) runs again without `resume`.
pub(super) fn import_resuming(
    spec: &ImportSpec,
    files: Vec<PathBuf>,
    opts: ImportOptions,
    db: &Db,
) -> Result<sluice_import::Summary, sluice_import::ImportError> {
    let again = ImportOptions {
        resume: false,
        ..opts.clone()
    };
    match Import::new(spec.schema(), files.clone(), opts).and_then(|i| i.run(db)) {
        Err(sluice_import::ImportError::CannotResume { reason, .. })
            if reason.starts_with("there is no checkpoint to resume") =>
        {
            Import::new(spec.schema(), files, again).and_then(|i| i.run(db))
        }
        r => r,
    }
}
