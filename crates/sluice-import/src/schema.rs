//! The schema: `CREATE TABLE` and `CREATE [UNIQUE] INDEX` statements, parsed with `sqlparser`
//! into [`TableDef`]s.
//!
//! Invariants:
//! 1. Every table has a primary key: the declared one (inline or a table constraint), or a
//!    hidden BIGINT column `_rowid` assigned in input order.
//! 2. Index 1 of a table is its primary key; secondary indexes are numbered 2.. in schema order.
//!    A secondary index key is its columns followed by the primary key columns.
//! 3. A schema error names the line and the construct; parsing never panics on any text.

use std::fmt;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{
    ColumnOption, DataType, ExactNumberInfo, Expr, ObjectName, Statement, TableConstraint,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

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
    /// Column name (as written, case kept).
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
    /// Position of a column by name (case-insensitive).
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
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: {}", self.line, self.message)
        } else {
            f.write_str(&self.message)
        }
    }
}

impl std::error::Error for SchemaError {}

fn err(line: u64, message: impl Into<String>) -> SchemaError {
    SchemaError {
        line,
        message: message.into(),
    }
}

fn object_name(n: &ObjectName) -> (String, u64) {
    let parts: Vec<String> =
        n.0.iter()
            .map(|p| match p.as_ident() {
                Some(i) => i.value.clone(),
                None => p.to_string(),
            })
            .collect();
    let line =
        n.0.first()
            .and_then(|p| p.as_ident())
            .map_or(0, |i| i.span.start.line);
    (parts.last().cloned().unwrap_or_default(), line)
}

fn length_of(l: &Option<sqlparser::ast::CharacterLength>) -> Option<u32> {
    match l {
        Some(sqlparser::ast::CharacterLength::IntegerLength { length, .. }) => {
            u32::try_from(*length).ok()
        }
        _ => None,
    }
}

fn column_type(dt: &DataType, line: u64) -> Result<ColumnType, SchemaError> {
    Ok(match dt {
        DataType::SmallInt(_) | DataType::Int2(_) => ColumnType::SmallInt,
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => ColumnType::Int,
        DataType::BigInt(_) | DataType::Int8(_) => ColumnType::BigInt,
        DataType::Float(_)
        | DataType::Double(_)
        | DataType::DoublePrecision
        | DataType::Real
        | DataType::Float4
        | DataType::Float8
        | DataType::Float64 => ColumnType::Double,
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
                    line,
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
        DataType::Varchar(l)
        | DataType::Char(l)
        | DataType::Character(l)
        | DataType::CharacterVarying(l)
        | DataType::CharVarying(l) => ColumnType::Text {
            max_chars: length_of(l),
        },
        DataType::Bytea | DataType::Bytes(_) | DataType::Blob(_) => ColumnType::Bytes,
        DataType::Date => ColumnType::Date,
        DataType::Timestamp(_, _) | DataType::Datetime(_) => ColumnType::Timestamp,
        other => {
            return Err(err(
                line,
                format!("column type {other} is not supported (INT, BIGINT, SMALLINT, DOUBLE, DECIMAL(p,s), BOOLEAN, TEXT, VARCHAR(n), BYTES, DATE, TIMESTAMP are)"),
            ))
        }
    })
}

fn index_column_names(
    cols: &[sqlparser::ast::IndexColumn],
    line: u64,
) -> Result<Vec<(String, u64)>, SchemaError> {
    cols.iter()
        .map(|c| match &c.column.expr {
            Expr::Identifier(i) => Ok((i.value.clone(), i.span.start.line)),
            other => Err(err(
                line,
                format!("index column {other}: only plain column names are supported"),
            )),
        })
        .collect()
}

fn resolve(t: &TableDef, cols: &[(String, u64)], what: &str) -> Result<Vec<usize>, SchemaError> {
    let mut out = Vec::new();
    for (name, line) in cols {
        let i = t.column(name).ok_or_else(|| {
            err(
                *line,
                format!("{what}: table {} has no column {name}", t.name),
            )
        })?;
        if out.contains(&i) {
            return Err(err(*line, format!("{what}: column {name} listed twice")));
        }
        out.push(i);
    }
    Ok(out)
}

/// Parses a schema: any number of `CREATE TABLE` and `CREATE [UNIQUE] INDEX` statements.
pub fn parse_schema(sql: &str) -> Result<Vec<TableDef>, SchemaError> {
    let statements = Parser::parse_sql(&GenericDialect {}, sql).map_err(|e| {
        let msg = e.to_string();
        let line = msg
            .split("Line: ")
            .nth(1)
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        err(line, format!("SQL syntax: {msg}"))
    })?;
    let mut tables: Vec<TableDef> = Vec::new();
    for st in &statements {
        match st {
            Statement::CreateTable(ct) => {
                let (name, line) = object_name(&ct.name);
                if tables.iter().any(|t| t.name.eq_ignore_ascii_case(&name)) {
                    return Err(err(line, format!("table {name} is defined twice")));
                }
                tables.push(create_table(ct, name, line)?);
            }
            Statement::CreateIndex(ci) => {
                let (table, line) = object_name(&ci.table_name);
                let t = tables
                    .iter_mut()
                    .find(|t| t.name.eq_ignore_ascii_case(&table))
                    .ok_or_else(|| {
                        err(
                            line,
                            format!("CREATE INDEX on {table}: no such table (create it first)"),
                        )
                    })?;
                let name = ci
                    .name
                    .as_ref()
                    .map(|n| object_name(n).0)
                    .unwrap_or_else(|| format!("{}_idx{}", t.name, t.indexes.len() + 1));
                let cols = resolve(
                    t,
                    &index_column_names(&ci.columns, line)?,
                    &format!("index {name}"),
                )?;
                add_index(t, name, cols, ci.unique, line)?;
            }
            other => {
                let text = other.to_string();
                let head: String = text.chars().take(40).collect();
                return Err(err(
                    0,
                    format!("only CREATE TABLE and CREATE INDEX are supported, found: {head}"),
                ));
            }
        }
    }
    if tables.is_empty() {
        return Err(err(0, "the schema defines no table"));
    }
    Ok(tables)
}

