//! Column chunks: the columnar layout's unit of storage.
//!
//! An import cuts the rows it writes, in primary-key order, into *row groups* of up to
//! [`GROUP_ROWS`] rows. Each group gets a group id, unique in its table for the table's
//! lifetime, and is stored as one KV per column:
//!
//! ```text
//! table ‖ PRIMARY_INDEX ‖ pk            → version ‖ varint group ‖ varint position   (one per row)
//! table ‖ COLUMN_INDEX_BASE + c ‖ group → chunk of column c over the group's rows   (one per group)
//! ```
//!
//! Every column has a chunk in every group, primary key columns too (a scan of them then reads
//! no primary index). A chunk is
//!
//! ```text
//! chunk  = format (1) ‖ varint rows ‖ flags (bit 0: some value is NULL)
//!          ‖ [NULL bitmap: rows bits, 1 = NULL] ‖ varint values length ‖ codec (0 none, 1 zstd)
//!          ‖ payload: the values, compressed by the codec
//! values = the non-NULL values, each in its row-value encoding ([`crate::row::decode_value`])
//! ```
//!
//! The values are compressed as they lie in the writer's column buffer, without a copy; the
//! bitmap (absent when no value is NULL) stays outside.
//!
//! Invariants:
//! 1. A group's chunks all hold the same rows in the same order: position `i` of every chunk
//!    of group `g` is one row, the row whose primary-index value names `(g, i)`.
//! 2. Group ids are never shared: an import (or a group rewrite) holds a block of
//!    [`IDS_PER_IMPORT`] ids, above every group stored, every block another running import of
//!    the table holds (imports may run at once; a Db is open in one process only) and the
//!    groups an earlier attempt of the same import wrote ([`reserve_group_ids`]), until its
//!    ingest is done.
//! 3. Decoding checks every length against the bytes it has and bounds what it allocates:
//!    corrupt chunk bytes are an error naming the chunk, never a panic (the engine has already
//!    checked the block's checksum; this guards against a chunk written wrong).

use sluice::{Db, ReadOptions};

use crate::keycode::{prefix, prefix_successor, MalformedKey};
use crate::row::{decode_value, get_varint, put_varint64, value_len};
use crate::schema::{TableDef, COLUMN_INDEX_BASE};
use crate::types::{ColumnType, Value};

/// Rows in a row group (at most; a group also ends where the writer's batch ends).
pub const GROUP_ROWS: usize = 4096;

thread_local! {
    /// Each thread's zstd decompression context, reused by every chunk it decodes: a fresh
    /// one per chunk (with a 128 KiB input buffer) cost a two-column scan of `hits` 2.3% of
    /// its CPU in `ZSTD_createDCtx`, and more in the fresh pages behind it.
    static DCTX: std::cell::RefCell<zstd::zstd_safe::DCtx<'static>> =
        std::cell::RefCell::new(zstd::zstd_safe::DCtx::create());
}

/// Most rows a chunk may claim when decoded.
const MAX_CHUNK_ROWS: u64 = 1 << 20;

/// Most raw bytes a chunk may claim when decoded.
const MAX_RAW_BYTES: u64 = 1 << 30;

/// Chunk format byte.
const FORMAT: u8 = 1;

/// zstd level of chunk payloads: level 1 keeps the import CPU-cheap and still finds the
/// repetition inside one column's values.
const ZSTD_LEVEL: i32 = 1;

/// A chunk compressor (one per encoding thread: a context is costly to make).
pub fn compressor() -> sluice::Result<zstd::bulk::Compressor<'static>> {
    zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(|e| sluice::Error::Io {
        path: None,
        source: e,
    })
}

/// Appends the chunk of `rows` values to `out`: `nulls` is the NULL bitmap (`None`: no NULL),
/// `values` the non-NULL values' encodings back to back, in row order.
pub fn encode_chunk(
    out: &mut Vec<u8>,
    zstd: &mut zstd::bulk::Compressor<'static>,
    rows: usize,
    nulls: Option<&[u8]>,
    values: &[u8],
) {
    out.push(FORMAT);
    put_varint64(out, rows as u64);
    match nulls {
        Some(bm) => {
            out.push(1);
            out.extend_from_slice(bm);
        }
        None => out.push(0),
    }
    put_varint64(out, values.len() as u64);
    let codec = out.len();
    out.push(1);
    let bound = zstd::zstd_safe::compress_bound(values.len());
    let at = out.len();
    out.resize(at + bound, 0);
    match zstd.compress_to_buffer(values, &mut out[at..]) {
        Ok(n) if n < values.len() => out.truncate(at + n),
        _ => {
            out.truncate(codec);
            out.push(0);
            out.extend_from_slice(values);
        }
    }
}

