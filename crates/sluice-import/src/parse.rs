//! Parse workers: a record-aligned chunk → typed values → the KVs of the primary index and of
//! each secondary index, sorted per index ([`ChunkOutput`]).
//!
//! Invariants:
//! 1. A bad record never stops the chunk: it becomes a [`Reject`] (file, line, column, value,
//!    the original record text) and the pipeline decides, in input order, whether the import
//!    goes on (`--max-errors`).
//! 2. Each [`Entries`] list is sorted by (key, source position), so equal keys of one chunk are
//!    adjacent and in input order.
//! 3. No allocation per field: values borrow from the chunk (TSV without escapes, JSON numbers
//!    and strings without escapes) or from one unescape buffer per chunk (CSV), and keys and
//!    rows are appended to one arena per index.
//!
//! NULL rules (`Written`, the same for every format; `--null STR` is `ParseConfig::null`):
//! - CSV, a field without quotes: empty or `STR` is NULL — except that an empty field of a
//!   NOT NULL TEXT/BYTES column is the empty value (NULL could not be stored there anyway).
//! - CSV, a quoted field is a value: `""` is the empty string and `"STR"` the text STR; only
//!   for a type without an empty value (all but TEXT and BYTES) is `""` NULL (writers that
//!   quote every field write NULL so).
//! - CSV, a file with one field per record: an empty line is a record with one empty field
//!   (NULL, or skipped where the column is NOT NULL), so a one-column NULL row reads back.
//! - TSV: `\N` and `STR` are NULL; an empty field is the empty string for TEXT/BYTES and NULL
//!   for other types.
//! - JSON lines: `null` and a missing key are NULL, and so is the string `"STR"` for every
//!   column type; `""` is the empty string for TEXT/BYTES and NULL for other types. Numbers
//!   are converted from their text as written (never through a double), for every type; in a
//!   TEXT column a number or boolean is stored as its text.

use std::borrow::Cow;
use std::sync::Arc;

use crate::error::{BadRow, RowPlace};
use crate::input::{count_line_ends, next_line, Format};
use crate::keycode::{encode_prefix, encode_value};
use crate::row::encode_row;
use crate::schema::{TableDef, PRIMARY_INDEX_ID};
use crate::types::{parse_value, Value};

/// Bits of a source position that hold the line; the file index sits above them.
pub const LINE_BITS: u32 = 44;

/// A source position: file index and line, ordered as in the input.
pub fn src_pos(file: usize, line: u64) -> u64 {
    ((file as u64) << LINE_BITS) | (line & ((1 << LINE_BITS) - 1))
}

/// How input fields map to the table's columns, for one file.
#[derive(Debug, Clone)]
pub struct FieldMap {
    /// For each input field, the column it fills (`None`: a header name we do not know is an
    /// error before this is built, so `None` never occurs in practice).
    pub fields: Vec<usize>,
}

/// Settings shared by every worker.
#[derive(Debug)]
pub struct ParseConfig {
    /// The table.
    pub table: TableDef,
    /// Input format.
    pub format: Format,
    /// Field delimiter (CSV/TSV).
    pub delimiter: u8,
    /// Quote character (CSV); `None` disables quoting.
    pub quote: Option<u8>,
    /// The string that means NULL (in addition to an empty field for non-text columns).
    pub null: Option<Vec<u8>>,
    /// Input file names, for messages.
    pub files: Vec<String>,
    /// First hidden row id (rows get `rowid_base + input offset`).
    pub rowid_base: i64,
    /// Recycled output buffers (`None`: allocate).
    pub pool: Option<Arc<BufferPool>>,
}

/// Output buffers handed back after a spill or merge and reused by the workers: without it,
/// the allocator keeps the freed buffers of earlier chunks as fragments and the process grows
/// far past the memory budget.
#[derive(Debug)]
pub struct BufferPool {
    bufs: std::sync::Mutex<Vec<Entries>>,
    bytes: std::sync::atomic::AtomicUsize,
    cap: usize,
}

impl BufferPool {
    /// A pool keeping at most `cap` bytes of buffers.
    pub fn new(cap: usize) -> Self {
        BufferPool {
            bufs: std::sync::Mutex::new(Vec::new()),
            bytes: std::sync::atomic::AtomicUsize::new(0),
            cap,
        }
    }

    /// An empty buffer, recycled when one is available.
    pub fn take(&self) -> Entries {
        let e = self.bufs.lock().ok().and_then(|mut b| b.pop());
        match e {
            Some(e) => {
                self.bytes
                    .fetch_sub(e.memory(), std::sync::atomic::Ordering::Relaxed);
                e
            }
            None => Entries::default(),
        }
    }

