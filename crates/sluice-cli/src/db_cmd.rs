//! Database commands: put, get, delete, delete-range, load, scan, approx-size, stats, lsm,
//! manifest dump, wal dump, ingest.

use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use sluice::key::ValueKind;
use sluice::version::{FileMeta, VersionEdit};
use sluice::wal::log::{LogEnd, LogReader};
use sluice::{Db, ReadOptions, WriteBatch, WriteOptions};

use crate::args::{CmdResult, DbArg, KvEnc};
use crate::db_dir::{check_db_dir, open_read_only, open_writable, tmp_dir_lines, tmp_dirs_json};
use crate::text::{json_bytes, json_field, Enc};

const SYNC: WriteOptions = WriteOptions {
    sync: true,
    disable_wal: false,
};

/// `sluice put`.
pub fn put(a: DbArg, enc: KvEnc, key: String, value: String) -> CmdResult {
    let mut b = WriteBatch::new();
    b.put(
        &enc.keys().arg(&key, "key")?,
        &enc.values().arg(&value, "value")?,
    );
    let db = open_writable(&a.db, true)?;
    write_synced_and_close(db, b)
}

/// Output of `get` and `scan`.
#[derive(Args, Clone, Copy, Default)]
pub struct OutArgs {
    /// One JSON object per entry: `key`/`value` strings, or `key_hex`/`value_hex` for bytes
    /// that are not UTF-8 (and always with --hex).
    #[arg(long, conflicts_with = "table")]
    pub json: bool,
}

fn entry_json(key: Option<&[u8]>, value: &[u8], enc: KvEnc) -> String {
    let mut m = serde_json::Map::new();
    if let Some(k) = key {
        json_field(&mut m, "key", k, enc.keys() == Enc::Hex);
    }
    json_field(&mut m, "value", value, enc.values() == Enc::Hex);
    serde_json::Value::Object(m).to_string()
}

/// `sluice get`: prints the value; exit 1 when absent.
pub fn get(a: DbArg, enc: KvEnc, key: String, raw: bool, out: OutArgs) -> CmdResult {
    let key = enc.keys().arg(&key, "key")?;
    let db = open_read_only(&a.db)?;
    match db.get(&key)? {
        Some(v) => {
            let mut o = std::io::stdout().lock();
            if raw {
                o.write_all(&v)?;
            } else if out.json {
                writeln!(o, "{}", entry_json(Some(&key), &v, enc))?;
            } else {
                writeln!(o, "{}", enc.values().show(&v))?;
            }
            o.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            eprintln!("not found");
            Ok(ExitCode::from(1))
        }
    }
}

/// `sluice delete`.
pub fn delete(a: DbArg, enc: KvEnc, key: String) -> CmdResult {
    let mut b = WriteBatch::new();
    b.delete(&enc.keys().arg(&key, "key")?);
    let db = open_writable(&a.db, false)?;
    write_synced_and_close(db, b)
}

/// `sluice delete-range`.
pub fn delete_range(a: DbArg, enc: KvEnc, start: String, end: String) -> CmdResult {
    let start = enc.keys().arg(&start, "--start")?;
    let end = enc.keys().arg(&end, "--end")?;
    if start >= end {
        return Err("delete-range needs --start below --end".into());
    }
    let mut b = WriteBatch::new();
    b.delete_range(&start, &end);
    let db = open_writable(&a.db, false)?;
    write_synced_and_close(db, b)
}

