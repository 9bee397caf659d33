//! The columnar layout's threads: *encoders* each take whole row batches (every column of
//! their row groups, each row decoded once) and turn them into compressed chunks; one *chunk
//! writer* takes the encoders' output back in batch order and writes each column's chunks to
//! its files. Encoding (the regrouping and zstd) is the costly part and runs on every thread;
//! writing a few large values per group is cheap and needs one owner per column file.
//!
//! Order: the producer hands batch `k` (or a checkpoint cut, which takes a turn like a batch)
//! to encoder `k mod n`, and the writer reads encoder `k mod n`'s output for turn `k`, so
//! chunks reach each column's files in group order. No turn waits on a later one, so the
//! bounded queues cannot deadlock.

use sluice::SstFileInfo;
use std::sync::mpsc::{Receiver, SyncSender};

use super::columnar::{answer_cut, CellFiles, CellMsg, RowBatch};
use super::FinalWriter;
use crate::chunk::encode_chunk;
use crate::keycode::MalformedKey;
use crate::row::{cell_len, CellShape};
use crate::types::ColumnType;

/// One encoder's output for its turn.
pub(super) enum Encoded {
    /// A batch's chunks.
    Chunks(ChunkBatch),
    /// A checkpoint: finish the open files and reply with every file finished so far.
    Cut(SyncSender<sluice::Result<CellFiles>>),
}

/// A batch's chunks, column by column and group by group: `(column, group, end in bytes)`.
#[derive(Default)]
pub(super) struct ChunkBatch {
    bytes: Vec<u8>,
    chunks: Vec<(u32, u64, u32)>,
}

/// An encoder thread: each batch regrouped by column and every column's chunk of each of its
/// row groups encoded, handed to the chunk writer.
pub(super) fn chunk_encoder(
    rx: Receiver<CellMsg>,
    tx: SyncSender<Encoded>,
    types: Vec<ColumnType>,
) -> sluice::Result<Vec<SstFileInfo>> {
    let shapes: Vec<CellShape> = types.iter().map(CellShape::of).collect();
    let stopped = || sluice::Error::InvalidArgument("the chunk writer stopped".into());
    let mut by_col: Vec<ChunkColumn> = (0..types.len()).map(|_| ChunkColumn::default()).collect();
    let mut bitmap = Vec::new();
    let mut zstd = crate::chunk::compressor()?;
    for msg in rx {
        let batch = match msg {
            CellMsg::Rows(b) => b,
            CellMsg::Cut(reply) => {
                tx.send(Encoded::Cut(reply)).map_err(|_| stopped())?;
                continue;
            }
        };
        regroup(&batch, &shapes, &mut by_col)?;
        let mut out = ChunkBatch::default();
        for (c, cc) in by_col.iter().enumerate() {
            encode_column(&batch, c, cc, &mut zstd, &mut bitmap, &mut out);
        }
        tx.send(Encoded::Chunks(out)).map_err(|_| stopped())?;
    }
    Ok(Vec::new())
}

/// One column of a batch, regrouped: its non-NULL values back to back in row order, where
/// each row group's values end, and the batch rows where it is NULL.
#[derive(Default, Clone)]
struct ChunkColumn {
    bytes: Vec<u8>,
    group_ends: Vec<u32>,
    nulls: Vec<u32>,
}

/// Splits every row of `batch` into `cols`, one pass over each row. (The cells layout's
/// regrouping records every cell's row; a chunk needs only each group's end and the NULLs,
/// which halves the encoders' time in it on `hits`.)
fn regroup(batch: &RowBatch, shapes: &[CellShape], cols: &mut [ChunkColumn]) -> sluice::Result<()> {
    for c in cols.iter_mut() {
        c.bytes.clear();
        c.group_ends.clear();
        c.nulls.clear();
    }
    for (gi, &(_, first)) in batch.groups.iter().enumerate() {
        let end = batch
            .groups
            .get(gi + 1)
            .map_or(batch.rows.len(), |g| g.1 as usize);
        for r in first as usize..end {
            let (o, kl, vl) = batch.rows[r];
            let value = &batch.arena[o + kl as usize..o + kl as usize + vl as usize];
            split_row(value, shapes, r as u32, cols).map_err(|_| {
                sluice::Error::InvalidArgument(format!(
                    "row {} does not decode",
                    batch.arena[o..o + kl as usize].escape_ascii()
                ))
            })?;
        }
        for c in cols.iter_mut() {
            c.group_ends.push(c.bytes.len() as u32);
        }
    }
    Ok(())
}

