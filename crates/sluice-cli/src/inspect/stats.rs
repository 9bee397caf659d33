//! `sluice stats`: files, bytes, entries and deletions per level; read amplification; the
//! work recorded in the MANIFEST (every process's); this process's counters.

use std::path::Path;
use std::process::ExitCode;

use sluice::version::VersionEdit;
use sluice::wal::log::LogReader;

use super::read_manifest;
use super::timeline::sluice_manifest::edit_of;
use super::timeline::{classify, Kind};
use crate::args::{CmdResult, DbArg};
use crate::db_dir::{open_read_only, tmp_dir_lines, tmp_dirs_json};

/// Entries and deletions per level, from each table's properties (reads only the footer,
/// index and properties of each table).
fn level_entries(
    dir: &Path,
    v: &sluice::version::Version,
) -> Result<Vec<(u64, u64)>, sluice::Error> {
    let mut out = Vec::new();
    for files in &v.levels {
        let (mut entries, mut deletions) = (0u64, 0u64);
        for f in files {
            let t = sluice::Table::open_path(
                &dir.join(format!("{:06}.sst", f.number)),
                &sluice::TableReadOptions::new(),
            )?;
            let p = t.properties();
            entries += p.num_entries;
            deletions += p.num_deletions + p.num_range_deletions;
        }
        out.push((entries, deletions));
    }
    Ok(out)
}

/// Flush, compaction and ingest totals derived from the edits of the current MANIFEST (its
/// history since it was started: see `Options::max_manifest_file_size`), so they count the
/// work of every process that had the Db open, not only this one.
#[derive(Default, Debug, PartialEq)]
struct History {
    edits: u64,
    /// Flushes (edits advancing the flushed seqno, and an open's flush of a WAL left behind).
    flushes: u64,
    flush_bytes: u64,
    /// Compactions that rewrote files, and the bytes they read and wrote.
    compactions: u64,
    compaction_bytes_read: u64,
    compaction_bytes_written: u64,
    /// Compactions that moved files down without rewriting them.
    trivial_moves: u64,
    /// Ingest edits and the bytes they added.
    ingests: u64,
    ingest_bytes: u64,
}

impl History {
    /// (flush + compaction bytes written) / flush bytes: RocksDB's write amplification.
    fn write_amplification(&self) -> f64 {
        if self.flush_bytes == 0 {
            return 0.0;
        }
        (self.flush_bytes + self.compaction_bytes_written) as f64 / self.flush_bytes as f64
    }

    fn from_manifest(dir: &Path) -> Result<History, Box<dyn std::error::Error>> {
        let (path, data) = read_manifest(dir)?;
        let mut r = LogReader::new(&data, &path);
        let mut v = sluice::version::Version::default();
        let mut h = History::default();
        while let Some((off, rec)) = r.next_record()? {
            let e =
                VersionEdit::decode(&rec).map_err(|e| sluice::Error::corruption(&path, off, e))?;
            h.edits += 1;
            let added: u64 = e.added.iter().map(|(_, f)| f.size).sum();
            let read: u64 = e
                .deleted
                .iter()
                .filter_map(|(l, n)| v.levels[*l].iter().find(|f| f.number == *n))
                .map(|f| f.size)
                .sum();
            match classify(&edit_of(off, e.clone())) {
                // The snapshot starting a MANIFEST: the version as it was, not new work.
                Kind::Snapshot | Kind::Other => {}
                Kind::Move => h.trivial_moves += 1,
                Kind::Compaction => {
                    h.compactions += 1;
                    h.compaction_bytes_written += added;
                    h.compaction_bytes_read += read;
                }
                Kind::Flush | Kind::FlushableIngest => {
                    h.flushes += 1;
                    h.flush_bytes += added;
                }
                Kind::Ingest => {
                    h.ingests += 1;
                    h.ingest_bytes += added;
                }
            }
            v = v
                .apply(&e)
                .map_err(|e| sluice::Error::corruption(&path, off, e))?;
        }
        Ok(h)
    }
}

/// `sluice stats`.
pub fn run(a: DbArg, json: bool) -> CmdResult {
    let db = open_read_only(&a.db)?;
    let m = db.metrics();
    let entries = level_entries(&a.db, &db.current_version())?;
    let h = History::from_manifest(&a.db)?;
    if json {
        let levels: Vec<serde_json::Value> = m
            .levels
            .iter()
            .zip(&entries)
            .enumerate()
            .map(|(i, (l, (n, d)))| serde_json::json!({"level": i, "files": l.files, "bytes": l.bytes, "entries": n, "deletions": d, "score": l.score_x100 as f64 / 100.0}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "levels": levels,
                "read_amplification": m.read_amplification,
                "l0_sublevels": m.l0_sublevels,
                "pending_compaction_bytes": m.pending_compaction_bytes,
                "manifest_history": {
                    "edits": h.edits,
                    "flushes": h.flushes,
                    "flush_bytes": h.flush_bytes,
                    "compactions": h.compactions,
                    "compaction_bytes_read": h.compaction_bytes_read,
                    "compaction_bytes_written": h.compaction_bytes_written,
                    "trivial_moves": h.trivial_moves,
                    "ingests": h.ingests,
                    "ingest_bytes": h.ingest_bytes,
                    "write_amplification": h.write_amplification(),
                },
                "counters_scope": "the fields below: this process only (a CLI command opens the Db afresh)",
                "write_amplification": m.write_amplification,
                "flushes": m.flushes,
                "compactions": m.compactions,
                "compaction_bytes_read": m.compaction_bytes_read,
                "compaction_bytes_written": m.compaction_bytes_written,
                "stall_count": m.stall_count,
                "stall_micros": m.stall_micros,
                "last_sequence": m.last_sequence,
                "memtable_bytes": m.memtable_bytes,
                "import_tmp_dirs": tmp_dirs_json(&a.db),
            }))?
        );
    } else {
        println!("level  files  bytes        entries     deletions   score");
        for (i, (l, (n, d))) in m.levels.iter().zip(&entries).enumerate() {
            println!(
                "L{i:<5} {:<6} {:<12} {:<11} {:<11} {:.2}",
                l.files,
                l.bytes,
                n,
                d,
                l.score_x100 as f64 / 100.0
            );
        }
        println!(
            "read amplification: {} (L0 sublevels: {})",
            m.read_amplification, m.l0_sublevels
        );
        println!("pending compaction bytes: {}", m.pending_compaction_bytes);
        println!("last sequence: {}", m.last_sequence);
        println!(
            "from the MANIFEST's {} edits (every process's work since it was started):",
            h.edits
        );
        println!(
            "  flushes: {} ({} B)  compactions: {} (read {} B, written {} B)  trivial moves: {}  ingests: {} ({} B)",
            h.flushes,
            h.flush_bytes,
            h.compactions,
            h.compaction_bytes_read,
            h.compaction_bytes_written,
            h.trivial_moves,
            h.ingests,
            h.ingest_bytes
        );
        println!(
            "  write amplification: {:.2} ((flush + compaction bytes written) / flush bytes)",
            h.write_amplification()
        );
        println!(
            "since this process opened the Db (the library's Db::metrics() counts a long-running \
             process's; a CLI command opens the Db afresh):"
        );
        println!("  write amplification: {:.2}", m.write_amplification);
        println!(
            "  flushes: {}  compactions: {} (read {} B, written {} B)",
            m.flushes, m.compactions, m.compaction_bytes_read, m.compaction_bytes_written
        );
        println!("  stalls: {} ({} µs)", m.stall_count, m.stall_micros);
        for line in tmp_dir_lines(&a.db) {
            println!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