/// Applies one batch durably (the CLI acknowledges only synced writes), then closes the DB.
fn write_synced_and_close(db: Db, b: WriteBatch) -> CmdResult {
    db.write(b, SYNC)?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// Input formats of `sluice load`.
#[derive(Clone, Copy, ValueEnum, Default)]
pub enum LoadFormat {
    /// `KEY<TAB>VALUE` lines (escaped text, or hex with --hex); `KEY` alone deletes.
    #[default]
    Tsv,
    /// `{"key":…,"value":…}` lines (`key_hex`/`value_hex` for bytes); no value deletes.
    Jsonl,
}

/// Arguments of `sluice load`.
#[derive(Args)]
pub struct LoadArgs {
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    enc: KvEnc,
    /// Input format.
    #[arg(long, value_enum, default_value = "tsv")]
    format: LoadFormat,
    /// Bytes of keys and values per WriteBatch.
    #[arg(long, default_value_t = 4 << 20)]
    batch_bytes: usize,
}

/// One parsed input line: a put (`Some(value)`) or a deletion.
fn parse_load_line(
    line: &[u8],
    format: LoadFormat,
    enc: KvEnc,
) -> Result<(Vec<u8>, Option<Vec<u8>>), String> {
    match format {
        LoadFormat::Tsv => {
            let mut parts = line.splitn(2, |&b| b == b'\t');
            let key = enc
                .keys()
                .field(parts.next().unwrap_or_default())
                .map_err(|e| format!("key: {e}"))?;
            let value = parts
                .next()
                .map(|v| enc.values().field(v).map_err(|e| format!("value: {e}")))
                .transpose()?;
            Ok((key, value))
        }
        LoadFormat::Jsonl => {
            let v: serde_json::Value =
                serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
            let serde_json::Value::Object(m) = v else {
                return Err("not a JSON object".into());
            };
            if let Some(k) = m
                .keys()
                .find(|k| !matches!(k.as_str(), "key" | "key_hex" | "value" | "value_hex"))
            {
                return Err(format!("unknown field {k:?}"));
            }
            let key = json_bytes(&m, "key")?.ok_or("no \"key\" or \"key_hex\"")?;
            Ok((key, json_bytes(&m, "value")?))
        }
    }
}

/// `sluice load`: lines from stdin written in large batches, the last one synced. Each batch
/// is atomic; a bad line stops the load with `<stdin>:LINE:` after the batches before it.
pub fn load(a: LoadArgs) -> CmdResult {
    let db = open_writable(&a.db.db, true)?;
    let mut batch = WriteBatch::new();
    let mut batch_bytes = 0usize;
    let (mut puts, mut dels, mut written) = (0u64, 0u64, 0u64);
    let async_write = WriteOptions {
        sync: false,
        disable_wal: false,
    };
    let stdin = std::io::stdin().lock();
    let mut result: Result<(), String> = Ok(());
    let mut unsynced = false;
    for (i, line) in stdin.split(b'\n').enumerate() {
        let mut line = line?;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        match parse_load_line(&line, a.format, a.enc) {
            Ok((k, Some(v))) => {
                batch_bytes += k.len() + v.len();
                batch.put(&k, &v);
                puts += 1;
            }
            Ok((k, None)) => {
                batch_bytes += k.len();
                batch.delete(&k);
                dels += 1;
            }
            Err(e) => {
                result = Err(format!("<stdin>:{}: {e}", i + 1));
                break;
            }
        }
        if batch_bytes >= a.batch_bytes {
            written += u64::from(batch.count());
            db.write(std::mem::take(&mut batch), async_write)?;
            batch_bytes = 0;
            unsynced = true;
        }
    }
    if result.is_ok() && !batch.is_empty() {
        written += u64::from(batch.count());
        db.write(batch, SYNC)?; // syncs the WAL with the earlier batches in it
        unsynced = false;
    }
    if unsynced {
        db.flush()?; // nothing left to sync the WAL with: make the batches durable as a table
    }
    db.close()?;
    match result {
        Ok(()) => {
            eprintln!("loaded {puts} puts and {dels} deletes");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            Err(format!("{e} (the {written} entries before this line's batch are loaded)").into())
        }
    }
}

/// Arguments of `sluice scan`.
#[derive(Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub(crate) db: DbArg,
    #[command(flatten)]
    pub(crate) enc: KvEnc,
    /// First key (inclusive); with --table, first key values `V,...` (inclusive).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) start: Option<String>,
    /// Last key (exclusive); with --table, key values `V,...` (exclusive).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) end: Option<String>,
    /// Only keys with this prefix.
    #[arg(long, conflicts_with = "table", allow_hyphen_values = true)]
    prefix: Option<String>,
    /// At most this many entries.
    #[arg(long)]
    pub(crate) limit: Option<u64>,
    /// Print only the number of entries (with --table: `{"rows": N}`, with --sum also the
    /// sum of a column).
    #[arg(long)]
    pub(crate) count: bool,
    #[command(flatten)]
    out: OutArgs,
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

/// `sluice scan`: `KEY<TAB>VALUE` lines, JSON lines, or a count.
pub fn scan(a: ScanArgs) -> CmdResult {
    let keys = a.enc.keys();
    let arg = |s: &Option<String>, what: &str| s.as_deref().map(|s| keys.arg(s, what)).transpose();
    let mut lower = arg(&a.start, "--start")?;
    let mut upper = arg(&a.end, "--end")?;
    if let Some(p) = arg(&a.prefix, "--prefix")? {
        lower = Some(lower.map_or(p.clone(), |l| l.max(p.clone())));
        if let Some(pe) = prefix_end(&p) {
            upper = Some(upper.map_or(pe.clone(), |u| u.min(pe)));
        }
    }
    let db = open_read_only(&a.db.db)?;
    let mut it = db.iter(ReadOptions {
        snapshot: None,
        lower_bound: lower,
        upper_bound: upper,
    })?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    it.seek_to_first();
    let mut n = 0u64;
    while it.valid() && a.limit.is_none_or(|l| n < l) {
        if a.count {
            // counted below
        } else if a.out.json {
            writeln!(out, "{}", entry_json(Some(it.key()), it.value(), a.enc))?;
        } else {
            writeln!(
                out,
                "{}\t{}",
                keys.show(it.key()),
                a.enc.values().show(it.value())
            )?;
        }
        n += 1;
        it.next();
    }
    it.status()?;
    if a.count {
        if a.out.json {
            writeln!(out, "{}", serde_json::json!({ "count": n }))?;
        } else {
            writeln!(out, "{n}")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `sluice approx-size`: the bytes on disk of a key range, estimated from table indexes.
pub fn approx_size(a: DbArg, enc: KvEnc, start: Option<String>, end: Option<String>) -> CmdResult {
    let start = start.map(|s| enc.keys().arg(&s, "--start")).transpose()?;
    let end = end.map(|s| enc.keys().arg(&s, "--end")).transpose()?;
    let db = open_read_only(&a.db)?;
    println!("{}", db.approximate_size(start.as_deref(), end.as_deref())?);
    Ok(ExitCode::SUCCESS)
}

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

/// A whole file; the error names it.
fn read_file(path: &Path) -> Result<Vec<u8>, sluice::Error> {
    std::fs::read(path).map_err(|e| sluice::Error::io(path, e))
}

/// The path and bytes of the MANIFEST that `CURRENT` names.
fn read_manifest(dir: &Path) -> Result<(PathBuf, Vec<u8>), sluice::Error> {
    let current = dir.join("CURRENT");
    let name = String::from_utf8(read_file(&current)?)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| s.starts_with("MANIFEST-") && !s.contains('/'))
        .ok_or_else(|| {
            sluice::Error::corruption(&current, 0, "CURRENT does not name a MANIFEST")
        })?;
    let path = dir.join(name);
    let data = read_file(&path)?;
    Ok((path, data))
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
            if e.format_version.is_some() {
                // The snapshot starting a MANIFEST: the version as it was, not new work.
            } else if !e.deleted.is_empty() {
                let moved = e
                    .deleted
                    .iter()
                    .all(|(_, n)| e.added.iter().any(|(_, f)| f.number == *n));
                if moved {
                    h.trivial_moves += 1;
                } else {
                    h.compactions += 1;
                    h.compaction_bytes_written += added;
                    h.compaction_bytes_read += e
                        .deleted
                        .iter()
                        .filter_map(|(l, n)| v.levels[*l].iter().find(|f| f.number == *n))
                        .map(|f| f.size)
                        .sum::<u64>();
                }
            } else if e.flushed_seqno.is_some() || (e.log_number.is_some() && !e.added.is_empty()) {
                h.flushes += 1;
                h.flush_bytes += added;
            } else if !e.added.is_empty() {
                h.ingests += 1;
                h.ingest_bytes += added;
            }
            v = v
                .apply(&e)
                .map_err(|e| sluice::Error::corruption(&path, off, e))?;
        }
        Ok(h)
    }
}

/// `sluice stats`.
pub fn stats(a: DbArg, json: bool) -> CmdResult {
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

/// `sluice lsm`: the levels and L0 sublevels as key-span bars, newest sublevel first.
pub fn lsm(a: DbArg, width: usize) -> CmdResult {
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

fn file_json(level: usize, f: &FileMeta) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    m.insert("level".into(), level.into());
    m.insert("number".into(), f.number.into());
    m.insert("size".into(), f.size.into());
    json_field(&mut m, "smallest", f.smallest_user(), false);
    json_field(&mut m, "largest", f.largest_user(), false);
    m.insert("smallest_seqno".into(), f.smallest_seqno.into());
    m.insert("largest_seqno".into(), f.largest_seqno.into());
    if f.global_seqno != 0 {
        m.insert("global_seqno".into(), f.global_seqno.into());
    }
    if f.range_dels != 0 {
        m.insert("range_dels".into(), f.range_dels.into());
    }
    m.into()
}

fn edit_json(off: u64, e: &VersionEdit) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    m.insert("offset".into(), off.into());
    let opt = |m: &mut serde_json::Map<String, serde_json::Value>, k: &str, v: Option<u64>| {
        if let Some(v) = v {
            m.insert(k.into(), v.into());
        }
    };
    opt(&mut m, "format_version", e.format_version);
    opt(&mut m, "log_number", e.log_number);
    opt(&mut m, "next_file_number", e.next_file_number);
    opt(&mut m, "last_sequence", e.last_sequence);
    opt(&mut m, "flushed_seqno", e.flushed_seqno);
    let deleted: Vec<serde_json::Value> = e
        .deleted
        .iter()
        .map(|(l, n)| serde_json::json!({"level": l, "number": n}))
        .collect();
    m.insert("deleted".into(), deleted.into());
    let added: Vec<serde_json::Value> = e.added.iter().map(|(l, f)| file_json(*l, f)).collect();
    m.insert("added".into(), added.into());
    m.into()
}

/// `sluice manifest dump`: one line per version edit, then the resulting LSM (or one JSON
/// object with `edits` and `levels`).
pub fn manifest_dump(db_dir: PathBuf, json: bool) -> CmdResult {
    check_db_dir(&db_dir, false)?;
    let (path, data) = read_manifest(&db_dir)?;
    let mut r = LogReader::new(&data, &path);
    let mut v = sluice::version::Version::default();
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut edits = Vec::new();
    if !json {
        writeln!(out, "{}", path.display())?;
    }
    while let Some((off, rec)) = r.next_record()? {
        let e = VersionEdit::decode(&rec).map_err(|e| sluice::Error::corruption(&path, off, e))?;
        if json {
            edits.push(edit_json(off, &e));
        } else {
            writeln!(out, "@{off} {}", describe_edit(&e))?;
        }
        v = v
            .apply(&e)
            .map_err(|e| sluice::Error::corruption(&path, off, e))?;
    }
    let torn = match r.end() {
        Some(LogEnd::TornTail(off, why)) => Some((off, why)),
        _ => None,
    };
    if json {
        let levels: Vec<serde_json::Value> = v
            .levels
            .iter()
            .enumerate()
            .flat_map(|(l, files)| files.iter().map(move |f| file_json(l, f)))
            .collect();
        let mut m = serde_json::Map::new();
        m.insert("manifest".into(), path.display().to_string().into());
        m.insert("edits".into(), edits.into());
        m.insert("files".into(), levels.into());
        if let Some((off, why)) = torn {
            m.insert(
                "torn_tail".into(),
                serde_json::json!({"offset": off, "reason": why.to_string()}),
            );
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&m)?)?;
    } else {
        if let Some((off, why)) = torn {
            writeln!(out, "(torn tail at {off}: {why})")?;
        }
        write!(out, "{}", v.describe())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn describe_edit(e: &VersionEdit) -> String {
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
            Enc::Text.show(f.smallest_user()),
            Enc::Text.show(f.largest_user()),
            f.smallest_seqno,
            f.largest_seqno
        ));
    }
    parts.join(" ")
}