/// Appends each column's value of row `r` (a row value, [`crate::row`]) to its column.
///
/// This runs once per cell (105 million times for 1M `hits` rows), so it avoids per-cell
/// costs: column shapes are resolved before the loop, the NULL bitmap is consulted only when
/// it has a bit set, and a short cell is copied as [`WIDE`] bytes of constant length (inlined
/// moves, no `memcpy` call) and the surplus cut off again.
#[inline]
fn split_row(
    value: &[u8],
    shapes: &[CellShape],
    r: u32,
    cols: &mut [ChunkColumn],
) -> Result<(), MalformedKey> {
    let b = value.get(1..).ok_or(MalformedKey)?;
    let nb = shapes.len().div_ceil(8);
    if b.len() < nb {
        return Err(MalformedKey);
    }
    let (bitmap, mut rest) = b.split_at(nb);
    let any_null = bitmap.iter().any(|&m| m != 0);
    for (c, (&shape, col)) in shapes.iter().zip(cols.iter_mut()).enumerate() {
        if any_null && bitmap[c / 8] & (1 << (c % 8)) != 0 {
            col.nulls.push(r);
            continue;
        }
        let n = cell_len(rest, shape)?;
        append_cell(&mut col.bytes, rest, n);
        rest = &rest[n..];
    }
    if rest.is_empty() {
        Ok(())
    } else {
        Err(MalformedKey)
    }
}

/// The constant copy width of [`append_cell`].
const WIDE: usize = 16;

/// Appends `src[..n]` to `dst`. When `n <= WIDE` and `src` has `WIDE` bytes, it copies a
/// constant `WIDE` bytes and truncates: the compiler turns that into two moves, where a copy of
/// a run-time length is a call to `memcpy`, which cost 4.6% of an import's CPU here.
#[inline(always)]
fn append_cell(dst: &mut Vec<u8>, src: &[u8], n: usize) {
    match src.get(..WIDE) {
        Some(wide) if n <= WIDE => {
            let keep = dst.len() + n;
            dst.extend_from_slice(wide);
            dst.truncate(keep);
        }
        _ => dst.extend_from_slice(&src[..n]),
    }
}

/// Appends one column's chunk of every row group in `batch` to `out`, recording each as
/// column `c`'s.
fn encode_column(
    batch: &RowBatch,
    c: usize,
    col: &ChunkColumn,
    zstd: &mut zstd::bulk::Compressor<'static>,
    bitmap: &mut Vec<u8>,
    out: &mut ChunkBatch,
) {
    let (mut start, mut next_null) = (0usize, 0usize);
    for (gi, &(group, first)) in batch.groups.iter().enumerate() {
        let first = first as usize;
        let end = batch
            .groups
            .get(gi + 1)
            .map_or(batch.rows.len(), |g| g.1 as usize);
        let stop = col.group_ends[gi] as usize;
        // The group's NULL rows: a run of `col.nulls`.
        let from = next_null;
        while col
            .nulls
            .get(next_null)
            .is_some_and(|&r| (r as usize) < end)
        {
            next_null += 1;
        }
        let nulls = (next_null > from).then(|| {
            bitmap.clear();
            bitmap.resize((end - first).div_ceil(8), 0);
            for &r in &col.nulls[from..next_null] {
                let i = r as usize - first;
                bitmap[i / 8] |= 1 << (i % 8);
            }
            &bitmap[..]
        });
        encode_chunk(
            &mut out.bytes,
            zstd,
            end - first,
            nulls,
            &col.bytes[start..stop],
        );
        out.chunks.push((c as u32, group, out.bytes.len() as u32));
        start = stop;
    }
}

