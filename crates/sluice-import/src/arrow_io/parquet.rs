//! Parquet files as record batches of the schema's columns, and a table definition taken from
//! an Arrow schema when no `CREATE TABLE` is given.

use std::fs::File;
use std::path::Path;

use arrow_schema::{DataType, Schema};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

use super::parquet_pages::check_pages;
use super::values::check_type;
use crate::schema::TableDef;
use crate::ImportError;

/// A Parquet file opened for an import: batches of the table's columns found in the file.
pub struct ParquetInput {
    /// Batches of at most the asked rows, in file order.
    pub reader: ParquetRecordBatchReader,
    /// For each batch column, the table column it fills.
    pub columns: Vec<usize>,
    /// Rows in the file.
    pub rows: u64,
}

fn parquet_error(path: &Path, e: impl std::fmt::Display) -> ImportError {
    ImportError::InvalidArgument(format!(
        "{}: not a readable Parquet file: {e}",
        path.display()
    ))
}

/// Opens `path` and selects the table's columns by name (extra columns of the file are not
/// read), after checking the pages of those columns ([`check_pages`]). Refuses a file that
/// lacks a NOT NULL column or has a column whose type cannot be stored in the table's; a
/// missing nullable column reads as NULL.
pub fn open_parquet(
    path: &Path,
    t: &TableDef,
    batch_rows: usize,
) -> Result<ParquetInput, ImportError> {
    guarded(path, || open_parquet_unguarded(path, t, batch_rows))
}

fn open_parquet_unguarded(
    path: &Path,
    t: &TableDef,
    batch_rows: usize,
) -> Result<ParquetInput, ImportError> {
    let file = File::open(path).map_err(|e| ImportError::io(path, e))?;
    let pages = file.try_clone().map_err(|e| ImportError::io(path, e))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| parquet_error(path, e))?;
    let rows = builder.metadata().file_metadata().num_rows().max(0) as u64;
    let (roots, columns) = match_columns(builder.schema(), t)
        .map_err(|why| ImportError::InvalidArgument(format!("{}: {why}", path.display())))?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    // A page header's claims are checked before the decoder sizes anything by them.
    check_pages(path, pages, builder.metadata(), &mask)?;
    let reader = builder
        .with_projection(mask)
        .with_batch_size(batch_rows.max(1))
        .build()
        .map_err(|e| parquet_error(path, e))?;
    Ok(ParquetInput {
        reader,
        columns,
        rows,
    })
}

/// Runs `f`, a call into the Parquet decoder, turning a panic inside it into an error: the
/// decoder is a dependency, and a malformed file must fail its import with a message, never
/// bring the process (a CLI, a Python interpreter) down.
pub fn guarded<T>(
    path: &Path,
    f: impl FnOnce() -> Result<T, ImportError>,
) -> Result<T, ImportError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Err(parquet_error(path, format!("the decoder failed: {why}")))
    })
}

/// The file's fields (root indexes, in file order) that fill table columns, and the table
/// column of each. Fields the table lacks are not read (a wide file can fill a narrow table),
/// a nullable column the file lacks reads as NULL ([`unread_columns`] tells a caller which, to
/// warn of a misspelling); two fields for one column are refused.
pub fn match_columns(schema: &Schema, t: &TableDef) -> Result<(Vec<usize>, Vec<usize>), String> {
    let mut roots = Vec::new();
    let mut columns = Vec::new();
    for (i, f) in schema.fields().iter().enumerate() {
        let Some(c) = t.column(f.name()) else {
            continue;
        };
        let col = &t.columns[c];
        if col.hidden {
            continue;
        }
        if columns.contains(&c) {
            return Err(format!(
                "column {}: the input has two columns of that name (names match ignoring \
                 ASCII case)",
                col.name
            ));
        }
        check_type(f.data_type(), &col.ty).map_err(|why| format!("column {}: {why}", col.name))?;
        roots.push(i);
        columns.push(c);
    }
    for (i, c) in t.visible_columns() {
        if c.not_null && !columns.contains(&i) {
            return Err(format!(
                "no column {} (NOT NULL in table {})",
                c.name, t.name
            ));
        }
    }
    Ok((roots, columns))
}

/// What [`match_columns`] leaves out of `schema` for table `t`: the table's visible columns the
/// input lacks (they read as NULL) and the input's fields the table lacks (not read). Both at
/// once is what a misspelled name looks like; `sluice import` warns of it.
pub fn unread_columns(schema: &Schema, t: &TableDef) -> (Vec<String>, Vec<String>) {
    let missing = t
        .visible_columns()
        .filter(|(i, _)| {
            !schema
                .fields()
                .iter()
                .any(|f| t.column(f.name()) == Some(*i))
        })
        .map(|(_, c)| c.name.clone())
        .collect();
    // pandas' index fields are not a misspelling of anything.
    let unread = schema
        .fields()
        .iter()
        .filter(|f| t.column(f.name()).is_none())
        .filter(|f| !(f.name().starts_with("__index_level_") && f.name().ends_with("__")))
        .map(|f| f.name().clone())
        .collect();
    (missing, unread)
}

