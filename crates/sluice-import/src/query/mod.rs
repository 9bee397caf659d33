//! Reading tables back: point lookups by primary key and range scans over the primary key or a
//! secondary index, rows printed as CSV or JSON lines, and `--count --sum`.
//!
//! A scan reads at one snapshot: index entries and the rows they point to are from the same
//! state of the Db.
//!
//! Columns can be chosen ([`TableReader::set_columns`]). A columnar table then reads only
//! their chunks, per row group, beside the index that orders the scan. A scan of the whole
//! table that may give rows in any order ([`TableReader::set_any_order`]), and every count or
//! sum, walks the chosen columns' chunks in storage order (primary-key order within each
//! import, imports in the order they were made) and reads no primary index.
//! [`TableReader::bytes_read`] counts the bytes of index entries and chunks read.
//!
//! Output is made to be read back: CSV output imported again (same `--null`) gives the same
//! rows — NULL is an unquoted empty field (or the `--null` string), the empty string is `""`,
//! a text equal to the `--null` string is quoted, doubles print as text that reads back
//! (`inf`, `-inf`, `nan` included) — and every JSON output is valid JSON (the doubles JSON has
//! no number for are the strings `"Infinity"`, `"-Infinity"`, `"NaN"`, which the JSON-lines
//! reader takes back; a DECIMAL or a sum is a number literal with every digit).

use sluice::{Db, ReadOptions, Snapshot, Trace};

use crate::catalog;
use crate::keycode::{decode_column, encode_prefix, encode_value, prefix, prefix_successor};
use crate::row::{absent_cell, decode_row, decode_value, row_version};
use crate::schema::{Layout, TableDef, COLUMN_INDEX_BASE, PRIMARY_INDEX_ID};
use crate::types::{format_json, format_text, parse_value, ColumnType, Value};
use crate::ImportError;

mod chunks;
mod delete;
mod rewrite;

pub use chunks::chunked_row;
pub(crate) use chunks::ChunkCursors;
#[cfg(test)]
pub(crate) use delete::BETWEEN;
pub use delete::{dead_key, dead_mark, index_keys, replaced_mark, DEAD_INDEX_ID, DELETES_INDEX_ID};
pub use rewrite::RewriteSummary;

/// How rows are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// CSV with a header line; NULL is an unquoted empty field (or the string set by
    /// [`TableReader::set_csv_null`]), the empty string `""`.
    #[default]
    Csv,
    /// One JSON object per line.
    Json,
}

/// Rows of a scan and the sum of one column over them ([`TableReader::count_sum`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CountSum {
    /// Rows scanned.
    pub rows: u64,
    /// The column's sum, if one was asked for.
    pub sum: Option<ColumnSum>,
}

/// A column's sum over the non-NULL values of a scan, in the column's own terms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ColumnSum {
    /// No non-NULL value was seen: SQL's `SUM` is NULL then.
    Null,
    /// SMALLINT, INT, BIGINT: exact (an i128 holds the sum of 2^64 BIGINTs).
    Int(i128),
    /// DECIMAL: the exact unscaled sum at the column's scale, 256-bit so that it cannot
    /// overflow (2^64 values of 38 digits need 58).
    Decimal {
        /// The sum × 10^scale.
        unscaled: ethnum::I256,
        /// The column's scale: digits after the point.
        scale: u8,
    },
    /// DOUBLE: the IEEE sum in scan order (may be ±inf or NaN).
    Double(f64),
}

impl ColumnSum {
    /// The sum as a JSON value: `null`, an integer, a decimal literal with exactly the
    /// column's scale, a double as its shortest round-trip text, or the strings `"Infinity"`,
    /// `"-Infinity"`, `"NaN"` — always valid JSON.
    ///
    /// ```
    /// use sluice_import::ColumnSum;
    /// let s = ColumnSum::Decimal { unscaled: 35.into(), scale: 2 };
    /// assert_eq!(s.to_json(), "0.35");
    /// assert_eq!(ColumnSum::Double(f64::INFINITY).to_json(), "\"Infinity\"");
    /// ```
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        match self {
            ColumnSum::Null => out.push_str("null"),
            ColumnSum::Double(d) => format_json(&Value::Double(*d), &ColumnType::Double, &mut out),
            other => out = other.to_string(),
        }
        out
    }
}

