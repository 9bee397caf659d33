//! The fingerprint of an import (invariant 1 of [`super`]): what must be equal for a
//! checkpoint to be resumed, and the words that say what differs.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;

use serde::{Deserialize, Serialize};
use sluice::Db;

use super::canonical;
use crate::pipeline::Import;
use crate::schema::TableDef;
use crate::ImportError;

/// What must be equal for a checkpoint to be resumed (invariant 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Fingerprint {
    pub(crate) db: String,
    /// The newest seqno in the table's key range and its catalog entry (see `table_seqno`;
    /// [`sluice::Db::max_seqno_in_range`]), not the Db's: writes elsewhere in the Db (a
    /// serving workload, other tables) leave a checkpoint resumable; a write into the table
    /// or an import into it does not. (A format-1 checkpoint recorded the Db's seqno here;
    /// it resumes only if that equals this number, else it is refused as changed.)
    #[serde(alias = "db_seqno")]
    pub(crate) table_seqno: u64,
    pub(crate) catalog: u32,
    pub(crate) table: String,
    pub(crate) created: bool,
    pub(crate) existing_rows: bool,
    pub(crate) rowid_base: i64,
    pub(crate) inputs: Vec<InputPrint>,
    pub(crate) options: BTreeMap<String, String>,
}

/// One input file as the checkpoint saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct InputPrint {
    pub(crate) path: String,
    pub(crate) size: u64,
    pub(crate) mtime_ns: i64,
}

impl Import {
    /// The fingerprint of this import into `db` (invariant 1).
    pub(crate) fn fingerprint(
        &self,
        db: &Db,
        table: &TableDef,
        created: bool,
        existing_rows: bool,
        rowid_base: i64,
    ) -> Result<Fingerprint, ImportError> {
        let catalog = crate::catalog::load(db)?;
        let mut inputs = Vec::new();
        for f in &self.files {
            let m = std::fs::metadata(f).map_err(|e| ImportError::io(f, e))?;
            inputs.push(InputPrint {
                path: canonical(f),
                size: m.len(),
                mtime_ns: m.mtime().saturating_mul(1_000_000_000) + m.mtime_nsec(),
            });
        }
        let o = &self.opts;
        // Not the layout option: the bound table (`table` below) holds the layout the import
        // writes, whether named or the stored table's, so naming the layout a table already
        // has does not refuse a resume, and any other layout does.
        let options: BTreeMap<String, String> = [
            ("format", format!("{:?}", o.format)),
            ("header", o.header.to_string()),
            ("delimiter", format!("{:?}", o.delimiter)),
            ("quote", format!("{:?}", o.quote)),
            ("null", format!("{:?}", o.null)),
            ("max_errors", o.max_errors.to_string()),
            ("rejects", format!("{:?}", o.rejects)),
            (
                "on_duplicate",
                format!("{:?}", o.on_duplicate).to_lowercase(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Ok(Fingerprint {
            db: canonical(db.path()),
            table_seqno: table_seqno(db, table)?,
            catalog: crc32c::crc32c(&serde_json::to_vec(&catalog).unwrap_or_default()),
            table: serde_json::to_string(table).unwrap_or_default(),
            created,
            existing_rows,
            rowid_base,
            inputs,
            options,
        })
    }
}

/// The newest seqno of any entry in the table's key range (every index, every layout) or of
/// its catalog entry (which every import into the table writes again, see
/// `Import::write_catalog`: data files ingested at seqno 0 — they overlapped nothing — do not
/// move the first, the catalog entry's file always overlaps the entry before it).
pub(crate) fn table_seqno(db: &Db, table: &TableDef) -> Result<u64, ImportError> {
    let lo = table.id.to_be_bytes();
    let hi = crate::keycode::prefix_successor(&lo).unwrap_or_else(|| vec![0xff; 9]);
    let entry = crate::catalog::table_key(&table.name);
    let mut after = entry.clone();
    after.push(0);
    Ok(db
        .max_seqno_in_range(&lo, &hi)?
        .max(db.max_seqno_in_range(&entry, &after)?))
}

/// The table's name from its recorded definition (JSON), for messages.
fn table_name(def: &str) -> String {
    serde_json::from_str::<serde_json::Value>(def)
        .ok()
        .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_string))
        .unwrap_or_else(|| "the table".into())
}

/// Why `then` (the checkpoint's) and `now` differ, worded for the user; `None` if they match.
pub(crate) fn difference(then: &Fingerprint, now: &Fingerprint) -> Option<String> {
    if then.db != now.db {
        return Some(format!("it belongs to the Db {}, not {}", then.db, now.db));
    }
    if then.inputs.len() != now.inputs.len()
        || then
            .inputs
            .iter()
            .zip(&now.inputs)
            .any(|(a, b)| a.path != b.path)
    {
        let names = |v: &[InputPrint]| {
            v.iter()
                .map(|i| i.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Some(format!(
            "it was made for other input files ({}; now {})",
            names(&then.inputs),
            names(&now.inputs)
        ));
    }
    for (a, b) in then.inputs.iter().zip(&now.inputs) {
        if a.size != b.size {
            return Some(format!(
                "input {} changed: {} bytes then, {} now",
                a.path, a.size, b.size
            ));
        }
        if a.mtime_ns != b.mtime_ns {
            return Some(format!(
                "input {} changed: modified since the checkpoint",
                a.path
            ));
        }
    }
    for (k, a) in &then.options {
        let b = now.options.get(k).map_or("", String::as_str);
        if a != b {
            return Some(format!("option {k} differs: {a} then, {b} now"));
        }
    }
    if then.table != now.table {
        return Some("the table's definition (schema, id or layout) differs".into());
    }
    if then.catalog != now.catalog || then.created != now.created {
        return Some(
            "the Db's catalog changed since the checkpoint (a table was created, dropped or \
             changed, or this import was already ingested)"
                .into(),
        );
    }
    // Newer only: a write takes a sequence number above every stored one, while a compaction
    // that drops the table's newest entries (a deletion at the bottom level, with what it
    // hid) lowers the newest one without changing the table.
    if now.table_seqno > then.table_seqno
        || then.existing_rows != now.existing_rows
        || then.rowid_base != now.rowid_base
    {
        return Some(format!(
            "table {} changed since the checkpoint (its newest write at sequence number {} \
             then, {} now): it was written to, or this import was already ingested",
            table_name(&now.table),
            then.table_seqno,
            now.table_seqno
        ));
    }
    None
}
