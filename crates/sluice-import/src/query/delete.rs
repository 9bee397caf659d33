//! Deleting one row of a table by primary key, in every layout, as one atomic write batch:
//! the primary entry, the row's secondary index entries, and
//! - cells layout: every cell of the row;
//! - columnar layout: a *deletion mark* `table ‖ DEAD_INDEX_ID ‖ group ‖ position`, since a
//!   row group's chunks are immutable. Ordered scans and point reads never meet the row again
//!   (its primary entry is gone); storage-order scans skip the marked positions
//!   ([`DeadMarks`]).

use sluice::{Db, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use super::{cell_key, TableReader};
use crate::chunk::decode_pk_value;
use crate::commit_lock::CommitLock;
use crate::keycode::{encode_prefix, encode_value, prefix, prefix_successor};
use crate::schema::{Layout, TableDef, COLUMN_INDEX_BASE, PRIMARY_INDEX_ID};
use crate::types::Value;
use crate::ImportError;

/// Index id of a columnar table's deletion marks: below the column chunks, above every
/// secondary index.
pub const DEAD_INDEX_ID: u32 = COLUMN_INDEX_BASE - 1;

/// Index id of the key every row delete writes again, `table ‖ DELETES_INDEX_ID` (empty
/// value): below the deletion marks. A put's newest version is never dropped by a
/// compaction, so its sequence number keeps the table's newest one (what a resumed import
/// and a distributed job's commit compare, `checkpoint::table_seqno`) past every row delete,
/// even once the delete's tombstones and the row they hid are compacted away.
pub const DELETES_INDEX_ID: u32 = COLUMN_INDEX_BASE - 2;

/// The deletion mark of position `pos` of row group `group`.
pub fn dead_key(t: &TableDef, group: u64, pos: u32, out: &mut Vec<u8>) {
    out.clear();
    encode_prefix(out, t.id, DEAD_INDEX_ID);
    out.extend_from_slice(&group.to_be_bytes());
    out.extend_from_slice(&pos.to_be_bytes());
}

/// The deletion mark of the stored row with primary key `key` (prefix included) and
/// primary-index value `v` (its group and position): what a row delete, and an import
/// replacing the row, write.
pub fn replaced_mark(t: &TableDef, key: &[u8], v: &[u8]) -> Result<Vec<u8>, ImportError> {
    let (group, pos) = decode_pk_value(v).ok_or_else(|| {
        ImportError::Catalog(format!("row {} names no row group", key.escape_ascii()))
    })?;
    let mut k = Vec::new();
    dead_key(t, group, pos as u32, &mut k);
    Ok(k)
}

/// The row group and position a deletion mark's key names (`None`: not one).
pub fn dead_mark(key: &[u8]) -> Option<(u64, u32)> {
    let g: [u8; 8] = key.get(8..16)?.try_into().ok()?;
    let p: [u8; 4] = key.get(16..20)?.try_into().ok()?;
    (key.len() == 20).then(|| (u64::from_be_bytes(g), u32::from_be_bytes(p)))
}

/// The secondary index keys of a row with primary key `pk_key` (prefix included) and column
/// values `vals`, by index in schema order.
pub fn index_keys(t: &TableDef, pk_key: &[u8], vals: &[Value<'_>]) -> Vec<Vec<u8>> {
    let pk_suffix = pk_key.get(8..).unwrap_or(&[]);
    t.indexes
        .iter()
        .map(|idx| {
            let mut k = Vec::new();
            encode_prefix(&mut k, t.id, idx.id);
            for &i in &idx.columns {
                encode_value(&mut k, &vals[i]);
            }
            k.extend_from_slice(pk_suffix);
            k
        })
        .collect()
}

impl TableReader<'_> {
    /// Deletes the row with primary key `pk` (one value per key column, as text), with its
    /// secondary index entries, in one write batch (`sync`: fsync the WAL first). Returns
    /// whether there was such a row. No import's commit of the table lands between the
    /// delete's read of the row and its write (the table's commit lock, held side by side
    /// with other deletes): an import replacing the row commits before the delete, which
    /// then removes the new row with its index entries, or after it, and is then refused if
    /// it read the row before the delete (see `pipeline::commit`).
    pub fn delete(&self, pk: &[String], sync: bool) -> Result<bool, ImportError> {
        let key = self.primary_key(pk)?;
        // Columnar: no group rewrite moves the row between the read and the write.
        let _latch = (self.table.layout == Layout::Columnar)
            .then(|| crate::chunk::TableLatch::for_delete(self.db, &self.table));
        let _commits = CommitLock::for_delete(self.db, &self.table);
        let ropts = ReadOptions::default();
        let Some(v) = self.db.get_opt(&key, &ropts)? else {
            return Ok(false);
        };
        let vals = match self.table.layout {
            Layout::Columnar => super::chunked_row(self.db, &self.table, &key, &v, &ropts)?,
            _ => self.decode(&key, &v, &ropts)?,
        };
        let mut b = WriteBatch::new();
        // First in the batch: the deletes key takes the batch's lowest sequence number, so
        // that once the batch's tombstones are compacted away the table's newest one is
        // lower than it was with them (a delete before a job's plan is then seen as no write).
        b.put(&prefix(self.table.id, DELETES_INDEX_ID), &[]);
        b.delete(&key);
        for k in index_keys(&self.table, &key, &vals) {
            b.delete(&k);
        }
        let mut k = Vec::new();
        match self.table.layout {
            Layout::Row => {}
            Layout::Cells => {
                for c in 0..self.table.columns.len() {
                    if !self.table.primary_key.contains(&c) {
                        cell_key(&self.table, c, &key, &mut k);
                        b.delete(&k);
                    }
                }
            }
            Layout::Columnar => b.put(&replaced_mark(&self.table, &key, &v)?, &[]),
        }
        #[cfg(test)]
        between_read_and_write(self.db);
        self.db.write(
            b,
            WriteOptions {
                sync,
                ..Default::default()
            },
        )?;
        Ok(true)
    }

    /// The primary key `pk` (values as text) encoded, prefix included.
    pub(super) fn primary_key(&self, pk: &[String]) -> Result<Vec<u8>, ImportError> {
        if pk.len() != self.table.primary_key.len() {
            return Err(ImportError::InvalidArgument(format!(
                "the primary key of {} has {} columns, {} given",
                self.table.name,
                self.table.primary_key.len(),
                pk.len()
            )));
        }
        let mut key = prefix(self.table.id, PRIMARY_INDEX_ID);
        self.encode_values(&self.table.primary_key, pk, &mut key)?;
        Ok(key)
    }
}

/// Tests: a hook run by the next [`TableReader::delete`] in the Db at the path given, after
/// it read the row and before it writes the batch.
#[cfg(test)]
pub(crate) type BetweenHook = (std::path::PathBuf, Box<dyn FnOnce() + Send>);

/// The hook [`TableReader::delete`] runs (see [`BetweenHook`]).
#[cfg(test)]
pub(crate) static BETWEEN: std::sync::Mutex<Option<BetweenHook>> = std::sync::Mutex::new(None);

#[cfg(test)]
fn between_read_and_write(db: &Db) {
    let mut slot = BETWEEN.lock().unwrap_or_else(|e| e.into_inner());
    if slot.as_ref().is_some_and(|(p, _)| p == db.path()) {
        let (_, f) = slot.take().expect("checked");
        drop(slot);
        f();
    }
}

/// A columnar table's deletion marks, read in (group, position) order beside a storage-order
/// scan: [`DeadMarks::is_dead`] is asked about positions in increasing order.
pub(super) struct DeadMarks {
    it: sluice::DbIterator,
}

impl DeadMarks {
    pub(super) fn new(db: &Db, t: &TableDef, snap: &Snapshot) -> Result<Self, ImportError> {
        let p = prefix(t.id, DEAD_INDEX_ID);
        let mut it = db.iter(ReadOptions {
            snapshot: Some(snap),
            lower_bound: Some(p.clone()),
            upper_bound: prefix_successor(&p),
            ..Default::default()
        })?;
        it.seek_to_first();
        it.status()?;
        Ok(DeadMarks { it })
    }

    /// Whether position `pos` of group `group` is deleted (positions asked in increasing
    /// order).
    pub(super) fn is_dead(&mut self, group: u64, pos: u32) -> Result<bool, ImportError> {
        let mut want = [0u8; 12];
        want[..8].copy_from_slice(&group.to_be_bytes());
        want[8..].copy_from_slice(&pos.to_be_bytes());
        while self.it.valid() && self.it.key().get(8..).unwrap_or(&[]) < &want[..] {
            self.it.next();
        }
        self.it.status()?;
        Ok(self.it.valid() && self.it.key().get(8..) == Some(&want[..]))
    }
}