impl std::fmt::Display for ColumnSum {
    /// Plain text: `NULL`, the integer, the decimal with its scale, the double as CSV prints
    /// it (`inf`, `nan`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ColumnSum::Null => f.write_str("NULL"),
            ColumnSum::Int(v) => write!(f, "{v}"),
            ColumnSum::Decimal { unscaled, scale } => {
                let digits = unscaled.unsigned_abs().to_string();
                let scale = usize::from(*scale);
                let digits = format!("{digits:0>width$}", width = scale + 1);
                let (int, frac) = digits.split_at(digits.len() - scale);
                let sign = if *unscaled < 0 { "-" } else { "" };
                if scale == 0 {
                    write!(f, "{sign}{int}")
                } else {
                    write!(f, "{sign}{int}.{frac}")
                }
            }
            ColumnSum::Double(d) => {
                let mut s = String::new();
                format_text(&Value::Double(*d), &ColumnType::Double, &mut s);
                f.write_str(&s)
            }
        }
    }
}

/// Adds up one column's values, exactly for integers and decimals.
#[derive(Debug)]
struct Summer {
    ty: ColumnType,
    any: bool,
    int: i128,
    dec: ethnum::I256,
    dbl: f64,
}

impl Summer {
    fn new(ty: ColumnType) -> Self {
        Summer {
            ty,
            any: false,
            int: 0,
            dec: ethnum::I256::ZERO,
            dbl: 0.0,
        }
    }

    fn add(&mut self, v: &Value<'_>) {
        match v {
            Value::Int(x) => self.int += i128::from(*x),
            Value::Decimal(x) => self.dec += ethnum::I256::from(*x),
            Value::Double(x) => self.dbl += x,
            _ => return,
        }
        self.any = true;
    }

    fn sum(&self) -> ColumnSum {
        match self.ty {
            _ if !self.any => ColumnSum::Null,
            ColumnType::Decimal { scale, .. } => ColumnSum::Decimal {
                unscaled: self.dec,
                scale,
            },
            ColumnType::Double => ColumnSum::Double(self.dbl),
            _ => ColumnSum::Int(self.int),
        }
    }
}

/// Reads one table.
pub struct TableReader<'a> {
    db: &'a Db,
    /// The table.
    pub table: TableDef,
    types: Vec<ColumnType>,
    csv_null: String,
    /// Where `get` and `scan` record their reads (see [`TableReader::set_trace`]).
    trace: Option<Trace>,
    /// The columns read and printed (`None`: every visible column).
    columns: Option<Vec<usize>>,
    /// The columns printed, in order (the chosen ones, or every visible column).
    shown: Vec<usize>,
    /// A scan may give rows in storage order rather than the index's.
    any_order: bool,
    /// Bytes of index entries and column chunks read so far.
    bytes_read: std::cell::Cell<u64>,
}

/// Splits `a,b,"c,d"` into values (CSV quoting).
pub fn split_values(s: &str) -> Vec<String> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(s.as_bytes());
    let mut rec = csv::StringRecord::new();
    match rdr.read_record(&mut rec) {
        Ok(true) => rec.iter().map(str::to_string).collect(),
        _ => vec![s.to_string()],
    }
}

impl<'a> TableReader<'a> {
    /// The table `name` (or the only one) of the Db's catalog.
    pub fn open(db: &'a Db, name: Option<&str>) -> Result<Self, ImportError> {
        let tables = catalog::load(db)?;
        let table = catalog::choose(&tables, name)?;
        let types = table.columns.iter().map(|c| c.ty).collect();
        let shown = table.visible_columns().map(|(i, _)| i).collect();
        Ok(TableReader {
            db,
            table,
            types,
            csv_null: String::new(),
            trace: None,
            columns: None,
            shown,
            any_order: false,
            bytes_read: std::cell::Cell::new(0),
        })
    }

