//! `sluice wal dump`: every batch of a WAL file and its entries, and where a torn tail begins.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use sluice::key::ValueKind;
use sluice::wal::log::{LogEnd, LogReader};
use sluice::WriteBatch;

use super::read_file;
use crate::args::{CmdResult, KvEnc};

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

/// `sluice wal dump FILE`: one line per batch and entry.
pub fn dump(file: PathBuf, enc: KvEnc) -> CmdResult {
    let data = read_file(&file)?;
    let mut r = LogReader::wal(&data, &file);
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
        if let Some((manifest, end)) = sluice::wal::batch::decode_install_marker(&rec) {
            writeln!(
                out,
                "@{off} ingest installed (MANIFEST-{manifest:06} edit ending at byte {end})"
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
