//! Record batches (Parquet files, Arrow streams): each row's values taken straight from the
//! typed arrays ([`crate::arrow_io::Cells`]), never formatted to text and parsed back.
//! A row's place is its input and 1-based row number; a bad row's message also names the
//! batch and the row within it (0-based, as Arrow indexes them).

use super::{reject, src_pos, Chunk, ChunkOutput, Encoder, ParseConfig, RowError};
use crate::arrow_io::Cells;
use crate::types::Value;

pub(super) fn parse_batch(
    cfg: &ParseConfig,
    chunk: &Chunk,
    enc: &mut Encoder<'_>,
    out: &mut ChunkOutput,
) {
    let Some(batch) = &chunk.batch else {
        return;
    };
    let t = &cfg.table;
    let fields = &chunk.map.fields;
    let cells: Vec<Result<Cells<'_>, String>> = batch
        .rows
        .columns()
        .iter()
        .zip(fields)
        .map(|(a, &c)| Cells::new(a, t.columns[c].ty))
        .collect();
    let mut values: Vec<Value<'_>> = vec![Value::Null; t.columns.len()];
    for i in 0..batch.rows.num_rows() {
        let line = chunk.first_line + i as u64;
        values.fill(Value::Null);
        let mut result = Ok(());
        for (cell, &c) in cells.iter().zip(fields) {
            let col = &t.columns[c];
            let v = match cell {
                Ok(cell) => cell.value(i).map_err(|e| RowError {
                    column: Some(col.name.clone()),
                    value: Some(e.value.clone()),
                    message: e.to_string(),
                }),
                Err(why) => Err(RowError {
                    column: Some(col.name.clone()),
                    value: None,
                    message: why.clone(),
                }),
            };
            match v {
                Ok(v) => values[c] = v,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let src = src_pos(chunk.file, line);
        if result.is_ok() {
            result = enc.emit(&mut values, chunk.offset + i as u64, src, out);
        }
        if let Err(mut e) = result {
            e.message = format!("{} (batch {}, row {i})", e.message, batch.number);
            let record = row_text(&cells, i);
            out.rejects
                .push(reject(cfg, chunk, line, e, record.as_bytes()));
        }
    }
}

/// Row `i` as one CSV record, for the rejects file.
fn row_text(cells: &[Result<Cells<'_>, String>], i: usize) -> String {
    let fields: Vec<String> = cells
        .iter()
        .map(|c| {
            let s = c.as_ref().map(|c| c.text(i)).unwrap_or_default();
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s
            }
        })
        .collect();
    fields.join(",")
}