fn add_index(
    t: &mut TableDef,
    name: String,
    columns: Vec<usize>,
    unique: bool,
    line: u64,
) -> Result<(), SchemaError> {
    if name.eq_ignore_ascii_case("primary") || t.index(&name).is_some() {
        return Err(err(line, format!("index name {name} is already used")));
    }
    if columns.is_empty() {
        return Err(err(line, format!("index {name} has no columns")));
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

/// `WITH (layout = 'row' | 'columnar')`; any other table option is an error.
fn table_layout(
    opts: &sqlparser::ast::CreateTableOptions,
    line: u64,
) -> Result<Layout, SchemaError> {
    use sqlparser::ast::{CreateTableOptions, SqlOption};
    let list = match opts {
        CreateTableOptions::None => return Ok(Layout::Row),
        CreateTableOptions::With(l) => l,
        other => {
            return Err(err(
                line,
                format!("table options {other} are not supported (WITH (layout = 'columnar') is)"),
            ))
        }
    };
    let mut layout = Layout::Row;
    for o in list {
        match o {
            SqlOption::KeyValue { key, value } if key.value.eq_ignore_ascii_case("layout") => {
                let text = match value {
                    Expr::Value(v) => match &v.value {
                        sqlparser::ast::Value::SingleQuotedString(s)
                        | sqlparser::ast::Value::DoubleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    Expr::Identifier(i) => i.value.clone(),
                    other => other.to_string(),
                };
                layout = Layout::parse(&text)
                    .ok_or_else(|| err(line, format!("layout {text:?}: row or columnar")))?;
            }
            other => {
                return Err(err(
                    line,
                    format!("table option {other} is not supported (layout is)"),
                ))
            }
        }
    }
    Ok(layout)
}

fn create_table(
    ct: &sqlparser::ast::CreateTable,
    name: String,
    line: u64,
) -> Result<TableDef, SchemaError> {
    let mut t = TableDef {
        name,
        id: 0,
        version: 1,
        columns: Vec::new(),
        primary_key: Vec::new(),
        indexes: Vec::new(),
        layout: table_layout(&ct.table_options, line)?,
    };
    let mut pk: Option<Vec<(String, u64)>> = None;
    let mut uniques: Vec<(Vec<(String, u64)>, u64)> = Vec::new();
    for c in &ct.columns {
        let cline = c.name.span.start.line;
        if t.column(&c.name.value).is_some() || c.name.value.eq_ignore_ascii_case(ROWID_COLUMN) {
            return Err(err(
                cline,
                format!("column {} is defined twice or reserved", c.name.value),
            ));
        }
        let ty = column_type(&c.data_type, cline)
            .map_err(|e| err(e.line, format!("column {}: {}", c.name.value, e.message)))?;
        let mut not_null = false;
        for o in &c.options {
            match &o.option {
                ColumnOption::NotNull => not_null = true,
                ColumnOption::Null => not_null = false,
                ColumnOption::Unique { is_primary, .. } => {
                    let cols = vec![(c.name.value.clone(), cline)];
                    if *is_primary {
                        if pk.is_some() {
                            return Err(err(cline, "more than one PRIMARY KEY"));
                        }
                        pk = Some(cols);
                    } else {
                        uniques.push((cols, cline));
                    }
                }
                other => {
                    return Err(err(
                        cline,
                        format!("column {}: option {other} is not supported", c.name.value),
                    ))
                }
            }
        }
        t.columns.push(ColumnDef {
            name: c.name.value.clone(),
            ty,
            not_null,
            hidden: false,
        });
    }
    if t.columns.is_empty() {
        return Err(err(line, format!("table {} has no columns", t.name)));
    }
    for con in &ct.constraints {
        match con {
            TableConstraint::PrimaryKey { columns, .. } => {
                if pk.is_some() {
                    return Err(err(line, "more than one PRIMARY KEY"));
                }
                pk = Some(index_column_names(columns, line)?);
            }
            TableConstraint::Unique { columns, .. } => {
                uniques.push((index_column_names(columns, line)?, line));
            }
            other => {
                return Err(err(
                    line,
                    format!("table constraint {other} is not supported"),
                ))
            }
        }
    }
    match pk {
        Some(cols) => {
            t.primary_key = resolve(&t, &cols, "PRIMARY KEY")?;
            for &i in &t.primary_key {
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
    for (n, (cols, uline)) in uniques.into_iter().enumerate() {
        let cols = resolve(&t, &cols, "UNIQUE")?;
        let name = format!("{}_unique{}", t.name, n + 1);
        add_index(&mut t, name, cols, true, uline)?;
    }
    Ok(t)
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
        assert_eq!(e.line, 3, "{e}");
        let e = parse_schema("CREATE TABLE x (a INT);\nCREATE INDEX i ON x (zz);").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("zz"), "{e}");
        let e = parse_schema("CREATE TABLE x (a INT,\n b INT,,)").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }
}