/// A decoded chunk: its raw bytes and where each row's value starts.
#[derive(Debug, Default)]
pub struct Chunk {
    raw: Vec<u8>,
    /// Row `i`'s value is `raw[bounds[i]..bounds[i + 1]]` (empty for NULL).
    bounds: Vec<u32>,
    /// Row `i` is NULL.
    nulls: Vec<bool>,
}

impl Chunk {
    /// Rows in the chunk.
    pub fn rows(&self) -> usize {
        self.nulls.len()
    }

    /// Row `i`'s value encoding (`None`: NULL or out of range).
    pub fn cell(&self, i: usize) -> Option<&[u8]> {
        if *self.nulls.get(i)? {
            return None;
        }
        self.raw
            .get(self.bounds[i] as usize..self.bounds[i + 1] as usize)
    }

    /// Row `i`'s value (NULL for a NULL row).
    pub fn value(&self, i: usize, ty: &ColumnType) -> Result<Value<'static>, MalformedKey> {
        match self.cell(i) {
            None => Ok(Value::Null),
            Some(mut b) => decode_value(&mut b, ty),
        }
    }

    /// Decodes `chunk`, a column of type `ty`. Errors say what is wrong, for the caller to
    /// name the chunk.
    pub fn decode(chunk: &[u8], ty: &ColumnType) -> Result<Chunk, String> {
        let mut b = chunk;
        match b.split_first() {
            Some((&FORMAT, rest)) => b = rest,
            Some((f, _)) => return Err(format!("unknown chunk format {f}")),
            None => return Err("empty chunk".into()),
        }
        let rows = get_varint(&mut b).map_err(|_| "bad row count")?;
        if rows > u128::from(MAX_CHUNK_ROWS) {
            return Err(format!("claims {rows} rows"));
        }
        let rows = rows as usize;
        let (&flags, rest) = b.split_first().ok_or("no flags byte")?;
        b = rest;
        let nulls = if flags & 1 != 0 {
            let nb = rows.div_ceil(8);
            if b.len() < nb {
                return Err("short NULL bitmap".into());
            }
            let (bm, rest) = b.split_at(nb);
            b = rest;
            Some(bm)
        } else {
            None
        };
        let len = get_varint(&mut b).map_err(|_| "bad values length")?;
        if len > u128::from(MAX_RAW_BYTES) {
            return Err(format!("claims {len} bytes of values"));
        }
        let len = len as usize;
        let (&codec, payload) = b.split_first().ok_or("no codec byte")?;
        let raw = match codec {
            0 => payload.to_vec(),
            1 => {
                // Streamed into a buffer that grows with what really decompresses (capped at
                // the claimed length plus one): a corrupt length allocates nothing up front.
                use std::io::Read as _;
                let mut out = Vec::with_capacity(len.min(payload.len().saturating_mul(8)));
                DCTX.with(|c| -> Result<(), String> {
                    let mut ctx = c.try_borrow_mut().map_err(|_| "zstd context in use")?;
                    // The payload is read in place (no input buffer), with this thread's
                    // context (a session reset, no allocation).
                    zstd::stream::read::Decoder::with_context(payload, &mut ctx)
                        .take(len as u64 + 1)
                        .read_to_end(&mut out)
                        .map_err(|e| format!("zstd: {e}"))?;
                    Ok(())
                })?;
                out
            }
            c => return Err(format!("unknown codec {c}")),
        };
        if raw.len() != len {
            return Err(format!("{} bytes of values, header says {len}", raw.len()));
        }
        if u32::try_from(raw.len()).is_err() {
            return Err("chunk too large".into());
        }
        let mut bounds = Vec::with_capacity(rows + 1);
        let mut is_null = Vec::with_capacity(rows);
        let mut at = 0usize;
        for i in 0..rows {
            bounds.push(at as u32);
            let null = nulls.is_some_and(|bm| bm[i / 8] & (1 << (i % 8)) != 0);
            is_null.push(null);
            if !null {
                at += value_len(&raw[at..], ty).map_err(|_| format!("row {i} does not decode"))?;
            }
        }
        bounds.push(at as u32);
        if at != raw.len() {
            return Err(format!("{} bytes after the last value", raw.len() - at));
        }
        Ok(Chunk {
            raw,
            bounds,
            nulls: is_null,
        })
    }
}

