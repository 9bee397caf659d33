//! TSV records: tab-separated fields with backslash escapes, `\N` for NULL.

use crate::input::next_line;
use crate::types::Value;

use super::{
    expected_fields, null_row, recycle, reject, row_error, src_pos, Chunk, ChunkOutput, Encoder,
    ParseConfig, Written,
};

/// Undoes TSV backslash escapes into `out`; returns false on an unknown escape.
pub(super) fn tsv_unescape(b: &[u8], out: &mut Vec<u8>) -> bool {
    // Most fields have no backslash: one copy.
    let Some(first) = memchr::memchr(b'\\', b) else {
        out.extend_from_slice(b);
        return true;
    };
    out.extend_from_slice(&b[..first]);
    let mut i = first;
    while i < b.len() {
        if b[i] == b'\\' {
            let c = match b.get(i + 1) {
                Some(b't') => b'\t',
                Some(b'n') => b'\n',
                Some(b'r') => b'\r',
                Some(b'0') => 0,
                Some(b'\\') => b'\\',
                Some(b'b') => 8,
                Some(b'f') => 12,
                Some(b'\'') => b'\'',
                Some(b'"') => b'"',
                _ => return false,
            };
            out.push(c);
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    true
}

pub(super) fn parse_tsv(
    cfg: &ParseConfig,
    chunk: &Chunk,
    enc: &mut Encoder<'_>,
    out: &mut ChunkOutput,
) {
    let ncols = cfg.table.columns.len();
    let one_text_field = match chunk.map.fields.as_slice() {
        [col] => matches!(
            cfg.table.columns[*col].ty,
            crate::types::ColumnType::Text { .. } | crate::types::ColumnType::Bytes
        ),
        _ => false,
    };
    // `\N` is always NULL (as in PostgreSQL's text format), and so is the --null string.
    let is_null = |field: &[u8]| field == b"\\N" || cfg.null.as_deref() == Some(field);
    let mut line_no = chunk.first_line;
    let mut pos = 0usize;
    let mut scratch: Vec<u8> = Vec::new();
    let mut bounds: Vec<(usize, usize, bool)> = Vec::new();
    let mut spare: Vec<Value<'static>> = Vec::new();
    let data = &chunk.data;
    while pos < data.len() {
        let (content_end, end) = next_line(data, pos);
        let rec = &data[pos..content_end];
        let line = line_no;
        let src = src_pos(chunk.file, line);
        let offset = chunk.offset + pos as u64;
        let raw_record = &data[pos..end];
        pos = end;
        line_no += 1;
        // An empty line is a record of one empty field: where the input has one field and
        // it is a text column, the empty string (PostgreSQL's text format writes '' so);
        // otherwise it holds no row and is skipped.
        if rec.is_empty() && !one_text_field {
            continue;
        }
        // Unescape every field into scratch first, then borrow values from it.
        scratch.clear();
        bounds.clear();
        let mut bad = None;
        let mut start = 0;
        // A record without a backslash (the usual case) is borrowed as it is, field by field.
        let escaped = memchr::memchr(b'\\', rec).is_some();
        let cuts = memchr::memchr_iter(cfg.delimiter, rec).chain(std::iter::once(rec.len()));
        for (f, cut) in cuts.enumerate() {
            let field = &rec[start..cut];
            let field_start = start;
            start = cut + 1;
            if is_null(field) {
                bounds.push((0, 0, true));
                continue;
            }
            if !escaped {
                bounds.push((field_start, cut, false));
                continue;
            }
            let s = scratch.len();
            if !tsv_unescape(field, &mut scratch) && bad.is_none() {
                let col = chunk
                    .map
                    .fields
                    .get(f)
                    .map(|c| cfg.table.columns[*c].name.as_str());
                bad = Some(row_error(
                    col,
                    format!(
                        "{:?}: unknown backslash escape",
                        String::from_utf8_lossy(field)
                    ),
                ));
            }
            bounds.push((s, scratch.len(), false));
        }
        let result = (|| {
            if let Some(e) = bad {
                return Err(e);
            }
            if bounds.len() != chunk.map.fields.len() {
                return Err(expected_fields(&chunk.map, bounds.len()));
            }
            let text: &[u8] = if escaped { &scratch } else { rec };
            let mut values: Vec<Value<'_>> = null_row(&mut spare, ncols);
            for (f, &(s, e, is_null)) in bounds.iter().enumerate() {
                let col = chunk.map.fields[f];
                if !is_null {
                    values[col] = enc.field(col, &text[s..e], Written::Text)?;
                }
            }
            let r = enc.emit(&mut values, offset, src, out);
            spare = recycle(values);
            r
        })();
        if let Err(e) = result {
            out.rejects.push(reject(cfg, chunk, line, e, raw_record));
        }
    }
}
