//! Database commands: put, get, delete, scan, stats, manifest dump, wal dump.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use sluice::key::ValueKind;
use sluice::version::VersionEdit;
use sluice::wal::log::{LogEnd, LogReader};
use sluice::{Db, Options, ReadOptions, WriteBatch};

type CmdResult = Result<ExitCode, Box<dyn std::error::Error>>;

/// `--db DIR` plus key encoding.
#[derive(Args, Clone)]
pub struct DbArg {
    /// The database directory.
    #[arg(long)]
    pub db: PathBuf,
    /// Keys and values on the command line and in output are hex.
    #[arg(long)]
    pub hex: bool,
}

fn decode(s: &str, hex_mode: bool) -> Result<Vec<u8>, String> {
    if hex_mode {
        hex::decode(s).map_err(|e| format!("{s:?} is not valid hex: {e}"))
    } else {
        Ok(s.as_bytes().to_vec())
    }
}

fn render(b: &[u8], hex_mode: bool) -> String {
    if hex_mode {
        hex::encode(b)
    } else {
        b.escape_ascii().to_string()
    }
}

/// The Db's own persisted options (so a tool never resets e.g. its compression), or the
/// defaults for a Db that has none yet.
fn db_options(dir: &Path, create: bool) -> Result<Options, sluice::Error> {
    let base = Options {
        create_if_missing: create,
        ..Options::default()
    };
    if !dir.join("CURRENT").exists() {
        if !create {
            let what = if dir.is_file() {
                "is a file, not a database directory"
            } else if dir.is_dir() {
                "is not a Sluice database (no CURRENT file)"
            } else {
                "does not exist"
            };
            return Err(sluice::Error::InvalidArgument(format!(
                "{} {what}",
                dir.display()
            )));
        }
        return Ok(base);
    }
    Options::load_latest(dir, base)
}

/// Opens an existing Db for a write (with its persisted options).
fn open_existing(dir: &Path) -> Result<Db, sluice::Error> {
    Db::open(dir, db_options(dir, false)?)
}

/// Opens an existing Db read-only: nothing is flushed, written or deleted, no lock is taken,
/// so it works beside a writer (which may delete a table under it: rerun then).
fn open_read_only(dir: &Path) -> Result<Db, sluice::Error> {
    Db::open_read_only(dir, db_options(dir, false)?)
}

/// `sluice put`.
pub fn put(a: DbArg, key: String, value: String) -> CmdResult {
    let db = Db::open(&a.db, db_options(&a.db, true)?)?;
    let mut b = WriteBatch::new();
    b.put(&decode(&key, a.hex)?, &decode(&value, a.hex)?);
    write_synced_and_close(db, b)
}

/// `sluice get`: prints the value, exit 1 when absent.
pub fn get(a: DbArg, key: String) -> CmdResult {
    let db = open_read_only(&a.db)?;
    match db.get(&decode(&key, a.hex)?)? {
        Some(v) => {
            println!("{}", render(&v, a.hex));
            Ok(ExitCode::SUCCESS)
        }
        None => {
            eprintln!("not found");
            Ok(ExitCode::from(1))
        }
    }
}

/// `sluice delete`.
pub fn delete(a: DbArg, key: String) -> CmdResult {
    let db = open_existing(&a.db)?;
    let mut b = WriteBatch::new();
    b.delete(&decode(&key, a.hex)?);
    write_synced_and_close(db, b)
}

/// Applies one batch durably (the CLI acknowledges only synced writes), then closes the DB.
fn write_synced_and_close(db: Db, b: WriteBatch) -> CmdResult {
    let sync = sluice::WriteOptions {
        sync: true,
        disable_wal: false,
    };
    db.write(b, sync)?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `sluice scan`.
#[derive(Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub(crate) db: DbArg,
    /// First key (inclusive); with --table, first key values `V,...` (inclusive).
    #[arg(long)]
    pub(crate) start: Option<String>,
    /// Last key (exclusive); with --table, key values `V,...` (exclusive).
    #[arg(long)]
    pub(crate) end: Option<String>,
    /// Only keys with this prefix.
    #[arg(long)]
    prefix: Option<String>,
    /// At most this many entries.
    #[arg(long)]
    pub(crate) limit: Option<u64>,
}

fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut e = p.to_vec();
    while let Some(last) = e.pop() {
        if last < 0xff {
            e.push(last + 1);
            return Some(e);
        }
    }
    None
}

/// `sluice scan`: `KEY<TAB>VALUE` lines.
pub fn scan(a: ScanArgs) -> CmdResult {
    let db = open_read_only(&a.db.db)?;
    let mut lower = a
        .start
        .as_deref()
        .map(|s| decode(s, a.db.hex))
        .transpose()?;
    let mut upper = a.end.as_deref().map(|s| decode(s, a.db.hex)).transpose()?;
    if let Some(p) = a
        .prefix
        .as_deref()
        .map(|s| decode(s, a.db.hex))
        .transpose()?
    {
        lower = Some(lower.map_or(p.clone(), |l| l.max(p.clone())));
        if let Some(pe) = prefix_end(&p) {
            upper = Some(upper.map_or(pe.clone(), |u| u.min(pe)));
        }
    }
    let mut it = db.iter(ReadOptions {
        snapshot: None,
        lower_bound: lower,
        upper_bound: upper,
    })?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    it.seek_to_first();
    let mut n = 0u64;
    while it.valid() && a.limit.is_none_or(|l| n < l) {
        writeln!(
            out,
            "{}\t{}",
            render(it.key(), a.db.hex),
            render(it.value(), a.db.hex)
        )?;
        n += 1;
        it.next();
    }
    it.status()?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `sluice stats`.
pub fn stats(a: DbArg, json: bool) -> CmdResult {
    let db = open_read_only(&a.db)?;
    let m = db.metrics();
    if json {
        let levels: Vec<serde_json::Value> = m
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| serde_json::json!({"level": i, "files": l.files, "bytes": l.bytes, "score": l.score_x100 as f64 / 100.0}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "levels": levels,
                "read_amplification": m.read_amplification,
                "l0_sublevels": m.l0_sublevels,
                "pending_compaction_bytes": m.pending_compaction_bytes,
                "write_amplification": m.write_amplification,
                "flushes": m.flushes,
                "compactions": m.compactions,
                "compaction_bytes_read": m.compaction_bytes_read,
                "compaction_bytes_written": m.compaction_bytes_written,
                "stall_count": m.stall_count,
                "stall_micros": m.stall_micros,
                "last_sequence": m.last_sequence,
                "memtable_bytes": m.memtable_bytes,
            }))?
        );
    } else {
        println!("level  files  bytes        score");
        for (i, l) in m.levels.iter().enumerate() {
            println!(
                "L{i:<5} {:<6} {:<12} {:.2}",
                l.files,
                l.bytes,
                l.score_x100 as f64 / 100.0
            );
        }
        println!(
            "read amplification: {} (L0 sublevels: {})",
            m.read_amplification, m.l0_sublevels
        );
        println!("pending compaction bytes: {}", m.pending_compaction_bytes);
        println!("write amplification: {:.2}", m.write_amplification);
        println!(
            "flushes: {}  compactions: {} (read {} B, written {} B)",
            m.flushes, m.compactions, m.compaction_bytes_read, m.compaction_bytes_written
        );
        println!("stalls: {} ({} µs)", m.stall_count, m.stall_micros);
        println!("last sequence: {}", m.last_sequence);
    }
    Ok(ExitCode::SUCCESS)
}

/// `sluice lsm`: the levels and L0 sublevels as key-span bars, newest sublevel first.
pub fn lsm(a: DbArg, width: usize) -> CmdResult {
    let db = open_read_only(&a.db)?;
    print!(
        "{}",
        sluice::version::render::render(&db.current_version(), width.max(20))
    );
    let m = db.metrics();
    println!(
        "read amplification {} (L0 sublevels {}), pending compaction bytes {}",
        m.read_amplification, m.l0_sublevels, m.pending_compaction_bytes
    );
    Ok(ExitCode::SUCCESS)
}