/// The primary-index value of a row stored at position `pos` of group `group`.
pub fn encode_pk_value(out: &mut Vec<u8>, version: u8, group: u64, pos: u32) {
    out.clear();
    out.push(version);
    put_varint64(out, group);
    put_varint64(out, u64::from(pos));
}

/// The group and position a primary-index value names.
pub fn decode_pk_value(v: &[u8]) -> Option<(u64, usize)> {
    let mut b = v.get(1..)?;
    let g = u64::try_from(get_varint(&mut b).ok()?).ok()?;
    let p = usize::try_from(get_varint(&mut b).ok()?).ok()?;
    b.is_empty().then_some((g, p))
}

/// The key of column `c`'s chunk of group `group`.
pub fn chunk_key(t: &TableDef, c: usize, group: u64, out: &mut Vec<u8>) {
    out.clear();
    crate::keycode::encode_prefix(out, t.id, COLUMN_INDEX_BASE + c as u32);
    out.extend_from_slice(&group.to_be_bytes());
}

/// The group id of a chunk key (`None`: not one).
pub fn chunk_group(key: &[u8]) -> Option<u64> {
    let b: [u8; 8] = key.get(8..16)?.try_into().ok()?;
    (key.len() == 16).then(|| u64::from_be_bytes(b))
}

/// Group ids one import may use.
pub const IDS_PER_IMPORT: u64 = 1 << 40;

/// A block of [`IDS_PER_IMPORT`] group ids held by one import until it is dropped (after the
/// import's ingest, or its failure).
#[derive(Debug)]
pub struct GroupIds {
    key: (std::path::PathBuf, u32),
    /// The block's first id.
    pub start: u64,
}

impl Drop for GroupIds {
    fn drop(&mut self) {
        let mut m = TABLES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = m.get_mut(&self.key) {
            s.id_blocks.retain(|&b| b != self.start);
            if s.idle() {
                m.remove(&self.key);
            }
        }
    }
}

/// Reserves a block of group ids of table `t` for one import: above every stored group, every
/// block another import of the table in this process holds, and `at_least` (past the groups
/// an earlier attempt's checkpointed files hold). Imports one after another get the same ids
/// as before; imports at once, disjoint ones.
pub fn reserve_group_ids(db: &Db, t: &TableDef, at_least: u64) -> Result<GroupIds, sluice::Error> {
    let key = (db.path().to_path_buf(), t.id);
    let mut m = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    // Read under the lock: a block let go after its groups were ingested (an import's or a
    // distributed job's) is then either still held here or already stored, never neither.
    let stored = next_group_id(db, t)?;
    let held = &mut m.entry(key.clone()).or_default().id_blocks;
    let past_held = held
        .iter()
        .map(|&s| s.saturating_add(IDS_PER_IMPORT))
        .max()
        .unwrap_or(0);
    let start = stored.max(at_least).max(past_held);
    held.push(start);
    Ok(GroupIds { key, start })
}

