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

mod column;
mod index;
mod keys;
mod source;
mod table;
use std::fmt;

use serde::{Deserialize, Serialize};
use sqlparser::ast::Statement;
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use crate::types::ColumnType;

use index::create_index;
use source::{err, object_name, Pos, Source};
use table::create_table;

/// Index id of every table's primary key.
pub const PRIMARY_INDEX_ID: u32 = 1;
/// Name of the hidden row-id column of a table without a primary key.
pub const ROWID_COLUMN: &str = "_rowid";
/// Index id of column `c`'s cells (cells layout) or chunks (columnar layout):
/// `COLUMN_INDEX_BASE + c` (above every secondary index id).
pub const COLUMN_INDEX_BASE: u32 = 1 << 30;

/// How a table's rows are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Layout {
    /// One KV per row: primary key → the row value ([`crate::row`]).
    #[default]
    #[serde(rename = "row")]
    Row,
    /// Column chunks (the `chunk` module): the rows of an import cut into row groups of up to
    /// `GROUP_ROWS` rows in primary-key order, each group stored as one KV per
    /// column, `table id ‖ COLUMN_INDEX_BASE + column ‖ group id` → the group's values of that
    /// column, encoded and compressed together. The primary index keeps one KV per row,
    /// primary key → schema version ‖ group id ‖ position, for point reads, existence checks
    /// and primary-key-ordered scans. SQL: `WITH (layout = 'columnar')`.
    #[serde(rename = "columnar-chunks")]
    Columnar,
    /// One KV per cell: `table id ‖ COLUMN_INDEX_BASE + column ‖ primary key` → the cell (a row
    /// value of that one column); NULL cells, primary key columns (they are in the key) and
    /// a NOT NULL column's cells holding its type's zero value ([`crate::row::default_cell`])
    /// are not stored. The primary index keeps one KV per row, primary key → the schema version
    /// byte. Tables made before the chunked layout existed ("columnar" then) read as this one;
    /// it is kept for what chunks do not do yet: replacing stored rows cell by cell. SQL:
    /// `WITH (layout = 'cells')`.
    #[serde(rename = "columnar")]
    Cells,
}

impl Layout {
    /// `row` / `columnar` / `cells` (case-insensitive).
    pub fn parse(s: &str) -> Option<Layout> {
        match s.to_ascii_lowercase().as_str() {
            "row" => Some(Layout::Row),
            "columnar" | "column" | "chunks" => Some(Layout::Columnar),
            "cells" => Some(Layout::Cells),
            _ => None,
        }
    }

    /// The layouts that store each column apart (columnar and cells).
    pub fn by_column(self) -> bool {
        self != Layout::Row
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::Row => "row",
            Layout::Columnar => "columnar",
            Layout::Cells => "cells",
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
    /// The layout was named (by the schema's `WITH (layout = …)` or the import's options)
    /// rather than defaulted. An unnamed layout binds to an existing table's stored one
    /// (the catalog's `bind`), so a later import into a columnar table need not repeat it.
    /// Never stored.
    #[serde(skip)]
    pub layout_stated: bool,
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
        // A table made as "columnar" before chunks is stored as cells: its schema file, which
        // still says columnar, binds to it (the stored layout is kept).
        let old_columnar = self.layout == Layout::Cells && other.layout == Layout::Columnar;
        if self.layout != other.layout && !old_columnar {
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
