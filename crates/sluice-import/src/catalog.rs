//! The catalog: every table's definition, stored in the Db under the system prefix (table 0,
//! index 0), one key per table (`prefix ‖ memcomparable(lowercase name)` → JSON [`TableDef`]).
//!
//! Invariants:
//! 1. Catalog keys never share an SST with table data: table 0 is reserved, and an import
//!    writes the catalog into a file of its own, ingested in the same atomic ingest as the
//!    data, so a table's rows are never visible without its definition (or the reverse).
//! 2. Table ids are never reused: a new table gets 1 + the largest id in the catalog.

use std::borrow::Cow;

use sluice::{Db, DbIterator, ReadOptions};

use crate::keycode::{encode_value, prefix, prefix_successor};
use crate::schema::TableDef;
use crate::types::Value;
use crate::ImportError;

/// Table id of the catalog.
pub const CATALOG_TABLE_ID: u32 = 0;

/// The catalog key of a table.
pub fn table_key(name: &str) -> Vec<u8> {
    let mut k = prefix(CATALOG_TABLE_ID, 0);
    encode_value(&mut k, &Value::Text(Cow::Owned(name.to_ascii_lowercase())));
    k
}

/// The catalog value of a table.
pub fn table_value(t: &TableDef) -> Vec<u8> {
    serde_json::to_vec(t).unwrap_or_default()
}

/// An iterator over the keys of one table and index (`prefix(table_id, index_id)`), not yet
/// positioned.
pub fn index_iter(db: &Db, table_id: u32, index_id: u32) -> Result<DbIterator, ImportError> {
    index_iter_at(db, table_id, index_id, None)
}

/// [`index_iter`] at `snapshot` (`None`: the Db as it is).
pub fn index_iter_at(
    db: &Db,
    table_id: u32,
    index_id: u32,
    snapshot: Option<&sluice::Snapshot>,
) -> Result<DbIterator, ImportError> {
    let p = prefix(table_id, index_id);
    Ok(db.iter(ReadOptions {
        snapshot,
        lower_bound: Some(p.clone()),
        upper_bound: prefix_successor(&p),
        ..Default::default()
    })?)
}

/// Reads every table definition from the Db, in name order.
pub fn load(db: &Db) -> Result<Vec<TableDef>, ImportError> {
    let mut it = index_iter(db, CATALOG_TABLE_ID, 0)?;
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        let t: TableDef = serde_json::from_slice(it.value()).map_err(|e| {
            ImportError::Catalog(format!(
                "catalog entry {} is not a table definition: {e}",
                it.key().escape_ascii()
            ))
        })?;
        out.push(t);
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// Finds a table by name (case-insensitive).
pub fn find(tables: &[TableDef], name: &str) -> Option<TableDef> {
    tables
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(name))
        .cloned()
}

/// Picks the table the user means: `name`, or the only one.
pub fn choose(tables: &[TableDef], name: Option<&str>) -> Result<TableDef, ImportError> {
    match name {
        Some(n) => find(tables, n).ok_or_else(|| {
            let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
            ImportError::InvalidArgument(format!(
                "no table {n} (tables: {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ))
        }),
        None if tables.len() == 1 => Ok(tables[0].clone()),
        None if tables.is_empty() => Err(ImportError::InvalidArgument("no tables defined".into())),
        None => Err(ImportError::InvalidArgument(format!(
            "several tables ({}): name one with --table",
            tables
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Binds a schema definition to the catalog: an existing table keeps its id (and must be
/// defined identically, but for a layout the definition leaves unnamed, which is the stored
/// one), a new one gets the next free id. Returns the definition to use and whether it is new.
pub fn bind(existing: &[TableDef], mut def: TableDef) -> Result<(TableDef, bool), ImportError> {
    if let Some(old) = find(existing, &def.name) {
        if !def.layout_stated {
            def.layout = old.layout;
        }
        if let Some(diff) = old.difference(&def) {
            return Err(ImportError::InvalidArgument(format!(
                "table {} already exists with a different definition: {diff}",
                def.name
            )));
        }
        return Ok((old, false));
    }
    def.id = existing.iter().map(|t| t.id).max().unwrap_or(0) + 1;
    Ok((def, true))
}
