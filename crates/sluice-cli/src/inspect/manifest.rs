//! `sluice manifest dump`: the MANIFEST's version edits, one line (or JSON object) each, and
//! the LSM they add up to.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use sluice::version::{FileMeta, VersionEdit};
use sluice::wal::log::{LogEnd, LogReader};

use super::read_manifest;
use crate::args::CmdResult;
use crate::db_dir::check_db_dir;
use crate::text::{json_field, Enc};

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
pub fn dump(db_dir: PathBuf, json: bool) -> CmdResult {
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
