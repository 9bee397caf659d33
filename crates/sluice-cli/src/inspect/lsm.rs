//! `sluice lsm`: the shape of the LSM drawn in the terminal.

use std::process::ExitCode;

use crate::args::{CmdResult, DbArg};
use crate::db_dir::open_read_only;

/// `sluice lsm`: the levels and L0 sublevels as key-span bars, newest sublevel first.
pub fn run(a: DbArg, width: usize) -> CmdResult {
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