    /// Frees every pooled buffer.
    pub fn clear(&self) {
        if let Ok(mut b) = self.bufs.lock() {
            b.clear();
            self.bytes.store(0, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Returns a buffer (dropped if the pool is full).
    pub fn give(&self, mut e: Entries) {
        e.arena.clear();
        e.items.clear();
        let m = e.memory();
        if self.bytes.load(std::sync::atomic::Ordering::Relaxed) + m > self.cap {
            return;
        }
        if let Ok(mut b) = self.bufs.lock() {
            self.bytes
                .fetch_add(m, std::sync::atomic::Ordering::Relaxed);
            b.push(e);
        }
    }
}

/// One chunk to parse.
#[derive(Debug)]
pub struct Chunk {
    /// Sequence number, in input order.
    pub seq: u64,
    /// Index of its file.
    pub file: usize,
    /// Whole records.
    pub data: Vec<u8>,
    /// Line of `data[0]`.
    pub first_line: u64,
    /// Offset of `data[0]` in all inputs together (for row ids).
    pub offset: u64,
    /// Field → column map of its file.
    pub map: Arc<FieldMap>,
}

/// A bad record.
#[derive(Debug, Clone)]
pub struct Reject {
    /// Source position (for ordering).
    pub src: u64,
    /// What is wrong, where (`file:line: column c: "v" is not a T`).
    pub error: BadRow,
    /// The record as it appeared in the input.
    pub record: Vec<u8>,
}

/// Sorted KVs of one index from one chunk (or any sorted source built in memory).
#[derive(Debug, Default)]
pub struct Entries {
    /// Keys and values, back to back.
    pub arena: Vec<u8>,
    /// `(offset in arena, key length, value length, source position)`.
    pub items: Vec<(usize, u32, u32, u64)>,
}

impl Entries {
    /// Adds the KV just appended to the arena from `start` (key `klen` bytes, then value).
    fn push(&mut self, start: usize, klen: usize, src: u64) {
        let vlen = self.arena.len() - start - klen;
        self.items.push((start, klen as u32, vlen as u32, src));
    }

    /// Key of item `i`.
    pub fn key(&self, i: usize) -> &[u8] {
        let (o, k, _, _) = self.items[i];
        &self.arena[o..o + k as usize]
    }

    /// Value of item `i`.
    pub fn value(&self, i: usize) -> &[u8] {
        let (o, k, v, _) = self.items[i];
        &self.arena[o + k as usize..o + k as usize + v as usize]
    }

    /// Bytes this list holds in memory.
    pub fn memory(&self) -> usize {
        self.arena.capacity()
            + self.items.capacity() * std::mem::size_of::<(usize, u32, u32, u64)>()
    }

    fn sort(&mut self) {
        let arena = &self.arena;
        // Sort by the 8 key bytes after the index prefix as an integer first: most comparisons
        // end there, without a call to memcmp.
        let mut keyed: Vec<(u64, (usize, u32, u32, u64))> = self
            .items
            .iter()
            .map(|it| (key_head(&arena[it.0..it.0 + it.1 as usize]), *it))
            .collect();
        keyed.sort_unstable_by(|(ha, a), (hb, b)| {
            ha.cmp(hb)
                .then_with(|| arena[a.0..a.0 + a.1 as usize].cmp(&arena[b.0..b.0 + b.1 as usize]))
                .then(a.3.cmp(&b.3))
        });
        for (dst, (_, it)) in self.items.iter_mut().zip(keyed) {
            *dst = it;
        }
    }

    /// True when no two adjacent keys are equal.
    pub fn distinct(&self) -> bool {
        (1..self.items.len()).all(|i| self.key(i - 1) != self.key(i))
    }
}

/// Bytes 8..16 of a key (after the table and index ids) as a big-endian integer, zero padded:
/// comparing heads orders keys correctly whenever the heads differ.
#[inline]
pub fn key_head(key: &[u8]) -> u64 {
    let tail = key.get(8..).unwrap_or(&[]);
    match tail.get(..8) {
        Some(b) => u64::from_be_bytes(b.try_into().unwrap_or([0; 8])),
        None => tail
            .iter()
            .enumerate()
            .fold(0u64, |h, (i, &c)| h | u64::from(c) << (56 - 8 * i)),
    }
}

/// What a worker returns for a chunk.
#[derive(Debug)]
pub struct ChunkOutput {
    /// The chunk's sequence number.
    pub seq: u64,
    /// Per index (primary first, then secondaries in schema order): sorted KVs.
    pub indexes: Vec<Entries>,
    /// Bad records, in input order.
    pub rejects: Vec<Reject>,
    /// Good records.
    pub rows: u64,
    /// Input bytes of the chunk.
    pub bytes: u64,
}

/// Parses and encodes one chunk. Never panics on the chunk's bytes.
pub fn parse_chunk(cfg: &ParseConfig, chunk: Chunk) -> ChunkOutput {
    let n_idx = 1 + cfg.table.indexes.len();
    let mut out = ChunkOutput {
        seq: chunk.seq,
        indexes: (0..n_idx)
            .map(|_| cfg.pool.as_ref().map(|p| p.take()).unwrap_or_default())
            .collect(),
        rejects: Vec::new(),
        rows: 0,
        bytes: chunk.data.len() as u64,
    };
    // Rough presizing: keys + rows are about the size of the input.
    out.indexes[0]
        .arena
        .reserve(chunk.data.len() + chunk.data.len() / 4);
    let mut enc = Encoder::new(cfg);
    match cfg.format {
        Format::Csv => parse_csv(cfg, &chunk, &mut enc, &mut out),
        Format::Tsv => parse_tsv(cfg, &chunk, &mut enc, &mut out),
        Format::Jsonl => parse_jsonl(cfg, &chunk, &mut enc, &mut out),
    }
    for e in &mut out.indexes {
        e.sort();
    }
    out
}

/// A record's problem before it has a position.
struct RowError {
    column: Option<String>,
    value: Option<String>,
    message: String,
}

fn row_error(column: Option<&str>, message: impl Into<String>) -> RowError {
    RowError {
        column: column.map(str::to_string),
        value: None,
        message: message.into(),
    }
}

/// How a field was written, for the NULL rules of the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// A CSV field without quotes.
    Bare,
    /// A CSV field in quotes.
    Quoted,
    /// A TSV field (unescaped, after `\N` and `--null` were checked) or a JSON string.
    Text,
    /// A JSON number or boolean: always a value.
    Literal,
}

/// Turns fields into values and values into KVs.
struct Encoder<'c> {
    cfg: &'c ParseConfig,
    key: Vec<u8>,
    pk_suffix: Vec<u8>,
}

impl<'c> Encoder<'c> {
    fn new(cfg: &'c ParseConfig) -> Self {
        Encoder {
            cfg,
            key: Vec::with_capacity(64),
            pk_suffix: Vec::with_capacity(64),
        }
    }

