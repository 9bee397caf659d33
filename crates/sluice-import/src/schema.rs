//! The schema: `CREATE TABLE` and `CREATE [UNIQUE] INDEX` statements, parsed with `sqlparser`
//! into [`TableDef`]s.
//!
//! Invariants:
//! 1. Every table has a primary key: the declared one (inline or a table constraint), or a
//!    hidden BIGINT column `_rowid` assigned in input order.
//! 2. Index 1 of a table is its primary key; secondary indexes are numbered 2.. in schema order.
//!    A secondary index key is its columns followed by the primary key columns.
//! 3. Nothing is ignored: every clause sqlparser can return for `CREATE TABLE` and
//!    `CREATE INDEX` is either implemented or refused with a [`SchemaError`] naming the clause
//!    and its line and column. The AST structs are destructured field by field (no `..`), so a
//!    sqlparser upgrade that adds a clause does not compile until it is handled here.
//! 4. Parsing never panics on any text.
//!
//! Identifiers (the SQL standard's rule, as PostgreSQL applies it): an unquoted identifier is
//! folded to lower case (ASCII letters), a quoted one (`"Id"`, `` `Id` ``, `[Id]`) is kept as
//! written; the result is the name that is stored and printed. References inside the schema
//! (PRIMARY KEY, UNIQUE, index columns, `CREATE INDEX … ON t`) compare names exactly after
//! that folding. Names from outside SQL — CSV header fields, JSON-lines keys, `--table`,
//! `--index`, `--sum` — match ASCII case-insensitively, so two columns of a table (two tables,
//! two indexes of a table) whose names differ only in case are refused: every such lookup has
//! exactly one answer.
//!
//! Implemented beyond the basics: `CONSTRAINT name UNIQUE` names its index; MySQL's inline
//! `INDEX`/`KEY name (cols)` is a secondary index; `ASC` and `NULLS FIRST` (the order keys
//! have); `NULLS DISTINCT` (what unique indexes do); `COLLATE "C"`/`POSIX`/`binary`/
//! `ucs_basic` (byte order, which is what TEXT keys use); `FLOAT(p)` for p ≤ 53;
//! `TIMESTAMP(6)`; `CHAR(n)` as a length limit (no blank padding, as DuckDB and SQLite; `CHAR`
//! alone is `CHAR(1)`). A constraint name on PRIMARY KEY is accepted and not kept: the primary
//! key is always the index `primary`.

use std::fmt;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{
    CharLengthUnits, CharacterLength, ColumnOption, ColumnOptionDef, CreateIndex, CreateTable,
    CreateTableOptions, DataType, ExactNumberInfo, Expr, HiveDistributionStyle, Ident, IndexColumn,
    NullsDistinctOption, ObjectName, OrderByExpr, OrderByOptions, Spanned, Statement,
    TableConstraint, TimezoneInfo,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::types::ColumnType;

/// Index id of every table's primary key.
pub const PRIMARY_INDEX_ID: u32 = 1;
/// Name of the hidden row-id column of a table without a primary key.
pub const ROWID_COLUMN: &str = "_rowid";
/// Index id of column `c`'s cells in a columnar table: `COLUMN_INDEX_BASE + c` (above every
/// secondary index id).
pub const COLUMN_INDEX_BASE: u32 = 1 << 30;

/// How a table's rows are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// One KV per row: primary key → the row value ([`crate::row`]).
    #[default]
    Row,
    /// One KV per cell: `table id ‖ COLUMN_INDEX_BASE + column ‖ primary key` → the cell (a row
    /// value of that one column); NULL cells, primary key columns (they are in the key) and
    /// a NOT NULL column's cells holding its type's zero value ([`crate::row::default_cell`])
    /// are not stored. The primary index keeps one KV per row, primary key → the schema version
    /// byte, so existence checks and scans stay one iterator.
    Columnar,
}

impl Layout {
    /// `row` / `columnar` (case-insensitive).
    pub fn parse(s: &str) -> Option<Layout> {
        match s.to_ascii_lowercase().as_str() {
            "row" => Some(Layout::Row),
            "columnar" | "column" => Some(Layout::Columnar),
            _ => None,
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::Row => "row",
            Layout::Columnar => "columnar",
        })
    }
}

/// One column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDef {
    /// Column name: an unquoted identifier folded to lower case, a quoted one as written.
    pub name: String,
    /// SQL type.
    pub ty: ColumnType,
    /// NOT NULL (primary key columns are always NOT NULL).
    pub not_null: bool,
    /// The hidden row id: not read from input, not printed.
    #[serde(default)]
    pub hidden: bool,
}

/// A secondary index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDef {
    /// Index name.
    pub name: String,
    /// Index id within its table (2..).
    pub id: u32,
    /// Indexed columns (positions in [`TableDef::columns`]).
    pub columns: Vec<usize>,
    /// UNIQUE: no two rows share the indexed values (rows with a NULL in them are exempt).
    pub unique: bool,
}

/// One table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    /// Table name.
    pub name: String,
    /// Table id (≥ 1; 0 is the catalog). Assigned by the catalog; 0 until then.
    pub id: u32,
    /// Schema version, the first byte of every row value.
    pub version: u8,
    /// Columns in declaration order (the hidden row id, if any, last).
    pub columns: Vec<ColumnDef>,
    /// Primary key columns in key order.
    pub primary_key: Vec<usize>,
    /// Secondary indexes.
    pub indexes: Vec<IndexDef>,
    /// Storage layout (`WITH (layout = 'columnar')`; default row).
    #[serde(default)]
    pub layout: Layout,
}

impl TableDef {
    /// Position of a column by a name from outside SQL (a header field, a JSON key, a
    /// command-line argument): ASCII case-insensitive, unambiguous because column names are
    /// unique that way.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// True when the primary key is the hidden row id.
    pub fn has_rowid(&self) -> bool {
        self.primary_key.len() == 1 && self.columns[self.primary_key[0]].hidden
    }

    /// The columns read from input and printed, in order.
    pub fn visible_columns(&self) -> impl Iterator<Item = (usize, &ColumnDef)> {
        self.columns.iter().enumerate().filter(|(_, c)| !c.hidden)
    }

    /// An index by name (`None` or `"primary"`: the primary key).
    pub fn index(&self, name: &str) -> Option<&IndexDef> {
        self.indexes
            .iter()
            .find(|i| i.name.eq_ignore_ascii_case(name))
    }

