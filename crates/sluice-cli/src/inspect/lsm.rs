//! `sluice lsm`: the shape of the LSM drawn in the terminal, or its whole history replayed
//! from the MANIFEST as JSON (`--json`) or as a self-contained HTML timeline (`--html`), for a
//! Sluice or a RocksDB Db ([`super::timeline`]).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::timeline;
use crate::args::{CmdResult, DbArg};
use crate::db_dir::open_read_only;

/// `sluice lsm`: the levels and L0 sublevels as key-span bars, newest sublevel first; with
/// `json` the replayed history on stdout, with `html` the timeline page written to that file.
pub fn run(a: DbArg, width: usize, json: bool, html: Option<PathBuf>) -> CmdResult {
    if json || html.is_some() {
        return history(&a.db, json, html.as_deref());
    }
    if timeline::is_rocksdb(&a.db) {
        return Err(format!(
            "--db {} is a RocksDB Db: `sluice lsm` draws it with --json or --html",
            a.db.display()
        )
        .into());
    }
    let db = open_read_only(&a.db)?;
    print!(
        "{}",
        sluice::version::render::render(&db.current_version(), width.clamp(20, 1000))
    );
    let m = db.metrics();
    println!(
        "read amplification {} (L0 sublevels {}), pending compaction bytes {}",
        m.read_amplification, m.l0_sublevels, m.pending_compaction_bytes
    );
    Ok(ExitCode::SUCCESS)
}

/// `--json` and/or `--html OUT`.
fn history(dir: &Path, json: bool, html: Option<&Path>) -> CmdResult {
    let l = timeline::load(dir)?;
    if json {
        let mut out = BufWriter::new(std::io::stdout().lock());
        timeline::write_json(&l.timeline, &l.key_names, &l.key_decoding, &mut out)?;
        out.flush()?;
    }
    if let Some(path) = html {
        timeline::html::write_page(&l, path)?;
        if !json {
            println!(
                "wrote {} ({} edits, {} files)",
                path.display(),
                l.timeline.steps.len(),
                l.timeline.files.len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