/// `sluice manifest dump`: one line per version edit, then the resulting LSM.
pub fn manifest_dump(db_dir: PathBuf) -> CmdResult {
    let current = std::fs::read_to_string(db_dir.join("CURRENT"))?;
    let path = db_dir.join(current.trim());
    let data = std::fs::read(&path)?;
    let mut r = LogReader::new(&data, &path);
    let mut v = sluice::version::Version::default();
    println!("{}", path.display());
    while let Some((off, rec)) = r.next_record()? {
        let e = VersionEdit::decode(&rec).map_err(|e| sluice::Error::corruption(&path, off, e))?;
        let mut parts = Vec::new();
        if let Some(x) = e.format_version {
            parts.push(format!("format={x}"));
        }
        if let Some(x) = e.log_number {
            parts.push(format!("log={x}"));
        }
        if let Some(x) = e.next_file_number {
            parts.push(format!("next_file={x}"));
        }
        if let Some(x) = e.last_sequence {
            parts.push(format!("last_seq={x}"));
        }
        for (l, n) in &e.deleted {
            parts.push(format!("-L{l}:{n}"));
        }
        for (l, f) in &e.added {
            parts.push(format!(
                "+L{l}:{}({}B,[{}..{}],seq {}..{})",
                f.number,
                f.size,
                render(f.smallest_user(), false),
                render(f.largest_user(), false),
                f.smallest_seqno,
                f.largest_seqno
            ));
        }
        println!("@{off} {}", parts.join(" "));
        v = v
            .apply(&e)
            .map_err(|e| sluice::Error::corruption(&path, off, e))?;
    }
    if let Some(LogEnd::TornTail(off, why)) = r.end() {
        println!("(torn tail at {off}: {why})");
    }
    print!("{}", v.describe());
    Ok(ExitCode::SUCCESS)
}

/// `sluice wal dump FILE`: one line per batch and entry.
pub fn wal_dump(file: PathBuf, hex_mode: bool) -> CmdResult {
    let data = std::fs::read(&file)?;
    let mut r = LogReader::new(&data, &file);
    let mut records = 0u64;
    while let Some((off, rec)) = r.next_record()? {
        records += 1;
        if let Some((seq, _)) = sluice::wal::batch::decode_ingest_record(&rec) {
            println!("@{off} ingest seq={seq} (tables queued above the memtable)");
            continue;
        }
        let b = WriteBatch::from_rep(rec).map_err(|e| sluice::Error::corruption(&file, off, e))?;
        println!("@{off} seq={} count={}", b.seqno(), b.count());
        for e in b.iter() {
            let e = e.map_err(|e| sluice::Error::corruption(&file, off, e))?;
            match e.kind {
                ValueKind::Deletion => println!("  del {}", render(e.key, hex_mode)),
                ValueKind::Value => println!(
                    "  put {} {}",
                    render(e.key, hex_mode),
                    render(e.value, hex_mode)
                ),
                ValueKind::RangeDeletion => println!(
                    "  rangedel {} {}",
                    render(e.key, hex_mode),
                    render(e.value, hex_mode)
                ),
            }
        }
    }
    if let Some(LogEnd::TornTail(off, why)) = r.end() {
        if records == 0 {
            return Err(format!(
                "{}: not a WAL (no valid record; {why} at offset {off})",
                file.display()
            )
            .into());
        }
        println!("(torn tail at {off}: {why})");
    }
    Ok(ExitCode::SUCCESS)
}

/// Subcommands of `sluice manifest`.
#[derive(Subcommand)]
pub enum ManifestCommand {
    /// Print every version edit and the resulting LSM shape.
    Dump {
        /// The database directory.
        #[arg(long)]
        db: PathBuf,
    },
}

/// Subcommands of `sluice wal`.
#[derive(Subcommand)]
pub enum WalCommand {
    /// Print every batch in a WAL file.
    Dump {
        /// The WAL file.
        file: PathBuf,
        /// Print keys and values as hex.
        #[arg(long)]
        hex: bool,
    },
}

/// `sluice ingest`.
pub fn ingest(
    db_dir: PathBuf,
    files: Vec<PathBuf>,
    allow_overlap: bool,
    ingest_behind: bool,
    link: bool,
) -> CmdResult {
    let db = Db::open(&db_dir, db_options(&db_dir, true)?)?;
    let opts = sluice::IngestOptions {
        allow_overlap,
        ingest_behind,
        link_files: link,
        ..Default::default()
    };
    for f in db.ingest(&files, &opts)? {
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