    /// The first difference between two definitions of the same table, ignoring ids.
    pub fn difference(&self, other: &TableDef) -> Option<String> {
        let cols = |t: &TableDef| {
            t.columns
                .iter()
                .map(|c| {
                    format!(
                        "{} {}{}",
                        c.name,
                        c.ty,
                        if c.not_null { " NOT NULL" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
        };
        let (a, b) = (cols(self), cols(other));
        if a != b {
            for i in 0..a.len().max(b.len()) {
                let (x, y) = (a.get(i), b.get(i));
                if x != y {
                    return Some(format!(
                        "column {}: stored as {}, schema says {}",
                        i + 1,
                        x.map_or("(none)", |s| s.as_str()),
                        y.map_or("(none)", |s| s.as_str())
                    ));
                }
            }
        }
        let names = |t: &TableDef, c: &[usize]| {
            c.iter()
                .map(|i| t.columns[*i].name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.primary_key != other.primary_key {
            return Some(format!(
                "primary key: stored as ({}), schema says ({})",
                names(self, &self.primary_key),
                names(other, &other.primary_key)
            ));
        }
        let idx = |t: &TableDef| {
            t.indexes
                .iter()
                .map(|i| {
                    format!(
                        "{}{} ({})",
                        if i.unique { "UNIQUE " } else { "" },
                        i.name,
                        names(t, &i.columns)
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let (a, b) = (idx(self), idx(other));
        if a != b {
            return Some(format!("indexes: stored as [{a}], schema says [{b}]"));
        }
        if self.layout != other.layout {
            return Some(format!(
                "layout: stored as {}, schema says {}",
                self.layout, other.layout
            ));
        }
        None
    }
}

/// A schema that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// 1-based line (0 when unknown).
    pub line: u64,
    /// 1-based column (0 when unknown).
    pub column: u64,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (0, _) => f.write_str(&self.message),
            (l, 0) => write!(f, "line {l}: {}", self.message),
            (l, c) => write!(f, "line {l}, column {c}: {}", self.message),
        }
    }
}

impl std::error::Error for SchemaError {}

/// A place in the schema text (line and column 1-based; 0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
struct Pos {
    line: u64,
    column: u64,
}

impl From<Location> for Pos {
    fn from(l: Location) -> Self {
        Pos {
            line: l.line,
            column: l.column,
        }
    }
}

fn err(at: Pos, message: impl Into<String>) -> SchemaError {
    SchemaError {
        line: at.line,
        column: at.column,
        message: message.into(),
    }
}

/// The schema's tokens (comments and whitespace dropped), to find where a clause's keywords
/// are: the AST keeps positions for identifiers and expressions only.
struct Source {
    tokens: Vec<TokenWithSpan>,
}

impl Source {
    fn new(sql: &str) -> Self {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap_or_default()
            .into_iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .collect();
        Source { tokens }
    }

    fn pos(&self, i: usize) -> Pos {
        self.tokens
            .get(i)
            .map_or(Pos::default(), |t| t.span.start.into())
    }

    /// Index of the first token at or after `at`.
    fn index_at(&self, at: Pos) -> usize {
        self.tokens
            .partition_point(|t| Pos::from(t.span.start) < at)
    }

    fn is_word(&self, i: usize, word: &str) -> bool {
        matches!(self.tokens.get(i).map(|t| &t.token),
            Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
    }

    fn is_semicolon(&self, i: usize) -> bool {
        matches!(self.tokens.get(i).map(|t| &t.token), Some(Token::SemiColon))
    }

    fn words_at(&self, i: usize, words: &[&str]) -> bool {
        words
            .iter()
            .enumerate()
            .all(|(k, w)| self.is_word(i + k, w))
    }

    /// The index where the keyword sequence `words` first occurs at or after token `from`,
    /// within the statement.
    fn find_index(&self, from: usize, words: &[&str]) -> Option<usize> {
        (from..self.tokens.len())
            .take_while(|i| !self.is_semicolon(*i))
            .find(|i| self.words_at(*i, words))
    }

    /// Where the keyword sequence `words` first occurs at or after `at`, within the statement.
    fn find_after(&self, at: Pos, words: &[&str]) -> Option<Pos> {
        self.find_index(self.index_at(at), words)
            .map(|i| self.pos(i))
    }

    /// Where the keyword sequence `words` last occurs before `at`, within the statement.
    fn find_before(&self, at: Pos, words: &[&str]) -> Option<Pos> {
        (0..self.index_at(at))
            .rev()
            .take_while(|i| !self.is_semicolon(*i))
            .find(|i| self.words_at(*i, words))
            .map(|i| self.pos(i))
    }

    /// The first token at or after `at` (the type after a column name).
    fn next(&self, at: Pos) -> Pos {
        self.pos(self.index_at(at))
    }

    /// The closing parenthesis of the first parenthesised list after `at` (the end of a
    /// CREATE TABLE's column list), or `at`.
    fn after_parens(&self, at: Pos) -> Pos {
        let mut depth = 0usize;
        for i in self.index_at(at)..self.tokens.len() {
            match self.tokens[i].token {
                Token::LParen => depth += 1,
                Token::RParen if depth == 1 => return self.pos(i),
                Token::RParen => depth = depth.saturating_sub(1),
                Token::SemiColon => break,
                _ => {}
            }
        }
        at
    }

    /// The first token of each statement, in order (statements are separated by `;`; empty
    /// ones are skipped, as the parser skips them).
    fn statement_starts(&self) -> Vec<Pos> {
        let mut out = Vec::new();
        let mut at_start = true;
        for (i, t) in self.tokens.iter().enumerate() {
            match t.token {
                Token::SemiColon => at_start = true,
                Token::EOF => {}
                _ if at_start => {
                    out.push(self.pos(i));
                    at_start = false;
                }
                _ => {}
            }
        }
        out
    }
}

/// A refusal: `clause` is not supported (`why`), at the keyword `words` searched forward from
/// `at` (or at `at` when it is not found).
fn refuse(src: &Source, at: Pos, words: &[&str], clause: &str, why: &str) -> SchemaError {
    let p = src.find_after(at, words).unwrap_or(at);
    err(p, format!("{clause} is not supported ({why})"))
}

/// Like [`refuse`], the keyword searched backward from `at` (clauses before a name).
fn refuse_before(src: &Source, at: Pos, words: &[&str], clause: &str, why: &str) -> SchemaError {
    let p = src
        .find_before(at, words)
        .or_else(|| src.find_after(at, words))
        .unwrap_or(at);
    err(p, format!("{clause} is not supported ({why})"))
}

/// The name of an identifier: unquoted folded to lower case, quoted as written.
fn ident_name(i: &Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_ascii_lowercase()
    }
}

fn ident_pos(i: &Ident) -> Pos {
    i.span.start.into()
}

/// A table or index name: one identifier (a schema-qualified `s.t` is refused: a Db has one
/// namespace of tables).
fn object_name(n: &ObjectName, fallback: Pos) -> Result<(String, Pos), SchemaError> {
    let at =
        n.0.first()
            .and_then(|p| p.as_ident())
            .map_or(fallback, ident_pos);
    match n.0.as_slice() {
        [part] => match part.as_ident() {
            Some(i) => Ok((ident_name(i), at)),
            None => Err(err(at, format!("name {n}: only a plain identifier is supported"))),
        },
        _ => Err(err(
            at,
            format!("schema-qualified name {n} is not supported (a Db has one namespace of tables: write the table name alone)"),
        )),
    }
}

fn char_length(
    l: &Option<CharacterLength>,
    default: Option<u32>,
    dt: &DataType,
    at: Pos,
) -> Result<Option<u32>, SchemaError> {
    match l {
        None => Ok(default),
        Some(CharacterLength::Max) => Ok(None),
        Some(CharacterLength::IntegerLength { length, unit }) => {
            if *unit == Some(CharLengthUnits::Octets) {
                return Err(err(
                    at,
                    format!("{dt}: a length in OCTETS is not supported (lengths count characters)"),
                ));
            }
            u32::try_from(*length)
                .ok()
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| err(at, format!("{dt}: the length must be 1..=4294967295")))
        }
    }
}

/// A display width (MySQL's `INT(11)`) or a length on a type that has none here.
fn no_modifier(m: &Option<u64>, dt: &DataType, at: Pos, what: &str) -> Result<(), SchemaError> {
    match m {
        None => Ok(()),
        Some(_) => Err(err(at, format!("{dt}: {what} is not supported"))),
    }
}

fn column_type(dt: &DataType, at: Pos) -> Result<ColumnType, SchemaError> {
    let width = "a display width";
    Ok(match dt {
        DataType::SmallInt(w) | DataType::Int2(w) => {
            no_modifier(w, dt, at, width)?;
            ColumnType::SmallInt
        }
        DataType::Int(w) | DataType::Integer(w) | DataType::Int4(w) => {
            no_modifier(w, dt, at, width)?;
            ColumnType::Int
        }
        DataType::BigInt(w) | DataType::Int8(w) => {
            no_modifier(w, dt, at, width)?;
            ColumnType::BigInt
        }
        // REAL and FLOAT4 are stored as binary64: every single-precision value is kept exactly.
        DataType::DoublePrecision
        | DataType::Real
        | DataType::Float4
        | DataType::Float8
        | DataType::Float64
        | DataType::Double(ExactNumberInfo::None)
        | DataType::Float(ExactNumberInfo::None) => ColumnType::Double,
        DataType::Float(ExactNumberInfo::Precision(p)) if (1..=53).contains(p) => ColumnType::Double,
        DataType::Float(_) | DataType::Double(_) => {
            return Err(err(
                at,
                format!("{dt}: only FLOAT(p) with p of 1..=53 (binary64 has 53 bits) is supported, DOUBLE takes no arguments"),
            ))
        }
        DataType::Decimal(info) | DataType::Numeric(info) | DataType::Dec(info) => {
            let (p, s) = match info {
                ExactNumberInfo::None => (38, 0),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => {
                    (*p, u64::try_from(*s).unwrap_or(u64::MAX))
                }
            };
            if p == 0 || p > 38 || s > p {
                return Err(err(
                    at,
                    format!("{dt}: precision must be 1..=38 and scale 0..=precision"),
                ));
            }
            ColumnType::Decimal {
                precision: p as u8,
                scale: s as u8,
            }
        }
        DataType::Bool | DataType::Boolean => ColumnType::Bool,
        DataType::Text | DataType::String(None) => ColumnType::Text { max_chars: None },
        DataType::String(Some(n)) => ColumnType::Text {
            max_chars: u32::try_from(*n).ok().filter(|n| *n > 0).map(Some).ok_or_else(|| {
                err(at, format!("{dt}: the length must be 1..=4294967295"))
            })?,
        },
        DataType::Varchar(l) | DataType::CharacterVarying(l) | DataType::CharVarying(l) => {
            ColumnType::Text {
                max_chars: char_length(l, None, dt, at)?,
            }
        }
        // CHAR(n): a length limit, no blank padding; CHAR alone is CHAR(1) (SQL standard).
        DataType::Char(l) | DataType::Character(l) => ColumnType::Text {
            max_chars: char_length(l, Some(1), dt, at)?,
        },
        DataType::Bytea => ColumnType::Bytes,
        DataType::Bytes(n) | DataType::Blob(n) => {
            no_modifier(n, dt, at, "a length")?;
            ColumnType::Bytes
        }
        DataType::Date => ColumnType::Date,
        // Stored as a UTC instant with microseconds; an offset in the input is applied, with
        // or without TIME ZONE in the type (as DuckDB reads an offset into TIMESTAMP).
        DataType::Timestamp(p, tz) => {
            if !matches!(p, None | Some(6)) {
                return Err(err(
                    at,
                    format!("{dt}: only microsecond precision (TIMESTAMP or TIMESTAMP(6)) is supported"),
                ));
            }
            match tz {
                TimezoneInfo::None
                | TimezoneInfo::WithTimeZone
                | TimezoneInfo::WithoutTimeZone
                | TimezoneInfo::Tz => ColumnType::Timestamp,
            }
        }
        DataType::Datetime(p) => {
            if !matches!(p, None | Some(6)) {
                return Err(err(
                    at,
                    format!("{dt}: only microsecond precision (DATETIME or DATETIME(6)) is supported"),
                ));
            }
            ColumnType::Timestamp
        }
        other => {
            return Err(err(
                at,
                format!("column type {other} is not supported (INT, BIGINT, SMALLINT, DOUBLE, DECIMAL(p,s), BOOLEAN, TEXT, VARCHAR(n), CHAR(n), BYTES, DATE, TIMESTAMP are)"),
            ))
        }
    })
}

/// The columns of a key or index: plain column names, ascending, NULLs first (the order keys
/// have); anything else is refused where it is written.
fn index_columns(src: &Source, cols: &[IndexColumn]) -> Result<Vec<(String, Pos)>, SchemaError> {
    let mut out = Vec::new();
    for c in cols {
        let IndexColumn {
            column:
                OrderByExpr {
                    expr,
                    options: OrderByOptions { asc, nulls_first },
                    with_fill,
                },
            operator_class,
        } = c;
        let Expr::Identifier(i) = expr else {
            return Err(err(
                expr.span().start.into(),
                format!(
                    "key column {expr}: only plain column names are supported (no expressions)"
                ),
            ));
        };
        let at = ident_pos(i);
        if *asc == Some(false) {
            return Err(refuse(
                src,
                at,
                &["DESC"],
                "DESC",
                "keys and indexes are ascending",
            ));
        }
        if *nulls_first == Some(false) {
            return Err(refuse(
                src,
                at,
                &["NULLS", "LAST"],
                "NULLS LAST",
                "NULL sorts first in keys",
            ));
        }
        if with_fill.is_some() {
            return Err(refuse(
                src,
                at,
                &["WITH", "FILL"],
                "WITH FILL",
                "not an index clause here",
            ));
        }
        if let Some(op) = operator_class {
            return Err(err(
                ident_pos(op),
                format!(
                    "operator class {op} is not supported (keys compare by their type's order)"
                ),
            ));
        }
        out.push((ident_name(i), at));
    }
    Ok(out)
}

/// Positions of `cols` in `t`, compared exactly (SQL references, after folding).
fn resolve(t: &TableDef, cols: &[(String, Pos)], what: &str) -> Result<Vec<usize>, SchemaError> {
    let mut out = Vec::new();
    for (name, at) in cols {
        let i = match t.columns.iter().position(|c| &c.name == name && !c.hidden) {
            Some(i) => i,
            None => {
                let near = t.column(name).map_or(String::new(), |i| {
                    format!(
                        " (column {} differs in case: unquoted names fold to lower case, quote a name to keep its case)",
                        t.columns[i].name
                    )
                });
                return Err(err(
                    *at,
                    format!("{what}: table {} has no column {name}{near}", t.name),
                ));
            }
        };
        if out.contains(&i) {
            return Err(err(*at, format!("{what}: column {name} listed twice")));
        }
        out.push(i);
    }
    Ok(out)
}

/// Parses a schema: any number of `CREATE TABLE` and `CREATE [UNIQUE] INDEX` statements.
///
/// ```
/// use sluice_import::parse_schema;
/// let t = parse_schema("CREATE TABLE Orders (Id INT PRIMARY KEY, \"Note\" TEXT)").unwrap();
/// assert_eq!((t[0].name.as_str(), t[0].columns[0].name.as_str()), ("orders", "id"));
/// assert_eq!(t[0].columns[1].name, "Note");
/// let e = parse_schema("CREATE TABLE t (a INT);\nCREATE INDEX i ON t (a) WHERE a > 0;").unwrap_err();
/// assert_eq!((e.line, e.column), (2, 25));
/// assert!(e.message.starts_with("WHERE (a partial index) is not supported"));
/// ```
pub fn parse_schema(sql: &str) -> Result<Vec<TableDef>, SchemaError> {
    let statements = Parser::parse_sql(&GenericDialect {}, sql).map_err(|e| {
        let msg = e.to_string();
        let num = |key: &str| {
            msg.split(key)
                .nth(1)
                .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|s| s.parse().ok())
                .unwrap_or(0)
        };
        err(
            Pos {
                line: num("Line: "),
                column: num("Column: "),
            },
            format!("SQL syntax: {msg}"),
        )
    })?;
    let src = Source::new(sql);
    let starts = src.statement_starts();
    let mut tables: Vec<TableDef> = Vec::new();
    for (n, st) in statements.iter().enumerate() {
        let at = starts.get(n).copied().unwrap_or_default();
        match st {
            Statement::CreateTable(ct) => {
                let t = create_table(&src, ct, at)?;
                if let Some(old) = tables.iter().find(|o| o.name.eq_ignore_ascii_case(&t.name)) {
                    let (_, pos) = object_name(&ct.name, at)?;
                    return Err(err(
                        pos,
                        if old.name == t.name {
                            format!("table {} is defined twice", t.name)
                        } else {
                            format!(
                                "tables {} and {} differ only in case (table names are matched ignoring case)",
                                old.name, t.name
                            )
                        },
                    ));
                }
                tables.push(t);
            }
            Statement::CreateIndex(ci) => create_index(&src, ci, at, &mut tables)?,
            other => {
                let text = other.to_string();
                let head: String = text.chars().take(40).collect();
                return Err(err(
                    at,
                    format!("only CREATE TABLE and CREATE INDEX are supported, found: {head}"),
                ));
            }
        }
    }
    if tables.is_empty() {
        return Err(err(Pos::default(), "the schema defines no table"));
    }
    Ok(tables)
}

fn add_index(
    t: &mut TableDef,
    name: String,
    columns: Vec<usize>,
    unique: bool,
    at: Pos,
) -> Result<(), SchemaError> {
    if name.eq_ignore_ascii_case("primary") || t.index(&name).is_some() {
        return Err(err(
            at,
            format!("index name {name} is already used (index names are matched ignoring case)"),
        ));
    }
    if columns.is_empty() {
        return Err(err(at, format!("index {name} has no columns")));
    }
    let id = PRIMARY_INDEX_ID + 1 + t.indexes.len() as u32;
    t.indexes.push(IndexDef {
        name,
        id,
        columns,
        unique,
    });
    Ok(())
}

/// `CREATE [UNIQUE] INDEX [name] ON t (cols)`; every other clause refused.
fn create_index(
    src: &Source,
    ci: &CreateIndex,
    stmt: Pos,
    tables: &mut [TableDef],
) -> Result<(), SchemaError> {
    let CreateIndex {
        name,
        table_name,
        using,
        columns,
        unique,
        concurrently,
        if_not_exists,
        include,
        nulls_distinct,
        with,
        predicate,
        index_options,
        alter_options,
    } = ci;
    let (table, at) = object_name(table_name, stmt)?;
    let index_name = name.as_ref().map(|n| object_name(n, at)).transpose()?;
    if *concurrently {
        return Err(refuse_before(
            src,
            at,
            &["CONCURRENTLY"],
            "CONCURRENTLY",
            "an import builds its indexes with the table",
        ));
    }
    if *if_not_exists {
        return Err(refuse_before(
            src,
            at,
            &["IF", "NOT", "EXISTS"],
            "IF NOT EXISTS",
            "an index is created with its table, or checked to be the same",
        ));
    }
    if using.is_some() {
        return Err(refuse(
            src,
            at,
            &["USING"],
            "USING",
            "every index is an ordered key range",
        ));
    }
    if !include.is_empty() {
        return Err(refuse(
            src,
            at,
            &["INCLUDE"],
            "INCLUDE",
            "an index entry holds its columns and the primary key only",
        ));
    }
    if *nulls_distinct == Some(false) {
        return Err(refuse(
            src,
            at,
            &["NULLS", "NOT", "DISTINCT"],
            "NULLS NOT DISTINCT",
            "a unique index exempts rows with a NULL",
        ));
    }
    if !with.is_empty() {
        return Err(refuse(
            src,
            at,
            &["WITH"],
            "WITH (…) on an index",
            "indexes take no options",
        ));
    }
    if let Some(p) = predicate {
        let where_at = src
            .find_before(p.span().start.into(), &["WHERE"])
            .unwrap_or_else(|| src.find_after(at, &["WHERE"]).unwrap_or(at));
        return Err(err(
            where_at,
            "WHERE (a partial index) is not supported (an index holds every row)",
        ));
    }
    if let Some(o) = index_options.first() {
        return Err(err(
            src.after_parens(at),
            format!("index option {o} is not supported"),
        ));
    }
    if let Some(o) = alter_options.first() {
        return Err(err(
            src.after_parens(at),
            format!("index clause {o} is not supported"),
        ));
    }
    let t = match tables.iter().position(|t| t.name == table) {
        Some(i) => &mut tables[i],
        None => {
            let near = tables
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(&table))
                .map_or(String::new(), |t| {
                    format!(
                        " (table {} differs in case: unquoted names fold to lower case)",
                        t.name
                    )
                });
            return Err(err(
                at,
                format!("CREATE INDEX on {table}: no such table (create it first){near}"),
            ));
        }
    };
    let (iname, iat) = match index_name {
        Some((n, p)) => (n, p),
        None => (format!("{}_idx{}", t.name, t.indexes.len() + 1), at),
    };
    let cols = resolve(t, &index_columns(src, columns)?, &format!("index {iname}"))?;
    add_index(t, iname, cols, *unique, iat)
}

/// `WITH (layout = 'row' | 'columnar')`; any other table option is refused.
fn table_layout(src: &Source, opts: &CreateTableOptions, tail: Pos) -> Result<Layout, SchemaError> {
    use sqlparser::ast::SqlOption;
    let list = match opts {
        CreateTableOptions::None => return Ok(Layout::Row),
        CreateTableOptions::With(l) => l,
        CreateTableOptions::Options(_) => {
            return Err(refuse(
                src,
                tail,
                &["OPTIONS"],
                "OPTIONS (…)",
                "WITH (layout = 'columnar') is the one table option",
            ))
        }
        CreateTableOptions::Plain(l) => {
            let text = l.first().map_or(String::new(), |o| o.to_string());
            let first = text.split_whitespace().next().unwrap_or("");
            let at = src.find_after(tail, &[first]).unwrap_or(tail);
            return Err(err(at, format!("table option {text} is not supported (WITH (layout = 'columnar') is the one table option)")));
        }
        CreateTableOptions::TableProperties(_) => {
            return Err(refuse(
                src,
                tail,
                &["TBLPROPERTIES"],
                "TBLPROPERTIES",
                "WITH (layout = 'columnar') is the one table option",
            ))
        }
    };
    let mut layout = Layout::Row;
    for o in list {
        match o {
            SqlOption::KeyValue { key, value } if ident_name(key) == "layout" => {
                let text = match value {
                    Expr::Value(v) => match &v.value {
                        sqlparser::ast::Value::SingleQuotedString(s)
                        | sqlparser::ast::Value::DoubleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    Expr::Identifier(i) => i.value.clone(),
                    other => other.to_string(),
                };
                layout = Layout::parse(&text).ok_or_else(|| {
                    err(ident_pos(key), format!("layout {text:?}: row or columnar"))
                })?;
            }
            SqlOption::KeyValue { key, .. } => {
                return Err(err(
                    ident_pos(key),
                    format!("table option {o} is not supported (layout is)"),
                ))
            }
            other => {
                let at = src.find_after(tail, &["WITH"]).unwrap_or(tail);
                return Err(err(
                    at,
                    format!("table option {other} is not supported (layout is)"),
                ));
            }
        }
    }
    Ok(layout)
}

/// Refuses every CREATE TABLE clause but the name, columns, constraints and table options.
fn refuse_table_clauses(src: &Source, ct: &CreateTable, at: Pos) -> Result<(), SchemaError> {
    let CreateTable {
        or_replace,
        temporary,
        external,
        dynamic,
        global,
        if_not_exists,
        transient,
        volatile,
        iceberg,
        name: _,
        columns: _,
        constraints: _,
        hive_distribution,
        hive_formats,
        table_options: _,
        file_format,
        location,
        query,
        without_rowid,
        like,
        clone,
        version,
        comment,
        on_commit,
        on_cluster,
        primary_key,
        order_by,
        partition_by,
        cluster_by,
        clustered_by,
        inherits,
        strict,
        copy_grants,
        enable_schema_evolution,
        change_tracking,
        data_retention_time_in_days,
        max_data_extension_time_in_days,
        default_ddl_collation,
        with_aggregation_policy,
        with_row_access_policy,
        with_tags,
        external_volume,
        base_location,
        catalog,
        catalog_sync,
        storage_serialization_policy,
        target_lag,
        warehouse,
        refresh_mode,
        initialize,
        require_user,
    } = ct;
    // Clauses before the name.
    let before: [(bool, &[&str], &str, &str); 10] = [
        (
            *or_replace,
            &["OR", "REPLACE"],
            "OR REPLACE",
            "an import adds rows to a table, it never replaces one",
        ),
        (
            *temporary,
            &["TEMPORARY"],
            "TEMPORARY",
            "imported tables are stored",
        ),
        (
            *external,
            &["EXTERNAL"],
            "EXTERNAL",
            "imported tables are stored in the Db",
        ),
        (*dynamic, &["DYNAMIC"], "DYNAMIC", "a dialect clause"),
        (
            *global == Some(true),
            &["GLOBAL"],
            "GLOBAL",
            "a temporary-table clause",
        ),
        (
            *global == Some(false),
            &["LOCAL"],
            "LOCAL",
            "a temporary-table clause",
        ),
        (
            *if_not_exists,
            &["IF", "NOT", "EXISTS"],
            "IF NOT EXISTS",
            "an import creates the table, or checks that the stored one is defined the same",
        ),
        (*transient, &["TRANSIENT"], "TRANSIENT", "a dialect clause"),
        (*volatile, &["VOLATILE"], "VOLATILE", "a dialect clause"),
        (*iceberg, &["ICEBERG"], "ICEBERG", "a dialect clause"),
    ];
    for (present, words, clause, why) in before {
        if present {
            // TEMPORARY is also spelled TEMP.
            let w: &[&str] = if clause == "TEMPORARY" && src.find_before(at, words).is_none() {
                &["TEMP"]
            } else {
                words
            };
            return Err(refuse_before(src, at, w, clause, why));
        }
    }
    // Clauses after the column list.
    let tail = src.after_parens(at);
    let after: [(bool, &[&str], &str); 34] = [
        (
            *hive_distribution != HiveDistributionStyle::NONE,
            &["PARTITIONED"],
            "PARTITIONED BY / CLUSTERED BY / SKEWED BY",
        ),
        (
            hive_formats.as_ref().is_some_and(hive_format_given),
            &["STORED"],
            "ROW FORMAT / STORED AS / LOCATION",
        ),
        (file_format.is_some(), &["STORED"], "STORED AS"),
        (location.is_some(), &["LOCATION"], "LOCATION"),
        (query.is_some(), &["AS"], "AS SELECT"),
        (*without_rowid, &["WITHOUT", "ROWID"], "WITHOUT ROWID"),
        (like.is_some(), &["LIKE"], "LIKE"),
        (clone.is_some(), &["CLONE"], "CLONE"),
        (version.is_some(), &["FOR"], "a table version"),
        (comment.is_some(), &["COMMENT"], "COMMENT"),
        (on_commit.is_some(), &["ON", "COMMIT"], "ON COMMIT"),
        (on_cluster.is_some(), &["ON", "CLUSTER"], "ON CLUSTER"),
        (
            primary_key.is_some(),
            &["PRIMARY"],
            "PRIMARY KEY after the column list (ClickHouse)",
        ),
        (order_by.is_some(), &["ORDER"], "ORDER BY"),
        (partition_by.is_some(), &["PARTITION"], "PARTITION BY"),
        (cluster_by.is_some(), &["CLUSTER"], "CLUSTER BY"),
        (clustered_by.is_some(), &["CLUSTERED"], "CLUSTERED BY"),
        (inherits.is_some(), &["INHERITS"], "INHERITS"),
        (*strict, &["STRICT"], "STRICT"),
        (*copy_grants, &["COPY", "GRANTS"], "COPY GRANTS"),
        (
            enable_schema_evolution.is_some(),
            &["ENABLE_SCHEMA_EVOLUTION"],
            "ENABLE_SCHEMA_EVOLUTION",
        ),
        (
            change_tracking.is_some(),
            &["CHANGE_TRACKING"],
            "CHANGE_TRACKING",
        ),
        (
            data_retention_time_in_days.is_some(),
            &["DATA_RETENTION_TIME_IN_DAYS"],
            "DATA_RETENTION_TIME_IN_DAYS",
        ),
        (
            max_data_extension_time_in_days.is_some(),
            &["MAX_DATA_EXTENSION_TIME_IN_DAYS"],
            "MAX_DATA_EXTENSION_TIME_IN_DAYS",
        ),
        (
            default_ddl_collation.is_some(),
            &["DEFAULT_DDL_COLLATION"],
            "DEFAULT_DDL_COLLATION",
        ),
        (
            with_aggregation_policy.is_some(),
            &["WITH", "AGGREGATION"],
            "WITH AGGREGATION POLICY",
        ),
        (
            with_row_access_policy.is_some(),
            &["WITH", "ROW"],
            "WITH ROW ACCESS POLICY",
        ),
        (with_tags.is_some(), &["WITH", "TAG"], "WITH TAG"),
        (
            external_volume.is_some() || base_location.is_some(),
            &["EXTERNAL_VOLUME"],
            "EXTERNAL_VOLUME / BASE_LOCATION",
        ),
        (
            catalog.is_some() || catalog_sync.is_some(),
            &["CATALOG"],
            "CATALOG",
        ),
        (
            storage_serialization_policy.is_some(),
            &["STORAGE_SERIALIZATION_POLICY"],
            "STORAGE_SERIALIZATION_POLICY",
        ),
        (
            target_lag.is_some() || warehouse.is_some(),
            &["TARGET_LAG"],
            "TARGET_LAG / WAREHOUSE",
        ),
        (
            refresh_mode.is_some() || initialize.is_some(),
            &["REFRESH_MODE"],
            "REFRESH_MODE / INITIALIZE",
        ),
        (*require_user, &["REQUIRE"], "REQUIRE USER"),
    ];
    for (present, words, clause) in after {
        if present {
            let p = src.find_after(tail, words).unwrap_or(tail);
            return Err(err(
                p,
                format!("{clause} is not supported (a dialect clause)"),
            ));
        }
    }
    Ok(())
}

/// Whether any Hive storage clause was written (the parser fills an empty one in).
fn hive_format_given(h: &sqlparser::ast::HiveFormat) -> bool {
    let sqlparser::ast::HiveFormat {
        row_format,
        serde_properties,
        storage,
        location,
    } = h;
    row_format.is_some() || serde_properties.is_some() || storage.is_some() || location.is_some()
}

/// Collations whose order is the byte order of UTF-8, the order TEXT keys have.
const BYTE_ORDER_COLLATIONS: [&str; 4] = ["C", "POSIX", "binary", "ucs_basic"];

/// What a column's options say.
#[derive(Default)]
struct ColumnFacts {
    not_null: Option<Pos>,
    null: Option<Pos>,
}

/// The keywords that start a column option, to find where it is written.
fn option_keywords<'a>(
    src: &Source,
    from: usize,
    option: &ColumnOption,
    first: &'a str,
) -> Vec<&'a str> {
    let either = |a: &'static str, b: &'static str| {
        if src.find_index(from, &[a]).is_some() {
            vec![a]
        } else {
            vec![b]
        }
    };
    match option {
        ColumnOption::Null => vec!["NULL"],
        ColumnOption::NotNull => vec!["NOT", "NULL"],
        ColumnOption::Default(_) => vec!["DEFAULT"],
        ColumnOption::Materialized(_) => vec!["MATERIALIZED"],
        ColumnOption::Ephemeral(_) => vec!["EPHEMERAL"],
        ColumnOption::Alias(_) => vec!["ALIAS"],
        ColumnOption::Unique {
            is_primary: true, ..
        } => vec!["PRIMARY", "KEY"],
        ColumnOption::Unique { .. } => vec!["UNIQUE"],
        ColumnOption::ForeignKey { .. } => vec!["REFERENCES"],
        ColumnOption::Check(_) => vec!["CHECK"],
        ColumnOption::DialectSpecific(_) => vec![first],
        ColumnOption::CharacterSet(_) => either("CHARACTER", "CHARSET"),
        ColumnOption::Collation(_) => vec!["COLLATE"],
        ColumnOption::Comment(_) => vec!["COMMENT"],
        ColumnOption::OnUpdate(_) => vec!["ON", "UPDATE"],
        ColumnOption::Generated { .. } => either("GENERATED", "AS"),
        ColumnOption::Options(_) => vec!["OPTIONS"],
        ColumnOption::Identity(_) => either("IDENTITY", "AUTOINCREMENT"),
        ColumnOption::OnConflict(_) => vec!["ON", "CONFLICT"],
        ColumnOption::Policy(_) => either("MASKING", "PROJECTION"),
        ColumnOption::Tags(_) => vec!["TAG"],
        ColumnOption::Srid(_) => vec!["SRID"],
    }
}

/// The options of column `c` (defined at `at`): NOT NULL / NULL, PRIMARY KEY, UNIQUE, a
/// byte-order COLLATE; everything else refused at its keyword. Options are found in the text
/// in order, each after the one before.
fn column_options(
    src: &Source,
    c: &sqlparser::ast::ColumnDef,
    name: &str,
    at: Pos,
    facts: &mut ColumnFacts,
    keys: &mut Keys,
) -> Result<(), SchemaError> {
    let mut cur = src.index_at(at) + 1;
    for ColumnOptionDef {
        name: cname,
        option,
    } in &c.options
    {
        let dialect_text = match option {
            ColumnOption::DialectSpecific(tokens) => tokens
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        let first = dialect_text.split_whitespace().next().unwrap_or("");
        let kw = option_keywords(src, cur, option, first);
        let i = src.find_index(cur, &kw);
        let p = i.map_or(at, |i| src.pos(i));
        if let Some(i) = i {
            cur = i + kw.len();
        }
        let named = cname.as_ref().map(|n| (ident_name(n), ident_pos(n)));
        if let (Some((n, np)), false) = (&named, matches!(option, ColumnOption::Unique { .. })) {
            return Err(err(
                *np,
                format!("CONSTRAINT {n} on {option} is not supported (name UNIQUE and PRIMARY KEY constraints only)"),
            ));
        }
        let no = |clause: &str, why: &str| err(p, format!("{clause} is not supported ({why})"));
        match option {
            ColumnOption::NotNull => {
                if facts.null.is_some() {
                    return Err(err(p, format!("column {name}: NULL and NOT NULL conflict")));
                }
                facts.not_null = Some(p);
            }
            ColumnOption::Null => {
                if facts.not_null.is_some() {
                    return Err(err(p, format!("column {name}: NULL and NOT NULL conflict")));
                }
                facts.null = Some(p);
            }
            ColumnOption::Unique {
                is_primary,
                characteristics,
            } => {
                if let Some(ch) = characteristics {
                    let text = ch.to_string();
                    let first = text.split_whitespace().next().unwrap_or("");
                    return Err(refuse(
                        src,
                        p,
                        &[first],
                        &text,
                        "constraints are checked at once, always",
                    ));
                }
                let cols = vec![(name.to_string(), at)];
                if *is_primary {
                    if keys.pk.is_some() {
                        return Err(err(p, "more than one PRIMARY KEY"));
                    }
                    keys.pk = Some((cols, p));
                } else {
                    keys.unique.push((named.map(|n| n.0), cols, p));
                }
            }
            ColumnOption::Collation(coll) => {
                let text = coll.to_string();
                let bare = text.trim_matches(['"', '`', '\'']);
                if !BYTE_ORDER_COLLATIONS
                    .iter()
                    .any(|b| b.eq_ignore_ascii_case(bare))
                {
                    return Err(no(
                        &format!("COLLATE {text}"),
                        "TEXT compares by bytes: only COLLATE \"C\", POSIX, binary or ucs_basic, which mean that, are accepted",
                    ));
                }
            }
            ColumnOption::Default(_) => {
                return Err(no(
                    "DEFAULT",
                    "a missing value is NULL; give every value in the input",
                ))
            }
            ColumnOption::Materialized(_) => return Err(no("MATERIALIZED", "no computed columns")),
            ColumnOption::Ephemeral(_) => return Err(no("EPHEMERAL", "no computed columns")),
            ColumnOption::Alias(_) => return Err(no("ALIAS", "no computed columns")),
            ColumnOption::ForeignKey { .. } => {
                return Err(no("REFERENCES", "foreign keys are not checked"))
            }
            ColumnOption::Check(_) => return Err(no("CHECK", "no CHECK constraints")),
            ColumnOption::DialectSpecific(_) => return Err(no(&dialect_text, "a dialect clause")),
            ColumnOption::CharacterSet(_) => return Err(no("CHARACTER SET", "TEXT is UTF-8")),
            ColumnOption::Comment(_) => return Err(no("COMMENT", "comments are not stored")),
            ColumnOption::OnUpdate(_) => return Err(no("ON UPDATE", "no computed columns")),
            ColumnOption::Generated { .. } => {
                return Err(no("GENERATED / AS (…)", "no computed or identity columns"))
            }
            ColumnOption::Options(_) => return Err(no("OPTIONS (…)", "a dialect clause")),
            ColumnOption::Identity(_) => {
                return Err(no("IDENTITY / AUTOINCREMENT", "values come from the input"))
            }
            ColumnOption::OnConflict(_) => return Err(no("ON CONFLICT", "see --on-duplicate")),
            ColumnOption::Policy(_) => return Err(no("a column policy", "a dialect clause")),
            ColumnOption::Tags(_) => return Err(no("TAG", "a dialect clause")),
            ColumnOption::Srid(_) => return Err(no("SRID", "a dialect clause")),
        }
    }
    Ok(())
}

/// An index declared in CREATE TABLE: its name if given, its columns (name and place), and
/// where it is written.
type DeclaredIndex = (Option<String>, Vec<(String, Pos)>, Pos);

/// The keys a CREATE TABLE declares, by name and place, resolved once all columns are known.
#[derive(Default)]
struct Keys {
    /// PRIMARY KEY columns and where it is written.
    pk: Option<(Vec<(String, Pos)>, Pos)>,
    /// UNIQUE constraints: optional name, columns, place.
    unique: Vec<DeclaredIndex>,
    /// MySQL's inline INDEX/KEY: optional name, columns, place.
    plain: Vec<DeclaredIndex>,
}

fn create_table(src: &Source, ct: &CreateTable, stmt: Pos) -> Result<TableDef, SchemaError> {
    let (name, at) = object_name(&ct.name, stmt)?;
    refuse_table_clauses(src, ct, at)?;
    let tail = src.after_parens(at);
    let mut t = TableDef {
        name,
        id: 0,
        version: 1,
        columns: Vec::new(),
        primary_key: Vec::new(),
        indexes: Vec::new(),
        layout: table_layout(src, &ct.table_options, tail)?,
    };
    let mut keys = Keys::default();
    let mut nullable_at: Vec<Option<Pos>> = Vec::new();
    for c in &ct.columns {
        let cname = ident_name(&c.name);
        let cat = ident_pos(&c.name);
        if let Some(old) = t
            .columns
            .iter()
            .find(|o| o.name.eq_ignore_ascii_case(&cname))
        {
            return Err(err(
                cat,
                if old.name == cname {
                    format!("column {cname} is defined twice")
                } else {
                    format!(
                        "columns {} and {cname} differ only in case (column names are matched ignoring case in headers, JSON keys and on the command line)",
                        old.name
                    )
                },
            ));
        }
        if cname.eq_ignore_ascii_case(ROWID_COLUMN) {
            return Err(err(
                cat,
                format!("column name {cname} is reserved (the hidden row id)"),
            ));
        }
        let ty = column_type(&c.data_type, src.next(c.name.span.end.into())).map_err(|e| {
            SchemaError {
                message: format!("column {cname}: {}", e.message),
                ..e
            }
        })?;
        let mut facts = ColumnFacts::default();
        column_options(src, c, &cname, cat, &mut facts, &mut keys)?;
        nullable_at.push(facts.null);
        t.columns.push(ColumnDef {
            name: cname,
            ty,
            not_null: facts.not_null.is_some(),
            hidden: false,
        });
    }
    if t.columns.is_empty() {
        return Err(err(at, format!("table {} has no columns", t.name)));
    }
    for con in &ct.constraints {
        table_constraint(src, con, at, &mut keys)?;
    }
    match keys.pk {
        Some((cols, _)) => {
            t.primary_key = resolve(&t, &cols, "PRIMARY KEY")?;
            for &i in &t.primary_key {
                if let Some(p) = nullable_at[i] {
                    return Err(err(
                        p,
                        format!(
                            "column {}: NULL conflicts with PRIMARY KEY (key columns are NOT NULL)",
                            t.columns[i].name
                        ),
                    ));
                }
                t.columns[i].not_null = true;
            }
        }
        None => {
            t.columns.push(ColumnDef {
                name: ROWID_COLUMN.into(),
                ty: ColumnType::BigInt,
                not_null: true,
                hidden: true,
            });
            t.primary_key = vec![t.columns.len() - 1];
        }
    }
    let mut n_unique = 0;
    for (unique, (name, cols, uat)) in keys
        .unique
        .into_iter()
        .map(|u| (true, u))
        .chain(keys.plain.into_iter().map(|p| (false, p)))
    {
        let cols = resolve(&t, &cols, if unique { "UNIQUE" } else { "INDEX" })?;
        let name = name.unwrap_or_else(|| {
            if unique {
                n_unique += 1;
                format!("{}_unique{n_unique}", t.name)
            } else {
                format!("{}_idx{}", t.name, t.indexes.len() + 1)
            }
        });
        add_index(&mut t, name, cols, unique, uat)?;
    }
    Ok(t)
}

/// One table constraint: PRIMARY KEY, UNIQUE, MySQL's INDEX/KEY; FOREIGN KEY, CHECK and
/// FULLTEXT/SPATIAL refused.
fn table_constraint(
    src: &Source,
    con: &TableConstraint,
    table_at: Pos,
    keys: &mut Keys,
) -> Result<(), SchemaError> {
    let span = con.span().start;
    let anchor: Pos = if span.line == 0 {
        table_at
    } else {
        span.into()
    };
    // The keyword: after the constraint's name if it has one, else before its columns.
    let kw = |name: &Option<Ident>, words: &[&str]| match name {
        Some(n) => src.find_after(ident_pos(n), words).unwrap_or(anchor),
        None => src
            .find_before(anchor, words)
            .or_else(|| src.find_after(table_at, words))
            .unwrap_or(anchor),
    };
    match con {
        TableConstraint::PrimaryKey {
            name,
            index_name,
            index_type,
            columns,
            index_options,
            characteristics,
        } => {
            let p = kw(name, &["PRIMARY", "KEY"]);
            key_clauses(
                src,
                p,
                index_name,
                index_type.is_some(),
                index_options,
                characteristics,
            )?;
            if keys.pk.is_some() {
                return Err(err(p, "more than one PRIMARY KEY"));
            }
            keys.pk = Some((index_columns(src, columns)?, p));
        }
        TableConstraint::Unique {
            name,
            index_name,
            index_type_display: _,
            index_type,
            columns,
            index_options,
            characteristics,
            nulls_distinct,
        } => {
            let p = kw(name, &["UNIQUE"]);
            key_clauses(
                src,
                p,
                &None,
                index_type.is_some(),
                index_options,
                characteristics,
            )?;
            if *nulls_distinct == NullsDistinctOption::NotDistinct {
                return Err(refuse(
                    src,
                    p,
                    &["NULLS", "NOT", "DISTINCT"],
                    "NULLS NOT DISTINCT",
                    "a unique index exempts rows with a NULL",
                ));
            }
            let iname = name.as_ref().or(index_name.as_ref()).map(ident_name);
            keys.unique.push((iname, index_columns(src, columns)?, p));
        }
        TableConstraint::Index {
            display_as_key: _,
            name,
            index_type,
            columns,
            index_options,
        } => {
            let p = src
                .find_before(anchor, &["INDEX"])
                .or_else(|| src.find_before(anchor, &["KEY"]))
                .unwrap_or(anchor);
            key_clauses(src, p, &None, index_type.is_some(), index_options, &None)?;
            keys.plain.push((
                name.as_ref().map(ident_name),
                index_columns(src, columns)?,
                p,
            ));
        }
        TableConstraint::ForeignKey { name, .. } => {
            let p = kw(name, &["FOREIGN", "KEY"]);
            return Err(err(
                p,
                "FOREIGN KEY is not supported (foreign keys are not checked)",
            ));
        }
        TableConstraint::Check { name, .. } => {
            let p = kw(name, &["CHECK"]);
            return Err(err(p, "CHECK is not supported (no CHECK constraints)"));
        }
        TableConstraint::FulltextOrSpatial { fulltext, .. } => {
            let w = if *fulltext { "FULLTEXT" } else { "SPATIAL" };
            let p = src.find_before(anchor, &[w]).unwrap_or(anchor);
            return Err(err(
                p,
                format!("{w} is not supported (every index is an ordered key range)"),
            ));
        }
    }
    Ok(())
}

/// The clauses a PRIMARY KEY / UNIQUE / INDEX constraint may carry that have no meaning here.
fn key_clauses(
    src: &Source,
    at: Pos,
    index_name: &Option<Ident>,
    using: bool,
    options: &[sqlparser::ast::IndexOption],
    characteristics: &Option<sqlparser::ast::ConstraintCharacteristics>,
) -> Result<(), SchemaError> {
    if let Some(n) = index_name {
        return Err(err(ident_pos(n), format!("an index name ({n}) on PRIMARY KEY is not supported (the primary key is the index `primary`)")));
    }
    if using {
        return Err(refuse(
            src,
            at,
            &["USING"],
            "USING",
            "every index is an ordered key range",
        ));
    }
    if let Some(o) = options.first() {
        let text = o.to_string();
        let first = text.split_whitespace().next().unwrap_or("");
        return Err(refuse(
            src,
            at,
            &[first],
            &format!("index option {text}"),
            "indexes take no options",
        ));
    }
    if let Some(ch) = characteristics {
        let text = ch.to_string();
        let first = text.split_whitespace().next().unwrap_or("");
        return Err(refuse(
            src,
            at,
            &[first],
            &text,
            "constraints are checked at once, always",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tables_and_indexes() {
        let t = parse_schema(
            "CREATE TABLE o (id BIGINT, region TEXT NOT NULL, amount DECIMAL(10,2), \
             PRIMARY KEY (region, id));\nCREATE UNIQUE INDEX by_amount ON o (amount);",
        )
        .unwrap();
        assert_eq!(t[0].primary_key, vec![1, 0]);
        assert_eq!(t[0].indexes[0].id, 2);
        assert!(t[0].indexes[0].unique);
        let t = parse_schema("CREATE TABLE x (a INT)").unwrap();
        assert!(t[0].has_rowid());
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_schema("CREATE TABLE x (\n  a INT,\n  b GEOMETRY\n)").unwrap_err();
        assert_eq!((e.line, e.column), (3, 5), "{e}");
        let e = parse_schema("CREATE TABLE x (a INT);\nCREATE INDEX i ON x (zz);").unwrap_err();
        assert_eq!((e.line, e.column), (2, 22), "{e}");
        assert!(e.message.contains("zz"), "{e}");
        let e = parse_schema("CREATE TABLE x (a INT,\n b INT,,)").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }
}
