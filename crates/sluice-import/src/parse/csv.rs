//! CSV records (RFC 4180, via `csv_core`) with their quoting, for the NULL rules.

use crate::input::count_line_ends;
use crate::types::Value;

use super::{
    expected_fields, null_row, recycle, reject, src_pos, Chunk, ChunkOutput, Encoder, ParseConfig,
    RowError, Written,
};

/// Bytes that end a CSV record (csv-core takes CR, LF and CRLF).
pub(super) fn is_terminator(c: u8) -> bool {
    c == b'\r' || c == b'\n'
}

/// Whether field `f` of a CSV record was quoted: `raw` is the record as written, whose quoting
/// is well-formed (RFC 4180 strict: a quote opens only at a field start and a closing quote
/// is followed by a delimiter or the record end; records the chunker found otherwise are
/// rejected before any field is looked at).
pub(super) fn field_quoted(raw: &[u8], f: usize, delimiter: u8, quote: u8) -> bool {
    field_start(raw, f, delimiter, quote).is_some_and(|i| raw.get(i) == Some(&quote))
}

/// Where field `f` (0-based) of `raw` starts, if the fields before it are well-formed.
fn field_start(raw: &[u8], f: usize, delimiter: u8, quote: u8) -> Option<usize> {
    let mut i = 0;
    for _ in 0..f {
        if raw.get(i) == Some(&quote) {
            // Past the closing quote: a quote not followed by another.
            i += 1;
            loop {
                let p = memchr::memchr(quote, &raw[i.min(raw.len())..])?;
                if raw.get(i + p + 1) == Some(&quote) {
                    i += p + 2;
                } else {
                    i += p + 1;
                    break;
                }
            }
        }
        i += memchr::memchr(delimiter, &raw[i.min(raw.len())..])? + 1;
    }
    Some(i)
}

/// CSV records via `csv_core` (the csv crate's record parser), so that a field's quoting can
/// be looked up where the NULL rules need it: only for an empty field of a TEXT/BYTES column
/// and for a field equal to the `--null` string, by [`field_quoted`] on the record's text.
pub(super) fn parse_csv(
    cfg: &ParseConfig,
    chunk: &Chunk,
    enc: &mut Encoder<'_>,
    out: &mut ChunkOutput,
) {
    let mut rdr = csv_core::ReaderBuilder::new()
        .delimiter(cfg.delimiter)
        .quote(cfg.quote.unwrap_or(b'"'))
        .quoting(cfg.quote.is_some())
        .double_quote(true)
        .build();
    let data = &chunk.data[..];
    let ncols = cfg.table.columns.len();
    let one_field = chunk.map.fields.len() == 1;
    // Unescaped fields of one record and their ends; grown on demand.
    let mut buf = vec![0u8; data.len().clamp(1, 1 << 16)];
    let mut ends = vec![0usize; chunk.map.fields.len().max(1) + 1];
    let mut spare: Vec<Value<'static>> = Vec::new();
    let mut pos = 0usize;
    let mut line = chunk.first_line;
    let mut malformed = chunk.malformed.iter().peekable();
    // csv-core drops a UTF-8 BOM before its first record; the chunker has dropped the file's,
    // and one at the start of a later chunk is data, as the chunker read it. A first call of
    // one byte (never a whole record: it is not a line end) gets past csv-core's check.
    let mut first_read = true;
    loop {
        // Terminators before a record: the LF of the previous record's CRLF, and empty lines.
        while let Some(&c) = data.get(pos).filter(|c| is_terminator(**c)) {
            let prev = if pos == 0 { b'\n' } else { data[pos - 1] };
            let empty_line = c == b'\r' || prev != b'\r';
            if empty_line && one_field {
                let raw = &data[pos..=pos];
                let result = (|| {
                    let col = chunk.map.fields[0];
                    if cfg.table.columns[col].not_null {
                        return Ok(());
                    }
                    let mut values: Vec<Value<'_>> = vec![Value::Null; ncols];
                    values[col] = enc.field(col, b"", Written::Bare)?;
                    enc.emit(
                        &mut values,
                        chunk.offset + pos as u64,
                        src_pos(chunk.file, line),
                        out,
                    )
                })();
                if let Err(e) = result {
                    out.rejects.push(reject(cfg, chunk, line, e, raw));
                }
            }
            if empty_line {
                // CR, LF and CRLF each end one line (a CRLF at its CR).
                line += 1;
            }
            pos += 1;
        }
        if pos >= data.len() {
            break;
        }
        let (rec_start, rec_line) = (pos, line);
        let (mut nout, mut nend) = (0, 0);
        let complete = loop {
            let input = if first_read {
                first_read = false;
                &data[pos..=pos]
            } else {
                &data[pos..]
            };
            let (res, nin, o, e) = rdr.read_record(input, &mut buf[nout..], &mut ends[nend..]);
            line += count_line_ends(data, pos, pos + nin);
            pos += nin;
            nout += o;
            nend += e;
            match res {
                csv_core::ReadRecordResult::Record => break true,
                csv_core::ReadRecordResult::End => break false,
                // Out of input mid-record: the next call, with empty input, ends the record.
                csv_core::ReadRecordResult::InputEmpty => {}
                csv_core::ReadRecordResult::OutputFull => {
                    let n = buf.len();
                    buf.resize(n * 2, 0);
                }
                csv_core::ReadRecordResult::OutputEndsFull => {
                    let n = ends.len();
                    ends.resize(n * 2, 0);
                }
            }
        };
        if !complete {
            break; // csv-core saw no record (cannot happen after the terminators above)
        }
        let raw = &data[rec_start..pos];
        let src = src_pos(chunk.file, rec_line);
        let bad_quoting = malformed.next_if(|(at, _)| *at < pos);
        debug_assert!(bad_quoting.is_none_or(|(at, _)| *at >= rec_start));
        let result = (|| {
            if let Some((at, e)) = bad_quoting {
                let bad = at.saturating_sub(rec_start);
                return Err(malformed_field(cfg, chunk, e, raw, bad));
            }
            if nend != chunk.map.fields.len() {
                return Err(expected_fields(&chunk.map, nend));
            }
            let mut values: Vec<Value<'_>> = null_row(&mut spare, ncols);
            let mut start = 0;
            for (f, &end) in ends[..nend].iter().enumerate() {
                let col = chunk.map.fields[f];
                let field = &buf[start..end];
                start = end;
                let text = cfg.table.columns[col].ty.is_text();
                let ambiguous = (field.is_empty() && text) || cfg.null.as_deref() == Some(field);
                let quoted = ambiguous
                    && cfg
                        .quote
                        .is_some_and(|q| field_quoted(raw, f, cfg.delimiter, q));
                let how = if quoted {
                    Written::Quoted
                } else {
                    Written::Bare
                };
                values[col] = enc.field(col, field, how)?;
            }
            let r = enc.emit(&mut values, chunk.offset + rec_start as u64, src, out);
            spare = recycle(values);
            r
        })();
        if let Err(e) = result {
            out.rejects.push(reject(cfg, chunk, rec_line, e, raw));
        }
    }
    debug_assert!(
        malformed.next().is_none(),
        "a malformation outside every record"
    );
}