/// One table's state in this process, per Db directory and table: who holds its latch, and
/// the group-id blocks ([`GroupIds`]) its running imports hold (the first id of each).
///
/// The latch: writers that read row positions before they write
/// them (row deletes; imports, from their plan until their ingest is done) share it; a group
/// rewrite (the query layer's `TableReader::rewrite_groups`) holds it alone for each of its
/// batches, so that no position it moves is read before and written after the move.
///
/// Turns: a rewrite waiting keeps new shared holders out (a stream of deletes cannot keep it
/// out for ever), and when a rewrite batch lets go, the shared holders waiting then go first
/// (a stream of rewrite batches cannot keep them out either).
#[derive(Debug, Default)]
struct TableState {
    id_blocks: Vec<u64>,
    deletes: usize,
    imports: usize,
    rewriting: bool,
    rewrites_waiting: usize,
    shared_waiting: usize,
    /// Set when a rewrite lets go with shared holders waiting; cleared once they are all in.
    shared_turn: bool,
    /// Signalled when the latch changes hands: only this table's waiters wait on it (each on
    /// its own clone, under `TABLES`' mutex). An entry has waiters only while it is not idle,
    /// so it is never removed under one.
    freed: std::sync::Arc<std::sync::Condvar>,
}

impl TableState {
    fn idle(&self) -> bool {
        self.id_blocks.is_empty()
            && self.deletes == 0
            && self.imports == 0
            && !self.rewriting
            && self.rewrites_waiting == 0
            && self.shared_waiting == 0
    }
}

type Tables = std::collections::BTreeMap<(std::path::PathBuf, u32), TableState>;
static TABLES: std::sync::Mutex<Tables> = std::sync::Mutex::new(Tables::new());

/// What a [`TableLatch`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    Delete,
    Import,
    Rewrite,
}

/// A hold on a columnar table's latch, released when dropped (see [`TableState`]).
#[derive(Debug)]
pub struct TableLatch {
    key: (std::path::PathBuf, u32),
    hold: Hold,
}

impl TableLatch {
    /// Shared, for a row delete: waits while a rewrite batch of the table runs or waits.
    pub fn for_delete(db: &Db, t: &TableDef) -> TableLatch {
        Self::shared(db, t, Hold::Delete)
    }

    /// Shared, for an import: waits while a rewrite batch of the table runs or waits.
    pub fn for_import(db: &Db, t: &TableDef) -> TableLatch {
        Self::shared(db, t, Hold::Import)
    }