/// `sluice wal dump FILE`: one line per batch and entry.
pub fn wal_dump(file: PathBuf, enc: KvEnc) -> CmdResult {
    let data = read_file(&file)?;
    let mut r = LogReader::new(&data, &file);
    let mut records = 0u64;
    let (k, v) = (enc.keys(), enc.values());
    let mut out = BufWriter::new(std::io::stdout().lock());
    while let Some((off, rec)) = r.next_record()? {
        records += 1;
        if let Some((seq, _)) = sluice::wal::batch::decode_ingest_record(&rec) {
            writeln!(
                out,
                "@{off} ingest seq={seq} (tables queued above the memtable)"
            )?;
            continue;
        }
        let b = WriteBatch::from_rep(rec).map_err(|e| sluice::Error::corruption(&file, off, e))?;
        writeln!(out, "@{off} seq={} count={}", b.seqno(), b.count())?;
        for e in b.iter() {
            let e = e.map_err(|e| sluice::Error::corruption(&file, off, e))?;
            match e.kind {
                ValueKind::Deletion => writeln!(out, "  del {}", k.show(e.key))?,
                ValueKind::Value => writeln!(out, "  put {} {}", k.show(e.key), v.show(e.value))?,
                ValueKind::RangeDeletion => {
                    writeln!(out, "  rangedel {} {}", k.show(e.key), k.show(e.value))?
                }
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
        writeln!(out, "(torn tail at {off}: {why})")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Subcommands of `sluice manifest`.
#[derive(Subcommand)]
pub enum ManifestCommand {
    /// Print every version edit of the current MANIFEST and the resulting LSM shape.
    Dump {
        /// The database directory.
        #[arg(long)]
        db: PathBuf,
        /// One JSON object: `edits` (each with its offset) and the resulting `files`.
        #[arg(long)]
        json: bool,
    },
}

/// Subcommands of `sluice wal`.
#[derive(Subcommand)]
pub enum WalCommand {
    /// Print every batch in a WAL file.
    Dump {
        /// The WAL file.
        file: PathBuf,
        #[command(flatten)]
        enc: KvEnc,
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
    let db = open_writable(&db_dir, true)?;
    let opts = sluice::IngestOptions {
        allow_overlap,
        ingest_behind,
        link_files: link,
        ..Default::default()
    };
    let ingested = db.ingest(&files, &opts).map_err(|e| {
        // The library's option names, said as this command's flags.
        e.to_string()
            .replace("set allow_overlap", "pass --allow-overlap")
            .replace("ingest_behind", "--ingest-behind")
    })?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_lines_parse() {
        let enc = KvEnc::default();
        assert_eq!(
            parse_load_line(b"a\\tb\tv\\n", LoadFormat::Tsv, enc).unwrap(),
            (b"a\tb".to_vec(), Some(b"v\n".to_vec()))
        );
        assert_eq!(
            parse_load_line(b"gone", LoadFormat::Tsv, enc).unwrap(),
            (b"gone".to_vec(), None)
        );
        let hex = KvEnc {
            hex: true,
            ..KvEnc::default()
        };
        assert_eq!(
            parse_load_line(b"0x61\t62", LoadFormat::Tsv, hex).unwrap(),
            (b"a".to_vec(), Some(b"b".to_vec()))
        );
        assert_eq!(
            parse_load_line(br#"{"key":"k","value_hex":"00ff"}"#, LoadFormat::Jsonl, enc).unwrap(),
            (b"k".to_vec(), Some(vec![0, 255]))
        );
        assert!(parse_load_line(br#"{"value":"v"}"#, LoadFormat::Jsonl, enc).is_err());
        assert!(parse_load_line(br#"{"key":1}"#, LoadFormat::Jsonl, enc).is_err());
        assert!(parse_load_line(br#"{"key":"k","val":"v"}"#, LoadFormat::Jsonl, enc).is_err());
        assert!(parse_load_line(b"[1]", LoadFormat::Jsonl, enc).is_err());
        assert!(parse_load_line(b"a\\q\tv", LoadFormat::Tsv, enc).is_err());
    }
}
