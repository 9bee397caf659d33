//! Reading a columnar table's chunks ([`crate::chunk`]): by row group for primary-key-ordered
//! scans and point reads, and column by column in storage order for scans of chosen columns.

use sluice::{Db, ReadOptions, Snapshot};

use super::delete::DeadMarks;
use super::{check_version, pk_values, TableReader};
use crate::chunk::{chunk_key, decode_pk_value, Chunk};
use crate::keycode::{prefix, prefix_successor};
use crate::schema::{TableDef, COLUMN_INDEX_BASE};
use crate::types::Value;
use crate::ImportError;

impl TableReader<'_> {
    /// A columnar table's rows, columns `cols` only, in storage order: one iterator per
    /// column over its chunks, in step (every row group has a chunk of every column,
    /// [`crate::chunk`] invariant 1), and one over the deletion marks, whose rows are
    /// skipped. Reads no primary index.
    pub(super) fn scan_chunks(
        &self,
        cols: &[usize],
        limit: Option<u64>,
        mut f: impl FnMut(&[Value<'static>]) -> Result<(), ImportError>,
    ) -> Result<u64, ImportError> {
        let snap: Snapshot = self.db.snapshot();
        // Count-only scans still step through one column's chunks for their row counts.
        let mut read: Vec<usize> = cols.to_vec();
        read.sort_unstable();
        read.dedup();
        if read.is_empty() {
            read.push(0);
        }
        let mut its = Vec::with_capacity(read.len());
        for &c in &read {
            let p = prefix(self.table.id, COLUMN_INDEX_BASE + c as u32);
            let mut it = self.db.iter(ReadOptions {
                snapshot: Some(&snap),
                lower_bound: Some(p.clone()),
                upper_bound: prefix_successor(&p),
                trace: self.trace.as_ref(),
            })?;
            it.seek_to_first();
            its.push(it);
        }
        let mut dead = DeadMarks::new(self.db, &self.table, &snap)?;
        let mut row = vec![Value::Null; self.table.columns.len()];
        let mut chunks: Vec<Chunk> = Vec::with_capacity(read.len());
        let mut n = 0u64;
        'groups: while limit.is_none_or(|l| n < l) {
            chunks.clear();
            let mut group = None;
            for (i, it) in its.iter_mut().enumerate() {
                it.status()?;
                let c = read[i];
                if !it.valid() {
                    if i == 0 {
                        break 'groups;
                    }
                    return Err(self.chunk_error(c, group, "missing: other columns have it"));
                }
                self.count_read(it.key(), it.value());
                let g = crate::chunk::chunk_group(it.key());
                if i == 0 {
                    group = g;
                } else if g != group {
                    return Err(self.chunk_error(c, group, "missing: other columns have it"));
                }
                let ch = Chunk::decode(it.value(), &self.types[c])
                    .map_err(|e| self.chunk_error(c, g, &e))?;
                if i > 0 && ch.rows() != chunks[0].rows() {
                    return Err(self.chunk_error(c, g, "row count differs from other columns'"));
                }
                chunks.push(ch);
                it.next();
            }
            let g = group.ok_or_else(|| self.chunk_error(read[0], None, "key names no group"))?;
            for r in 0..chunks[0].rows() {
                if limit.is_some_and(|l| n >= l) {
                    break 'groups;
                }
                if dead.is_dead(g, r as u32)? {
                    continue;
                }
                for (i, &c) in read.iter().enumerate() {
                    row[c] = chunks[i].value(r, &self.types[c]).map_err(|_| {
                        self.chunk_error(c, group, &format!("row {r} does not decode"))
                    })?;
                }
                f(&row)?;
                n += 1;
            }
        }
        for it in &its {
            it.status()?;
        }
        Ok(n)
    }

    fn chunk_error(&self, c: usize, group: Option<u64>, what: &str) -> ImportError {
        chunk_error(&self.table, c, group, what)
    }
}