    /// Parses one field of column `col` written as `how`, applying the NULL rules of the
    /// module doc.
    fn field<'a>(&self, col: usize, raw: &'a [u8], how: Written) -> Result<Value<'a>, RowError> {
        let c = &self.cfg.table.columns[col];
        let text = c.ty.is_text();
        let marker = self.cfg.null.as_deref() == Some(raw);
        let is_null = match how {
            Written::Bare => marker || (raw.is_empty() && !(text && c.not_null)),
            Written::Quoted => raw.is_empty() && !text,
            Written::Text => marker || (raw.is_empty() && !text),
            Written::Literal => false,
        };
        if is_null {
            return Ok(Value::Null);
        }
        parse_value(&c.ty, raw).map_err(|e| RowError {
            column: Some(c.name.clone()),
            value: Some(e.value.clone()),
            message: e.to_string(),
        })
    }

    /// Checks NOT NULL, fills the row id and appends every index's KV.
    fn emit(
        &mut self,
        values: &mut [Value<'_>],
        offset: u64,
        src: u64,
        out: &mut ChunkOutput,
    ) -> Result<(), RowError> {
        let t = &self.cfg.table;
        if t.has_rowid() {
            values[t.primary_key[0]] =
                Value::Int(self.cfg.rowid_base.saturating_add(offset as i64));
        }
        for (i, c) in t.columns.iter().enumerate() {
            if c.not_null && matches!(values[i], Value::Null) {
                return Err(row_error(Some(&c.name), "NULL in a NOT NULL column"));
            }
        }
        // Primary: prefix ‖ pk columns → row.
        self.pk_suffix.clear();
        for &i in &t.primary_key {
            encode_value(&mut self.pk_suffix, &values[i]);
        }
        let e = &mut out.indexes[0];
        let start = e.arena.len();
        encode_prefix(&mut e.arena, t.id, PRIMARY_INDEX_ID);
        e.arena.extend_from_slice(&self.pk_suffix);
        let klen = e.arena.len() - start;
        encode_row(&mut e.arena, t.version, values);
        e.push(start, klen, src);
        // Secondary: prefix ‖ index columns ‖ pk columns → empty.
        for (n, idx) in t.indexes.iter().enumerate() {
            self.key.clear();
            encode_prefix(&mut self.key, t.id, idx.id);
            for &i in &idx.columns {
                encode_value(&mut self.key, &values[i]);
            }
            self.key.extend_from_slice(&self.pk_suffix);
            let e = &mut out.indexes[1 + n];
            let start = e.arena.len();
            e.arena.extend_from_slice(&self.key);
            e.push(start, self.key.len(), src);
        }
        out.rows += 1;
        Ok(())
    }
}

