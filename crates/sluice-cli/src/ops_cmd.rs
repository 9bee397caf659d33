//! Operator commands, on the Db's tables as a whole rather than key by key: flush, compact,
//! ingest (external SST files in, atomically), checkpoint, verify.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use sluice::key::parse_internal_key;
use sluice::version::l0_sublevels::L0Sublevels;
use sluice::version::{FileMeta, Version};
use sluice::{InternalIterator, IterBounds, Table, TableReadOptions};

use crate::args::{CmdResult, DbArg, KvEnc};
use crate::db_dir::{open_read_only, open_writable, tmp_dir_lines};
use crate::text::Enc;

/// `sluice flush`: the memtable (and any WAL left by a crash) into L0 tables.
pub fn flush(a: DbArg) -> CmdResult {
    let db = open_writable(&a.db, false)?;
    db.flush()?;
    let m = db.metrics();
    db.close()?;
    println!(
        "flushed; L0: {} files, {} bytes",
        m.levels[0].files, m.levels[0].bytes
    );
    Ok(ExitCode::SUCCESS)
}

fn shape(db: &sluice::Db) -> String {
    let m = db.metrics();
    m.levels
        .iter()
        .enumerate()
        .filter(|(_, l)| l.files > 0)
        .map(|(i, l)| format!("L{i} {} files {} B", l.files, l.bytes))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `sluice compact`: every file overlapping `[start, end]` into the last level.
pub fn compact(a: DbArg, enc: KvEnc, start: Option<String>, end: Option<String>) -> CmdResult {
    let start = start.map(|s| enc.keys().arg(&s, "--start")).transpose()?;
    let end = end.map(|s| enc.keys().arg(&s, "--end")).transpose()?;
    if let (Some(s), Some(e)) = (&start, &end) {
        if s > e {
            return Err("compact needs --start at or below --end".into());
        }
    }
    let db = open_writable(&a.db, false)?;
    let before = shape(&db);
    db.compact_range(start.as_deref(), end.as_deref())?;
    db.wait_for_background_work()?;
    let after = shape(&db);
    db.close()?;
    println!(
        "before: {}",
        if before.is_empty() { "empty" } else { &before }
    );
    println!(
        "after:  {}",
        if after.is_empty() { "empty" } else { &after }
    );
    Ok(ExitCode::SUCCESS)
}

/// `sluice ingest`.
pub fn ingest(
    db_dir: PathBuf,
    files: Vec<PathBuf>,
    allow_overlap: bool,
    ingest_behind: bool,
    link: bool,
) -> CmdResult {
    let new = crate::db_dir::new_db(&db_dir);
    let db = open_writable(&db_dir, true)?;
    let opts = sluice::IngestOptions {
        allow_overlap,
        ingest_behind,
        link_files: link,
        ..Default::default()
    };
    let ingested = match db.ingest(&files, &opts) {
        Ok(i) => i,
        Err(e) => {
            // A Db this ingest created goes again: the path is as it was.
            crate::db_dir::close_failed(new, db);
            // The library's option names, said as this command's flags.
            return Err(e
                .to_string()
                .replace("set allow_overlap", "pass --allow-overlap")
                .replace("ingest_behind", "--ingest-behind")
                .into());
        }
    };
    for f in ingested {
        let level = f.level.map_or("memtable".to_string(), |l| format!("L{l}"));
        println!(
            "{}\t{}\tseqno {}\t{} entries",
            f.source.display(),
            level,
            f.seqno,
            f.entries
        );
    }
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// `sluice checkpoint DIR`.
pub fn checkpoint(a: DbArg, out: PathBuf) -> CmdResult {
    let db = open_writable(&a.db, false)?;
    let info = db.checkpoint(&out)?;
    db.close()?;
    println!(
        "checkpoint {}: {} tables, {} bytes, up to sequence {}",
        out.display(),
        info.tables,
        info.bytes,
        info.last_sequence
    );
    Ok(ExitCode::SUCCESS)
}

/// What `verify` found wrong with one file or one level.
struct Problem(String);

/// Checks one table: its size against the MANIFEST, every block checksum, key order, the
/// filter and entry count (`Table::verify`), and that its keys lie in the MANIFEST's range.
fn verify_table(dir: &Path, level: usize, f: &FileMeta) -> Result<u64, Problem> {
    let path = dir.join(format!("{:06}.sst", f.number));
    let shown = path.display();
    let size = std::fs::metadata(&path)
        .map_err(|e| Problem(format!("L{level} {shown}: {e}")))?
        .len();
    if size != f.size {
        return Err(Problem(format!(
            "L{level} {shown}: {size} bytes, the MANIFEST says {}",
            f.size
        )));
    }
    let t = Table::open_path(&path, &TableReadOptions::new())
        .map_err(|e| Problem(format!("L{level} {e}")))?;
    let n = t.verify().map_err(|e| Problem(format!("L{level} {e}")))?;
    let mut it = t.iter(IterBounds::default());
    for first in [true, false] {
        if first {
            it.seek_to_first();
        } else {
            it.seek_to_last();
        }
        if !it.valid() {
            break;
        }
        let Some(p) = parse_internal_key(it.key()) else {
            return Err(Problem(format!("L{level} {shown}: malformed internal key")));
        };
        let outside = p.user_key < f.smallest_user() || p.user_key > f.largest_user();
        if outside {
            return Err(Problem(format!(
                "L{level} {shown}: key {} lies outside the MANIFEST's range [{}, {}]",
                Enc::Text.show(p.user_key),
                Enc::Text.show(f.smallest_user()),
                Enc::Text.show(f.largest_user()),
            )));
        }
    }
    it.status().map_err(|e| Problem(format!("L{level} {e}")))?;
    Ok(n)
}

/// Files of one sorted run (a level ≥ 1 or an L0 sublevel) must not overlap, in key order.
fn check_run(what: &str, files: &[Arc<FileMeta>], problems: &mut Vec<Problem>) {
    let mut sorted: Vec<&Arc<FileMeta>> = files.iter().collect();
    sorted.sort_by(|a, b| a.smallest_user().cmp(b.smallest_user()));
    for w in sorted.windows(2) {
        let (a, b) = (w[0], w[1]);
        let ok = a.largest_user() < b.smallest_user()
            || (a.largest_user() == b.smallest_user() && a.largest_is_exclusive());
        if !ok {
            problems.push(Problem(format!(
                "{what}: {:06}.sst [{}, {}] overlaps {:06}.sst [{}, {}]",
                a.number,
                Enc::Text.show(a.smallest_user()),
                Enc::Text.show(a.largest_user()),
                b.number,
                Enc::Text.show(b.smallest_user()),
                Enc::Text.show(b.largest_user())
            )));
        }
    }
}

/// Every problem of a version: tables, then key order per level and L0 sublevel.
fn verify_version(dir: &Path, v: &Version) -> (Vec<Problem>, u64, u64, usize) {
    let mut problems = Vec::new();
    let (mut entries, mut bytes, mut tables) = (0u64, 0u64, 0usize);
    for (level, files) in v.levels.iter().enumerate() {
        for f in files {
            tables += 1;
            bytes += f.size;
            match verify_table(dir, level, f) {
                Ok(n) => entries += n,
                Err(p) => problems.push(p),
            }
        }
        if level >= 1 {
            check_run(&format!("L{level}"), files, &mut problems);
        }
    }
    for (i, run) in L0Sublevels::from_version(v)
        .sublevel_files()
        .iter()
        .enumerate()
    {
        check_run(&format!("L0 sublevel {i}"), run, &mut problems);
    }
    (problems, entries, bytes, tables)
}

/// `sluice verify`: every table of the current version; exit 2 naming file and offset on
/// the first sign of damage (every problem is listed).
pub fn verify(a: DbArg) -> CmdResult {
    let db = open_read_only(&a.db)?;
    let v = db.current_version();
    let (problems, entries, bytes, tables) = verify_version(&a.db, &v);
    // Not damage (no exit status of its own), but space an operator wants to know about.
    let notes = || {
        for line in tmp_dir_lines(&a.db) {
            println!("note: {line}");
        }
    };
    if problems.is_empty() {
        println!("OK: {tables} tables, {entries} entries, {bytes} bytes");
        notes();
        return Ok(ExitCode::SUCCESS);
    }
    notes();
    for p in &problems {
        eprintln!("FAILED: {}", p.0);
    }
    eprintln!(
        "{} problem(s) in {tables} tables of {}",
        problems.len(),
        a.db.display()
    );
    Ok(ExitCode::from(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice::key::{make_internal_key, ValueKind};

    fn file(number: u64, lo: &str, hi: &str) -> Arc<FileMeta> {
        Arc::new(FileMeta {
            number,
            size: 100,
            smallest: make_internal_key(lo.as_bytes(), 1, ValueKind::Value),
            largest: make_internal_key(hi.as_bytes(), 1, ValueKind::Value),
            smallest_seqno: 1,
            largest_seqno: 1,
            global_seqno: 0,
            range_dels: 0,
        })
    }

    #[test]
    fn overlapping_files_of_a_run_are_reported() {
        let mut problems = Vec::new();
        check_run("L1", &[file(2, "d", "f"), file(1, "a", "c")], &mut problems);
        assert!(problems.is_empty());
        check_run(
            "L2",
            &[file(3, "a", "c"), file(4, "c", "e"), file(5, "x", "z")],
            &mut problems,
        );
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0]
                .0
                .contains("L2: 000003.sst [a, c] overlaps 000004.sst [c, e]"),
            "{}",
            problems[0].0
        );
    }
}
