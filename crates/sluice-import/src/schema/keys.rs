//! A table's keys shown to people and cut by the unique indexes: what duplicate-key and
//! unique-violation messages print, the same wherever an import runs (one machine or many).

use super::{TableDef, PRIMARY_INDEX_ID};
use crate::keycode::{decode_column, prefix};
use crate::types::{format_text, Value};

impl TableDef {
    /// `(v1, v2)`: the primary key columns of a primary-index key.
    pub fn show_pk(&self, key: &[u8]) -> String {
        let mut k = key.get(8..).unwrap_or(&[]);
        let mut parts = Vec::new();
        for &i in &self.primary_key {
            let ty = &self.columns[i].ty;
            match decode_column(&mut k, ty) {
                Ok(v) => {
                    let mut s = String::new();
                    format_text(&v, ty, &mut s);
                    parts.push(s);
                }
                Err(_) => parts.push("?".into()),
            }
        }
        format!("({})", parts.join(", "))
    }

    /// [`show_pk`](Self::show_pk) of the primary key a secondary key ends with
    /// (`prefix_len`: the bytes before it).
    pub fn show_pk_of_secondary(&self, key: &[u8], prefix_len: usize) -> String {
        let mut pk = prefix(self.id, PRIMARY_INDEX_ID);
        pk.extend_from_slice(key.get(prefix_len..).unwrap_or(&[]));
        self.show_pk(&pk)
    }

    /// The unique part (prefix + index columns) of a key of index slot `slot` (1 = the
    /// first secondary index), or `None` when one of those columns is NULL (exempt from
    /// uniqueness) or the key does not decode.
    pub fn unique_prefix<'k>(&self, slot: usize, key: &'k [u8]) -> Option<&'k [u8]> {
        let idx = self.indexes.get(slot.checked_sub(1)?)?;
        let mut k = key.get(8..)?;
        for &i in &idx.columns {
            match decode_column(&mut k, &self.columns[i].ty) {
                Ok(Value::Null) | Err(_) => return None,
                Ok(_) => {}
            }
        }
        Some(&key[..key.len() - k.len()])
    }

    /// `column email: "a@x"` (or `columns (a, b): ("x", "y")`) of a unique prefix of index
    /// slot `slot`.
    pub fn show_unique_value(&self, slot: usize, p: &[u8]) -> String {
        let Some(idx) = slot.checked_sub(1).and_then(|i| self.indexes.get(i)) else {
            return String::new();
        };
        let mut k = p.get(8..).unwrap_or(&[]);
        let mut names = Vec::new();
        let mut vals = Vec::new();
        for &i in &idx.columns {
            let c = &self.columns[i];
            names.push(c.name.clone());
            let mut s = String::new();
            if let Ok(v) = decode_column(&mut k, &c.ty) {
                format_text(&v, &c.ty, &mut s);
            }
            vals.push(format!("{s:?}"));
        }
        if names.len() == 1 {
            format!("column {}: {}", names[0], vals[0])
        } else {
            format!("columns ({}): ({})", names.join(", "), vals.join(", "))
        }
    }
}
