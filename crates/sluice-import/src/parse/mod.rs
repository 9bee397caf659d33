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

mod arrow;
mod csv;
mod file;
mod jsonl;
mod tsv;

use std::sync::Arc;

use crate::error::{BadRow, RowPlace};
use crate::input::Format;
use crate::keycode::{encode_prefix, encode_value};
use crate::row::encode_row;
use crate::schema::{TableDef, PRIMARY_INDEX_ID};
use crate::types::{parse_value_fast, parse_value_slow, Value};
use crate::ImportError;

use arrow::parse_batch;
use csv::parse_csv;
pub use file::FileChunks;
use jsonl::parse_jsonl;
use tsv::parse_tsv;

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
    /// Field → column map of its file (for a batch: batch column → table column).
    pub map: Arc<FieldMap>,
    /// For Parquet and Arrow input: the rows, as a record batch (`data` is empty then, and
    /// `first_line` is the 1-based row number of its first row).
    pub batch: Option<ArrowBatch>,
    /// CSV records with malformed quoting, by the offset in `data` of their first bad byte
    /// (`RawChunk::malformed`): each is a rejected row.
    pub malformed: Vec<(usize, crate::input::ScanError)>,
}

/// A record batch of an Arrow or Parquet input, with its number for messages.
#[derive(Debug)]
pub struct ArrowBatch {
    /// The rows.
    pub rows: crate::arrow_io::RecordBatch,
    /// Its number in its input (0-based: the batch of a stream, or of a Parquet file).
    pub number: u64,
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

/// A row's values buffer, emptied and handed on with another lifetime: a parser keeps one
/// allocation for every row of a chunk, where each row's values borrow that row's text.
/// (Collecting an emptied vector into one of the same layout reuses its allocation.)
fn recycle<'b>(mut v: Vec<Value<'_>>) -> Vec<Value<'b>> {
    v.clear();
    v.into_iter().map(|_| Value::Null).collect()
}

