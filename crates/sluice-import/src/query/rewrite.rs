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
//! the table before or after each batch, never between. The table's latch is held alone for
//! each batch ([`TableLatch::for_rewrite`]): a row delete or an import of the table cannot read
//! a position before a batch and write it after (they wait while a batch runs); a rewrite is
//! refused while an import of the table runs, and one that meets an import between batches
//! stops there, its finished batches kept. Each batch reads the rows' state afresh.
//!
//! A row's position that no mark covers but whose primary entry names another position (an
//! orphan: only a race between two writers of one row in the same process makes one) is
//! dropped like a dead row. An undecodable primary entry is an error, never taken as dead.
//! The old chunks' disk space is free once compactions drop them (and no snapshot holds
//! them); a rewrite also invalidates a kept checkpoint of an interrupted import of the table
//! (its resume is refused, the import runs again).
//! The table's highest group is left alone when nothing would be written above it, so group
//! ids keep growing ([`crate::chunk`] invariant 2).

use std::collections::BTreeMap;

use sluice::{ReadOptions, WriteBatch, WriteOptions};

use super::chunks::chunk_error;
use super::delete::{dead_mark, DEAD_INDEX_ID};
use super::TableReader;
use crate::chunk::{
    chunk_key, chunk_rows, compressor, decode_pk_value, encode_chunk, encode_pk_value,
    next_group_id, reserve_group_ids, Chunk, TableLatch, GROUP_ROWS,
};
use crate::keycode::{encode_value, prefix, prefix_successor};
use crate::schema::{Layout, PRIMARY_INDEX_ID};
use crate::ImportError;

/// Most old groups read and rewritten per write batch: bounds the memory a rewrite holds
/// (every column's chunk of each, decoded) and the size of each batch.
const GROUPS_PER_BATCH: usize = 16;

/// A batch takes no further old group once its groups' chunks reach this many bytes.
const BATCH_BYTES: u64 = 64 << 20;

/// A new group ends at [`GROUP_ROWS`] rows or once its cells reach this many bytes, as the
/// import's groups end with its 4 MiB row batches (a few huge cells never make one chunk past
/// what a read may decode).
const GROUP_BYTES: usize = 8 << 20;

/// What [`TableReader::rewrite_groups`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
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