    /// Reads and prints only the columns named (in that order; `None`: every visible column).
    /// A row handed to a scan's callback still has every column; those not chosen are NULL.
    pub fn set_columns(&mut self, names: Option<&[String]>) -> Result<(), ImportError> {
        self.columns = match names {
            None => None,
            Some(names) => Some(
                names
                    .iter()
                    .map(|n| {
                        self.table.column(n.trim()).ok_or_else(|| {
                            ImportError::InvalidArgument(format!(
                                "table {} has no column {}",
                                self.table.name,
                                n.trim()
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        self.shown = match &self.columns {
            Some(c) => c.clone(),
            None => self.table.visible_columns().map(|(i, _)| i).collect(),
        };
        Ok(())
    }

    /// Lets a scan of a whole columnar table give rows in storage order (primary-key order
    /// within each import, imports in the order they were made) so that it reads only the
    /// chosen columns' chunks and no primary index. Other layouts and bounded or index scans
    /// keep their index's order.
    pub fn set_any_order(&mut self, any: bool) {
        self.any_order = any;
    }

    /// Bytes of primary and secondary index entries and of column chunks (keys and values)
    /// read by this reader so far (cells and row layouts: index entries and cells).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.get()
    }

    /// Approximate bytes on disk of the table (every index and column), from the Db's table
    /// indexes ([`Db::approximate_size`]).
    pub fn table_bytes(&self) -> Result<u64, ImportError> {
        let lo = prefix(self.table.id, 0);
        let hi = prefix(self.table.id.saturating_add(1), 0);
        Ok(self.db.approximate_size(Some(&lo), Some(&hi))?)
    }

    fn count_read(&self, k: &[u8], v: &[u8]) {
        self.bytes_read
            .set(self.bytes_read.get() + (k.len() + v.len()) as u64);
    }

    /// Records the reads of `get` and `scan` (the primary or index entries; not the column
    /// cursors of a columnar scan) into `trace`; `None` records nothing.
    pub fn set_trace(&mut self, trace: Option<Trace>) {
        self.trace = trace;
    }

    /// What CSV output writes for NULL (default: nothing, an empty field); import the output
    /// with the same `--null` to read it back. A text value equal to it is written quoted, so
    /// the two stay apart. Refused when it holds a comma, a quote, CR or LF (it would have to
    /// be quoted, and a quoted field is never NULL).
    pub fn set_csv_null(&mut self, null: &str) -> Result<(), ImportError> {
        if null.contains([',', '"', '\r', '\n']) {
            return Err(ImportError::InvalidArgument(format!(
                "--null {null:?}: a NULL marker for CSV output cannot hold a comma, a quote or a line break"
            )));
        }
        self.csv_null = null.to_string();
        Ok(())
    }

    /// Every table in the catalog.
    pub fn tables(db: &Db) -> Result<Vec<TableDef>, ImportError> {
        catalog::load(db)
    }

    /// Encodes `values` as (a prefix of) the key columns `cols`.
    fn encode_values(
        &self,
        cols: &[usize],
        values: &[String],
        out: &mut Vec<u8>,
    ) -> Result<(), ImportError> {
        if values.len() > cols.len() {
            return Err(ImportError::InvalidArgument(format!(
                "{} values given, the key has {} columns",
                values.len(),
                cols.len()
            )));
        }
        for (v, &c) in values.iter().zip(cols) {
            let col = &self.table.columns[c];
            let val = if v.is_empty() && !col.ty.is_text() {
                Value::Null
            } else {
                parse_value(&col.ty, v.as_bytes()).map_err(|e| {
                    ImportError::InvalidArgument(format!("column {}: {e}", col.name))
                })?
            };
            encode_value(out, &val);
        }
        Ok(())
    }

    /// The row with primary key `pk` (its columns in order), if any.
    pub fn get(&self, pk: &[String]) -> Result<Option<Vec<Value<'static>>>, ImportError> {
        let key = self.primary_key(pk)?;
        // The primary entry and the chunks it names, from one state of the Db (a group
        // rewrite may move the row in between).
        let snap = (self.table.layout == Layout::Columnar).then(|| self.db.snapshot());
        let ropts = ReadOptions {
            snapshot: snap.as_ref(),
            lower_bound: None,
            upper_bound: None,
            trace: self.trace.as_ref(),
        };
        match self.db.get_opt(&key, &ropts)? {
            Some(v) => {
                self.count_read(&key, &v);
                Ok(Some(self.decode(&key, &v, &ropts)?))
            }
            None => Ok(None),
        }
    }

    /// The row of primary key `key` whose primary-index value is `v` (columnar: its cells are
    /// read at `ropts`).
    fn decode(
        &self,
        key: &[u8],
        v: &[u8],
        ropts: &ReadOptions<'_>,
    ) -> Result<Vec<Value<'static>>, ImportError> {
        if self.table.layout == Layout::Cells && row_version(v) == Some(self.table.version) {
            return columnar_row(self.db, &self.table, key, ropts);
        }
        if self.table.layout == Layout::Columnar {
            let mut cur = ChunkCursors::new(&self.table, self.columns.as_deref());
            let row = cur.row(self.db, ropts, key, v)?;
            self.bytes_read.set(self.bytes_read.get() + cur.bytes);
            return Ok(row);
        }
        self.decode_row_value(key, v)
    }

    fn decode_row_value(&self, key: &[u8], v: &[u8]) -> Result<Vec<Value<'static>>, ImportError> {
        check_version(&self.table, key, v)?;
        decode_row(v, &self.types).map_err(|_| {
            ImportError::Catalog(format!("row {} does not decode", key.escape_ascii()))
        })
    }

    /// Rows in the order of `index` (`None`: primary key), from `start` (inclusive) to `end`
    /// (exclusive) — each a prefix of the index's columns — at most `limit` of them; `f` gets
    /// each row. Returns the number of rows.
    pub fn scan(
        &self,
        index: Option<&str>,
        start: Option<&[String]>,
        end: Option<&[String]>,
        limit: Option<u64>,
        mut f: impl FnMut(&[Value<'static>]) -> Result<(), ImportError>,
    ) -> Result<u64, ImportError> {
        let (index_id, cols) = match index {
            None => (PRIMARY_INDEX_ID, self.table.primary_key.clone()),
            Some(n) if n.eq_ignore_ascii_case("primary") => {
                (PRIMARY_INDEX_ID, self.table.primary_key.clone())
            }
            Some(n) => {
                let idx = self.table.index(n).ok_or_else(|| {
                    ImportError::InvalidArgument(format!(
                        "table {} has no index {n} (indexes: primary{})",
                        self.table.name,
                        self.table
                            .indexes
                            .iter()
                            .map(|i| format!(", {}", i.name))
                            .collect::<String>()
                    ))
                })?;
                (idx.id, idx.columns.clone())
            }
        };
        let p = prefix(self.table.id, index_id);
        let mut lower = p.clone();
        if let Some(s) = start {
            self.encode_values(&cols, s, &mut lower)?;
        }
        let upper = match end {
            Some(e) => {
                let mut u = p.clone();
                self.encode_values(&cols, e, &mut u)?;
                Some(u)
            }
            None => prefix_successor(&p),
        };
        if index_id == PRIMARY_INDEX_ID
            && self.table.layout == Layout::Columnar
            && start.is_none()
            && end.is_none()
            && self.any_order
        {
            if let Some(cols) = &self.columns {
                return self.scan_chunks(cols, limit, f);
            }
        }
        let start_suffix = lower[8..].to_vec();
        let snap: Snapshot = self.db.snapshot();
        let mut it = self.db.iter(ReadOptions {
            snapshot: Some(&snap),
            lower_bound: Some(lower),
            upper_bound: upper,
            trace: self.trace.as_ref(),
        })?;
        it.seek_to_first();
        let mut n = 0u64;
        let ropts = ReadOptions {
            snapshot: Some(&snap),
            lower_bound: None,
            upper_bound: None,
            trace: self.trace.as_ref(),
        };
        // A columnar table's chunk cache, for the primary index and every secondary one (rows
        // of one group met in a run decode its chunks once).
        let mut chunks = (self.table.layout == Layout::Columnar)
            .then(|| ChunkCursors::new(&self.table, self.columns.as_deref()));
        let mut cells = if index_id == PRIMARY_INDEX_ID && self.table.layout == Layout::Cells {
            Some(CellCursors::new(
                self.db,
                &self.table,
                &snap,
                &start_suffix,
            )?)
        } else {
            None
        };
        while it.valid() && limit.is_none_or(|l| n < l) {
            self.count_read(it.key(), it.value());
            let row = if let (Some(c), PRIMARY_INDEX_ID) = (chunks.as_mut(), index_id) {
                c.row(self.db, &ropts, it.key(), it.value())?
            } else if let Some(c) = cells.as_mut() {
                c.row(it.key(), it.value())?
            } else if index_id == PRIMARY_INDEX_ID {
                self.decode(it.key(), it.value(), &ropts)?
            } else {
                let mut k = &it.key()[8..];
                for &c in &cols {
                    decode_column(&mut k, &self.types[c]).map_err(|_| {
                        ImportError::Catalog(format!(
                            "index key {} does not decode",
                            it.key().escape_ascii()
                        ))
                    })?;
                }
                let mut pk = prefix(self.table.id, PRIMARY_INDEX_ID);
                pk.extend_from_slice(k);
                match self.db.get_opt(&pk, &ropts)? {
                    Some(v) => {
                        self.count_read(&pk, &v);
                        match chunks.as_mut() {
                            Some(c) => c.row(self.db, &ropts, &pk, &v)?,
                            None => self.decode(&pk, &v, &ropts)?,
                        }
                    }
                    None => {
                        return Err(ImportError::Catalog(format!(
                            "index entry {} points to a missing row",
                            it.key().escape_ascii()
                        )))
                    }
                }
            };
            f(&row)?;
            n += 1;
            it.next();
        }
        it.status()?;
        if let Some(c) = chunks {
            self.bytes_read.set(self.bytes_read.get() + c.bytes);
        }
        Ok(n)
    }

    /// Counts the rows [`scan`](Self::scan) would give and sums column `sum_col` over them
    /// (NULLs skipped): what `sluice scan --table T --count --sum C` prints and the import
    /// benchmarks check. Integers sum exactly, DECIMAL exactly at its scale, DOUBLE as IEEE
    /// doubles ([`ColumnSum`]); a column of another type is refused.
    pub fn count_sum(
        &self,
        index: Option<&str>,
        start: Option<&[String]>,
        end: Option<&[String]>,
        limit: Option<u64>,
        sum_col: Option<usize>,
    ) -> Result<CountSum, ImportError> {
        let mut summer = match sum_col {
            None => None,
            Some(c) => {
                let col = self.table.columns.get(c).ok_or_else(|| {
                    ImportError::InvalidArgument(format!(
                        "table {} has no column {c}",
                        self.table.name
                    ))
                })?;
                if !col.ty.is_numeric() {
                    return Err(ImportError::InvalidArgument(format!(
                        "--sum {}: a {} column does not sum (SMALLINT, INT, BIGINT, DECIMAL and DOUBLE do)",
                        col.name, col.ty
                    )));
                }
                Some((c, Summer::new(col.ty)))
            }
        };
        // A columnar table's count or sum reads only the column it sums (or one column's row
        // counts), whatever columns this reader prints; in storage order unless a limit makes
        // the order matter.
        let pruned = self.table.layout == Layout::Columnar;
        let mut me = None;
        let this = if pruned {
            let mut r = TableReader {
                db: self.db,
                table: self.table.clone(),
                types: self.types.clone(),
                csv_null: String::new(),
                trace: self.trace.clone(),
                columns: Some(sum_col.into_iter().collect()),
                shown: Vec::new(),
                any_order: limit.is_none(),
                bytes_read: std::cell::Cell::new(0),
            };
            r.csv_null.clone_from(&self.csv_null);
            me.insert(r)
        } else {
            self
        };
        let rows = this.scan(index, start, end, limit, |row| {
            if let Some((c, s)) = summer.as_mut() {
                s.add(&row[*c]);
            }
            Ok(())
        })?;
        if let Some(r) = &me {
            self.bytes_read
                .set(self.bytes_read.get() + r.bytes_read.get());
        }
        Ok(CountSum {
            rows,
            sum: summer.map(|(_, s)| s.sum()),
        })
    }

    /// The header line of CSV output.
    pub fn csv_header(&self) -> String {
        let mut out = String::new();
        for (n, i) in self.shown.iter().copied().enumerate() {
            if n > 0 {
                out.push(',');
            }
            push_csv_field(&mut out, &self.table.columns[i].name, false);
        }
        out
    }

    /// One row as a CSV line or a JSON object (no trailing newline).
    pub fn format_row(&self, row: &[Value<'_>], fmt: OutputFormat) -> String {
        let mut s = String::new();
        self.format_row_into(row, fmt, &mut s);
        s
    }

    /// [`TableReader::format_row`], appended to `s` (a scan reuses one buffer for its lines).
    pub fn format_row_into(&self, row: &[Value<'_>], fmt: OutputFormat, s: &mut String) {
        match fmt {
            OutputFormat::Csv => {
                for (n, i) in self.shown.iter().copied().enumerate() {
                    let c = &self.table.columns[i];
                    if n > 0 {
                        s.push(',');
                    }
                    if matches!(row[i], Value::Null) {
                        s.push_str(&self.csv_null);
                        continue;
                    }
                    // Formatted in place, then quoted if it must be (rare: moved once).
                    let start = s.len();
                    format_text(&row[i], &c.ty, s);
                    let field = &s[start..];
                    // An empty value or one that reads as the NULL marker must be quoted.
                    let force = field.is_empty() || field == self.csv_null;
                    if force || needs_csv_quotes(field) {
                        let field = s.split_off(start);
                        push_csv_field(s, &field, true);
                    }
                }
            }
            OutputFormat::Json => {
                s.push('{');
                for (n, i) in self.shown.iter().copied().enumerate() {
                    let c = &self.table.columns[i];
                    if n > 0 {
                        s.push(',');
                    }
                    s.push_str(&serde_json::to_string(&c.name).unwrap_or_default());
                    s.push(':');
                    format_json(&row[i], &c.ty, s);
                }
                s.push('}');
            }
        }
    }
}

/// True if `field` holds a comma, a quote, CR or LF (bytes: all four are ASCII).
fn needs_csv_quotes(field: &str) -> bool {
    field
        .bytes()
        .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'))
}

/// Appends one CSV field (RFC 4180): quoted, quotes doubled, when it holds a comma, a quote,
/// CR or LF, or when `force` says so.
fn push_csv_field(out: &mut String, field: &str, force: bool) {
    if force || needs_csv_quotes(field) {
        out.push('"');
        out.push_str(&field.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(field);
    }
}

/// The key of column `c`'s cell in the row with primary key `pk_key` (prefix included).
pub fn cell_key(t: &TableDef, c: usize, pk_key: &[u8], out: &mut Vec<u8>) {
    out.clear();
    encode_prefix(out, t.id, COLUMN_INDEX_BASE + c as u32);
    out.extend_from_slice(pk_key.get(8..).unwrap_or(&[]));
}

/// Refuses a row whose primary-index value `v` is of another schema version than table `t`.
fn check_version(t: &TableDef, key: &[u8], v: &[u8]) -> Result<(), ImportError> {
    if row_version(v) == Some(t.version) {
        return Ok(());
    }
    Err(ImportError::Catalog(format!(
        "row {} has schema version {:?}, table {} is at {}",
        key.escape_ascii(),
        row_version(v),
        t.name,
        t.version
    )))
}

/// The primary key columns of a row, decoded from its primary key (prefix included), into
/// `row`.
fn pk_values(t: &TableDef, key: &[u8], row: &mut [Value<'static>]) -> Result<(), ImportError> {
    let mut k = key.get(8..).unwrap_or(&[]);
    for &c in &t.primary_key {
        row[c] = decode_column(&mut k, &t.columns[c].ty).map_err(|_| {
            ImportError::Catalog(format!("key {} does not decode", key.escape_ascii()))
        })?;
    }
    Ok(())
}

fn cell_value(t: &TableDef, c: usize, key: &[u8], v: &[u8]) -> Result<Value<'static>, ImportError> {
    let mut b = v;
    match decode_value(&mut b, &t.columns[c].ty) {
        Ok(x) if b.is_empty() => Ok(x),
        _ => Err(ImportError::Catalog(format!(
            "cell {} of column {} does not decode",
            key.escape_ascii(),
            t.columns[c].name
        ))),
    }
}

/// A columnar row before its cells are read: each column's value when it has no cell.
fn absent_row(t: &TableDef) -> Vec<Value<'static>> {
    t.columns
        .iter()
        .map(|c| absent_cell(&c.ty, c.not_null))
        .collect()
}

/// A columnar table's row with primary key `key` (prefix included) by one point read per
/// column (`None`: no such row).
pub fn columnar_row(
    db: &Db,
    t: &TableDef,
    key: &[u8],
    ropts: &ReadOptions<'_>,
) -> Result<Vec<Value<'static>>, ImportError> {
    let mut row = absent_row(t);
    pk_values(t, key, &mut row)?;
    let mut k = Vec::new();
    for (c, cell) in row.iter_mut().enumerate() {
        if t.primary_key.contains(&c) {
            continue;
        }
        cell_key(t, c, key, &mut k);
        if let Some(v) = db.get_opt(&k, ropts)? {
            *cell = cell_value(t, c, &k, &v)?;
        }
    }
    Ok(row)
}

/// One iterator per non-key column of a columnar table, advanced in step with a primary-key
/// scan: a row's cells are read sequentially, not by point reads.
struct CellCursors<'t> {
    t: &'t TableDef,
    cursors: Vec<(usize, sluice::DbIterator)>,
}

impl<'t> CellCursors<'t> {
    fn new(db: &Db, t: &'t TableDef, snap: &Snapshot, start: &[u8]) -> Result<Self, ImportError> {
        let mut cursors = Vec::new();
        for c in 0..t.columns.len() {
            if t.primary_key.contains(&c) {
                continue;
            }
            let p = prefix(t.id, COLUMN_INDEX_BASE + c as u32);
            let mut lower = p.clone();
            lower.extend_from_slice(start);
            let mut it = db.iter(ReadOptions {
                snapshot: Some(snap),
                lower_bound: Some(lower),
                upper_bound: prefix_successor(&p),
                ..Default::default()
            })?;
            it.seek_to_first();
            it.status()?;
            cursors.push((c, it));
        }
        Ok(CellCursors { t, cursors })
    }

    fn row(&mut self, key: &[u8], v: &[u8]) -> Result<Vec<Value<'static>>, ImportError> {
        check_version(self.t, key, v)?;
        let mut row = absent_row(self.t);
        pk_values(self.t, key, &mut row)?;
        let suffix = key.get(8..).unwrap_or(&[]);
        for (c, it) in &mut self.cursors {
            while it.valid() && it.key().get(8..).unwrap_or(&[]) < suffix {
                it.next();
            }
            if it.valid() && it.key().get(8..).unwrap_or(&[]) == suffix {
                row[*c] = cell_value(self.t, *c, it.key(), it.value())?;
                it.next();
            }
            it.status()?;
        }
        Ok(row)
    }
}