    fn shared(db: &Db, t: &TableDef, hold: Hold) -> TableLatch {
        let key = (db.path().to_path_buf(), t.id);
        let mut m = TABLES.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(key.clone()).or_default().shared_waiting += 1;
        loop {
            let s = m.entry(key.clone()).or_default();
            if !s.rewriting && (s.rewrites_waiting == 0 || s.shared_turn) {
                s.shared_waiting -= 1;
                if s.shared_waiting == 0 {
                    s.shared_turn = false;
                }
                match hold {
                    Hold::Delete => s.deletes += 1,
                    _ => s.imports += 1,
                }
                let freed = std::sync::Arc::clone(&s.freed);
                drop(m);
                freed.notify_all();
                return TableLatch { key, hold };
            }
            let freed = std::sync::Arc::clone(&s.freed);
            m = freed.wait(m).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Whether an import of the table holds the latch.
    pub fn import_running(db: &Db, t: &TableDef) -> bool {
        let key = (db.path().to_path_buf(), t.id);
        let m = TABLES.lock().unwrap_or_else(|e| e.into_inner());
        m.get(&key).is_some_and(|s| s.imports > 0)
    }

    /// Alone, for one rewrite batch: `None` while an import of the table runs (imports hold
    /// the latch for their whole length), else once the deletes under way are done.
    pub fn for_rewrite(db: &Db, t: &TableDef) -> Option<TableLatch> {
        let key = (db.path().to_path_buf(), t.id);
        let mut m = TABLES.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(key.clone()).or_default().rewrites_waiting += 1;
        loop {
            let s = m.entry(key.clone()).or_default();
            if s.imports > 0 {
                s.rewrites_waiting -= 1;
                let freed = std::sync::Arc::clone(&s.freed);
                if s.idle() {
                    m.remove(&key);
                }
                drop(m);
                freed.notify_all();
                return None;
            }
            if s.deletes == 0 && !s.rewriting && !s.shared_turn {
                s.rewrites_waiting -= 1;
                s.rewriting = true;
                return Some(TableLatch {
                    key,
                    hold: Hold::Rewrite,
                });
            }
            let freed = std::sync::Arc::clone(&s.freed);
            m = freed.wait(m).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for TableLatch {
    fn drop(&mut self) {
        let mut m = TABLES.lock().unwrap_or_else(|e| e.into_inner());
        let Some(s) = m.get_mut(&self.key) else {
            return;
        };
        match self.hold {
            Hold::Delete => s.deletes = s.deletes.saturating_sub(1),
            Hold::Import => s.imports = s.imports.saturating_sub(1),
            Hold::Rewrite => {
                s.rewriting = false;
                s.shared_turn = s.shared_waiting > 0;
            }
        }
        let freed = std::sync::Arc::clone(&s.freed);
        if s.idle() {
            m.remove(&self.key);
        }
        drop(m);
        freed.notify_all();
    }
}

/// The number of rows a chunk holds, read from its header (`None`: not a chunk).
pub fn chunk_rows(chunk: &[u8]) -> Option<u64> {
    let mut b = chunk.strip_prefix(&[FORMAT])?;
    u64::try_from(get_varint(&mut b).ok()?).ok()
}

/// The first group id free in table `t` (one past the highest stored). Every group has a
/// chunk of column 0, so the last key of column 0's range names the highest group.
pub fn next_group_id(db: &Db, t: &TableDef) -> Result<u64, sluice::Error> {
    let p = prefix(t.id, COLUMN_INDEX_BASE);
    let mut it = db.iter(ReadOptions {
        lower_bound: Some(p.clone()),
        upper_bound: prefix_successor(&p),
        ..Default::default()
    })?;
    it.seek_to_last();
    let next = match it.valid().then(|| chunk_group(it.key())).flatten() {
        Some(g) => g.checked_add(1).ok_or_else(|| {
            sluice::Error::InvalidArgument(format!(
                "table {}: a chunk key names row group {g}, the largest id there is",
                t.name
            ))
        })?,
        None => 0,
    };
    it.status()?;
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::encode_row;

    /// The chunk of `vals`.
    fn encoded(vals: &[Value<'_>]) -> Vec<u8> {
        let cells = cells_of(vals);
        let mut bm = vec![0u8; cells.len().div_ceil(8)];
        let mut values = Vec::new();
        for (i, c) in cells.iter().enumerate() {
            match c {
                Some(b) => values.extend_from_slice(b),
                None => bm[i / 8] |= 1 << (i % 8),
            }
        }
        let nulls = cells.iter().any(Option::is_none).then_some(&bm[..]);
        let mut out = Vec::new();
        encode_chunk(
            &mut out,
            &mut compressor().unwrap(),
            cells.len(),
            nulls,
            &values,
        );
        out
    }

    fn cells_of(vals: &[Value<'_>]) -> Vec<Option<Vec<u8>>> {
        vals.iter()
            .map(|v| {
                if matches!(v, Value::Null) {
                    return None;
                }
                let mut row = Vec::new();
                encode_row(&mut row, 1, std::slice::from_ref(v));
                Some(row[2..].to_vec())
            })
            .collect()
    }

    #[test]
    fn chunk_round_trips_values_and_nulls() {
        let vals: Vec<Value<'_>> = (0..1000)
            .map(|i| {
                if i % 7 == 0 {
                    Value::Null
                } else {
                    Value::Int(i * 1_000_003 - 500_000_000)
                }
            })
            .collect();
        let out = encoded(&vals);
        let ch = Chunk::decode(&out, &ColumnType::BigInt).unwrap();
        assert_eq!(ch.rows(), 1000);
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(&ch.value(i, &ColumnType::BigInt).unwrap(), v, "row {i}");
        }
        // Without NULLs the bitmap is left out.
        let out = encoded(&[Value::Int(1), Value::Int(2)]);
        let ch = Chunk::decode(&out, &ColumnType::BigInt).unwrap();
        assert_eq!(ch.value(1, &ColumnType::BigInt).unwrap(), Value::Int(2));
        assert_eq!(ch.value(2, &ColumnType::BigInt).unwrap(), Value::Null);
    }

    #[test]
    fn corrupt_chunks_are_errors_not_panics() {
        let vals: Vec<Value<'_>> = (0..300).map(|i| Value::Int(i % 5)).collect();
        let out = encoded(&vals);
        assert!(Chunk::decode(&out, &ColumnType::Int).is_ok());
        assert!(
            out.len() < 100,
            "the test chunk is zstd-compressed: {} bytes",
            out.len()
        );
        // Every truncation and every single-byte change either fails or decodes to a chunk
        // whose values all decode; none panics. The thread's zstd context is reused: after a
        // truncated frame stopped it midway, the next chunk on this thread still decodes to
        // its own values.
        for n in 0..out.len() {
            let _ = Chunk::decode(&out[..n], &ColumnType::Int);
            let ch = Chunk::decode(&out, &ColumnType::Int).unwrap();
            assert_eq!(
                ch.value(299, &ColumnType::Int).unwrap(),
                Value::Int(4),
                "after {n}"
            );
            assert_eq!(
                ch.value(0, &ColumnType::Int).unwrap(),
                Value::Int(0),
                "after {n}"
            );
        }
        for i in 0..out.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut bad = out.clone();
                bad[i] ^= x;
                if let Ok(ch) = Chunk::decode(&bad, &ColumnType::Int) {
                    for r in 0..ch.rows() {
                        let _ = ch.value(r, &ColumnType::Int);
                    }
                }
            }
        }
        // A claimed size beyond the bounds is refused before allocating.
        let mut huge = vec![FORMAT];
        put_varint64(&mut huge, 10);
        huge.push(0);
        put_varint64(&mut huge, 1 << 40);
        huge.push(1);
        assert!(Chunk::decode(&huge, &ColumnType::Int).is_err());
    }

    #[test]
    fn pk_values_round_trip() {
        let mut v = Vec::new();
        encode_pk_value(&mut v, 3, 1 << 40, 4095);
        assert_eq!(v[0], 3);
        assert_eq!(decode_pk_value(&v), Some((1 << 40, 4095)));
        assert_eq!(decode_pk_value(&v[..v.len() - 1]), None);
        assert_eq!(decode_pk_value(&[3]), None);
    }

    /// Two columnar tables' latches at once, each with its own condvar: per table, two
    /// threads of rewrite batches (which hold it alone, or get `None` while an import holds
    /// it) and two of deletes and imports (side by side, never beside a batch); idle entries
    /// are removed.
    #[test]
    fn each_table_latch_is_exclusive_for_rewrites_and_shared_otherwise() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open_db(dir.path().join("db"), true).unwrap();
        let mut tables = crate::parse_schema(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT); CREATE TABLE u (id BIGINT PRIMARY KEY, v TEXT);",
        )
        .unwrap();
        assert_eq!(tables.len(), 2);
        tables[0].id = 7;
        tables[1].id = 8;
        std::thread::scope(|s| {
            for t in &tables {
                let db = &db;
                s.spawn(move || {
                    let (rewrites, shared, bad) = (
                        AtomicUsize::new(0),
                        AtomicUsize::new(0),
                        AtomicUsize::new(0),
                    );
                    std::thread::scope(|s| {
                        for i in 0..4 {
                            let (rewrites, shared, bad) = (&rewrites, &shared, &bad);
                            s.spawn(move || {
                                for n in 0..300 {
                                    if i < 2 {
                                        let Some(_l) = TableLatch::for_rewrite(db, t) else {
                                            continue;
                                        };
                                        if rewrites.fetch_add(1, SeqCst) != 0
                                            || shared.load(SeqCst) != 0
                                        {
                                            bad.fetch_add(1, SeqCst);
                                        }
                                        std::thread::yield_now();
                                        rewrites.fetch_sub(1, SeqCst);
                                    } else {
                                        let _l = if i == 3 && n % 10 == 0 {
                                            TableLatch::for_import(db, t)
                                        } else {
                                            TableLatch::for_delete(db, t)
                                        };
                                        shared.fetch_add(1, SeqCst);
                                        if rewrites.load(SeqCst) != 0 {
                                            bad.fetch_add(1, SeqCst);
                                        }
                                        std::thread::yield_now();
                                        shared.fetch_sub(1, SeqCst);
                                    }
                                }
                            });
                        }
                    });
                    assert_eq!(bad.into_inner(), 0, "table {}", t.name);
                });
            }
        });
        let m = TABLES.lock().unwrap();
        assert!(
            !m.keys().any(|(p, _)| p == db.path()),
            "an idle latch left its entry"
        );
    }
}