impl RewriteSummary {
    /// Every field by its name, in declaration order (for JSON and Python dicts).
    pub fn fields(&self) -> [(&'static str, u64); 7] {
        [
            ("groups_with_marks", self.groups_with_marks),
            ("groups_rewritten", self.groups_rewritten),
            ("rows_moved", self.rows_moved),
            ("rows_dropped", self.rows_dropped),
            ("groups_written", self.groups_written),
            ("bytes_before", self.bytes_before),
            ("bytes_after", self.bytes_after),
        ]
    }
}

/// An old group read by a batch: its id, every column's chunk (none: rewritten meanwhile by
/// another rewrite), and its chunks' bytes.
struct OldGroup {
    id: u64,
    cols: Vec<Chunk>,
    bytes: u64,
}

impl OldGroup {
    fn rows(&self) -> usize {
        self.cols.first().map_or(0, Chunk::rows)
    }
}

/// A live row of an old group: its primary key (prefix included), primary-entry version
/// byte, and where it is in the batch's old groups.
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
        let busy = || {
            ImportError::InvalidArgument(format!(
                "an import into table {} is running in this process: rewrite its row groups \
                 once it is done",
                t.name
            ))
        };
        if TableLatch::import_running(self.db, t) {
            return Err(busy());
        }
        // Which groups to rewrite is a guess made without the latch: each batch reads the
        // rows' state again under it.
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
                continue; // rewritten meanwhile by another rewrite of the table
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
        let mut rest = &picked[..];
        while !rest.is_empty() {
            let Some(_latch) = TableLatch::for_rewrite(self.db, t) else {
                if sum.groups_rewritten == 0 {
                    return Err(busy());
                }
                break; // an import started: what is done stays done
            };
            // Once a new group is written, the old highest one is no longer the highest.
            let top = top.filter(|_| next_id == ids.start);
            let n = self.rewrite_batch(rest, top, &mut next_id, &mut zstd, &mut sum, sync)?;
            rest = &rest[n..];
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
            let (g, _) = dead_mark(it.key()).ok_or_else(|| {
                ImportError::Catalog(format!(
                    "table {}: deletion mark {} is not group ‖ position",
                    self.table.name,
                    it.key().escape_ascii()
                ))
            })?;
            *marks.entry(g).or_insert(0) += 1;
            it.next();
        }
        it.status()?;
        Ok(marks)
    }

    /// Rewrites the first of the old groups `groups` (up to [`GROUPS_PER_BATCH`], or fewer
    /// once their chunks reach [`BATCH_BYTES`]) in one write batch, taking new group ids from
    /// `next_id`; `top` is the table's highest group if no new group is written yet. Returns
    /// how many of `groups` it took.
    fn rewrite_batch(
        &self,
        groups: &[u64],
        top: Option<u64>,
        next_id: &mut u64,
        zstd: &mut zstd::bulk::Compressor<'static>,
        sum: &mut RewriteSummary,
        sync: bool,
    ) -> Result<usize, ImportError> {
        let t = &self.table;
        let snap = self.db.snapshot();
        let ropts = ReadOptions {
            snapshot: Some(&snap),
            ..Default::default()
        };
        let mut k = Vec::new();
        let mut old: Vec<OldGroup> = Vec::with_capacity(groups.len().min(GROUPS_PER_BATCH));
        let mut live: Vec<LiveRow> = Vec::new();
        let mut old_bytes = 0u64;
        for &g in groups {
            if old.len() == GROUPS_PER_BATCH || old_bytes >= BATCH_BYTES {
                break;
            }
            let gi = old.len();
            let mut bytes = 0u64;
            let mut cols = Vec::with_capacity(t.columns.len());
            for (c, col) in t.columns.iter().enumerate() {
                chunk_key(t, c, g, &mut k);
                let Some(stored) = self.db.get_opt(&k, &ropts)? else {
                    if c == 0 {
                        break; // rewritten meanwhile by another rewrite of the table
                    }
                    return Err(chunk_error(t, c, Some(g), "missing"));
                };
                bytes += (k.len() + stored.len()) as u64;
                let ch =
                    Chunk::decode(&stored, &col.ty).map_err(|e| chunk_error(t, c, Some(g), &e))?;
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
            old_bytes += bytes;
            let rows = cols.first().map_or(0, Chunk::rows);
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
                let Some(at) = decode_pk_value(&v) else {
                    return Err(ImportError::Catalog(format!(
                        "table {}, row group {g}, row {pos}: its primary entry {} names no row \
                         group (the group is left as it is)",
                        t.name,
                        v.escape_ascii()
                    )));
                };
                if at != (g, pos) {
                    continue; // replaced: the entry names a newer copy
                }
                live.push(LiveRow {
                    pk,
                    version: v[0],
                    group: gi,
                    pos,
                });
            }
            old.push(OldGroup { id: g, cols, bytes });
        }
        let taken = old.len();
        // The highest group stays unless something is written above it (group ids only grow):
        // here, if it has no live row and nothing else is written.
        let keep = if live.is_empty() { top } else { None };
        live.sort_unstable_by(|a, b| a.pk.cmp(&b.pk));
        let mut b = WriteBatch::new();
        let mut after = 0u64;
        let mut values = Vec::new();
        let mut chunk = Vec::new();
        let mut pv = Vec::new();
        for part in new_groups(&live, &old) {
            let ng = *next_id;
            *next_id += 1;
            for (c, _) in t.columns.iter().enumerate() {
                values.clear();
                let mut bitmap = vec![0u8; part.len().div_ceil(8)];
                let mut any_null = false;
                for (i, r) in part.iter().enumerate() {
                    match old[r.group].cols[c].cell(r.pos) {
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
        for o in &old {
            let g = o.id;
            if Some(g) == keep || o.cols.is_empty() {
                continue;
            }
            dropped += o.rows() as u64;
            before += o.bytes;
            for c in 0..t.columns.len() {
                chunk_key(t, c, g, &mut k);
                b.delete(&k);
            }
            // Every mark of group g: `g ‖ any position` lies in [g, g ‖ 0xFF×5).
            let mut lo = prefix(t.id, DEAD_INDEX_ID);
            lo.extend_from_slice(&g.to_be_bytes());
            let mut hi = lo.clone();
            hi.extend_from_slice(&[0xFF; 5]);
            b.delete_range(&lo, &hi);
            rewritten += 1;
        }
        if rewritten == 0 {
            return Ok(taken);
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
        Ok(taken)
    }
}

/// Cuts `live` (in key order) into new groups: at most [`GROUP_ROWS`] rows each, ended early
/// once the rows' cells reach [`GROUP_BYTES`].
fn new_groups<'a>(live: &'a [LiveRow], old: &[OldGroup]) -> Vec<&'a [LiveRow]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0usize);
    for (i, r) in live.iter().enumerate() {
        bytes += old[r.group]
            .cols
            .iter()
            .map(|c| c.cell(r.pos).map_or(0, <[u8]>::len))
            .sum::<usize>();
        if i + 1 - start == GROUP_ROWS || bytes >= GROUP_BYTES {
            out.push(&live[start..=i]);
            (start, bytes) = (i + 1, 0);
        }
    }
    if start < live.len() {
        out.push(&live[start..]);
    }
    out
}