/// The chunk writer: encoder `k mod n`'s output for turn `k`, each chunk to its column's files
/// (`cols[c]`: the key buffer holding column `c`'s prefix, and its writer).
pub(super) fn chunk_writer(
    rxs: Vec<Receiver<Encoded>>,
    mut cols: Vec<(Vec<u8>, FinalWriter)>,
) -> sluice::Result<Vec<SstFileInfo>> {
    let mut turn = 0;
    while let Ok(msg) = rxs[turn % rxs.len()].recv() {
        turn += 1;
        match msg {
            Encoded::Chunks(b) => {
                let mut start = 0;
                for &(c, group, end) in &b.chunks {
                    let (k, w) = &mut cols[c as usize];
                    k.truncate(8);
                    k.extend_from_slice(&group.to_be_bytes());
                    w.put(k, &b.bytes[start..end as usize])?;
                    start = end as usize;
                }
            }
            Encoded::Cut(reply) => {
                answer_cut(cols.iter_mut().map(|(_, w)| w).enumerate(), reply)?;
            }
        }
    }
    finish_all(cols.into_iter().map(|(_, w)| w).collect())
}

/// How many column files [`finish_all`] finishes at once.
const FINISHERS: usize = 16;

/// Finishes every column's files, [`FINISHERS`] at a time, and returns them in column order.
///
/// Finishing a file waits on the disk: its tail and the file are synced, then its directory.
/// One after another, `hits`' 105 column files took ~0.14 s with both cores idle; side by
/// side the file system commits the waits together. On an error every writer is still
/// finished or dropped (an unfinished file is removed), and the first column's error is
/// returned.
fn finish_all(writers: Vec<FinalWriter>) -> sluice::Result<Vec<SstFileInfo>> {
    let mut files = Vec::new();
    for r in crate::workers::map_on_threads(FINISHERS, writers, FinalWriter::finish) {
        files.extend(r?);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::{encode_row, for_each_cell};
    use crate::types::Value;
    use std::borrow::Cow;

    /// `split_row` puts each column's cells back to back and its NULL rows in `nulls`, exactly
    /// as `for_each_cell` cuts them: cells shorter and longer than its constant copy, at the
    /// end of the row (where fewer than `WIDE` bytes follow), and rows with and without NULLs.
    #[test]
    fn split_row_cuts_every_cell_as_for_each_cell_does() {
        let types = [
            ColumnType::BigInt,
            ColumnType::Text { max_chars: None },
            ColumnType::Double,
            ColumnType::Bool,
            ColumnType::Text { max_chars: None },
        ];
        let text = |n: usize| Value::Text(Cow::Owned("x".repeat(n)));
        let mut rows = Vec::new();
        for (r, n) in [0usize, 1, 14, 15, 16, 17, 127, 128, 300]
            .into_iter()
            .enumerate()
        {
            let big = if r % 2 == 0 { i64::MIN } else { r as i64 };
            rows.push(vec![
                Value::Int(big),
                text(n),
                Value::Double(r as f64),
                Value::Bool(r % 3 == 0),
                text(n / 2 + r),
            ]);
            let mut with_nulls = rows[rows.len() - 1].clone();
            with_nulls[r % types.len()] = Value::Null;
            rows.push(with_nulls);
        }
        let shapes: Vec<CellShape> = types.iter().map(CellShape::of).collect();
        let mut cols: Vec<ChunkColumn> = (0..types.len()).map(|_| ChunkColumn::default()).collect();
        let mut want: Vec<(Vec<u8>, Vec<u32>)> = vec![Default::default(); types.len()];
        for (r, values) in rows.iter().enumerate() {
            let mut row = Vec::new();
            encode_row(&mut row, 1, values);
            split_row(&row, &shapes, r as u32, &mut cols).unwrap();
            let mut seen = vec![false; types.len()];
            for_each_cell(&row, &types, |c, cell| {
                want[c].0.extend_from_slice(cell);
                seen[c] = true;
                Ok(())
            })
            .unwrap()
            .unwrap();
            for (c, s) in seen.iter().enumerate() {
                if !s {
                    want[c].1.push(r as u32);
                }
            }
            // A row cut short or with bytes left over is an error, not a panic.
            assert!(split_row(&row[..row.len() - 1], &shapes, 0, &mut cols.clone()).is_err());
            let mut longer = row.clone();
            longer.push(0);
            assert!(split_row(&longer, &shapes, 0, &mut cols.clone()).is_err());
        }
        for (c, col) in cols.iter().enumerate() {
            assert_eq!(col.bytes, want[c].0, "column {c}");
            assert_eq!(col.nulls, want[c].1, "column {c}");
        }
    }
}