/// A chunk that is missing or does not decode, named by table, column and row group.
pub(super) fn chunk_error(t: &TableDef, c: usize, group: Option<u64>, what: &str) -> ImportError {
    ImportError::Catalog(format!(
        "table {}, column {}, row group {}: chunk {what}",
        t.name,
        t.columns.get(c).map_or("?", |c| c.name.as_str()),
        group.map_or_else(|| "?".to_string(), |g| g.to_string())
    ))
}

/// The chunks of a columnar table's row groups, read as a primary-key-ordered scan (or a point
/// read) needs them: per column, the last chunk read, decoded. Rows of one group come in a
/// run in such a scan, so each chunk is read once.
pub(crate) struct ChunkCursors<'t> {
    t: &'t TableDef,
    /// Per column read: the column and its cached `(group, chunk)`.
    cols: Vec<(usize, Option<(u64, Chunk)>)>,
    /// Bytes of chunks read.
    pub(super) bytes: u64,
}

impl<'t> ChunkCursors<'t> {
    /// Reads `cols` (`None`: every column) of `t`'s rows.
    pub(crate) fn new(t: &'t TableDef, cols: Option<&[usize]>) -> Self {
        let cols = match cols {
            Some(c) => c.iter().map(|&c| (c, None)).collect(),
            None => (0..t.columns.len()).map(|c| (c, None)).collect(),
        };
        ChunkCursors { t, cols, bytes: 0 }
    }

    /// The row with primary key `key` (prefix included) and primary-index value `v`.
    pub(crate) fn row(
        &mut self,
        db: &Db,
        ropts: &ReadOptions<'_>,
        key: &[u8],
        v: &[u8],
    ) -> Result<Vec<Value<'static>>, ImportError> {
        let bad = || {
            ImportError::Catalog(format!(
                "row {} of table {}: primary-index value {} names no row group",
                key.escape_ascii(),
                self.t.name,
                v.escape_ascii()
            ))
        };
        check_version(self.t, key, v)?;
        let (group, pos) = decode_pk_value(v).ok_or_else(bad)?;
        let mut row = vec![Value::Null; self.t.columns.len()];
        pk_values(self.t, key, &mut row)?;
        let mut k = Vec::with_capacity(16);
        for (c, cache) in &mut self.cols {
            let c = *c;
            if self.t.primary_key.contains(&c) {
                continue;
            }
            if cache.as_ref().is_none_or(|(g, _)| *g != group) {
                chunk_key(self.t, c, group, &mut k);
                let Some(bytes) = db.get_opt(&k, ropts)? else {
                    return Err(chunk_error(self.t, c, Some(group), "missing"));
                };
                self.bytes += (k.len() + bytes.len()) as u64;
                let ch = Chunk::decode(&bytes, &self.t.columns[c].ty)
                    .map_err(|e| chunk_error(self.t, c, Some(group), &e))?;
                *cache = Some((group, ch));
            }
            let ch = &cache.as_ref().expect("filled above").1;
            if pos >= ch.rows() {
                return Err(chunk_error(
                    self.t,
                    c,
                    Some(group),
                    &format!(
                        "has {} rows, row {} wants {pos}",
                        ch.rows(),
                        key.escape_ascii()
                    ),
                ));
            }
            row[c] = ch.value(pos, &self.t.columns[c].ty).map_err(|_| {
                chunk_error(
                    self.t,
                    c,
                    Some(group),
                    &format!("row {pos} does not decode"),
                )
            })?;
        }
        Ok(row)
    }
}

/// A columnar table's row with primary key `key` (prefix included) and primary-index value
/// `v`: one chunk read per column.
pub fn chunked_row(
    db: &Db,
    t: &TableDef,
    key: &[u8],
    v: &[u8],
    ropts: &ReadOptions<'_>,
) -> Result<Vec<Value<'static>>, ImportError> {
    ChunkCursors::new(t, None).row(db, ropts, key, v)
}
