//! Rewriting a columnar table's row groups whose rows are mostly deleted or replaced, so that
//! their bytes are given back (space reclamation).
//!
//! Chunks are immutable: deleting or replacing a row only marks its position dead
//! ([`super::DEAD_INDEX_ID`]), and the group's chunks keep its bytes, which storage-order scans
//! still read and skip. A rewrite picks the groups whose marked share is at least
//! `min_dead`, reads their rows that are still live (a row is live where its primary entry
//! still names its group and position), and, in one write batch per few groups:
//! - writes the live rows, in primary-key order, as new groups with fresh ids (above every
//!   stored group, from [`reserve_group_ids`]), one chunk per column each, the cells copied as
//!   they are (no value is decoded but the primary key's);
//! - points each moved row's primary entry at its new group and position;
//! - deletes the old groups' chunks (every column) and their deletion marks.
//!
//! Secondary index entries hold the primary key only, so they stay as they are. Readers see
//! the table before or after each batch, never between. The table's latch is held alone
//! ([`TableLatch::for_rewrite`]): a row delete or an import of the table cannot read a position
//! before a batch and write it after; a rewrite is refused while an import of the table runs.
//! The table's highest group is left alone when nothing would be written above it, so group
//! ids keep growing ([`crate::chunk`] invariant 2).

use std::collections::BTreeMap;

use sluice::{ReadOptions, WriteBatch, WriteOptions};

use super::chunks::chunk_error;
use super::delete::DEAD_INDEX_ID;
use super::TableReader;
use crate::chunk::{
    chunk_key, chunk_rows, compressor, decode_pk_value, encode_chunk, encode_pk_value,
    next_group_id, reserve_group_ids, Chunk, TableLatch, GROUP_ROWS,
};
use crate::keycode::{encode_value, prefix, prefix_successor};
use crate::schema::{Layout, PRIMARY_INDEX_ID};
use crate::ImportError;

/// Old groups read and rewritten per write batch: bounds the memory a rewrite holds (every
/// column's chunk of each, decoded) and the size of each batch.
const GROUPS_PER_BATCH: usize = 16;

/// What [`TableReader::rewrite_groups`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RewriteSummary {
    /// Row groups that had deletion marks.
    pub groups_with_marks: u64,
    /// Row groups rewritten (their chunks and marks deleted).
    pub groups_rewritten: u64,
    /// Live rows moved to new groups.
    pub rows_moved: u64,
    /// Dead rows whose bytes were given back.
    pub rows_dropped: u64,
    /// New row groups written.
    pub groups_written: u64,
    /// Bytes of the old groups' chunks.
    pub bytes_before: u64,
    /// Bytes of the new groups' chunks.
    pub bytes_after: u64,
}

/// A live row of an old group: its primary key (prefix included), primary-entry version
/// byte, and where it is in the batch's decoded groups.
struct LiveRow {
    pk: Vec<u8>,
    version: u8,
    group: usize,
    pos: usize,
}