/// The Arrow schema of a Parquet file.
pub fn parquet_schema(path: &Path) -> Result<Schema, ImportError> {
    guarded(path, || {
        let file = File::open(path).map_err(|e| ImportError::io(path, e))?;
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| parquet_error(path, e))?;
        Ok(builder.schema().as_ref().clone())
    })
}

/// `CREATE TABLE` for a Parquet file's columns: [`create_table_sql`] of its schema, the table
/// named `table` or else the file's name without its extension.
pub fn parquet_table_sql(
    path: &Path,
    table: Option<&str>,
    primary_key: &[String],
) -> Result<String, ImportError> {
    let name = match table {
        Some(t) => t.to_string(),
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .ok_or_else(|| {
                ImportError::InvalidArgument(format!(
                    "{}: no file name to name the table by",
                    path.display()
                ))
            })?,
    };
    create_table_sql(&name, &parquet_schema(path)?, primary_key)
}

/// `CREATE TABLE name (…, PRIMARY KEY (primary_key…))` for the fields of `schema`: integers as
/// the smallest SQL integer that holds them (UInt64 as DECIMAL(20,0)), floats as DOUBLE,
/// decimals as DECIMAL(p,s), strings TEXT, binary BYTES, dates DATE, timestamps TIMESTAMP;
/// a field that is not nullable, or in the key, is NOT NULL. Fields without a name, or two
/// of the same name (column names are matched ignoring case), are refused: the SQL would not
/// describe a table.
pub fn create_table_sql(
    name: &str,
    schema: &Schema,
    primary_key: &[String],
) -> Result<String, ImportError> {
    if primary_key.is_empty() {
        return Err(ImportError::InvalidArgument(
            "a table taken from the input's columns needs a primary key (--primary-key a,b)".into(),
        ));
    }
    let mut cols = Vec::new();
    for (i, f) in schema.fields().iter().enumerate() {
        if f.name().is_empty() {
            return Err(ImportError::InvalidArgument(format!(
                "column {}: has no name; give a CREATE TABLE",
                i + 1
            )));
        }
        let earlier = &schema.fields()[..i];
        if earlier
            .iter()
            .any(|e| e.name().eq_ignore_ascii_case(f.name()))
        {
            return Err(ImportError::InvalidArgument(format!(
                "column {}: the input has two columns of that name; give a CREATE TABLE",
                f.name()
            )));
        }
        let ty = sql_type(f.data_type()).ok_or_else(|| {
            ImportError::InvalidArgument(format!(
                "column {}: Arrow type {} has no SQL type here; give a CREATE TABLE",
                f.name(),
                f.data_type()
            ))
        })?;
        let in_key = primary_key.iter().any(|k| k == f.name());
        let not_null = if in_key || !f.is_nullable() {
            " NOT NULL"
        } else {
            ""
        };
        cols.push(format!("{} {ty}{not_null}", quote(f.name())));
    }
    for k in primary_key {
        if !schema.fields().iter().any(|f| f.name() == k) {
            return Err(ImportError::InvalidArgument(format!(
                "--primary-key {k}: the input has no such column"
            )));
        }
    }
    let key: Vec<String> = primary_key.iter().map(|k| quote(k)).collect();
    Ok(format!(
        "CREATE TABLE {} ({}, PRIMARY KEY ({}));",
        quote(name),
        cols.join(", "),
        key.join(", ")
    ))
}

fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

fn sql_type(dt: &DataType) -> Option<String> {
    Some(match dt {
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => "SMALLINT".into(),
        DataType::Int32 | DataType::UInt16 => "INT".into(),
        DataType::Int64 | DataType::UInt32 => "BIGINT".into(),
        DataType::UInt64 => "DECIMAL(20,0)".into(),
        DataType::Float16 | DataType::Float32 | DataType::Float64 => "DOUBLE".into(),
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s)
            if *p <= 38 && *s >= 0 =>
        {
            format!("DECIMAL({p},{s})")
        }
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "TEXT".into(),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "BYTES".into(),
        DataType::Date32 | DataType::Date64 => "DATE".into(),
        DataType::Timestamp(_, _) => "TIMESTAMP".into(),
        DataType::Dictionary(_, v) => return sql_type(v),
        _ => return None,
    })
}
