//! Keys as the page shows them: decoded through the import catalog (`table/index: values`)
//! where a Sluice Db's catalog knows the table, escaped text otherwise.
//!
//! The catalog lives in the Db (table 0, `sluice_import::catalog`); reading it takes a
//! read-only open, which replays the MANIFEST and WALs again — cheap beside the replay. A Db
//! whose catalog cannot be read (a RocksDB Db, a Sluice Db without imports, tables missing
//! from a synthetic history) gets escaped keys, and the JSON's `key_decoding` says which.

use std::path::Path;

use serde_json::json;
use sluice_import::keycode::decode_column;
use sluice_import::schema::{COLUMN_INDEX_BASE, PRIMARY_INDEX_ID};
use sluice_import::types::{format_text, ColumnType};
use sluice_import::TableDef;

use crate::text::escape;

/// The tables of a Sluice Db's catalog, or why there are none to decode with.
pub fn load_catalog(dir: &Path) -> Result<Vec<TableDef>, String> {
    let db = crate::db_dir::open_read_only(dir).map_err(|e| e.to_string())?;
    sluice_import::catalog::load(&db).map_err(|e| e.to_string())
}

/// Display names of `keys`, and the JSON note on how they were made.
pub fn names(
    keys: &[Vec<u8>],
    tables: Result<Vec<TableDef>, String>,
) -> (Vec<String>, serde_json::Value) {
    match tables {
        Ok(t) if !t.is_empty() => {
            let names = keys.iter().map(|k| decode(&t, k)).collect();
            let tables: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
            (names, json!({"mode": "catalog", "tables": tables}))
        }
        Ok(_) => (
            keys.iter().map(|k| escape(k)).collect(),
            json!({"mode": "escaped", "why": "the catalog holds no table"}),
        ),
        Err(why) => (
            keys.iter().map(|k| escape(k)).collect(),
            json!({"mode": "escaped", "why": why}),
        ),
    }
}

/// `table/index: v1,v2 | pk…` for a key of a known table, else the escaped key.
fn decode(tables: &[TableDef], key: &[u8]) -> String {
    let (Some(t), Some(i)) = (key.get(..4), key.get(4..8)) else {
        return escape(key);
    };
    let table_id = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
    let index_id = u32::from_be_bytes([i[0], i[1], i[2], i[3]]);
    let mut rest = &key[8..];
    if table_id == sluice_import::catalog::CATALOG_TABLE_ID {
        let name = columns(
            &mut rest,
            [&ColumnType::Text { max_chars: None }].into_iter(),
        );
        return format!("catalog: {name}{}", tail(rest));
    }
    let Some(t) = tables.iter().find(|t| t.id == table_id) else {
        return escape(key);
    };
    let pk = || t.primary_key.iter().map(|&c| &t.columns[c].ty);
    let shown = if index_id == PRIMARY_INDEX_ID {
        format!("{}: {}", t.name, columns(&mut rest, pk()))
    } else if let Some(ix) = t.indexes.iter().find(|x| x.id == index_id) {
        let vals = columns(&mut rest, ix.columns.iter().map(|&c| &t.columns[c].ty));
        let pks = columns(&mut rest, pk());
        format!("{}/{}: {vals} | {pks}", t.name, ix.name)
    } else if let Some(col) = index_id
        .checked_sub(COLUMN_INDEX_BASE)
        .and_then(|c| t.columns.get(c as usize))
    {
        format!("{}.{}: {}", t.name, col.name, columns(&mut rest, pk()))
    } else {
        return escape(key);
    };
    format!("{shown}{}", tail(rest))
}

/// Decodes columns of these types off the front of `rest`, comma separated; stops at the first
/// that does not decode (the rest stays in `rest`).
fn columns<'a>(rest: &mut &[u8], types: impl Iterator<Item = &'a ColumnType>) -> String {
    let mut out = String::new();
    for (n, ty) in types.enumerate() {
        let mut b = *rest;
        let Ok(v) = decode_column(&mut b, ty) else {
            break;
        };
        *rest = b;
        if n > 0 {
            out.push(',');
        }
        format_text(&v, ty, &mut out);
    }
    out
}

/// What did not decode, escaped after a `~` (nothing when all did).
fn tail(rest: &[u8]) -> String {
    if rest.is_empty() {
        String::new()
    } else {
        format!(" ~{}", escape(rest))
    }
}