impl TableReader<'_> {
    /// Rewrites this columnar table's row groups in which at least `min_dead` (0 < `min_dead`
    /// ≤ 1) of the rows are deleted or replaced (see the module docs); `sync`: each batch is
    /// synced to the WAL. Rows read back the same before and after.
    pub fn rewrite_groups(&self, min_dead: f64, sync: bool) -> Result<RewriteSummary, ImportError> {
        let t = &self.table;
        if t.layout != Layout::Columnar {
            return Err(ImportError::InvalidArgument(format!(
                "table {} is not columnar: only the columnar layout has row groups to rewrite",
                t.name
            )));
        }
        if !(min_dead > 0.0 && min_dead <= 1.0) {
            return Err(ImportError::InvalidArgument(format!(
                "the dead share a group needs to be rewritten must be in (0, 1], got {min_dead}"
            )));
        }
        let Some(_latch) = TableLatch::for_rewrite(self.db, t) else {
            return Err(ImportError::InvalidArgument(format!(
                "an import into table {} is running in this process: rewrite its row groups \
                 once it is done",
                t.name
            )));
        };
        let marks = self.marks_per_group()?;
        let mut sum = RewriteSummary {
            groups_with_marks: marks.len() as u64,
            ..Default::default()
        };
        let top = next_group_id(self.db, t)?.checked_sub(1);
        let mut picked = Vec::new();
        let mut k = Vec::new();
        for (&g, &dead) in &marks {
            chunk_key(t, 0, g, &mut k);
            let Some(c0) = self.db.get(&k)? else {
                return Err(chunk_error(t, 0, Some(g), "missing"));
            };
            let rows =
                chunk_rows(&c0).ok_or_else(|| chunk_error(t, 0, Some(g), "has no header"))?;
            let share = if rows == 0 {
                1.0
            } else {
                dead as f64 / rows as f64
            };
            if share >= min_dead {
                picked.push(g);
            }
        }
        let ids = reserve_group_ids(self.db, t, 0)?;
        let mut next_id = ids.start;
        let mut zstd = compressor()?;
        for batch in picked.chunks(GROUPS_PER_BATCH) {
            // Once a new group is written, the old highest one is no longer the highest.
            let top = top.filter(|_| next_id == ids.start);
            self.rewrite_batch(batch, top, &mut next_id, &mut zstd, &mut sum, sync)?;
        }
        Ok(sum)
    }

    /// Deletion marks per row group (`table ‖ DEAD_INDEX_ID ‖ group ‖ position`).
    fn marks_per_group(&self) -> Result<BTreeMap<u64, u64>, ImportError> {
        let p = prefix(self.table.id, DEAD_INDEX_ID);
        let mut it = self.db.iter(ReadOptions {
            lower_bound: Some(p.clone()),
            upper_bound: prefix_successor(&p),
            ..Default::default()
        })?;
        it.seek_to_first();
        let mut marks = BTreeMap::new();
        while it.valid() {
            let g = it
                .key()
                .get(8..16)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .filter(|_| it.key().len() == 20)
                .ok_or_else(|| {
                    ImportError::Catalog(format!(
                        "table {}: deletion mark {} is not group ‖ position",
                        self.table.name,
                        it.key().escape_ascii()
                    ))
                })?;
            *marks.entry(u64::from_be_bytes(g)).or_insert(0) += 1;
            it.next();
        }
        it.status()?;
        Ok(marks)
    }

    /// Rewrites old groups `groups` in one write batch, taking new group ids from `next_id`;
    /// `top` is the table's highest group if no new group is written yet.
    fn rewrite_batch(
        &self,
        groups: &[u64],
        top: Option<u64>,
        next_id: &mut u64,
        zstd: &mut zstd::bulk::Compressor<'static>,
        sum: &mut RewriteSummary,
        sync: bool,
    ) -> Result<(), ImportError> {
        let t = &self.table;
        let snap = self.db.snapshot();
        let ropts = ReadOptions {
            snapshot: Some(&snap),
            ..Default::default()
        };
        let mut k = Vec::new();
        let mut chunks: Vec<Vec<Chunk>> = Vec::with_capacity(groups.len());
        let mut bytes_in = vec![0u64; groups.len()];
        let mut live: Vec<LiveRow> = Vec::new();
        let mut rows_in = Vec::with_capacity(groups.len());
        for (gi, &g) in groups.iter().enumerate() {
            let mut cols = Vec::with_capacity(t.columns.len());
            for (c, col) in t.columns.iter().enumerate() {
                chunk_key(t, c, g, &mut k);
                let Some(bytes) = self.db.get_opt(&k, &ropts)? else {
                    return Err(chunk_error(t, c, Some(g), "missing"));
                };
                bytes_in[gi] += (k.len() + bytes.len()) as u64;
                let ch =
                    Chunk::decode(&bytes, &col.ty).map_err(|e| chunk_error(t, c, Some(g), &e))?;
                if c > 0 && ch.rows() != cols.first().map_or(0, Chunk::rows) {
                    return Err(chunk_error(
                        t,
                        c,
                        Some(g),
                        "has a row count unlike column 0's",
                    ));
                }
                cols.push(ch);
            }
            let rows = cols.first().map_or(0, Chunk::rows);
            rows_in.push(rows as u64);
            for pos in 0..rows {
                let mut pk = prefix(t.id, PRIMARY_INDEX_ID);
                for &c in &t.primary_key {
                    let v = cols[c].value(pos, &t.columns[c].ty).map_err(|_| {
                        chunk_error(t, c, Some(g), &format!("row {pos} does not decode"))
                    })?;
                    encode_value(&mut pk, &v);
                }
                let Some(v) = self.db.get_opt(&pk, &ropts)? else {
                    continue; // deleted
                };
                if decode_pk_value(&v) != Some((g, pos)) {
                    continue; // replaced: the entry names a newer copy
                }
                live.push(LiveRow {
                    pk,
                    version: v[0],
                    group: gi,
                    pos,
                });
            }
            chunks.push(cols);
        }
        // The highest group stays unless something is written above it (group ids only grow):
        // here, if it has no live row and nothing else is written.
        let keep = if live.is_empty() { top } else { None };
        live.sort_unstable_by(|a, b| a.pk.cmp(&b.pk));
        let mut b = WriteBatch::new();
        let mut after = 0u64;
        let mut values = Vec::new();
        let mut chunk = Vec::new();
        let mut pv = Vec::new();
        for part in live.chunks(GROUP_ROWS) {
            let ng = *next_id;
            *next_id += 1;
            for (c, _) in t.columns.iter().enumerate() {
                values.clear();
                let mut bitmap = vec![0u8; part.len().div_ceil(8)];
                let mut any_null = false;
                for (i, r) in part.iter().enumerate() {
                    match chunks[r.group][c].cell(r.pos) {
                        Some(cell) => values.extend_from_slice(cell),
                        None => {
                            bitmap[i / 8] |= 1 << (i % 8);
                            any_null = true;
                        }
                    }
                }
                chunk.clear();
                encode_chunk(
                    &mut chunk,
                    zstd,
                    part.len(),
                    any_null.then_some(&bitmap[..]),
                    &values,
                );
                chunk_key(t, c, ng, &mut k);
                after += (k.len() + chunk.len()) as u64;
                b.put(&k, &chunk);
            }
            for (i, r) in part.iter().enumerate() {
                encode_pk_value(&mut pv, r.version, ng, i as u32);
                b.put(&r.pk, &pv);
            }
            sum.groups_written += 1;
        }
        let mut rewritten = 0u64;
        let (mut dropped, mut before) = (0u64, 0u64);
        for ((&g, &rows), &bytes) in groups.iter().zip(&rows_in).zip(&bytes_in) {
            if Some(g) == keep {
                continue;
            }
            dropped += rows;
            before += bytes;
            for c in 0..t.columns.len() {
                chunk_key(t, c, g, &mut k);
                b.delete(&k);
            }
            let mut lo = prefix(t.id, DEAD_INDEX_ID);
            lo.extend_from_slice(&g.to_be_bytes());
            let mut hi = prefix(t.id, DEAD_INDEX_ID);
            hi.extend_from_slice(&(g + 1).to_be_bytes());
            b.delete_range(&lo, &hi);
            rewritten += 1;
        }
        if rewritten == 0 {
            return Ok(());
        }
        self.db.write(
            b,
            WriteOptions {
                sync,
                ..Default::default()
            },
        )?;
        let moved = live.len() as u64;
        sum.groups_rewritten += rewritten;
        sum.rows_moved += moved;
        sum.rows_dropped += dropped - moved;
        sum.bytes_before += before;
        sum.bytes_after += after;
        Ok(())
    }
}
