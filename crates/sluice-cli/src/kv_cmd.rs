//! Key/value commands: put, get, delete, delete-range, load, scan, approx-size — a Db's data
//! key by key, as text, hex or JSON lines (their table forms, `--pk` and `--table`, are in
//! `import_cmd`). Whole tables come and go through `ops_cmd` (ingest, flush, compact);
//! `inspect/` shows how the Db is laid out.

use std::io::{BufRead, BufWriter, Write};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use sluice::{Db, ReadOptions, Trace, WriteBatch, WriteOptions};
use sluice_import::keycode::prefix_successor;

use crate::args::{CmdResult, DbArg, KvEnc, TraceArg};
use crate::db_dir::{open_read_only, open_writable};
use crate::text::{json_bytes, json_field, Enc};

const SYNC: WriteOptions = WriteOptions {
    sync: true,
    disable_wal: false,
    trace: None,
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
pub fn get(
    a: DbArg,
    enc: KvEnc,
    key: String,
    raw: bool,
    out: OutArgs,
    trace: Option<&Trace>,
) -> CmdResult {
    let key = enc.keys().arg(&key, "key")?;
    let db = open_read_only(&a.db)?;
    let ro = ReadOptions {
        trace,
        ..Default::default()
    };
    match db.get_opt(&key, &ro)? {
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
    let new = crate::db_dir::new_db(&a.db.db);
    let db = open_writable(&a.db.db, true)?;
    let mut batch = WriteBatch::new();
    let mut batch_bytes = 0usize;
    let (mut puts, mut dels, mut written) = (0u64, 0u64, 0u64);
    let async_write = WriteOptions {
        sync: false,
        disable_wal: false,
        ..Default::default()
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
    if result.is_err() {
        // A Db this load created and wrote nothing to goes again: the path is as it was.
        crate::db_dir::close_failed(new, db);
    } else {
        db.close()?;
    }
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
    #[command(flatten)]
    pub(crate) trace: TraceArg,
}

/// `sluice scan`: `KEY<TAB>VALUE` lines, JSON lines, or a count.
pub fn scan(a: ScanArgs, trace: Option<&Trace>) -> CmdResult {
    let keys = a.enc.keys();
    let arg = |s: &Option<String>, what: &str| s.as_deref().map(|s| keys.arg(s, what)).transpose();
    let mut lower = arg(&a.start, "--start")?;
    let mut upper = arg(&a.end, "--end")?;
    if let Some(p) = arg(&a.prefix, "--prefix")? {
        lower = Some(lower.map_or(p.clone(), |l| l.max(p.clone())));
        if let Some(pe) = prefix_successor(&p) {
            upper = Some(upper.map_or(pe.clone(), |u| u.min(pe)));
        }
    }
    let db = open_read_only(&a.db.db)?;
    let mut it = db.iter(ReadOptions {
        lower_bound: lower,
        upper_bound: upper,
        trace,
        ..Default::default()
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