fn reject(cfg: &ParseConfig, chunk: &Chunk, line: u64, e: RowError, record: &[u8]) -> Reject {
    let error = BadRow {
        place: RowPlace {
            file: cfg.files[chunk.file].clone(),
            line,
        },
        column: e.column,
        value: e.value,
        reason: e.message,
    };
    let mut record = record.to_vec();
    while record.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
        record.pop();
    }
    Reject {
        src: src_pos(chunk.file, line),
        error,
        record,
    }
}

fn expected_fields(map: &FieldMap, found: usize) -> RowError {
    row_error(
        None,
        format!("expected {} fields, found {found}", map.fields.len()),
    )
}

/// Bytes that end a CSV record (csv-core takes CR, LF and CRLF).
fn is_terminator(c: u8) -> bool {
    c == b'\r' || c == b'\n'
}

/// Whether field `f` of a CSV record was quoted: `raw` is the record as written, whose quoting
/// the chunker has checked (RFC 4180 strict: a quote opens only at a field start and a
/// closing quote is followed by a delimiter or the record end).
fn field_quoted(raw: &[u8], f: usize, delimiter: u8, quote: u8) -> bool {
    let mut i = 0;
    for _ in 0..f {
        if raw.get(i) == Some(&quote) {
            // Past the closing quote: a quote not followed by another.
            i += 1;
            loop {
                match memchr::memchr(quote, &raw[i.min(raw.len())..]) {
                    Some(p) if raw.get(i + p + 1) == Some(&quote) => i += p + 2,
                    Some(p) => {
                        i += p + 1;
                        break;
                    }
                    None => return false,
                }
            }
        }
        match memchr::memchr(delimiter, &raw[i.min(raw.len())..]) {
            Some(p) => i += p + 1,
            None => return false,
        }
    }
    raw.get(i) == Some(&quote)
}

/// CSV records via `csv_core` (the csv crate's record parser), so that a field's quoting can
/// be looked up where the NULL rules need it: only for an empty field of a TEXT/BYTES column
/// and for a field equal to the `--null` string, by [`field_quoted`] on the record's text.
fn parse_csv(cfg: &ParseConfig, chunk: &Chunk, enc: &mut Encoder<'_>, out: &mut ChunkOutput) {
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
    let mut pos = 0usize;
    let mut line = chunk.first_line;
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
            let input = &data[pos..];
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
        let result = (|| {
            if nend != chunk.map.fields.len() {
                return Err(expected_fields(&chunk.map, nend));
            }
            let mut values: Vec<Value<'_>> = vec![Value::Null; ncols];
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
            enc.emit(&mut values, chunk.offset + rec_start as u64, src, out)
        })();
        if let Err(e) = result {
            out.rejects.push(reject(cfg, chunk, rec_line, e, raw));
        }
    }
}

/// Undoes TSV backslash escapes into `out`; returns false on an unknown escape.
fn tsv_unescape(b: &[u8], out: &mut Vec<u8>) -> bool {
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

fn parse_tsv(cfg: &ParseConfig, chunk: &Chunk, enc: &mut Encoder<'_>, out: &mut ChunkOutput) {
    let ncols = cfg.table.columns.len();
    // `\N` is always NULL (as in PostgreSQL's text format), and so is the --null string.
    let is_null = |field: &[u8]| field == b"\\N" || cfg.null.as_deref() == Some(field);
    let mut line_no = chunk.first_line;
    let mut pos = 0usize;
    let mut scratch: Vec<u8> = Vec::new();
    let mut bounds: Vec<(usize, usize, bool)> = Vec::new();
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
        if rec.is_empty() {
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
            let mut values: Vec<Value<'_>> = vec![Value::Null; ncols];
            for (f, &(s, e, is_null)) in bounds.iter().enumerate() {
                let col = chunk.map.fields[f];
                if !is_null {
                    values[col] = enc.field(col, &text[s..e], Written::Text)?;
                }
            }
            enc.emit(&mut values, offset, src, out)
        })();
        if let Err(e) = result {
            out.rejects.push(reject(cfg, chunk, line, e, raw_record));
        }
    }
}