/// The error of a record whose quoting the chunker found malformed at `raw[bad]`
/// (`input` invariant 3): the field's column and its text as written, from its start to the
/// delimiter or line end after the bad byte; past the columns the input maps, the field's
/// number.
fn malformed_field(
    cfg: &ParseConfig,
    chunk: &Chunk,
    e: &crate::input::ScanError,
    raw: &[u8],
    bad: usize,
) -> RowError {
    let f = usize::try_from(e.field.saturating_sub(1)).unwrap_or(usize::MAX);
    let column = chunk
        .map
        .fields
        .get(f)
        .map(|&c| cfg.table.columns[c].name.clone());
    let quote = cfg.quote.unwrap_or(b'"');
    let text = field_start(raw, f, cfg.delimiter, quote)
        .filter(|&start| start <= bad && bad < raw.len())
        .map(|start| {
            let end = raw[bad..]
                .iter()
                .position(|&c| c == cfg.delimiter || is_terminator(c))
                .map_or(raw.len(), |p| bad + p);
            crate::types::shown(&raw[start..end])
        });
    let message = match (&column, &text) {
        (Some(_), Some(t)) => format!("{t:?}: malformed quoting: {}", e.reason),
        _ => format!("field {}: malformed quoting: {}", e.field, e.reason),
    };
    RowError {
        column,
        value: text,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_quoted_skips_quoted_delimiters_and_doubled_quotes() {
        let raw = b"a,\"b,\"\"c\"\"\",,\"\",NA,\"x\"\"\"\r\n";
        let q: Vec<bool> = (0..7).map(|f| field_quoted(raw, f, b',', b'"')).collect();
        assert_eq!(q, [false, true, false, true, false, true, false]);
        assert!(field_quoted(b"\"\"", 0, b',', b'"'));
        assert!(!field_quoted(b"", 0, b',', b'"'));
        assert!(field_quoted(b"x;\"a;b\";\"\"", 2, b';', b'"'));
    }
}