/// A buffer of `n` NULL values, in the allocation of `spare` (see [`recycle`]).
fn null_row<'b>(spare: &mut Vec<Value<'static>>, n: usize) -> Vec<Value<'b>> {
    let mut v = recycle(std::mem::take(spare));
    v.resize(n, Value::Null);
    v
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
    if let Some(b) = &chunk.batch {
        out.bytes = b.rows.get_array_memory_size() as u64;
    }
    // Rough presizing: keys + rows are about the size of the input.
    out.indexes[0]
        .arena
        .reserve(chunk.data.len() + chunk.data.len() / 4);
    let mut enc = Encoder::new(cfg);
    match cfg.format {
        Format::Csv => parse_csv(cfg, &chunk, &mut enc, &mut out),
        Format::Tsv => parse_tsv(cfg, &chunk, &mut enc, &mut out),
        Format::Jsonl => parse_jsonl(cfg, &chunk, &mut enc, &mut out),
        Format::Parquet | Format::Arrow => parse_batch(cfg, &chunk, &mut enc, &mut out),
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

impl From<Box<RowError>> for RowError {
    fn from(e: Box<RowError>) -> Self {
        *e
    }
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
    ///
    /// The error is boxed: this runs once per field, and a small result is cheaper to return
    /// and test than one carrying the error's three strings (8% of a TSV import's CPU).
    #[inline]
    fn field<'a>(
        &self,
        col: usize,
        raw: &'a [u8],
        how: Written,
    ) -> Result<Value<'a>, Box<RowError>> {
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
        if let Some(v) = parse_value_fast(&c.ty, raw) {
            return Ok(v);
        }
        parse_value_slow(&c.ty, raw).map_err(|e| {
            Box::new(RowError {
                column: Some(c.name.clone()),
                value: Some(e.value.clone()),
                message: e.to_string(),
            })
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

/// Refuses text options that no record could be read with: a line end as the delimiter or the
/// quote, or a quote equal to the delimiter (`None` delimiter: CSV's `,`). Checked before any
/// input is read, by the import and by a distributed job's readers.
pub fn check_text_options(delimiter: Option<u8>, quote: Option<u8>) -> Result<(), ImportError> {
    let line_end = |c: u8| c == b'\n' || c == b'\r';
    let bad = |option, reason: &str| {
        Err(ImportError::InvalidOption {
            option,
            reason: reason.into(),
        })
    };
    if delimiter.is_some_and(line_end) {
        return bad("delimiter", "a line end cannot separate fields");
    }
    if quote.is_some_and(line_end) {
        return bad("quote", "a line end cannot quote a field");
    }
    if quote.is_some() && quote == Some(delimiter.unwrap_or(b',')) {
        return bad("quote", "must differ from the delimiter");
    }
    Ok(())
}

/// Fields in the table's column order (no header).
pub fn default_map(t: &TableDef) -> FieldMap {
    FieldMap {
        fields: t.visible_columns().map(|(i, _)| i).collect(),
    }
}

/// Fields as a header line names them; refuses unknown names and missing NOT NULL columns.
pub fn header_map(
    t: &TableDef,
    cfg: &ParseConfig,
    file: &str,
    data: &[u8],
) -> Result<FieldMap, ImportError> {
    let mut line = data;
    while let Some((&c, r)) = line.split_last() {
        if c == b'\n' || c == b'\r' {
            line = r;
        } else {
            break;
        }
    }
    let names: Vec<String> = match cfg.format {
        Format::Csv => {
            let mut rdr = ::csv::ReaderBuilder::new()
                .has_headers(false)
                .delimiter(cfg.delimiter)
                .quote(cfg.quote.unwrap_or(b'"'))
                .quoting(cfg.quote.is_some())
                .from_reader(line);
            let mut rec = ::csv::ByteRecord::new();
            let _ = rdr.read_byte_record(&mut rec);
            rec.iter()
                .map(|f| String::from_utf8_lossy(f).trim().to_string())
                .collect()
        }
        _ => line
            .split(|c| *c == cfg.delimiter)
            .map(|f| String::from_utf8_lossy(f).trim().to_string())
            .collect(),
    };
    let mut fields = Vec::new();
    for n in &names {
        match t.column(n) {
            Some(i) if !t.columns[i].hidden && !fields.contains(&i) => fields.push(i),
            _ => {
                return Err(header_error(
                    file,
                    Some(n),
                    format!(
                        "header names column {n:?}, which table {} does not have (or names twice)",
                        t.name
                    ),
                ))
            }
        }
    }
    for (i, c) in t.visible_columns() {
        if c.not_null && !fields.contains(&i) {
            return Err(header_error(
                file,
                None,
                format!("header lacks NOT NULL column {}", c.name),
            ));
        }
    }
    Ok(FieldMap { fields })
}

fn header_error(file: &str, value: Option<&str>, reason: String) -> ImportError {
    ImportError::BadRow(BadRow {
        place: RowPlace {
            file: file.to_string(),
            line: 1,
        },
        column: None,
        value: value.map(str::to_string),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::decode_row;
    use crate::schema::parse_schema;
    use crate::types::ColumnType;

    /// The values buffer a parser keeps across rows ([`recycle`]) starts every row NULL: a row
    /// rejected mid-row (its first values already parsed) and a row with values leave nothing
    /// in the NULL fields of the rows after them, in TSV and CSV.
    #[test]
    fn a_rejected_row_leaves_nothing_in_the_next_rows_nulls() {
        let mut table = parse_schema("CREATE TABLE t (id INT PRIMARY KEY, a INT, b TEXT);")
            .unwrap()
            .remove(0);
        table.id = 1;
        let types: Vec<ColumnType> = table.columns.iter().map(|c| c.ty).collect();
        for (format, d) in [(Format::Tsv, b'\t'), (Format::Csv, b',')] {
            let cfg = ParseConfig {
                table: table.clone(),
                format,
                delimiter: d,
                quote: Some(b'"'),
                null: Some(b"NA".to_vec()),
                files: vec!["t".into()],
                rowid_base: 0,
                pool: None,
            };
            let rows = ["1|10|x", "2|7x|y", "3|NA|NA", "4|40|z", "5|NA|NA"];
            let mut data = Vec::new();
            for r in rows {
                data.extend(r.bytes().map(|c| if c == b'|' { d } else { c }));
                data.push(b'\n');
            }
            let out = parse_chunk(
                &cfg,
                Chunk {
                    seq: 0,
                    file: 0,
                    data,
                    first_line: 1,
                    offset: 0,
                    map: Arc::new(FieldMap {
                        fields: (0..3).collect(),
                    }),
                    batch: None,
                    malformed: Vec::new(),
                },
            );
            assert_eq!(out.rejects.len(), 1, "{format:?}");
            assert_eq!(out.rejects[0].error.place.line, 2, "{format:?}");
            assert_eq!(
                out.rejects[0].error.column.as_deref(),
                Some("a"),
                "{format:?}"
            );
            let e = &out.indexes[0];
            let got: Vec<Vec<Value<'static>>> = (0..e.items.len())
                .map(|i| decode_row(e.value(i), &types).unwrap())
                .collect();
            let text = |s: &str| Value::Text(std::borrow::Cow::Owned(s.into()));
            assert_eq!(
                got,
                vec![
                    vec![Value::Int(1), Value::Int(10), text("x")],
                    vec![Value::Int(3), Value::Null, Value::Null],
                    vec![Value::Int(4), Value::Int(40), text("z")],
                    vec![Value::Int(5), Value::Null, Value::Null],
                ],
                "{format:?}"
            );
        }
    }
}