/// A JSON object's members in input order, each value as its raw JSON text (numbers keep
/// every digit as written; duplicate keys are all kept, for the caller to refuse).
struct JsonRecord<'a>(Vec<(Cow<'a, str>, &'a serde_json::value::RawValue)>);

/// A JSON string, borrowed from the input when it has no escapes.
struct JsonStr<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for JsonStr<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = JsonStr<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> serde::Deserialize<'de> for JsonRecord<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = JsonRecord<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Self::Value, M::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = m.next_entry::<JsonStr<'de>, _>()? {
                    members.push((k.0, v));
                }
                Ok(JsonRecord(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// One member's value for column `col`, from its raw JSON text.
fn json_value<'a>(
    enc: &Encoder<'_>,
    col: usize,
    raw: &'a serde_json::value::RawValue,
) -> Result<Value<'a>, RowError> {
    let c = &enc.cfg.table.columns[col];
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'n') => Ok(Value::Null),
        Some(b'"') => {
            let s: JsonStr<'a> = serde_json::from_str(text)
                .map_err(|e| row_error(Some(&c.name), format!("bad JSON string: {e}")))?;
            match s.0 {
                Cow::Borrowed(b) => enc.field(col, b.as_bytes(), Written::Text),
                Cow::Owned(o) => enc
                    .field(col, o.as_bytes(), Written::Text)
                    .map(Value::into_owned),
            }
        }
        Some(b'{' | b'[') => Err(row_error(
            Some(&c.name),
            format!(
                "{text} is not {} (nested JSON is not supported)",
                c.ty.with_article()
            ),
        )),
        // A number or true/false: its text exactly as written.
        _ => enc.field(col, text.as_bytes(), Written::Literal),
    }
}

fn parse_jsonl(cfg: &ParseConfig, chunk: &Chunk, enc: &mut Encoder<'_>, out: &mut ChunkOutput) {
    let ncols = cfg.table.columns.len();
    let mut line_no = chunk.first_line;
    let mut pos = 0usize;
    let data = &chunk.data;
    let mut member_of: Vec<Option<usize>> = vec![None; ncols];
    while pos < data.len() {
        let (_, end) = next_line(data, pos);
        let rec = &data[pos..end];
        let line = line_no;
        let src = src_pos(chunk.file, line);
        let offset = chunk.offset + pos as u64;
        pos = end;
        line_no += 1;
        if rec.iter().all(|c| c.is_ascii_whitespace()) {
            continue;
        }
        let result = (|| {
            let obj: JsonRecord<'_> = serde_json::from_slice(rec)
                .map_err(|e| row_error(None, format!("not a JSON object: {e}")))?;
            // Keys name columns as CSV headers do (ASCII case-insensitively; names are unique
            // that way): two keys for one column are an error, never a silent choice.
            member_of.iter_mut().for_each(|m| *m = None);
            for (n, (k, _)) in obj.0.iter().enumerate() {
                let col = match cfg.table.column(k) {
                    Some(i) if !cfg.table.columns[i].hidden => i,
                    _ => {
                        return Err(row_error(
                            None,
                            format!("key {k:?} is not a column of {}", cfg.table.name),
                        ))
                    }
                };
                if let Some(first) = member_of[col] {
                    let other = &obj.0[first].0;
                    return Err(row_error(
                        None,
                        if other == k {
                            format!("key {k:?} appears twice")
                        } else {
                            format!(
                                "keys {other:?} and {k:?} both name column {}",
                                cfg.table.columns[col].name
                            )
                        },
                    ));
                }
                member_of[col] = Some(n);
            }
            let mut values: Vec<Value<'_>> = vec![Value::Null; ncols];
            for (col, m) in member_of.iter().enumerate() {
                if let Some(n) = m {
                    values[col] = json_value(enc, col, obj.0[*n].1)?;
                }
            }
            enc.emit(&mut values, offset, src, out)
        })();
        if let Err(e) = result {
            out.rejects.push(reject(cfg, chunk, line, e, rec));
        }
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
