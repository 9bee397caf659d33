//! Fuzz harnesses shared by the cargo-fuzz targets (`fuzz/`) and the seeded mutation tests
//! that run in `cargo test` (`tests/fuzz_seeded.rs`). Invariants every harness checks by
//! running:
//! 1. No panic, whatever the bytes: the schema parser, the CSV/TSV/JSON-lines readers, a
//!    Parquet file, an Arrow stream of any schema against a table's.
//! 2. Memory bounded by the input (the cargo-fuzz runs cap `malloc`; the seeded test runs
//!    under `ulimit -v`).
//! 3. A file that cannot be read is an error naming it; a row that cannot be stored is a
//!    rejected row naming the input and the row (and, from a batch, the batch and the row in
//!    it).

pub mod arrow_gen;

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::arrow_io::create_table_sql;
use crate::arrow_io::parquet::match_columns;
use crate::input::{Boundaries, Chunker, CsvScanner, Format};
use crate::parse::{parse_chunk, ArrowBatch, Chunk, FieldMap, FileChunks, ParseConfig};
use crate::schema::{parse_schema, TableDef};
use crate::ImportError;

/// A table with one column of every type, for the reader harness.
pub const FUZZ_SCHEMA: &str = "CREATE TABLE f (a INT PRIMARY KEY, b DOUBLE, c DECIMAL(12,3), \
    d BOOLEAN, e TEXT, g BYTES, h DATE, i TIMESTAMP, j VARCHAR(4), k SMALLINT NOT NULL);\n\
    CREATE UNIQUE INDEX fi ON f (e, h);";

/// Parses `bytes` as a schema. Returns the number of tables.
pub fn exercise_schema(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(s) => parse_schema(s).map_or(0, |t| t.len()),
        Err(_) => 0,
    }
}

/// Chunks and parses `bytes` in each format with a small chunk size. Returns rows accepted.
pub fn exercise_readers(bytes: &[u8]) -> u64 {
    let Ok(mut tables) = parse_schema(FUZZ_SCHEMA) else {
        return 0;
    };
    let mut table = tables.remove(0);
    table.id = 1;
    let mut rows = 0;
    for format in [Format::Csv, Format::Tsv, Format::Jsonl] {
        let delimiter = if format == Format::Tsv { b'\t' } else { b',' };
        let cfg = ParseConfig {
            table: table.clone(),
            format,
            delimiter,
            quote: Some(b'"'),
            null: Some(b"NA".to_vec()),
            files: vec!["fuzz".into()],
            rowid_base: 0,
            pool: None,
        };
        let bounds = match format {
            Format::Csv => Boundaries::Csv(CsvScanner::new(delimiter, Some(b'"'))),
            _ => Boundaries::Lines(crate::input::LineScanner::default()),
        };
        let mut chunker = Chunker::new(bytes, bounds, 64);
        let map = Arc::new(FieldMap {
            fields: (0..table.columns.len()).collect(),
        });
        let mut seq = 0;
        while let Ok(Some(raw)) = chunker.next_chunk(seq == 0 && bytes.first() == Some(&b'#')) {
            let out = parse_chunk(
                &cfg,
                Chunk {
                    seq,
                    file: 0,
                    data: raw.data,
                    first_line: raw.first_line,
                    offset: raw.file_offset,
                    map: Arc::clone(&map),
                    batch: None,
                    malformed: raw.malformed,
                },
            );
            rows += out.rows;
            seq += 1;
        }
    }
    rows
}

/// The table the reader, Parquet and Arrow harnesses fill: [`FUZZ_SCHEMA`]'s first table.
fn fuzz_table() -> Option<TableDef> {
    let mut table = parse_schema(FUZZ_SCHEMA).ok()?.into_iter().next()?;
    table.id = 1;
    Some(table)
}

/// A parse configuration for `table` in `format`, the input named `input`.
fn batch_config(table: TableDef, format: Format, input: &str) -> ParseConfig {
    ParseConfig {
        table,
        format,
        delimiter: b',',
        quote: None,
        null: None,
        files: vec![input.into()],
        rowid_base: 0,
        pool: None,
    }
}

/// The name the Arrow harness gives its stream in messages.
pub const FUZZ_INPUT: &str = "fuzz-input";

/// What a batch harness made of its input: rows accepted, and the message of every rejected
/// row (each names the input, the row and, for batches, the batch and row within it).
#[derive(Debug, Default)]
pub struct BatchRun {
    /// Rows parsed into keys.
    pub rows: u64,
    /// Rejected rows' messages.
    pub rejects: Vec<String>,
    /// Batches refused as a whole (columns that do not fit the table), with why.
    pub refused: Vec<String>,
}

impl BatchRun {
    fn take(&mut self, out: crate::parse::ChunkOutput) {
        self.rows += out.rows;
        self.rejects
            .extend(out.rejects.into_iter().map(|r| r.error.to_string()));
    }
}

/// Writes `bytes` to `path` and imports it as a Parquet file the way the pipeline reads one
/// ([`FileChunks`]: `open_parquet`, the column match against [`FUZZ_SCHEMA`], batch after
/// batch, each parsed into keys and rows). An error names the file (`path`) or the input.
pub fn exercise_parquet(path: &Path, bytes: &[u8]) -> Result<BatchRun, ImportError> {
    std::fs::write(path, bytes).map_err(|e| ImportError::io(path, e))?;
    let Some(table) = fuzz_table() else {
        return Ok(BatchRun::default());
    };
    let name = path.display().to_string();
    let cfg = batch_config(table, Format::Parquet, &name);
    let counter = Arc::new(AtomicU64::new(0));
    let mut chunks = FileChunks::open(path, &name, 0, &cfg, false, 1 << 12, counter)?;
    let mut run = BatchRun::default();
    while let Some(chunk) = chunks.next_chunk()? {
        run.take(parse_chunk(&cfg, chunk));
    }
    Ok(run)
}

/// Builds record batches from `bytes` ([`arrow_gen::batches`]: any schema — the table's
/// column names and others, every Arrow type, NULLs) and parses them as an Arrow stream
/// handed to `Import::from_arrow` is parsed: each batch's columns matched by name against a
/// table, projected, converted value by value. The table is [`FUZZ_SCHEMA`]'s or, when the
/// first byte is odd, the one [`create_table_sql`] takes from the first batch's schema (its
/// SQL must parse).
pub fn exercise_arrow(bytes: &[u8]) -> BatchRun {
    let mut run = BatchRun::default();
    let batches = arrow_gen::batches(bytes);
    let table = match (bytes.first().map(|b| b & 1), batches.first()) {
        (Some(1), Some(b)) => {
            let Some(first) = b.schema().fields().first().map(|f| f.name().clone()) else {
                return run;
            };
            let sql = match create_table_sql("from arrow", &b.schema(), &[first]) {
                Ok(sql) => sql,
                Err(e) => {
                    run.refused.push(format!("{FUZZ_INPUT}: {e}"));
                    return run;
                }
            };
            let parsed = parse_schema(&sql);
            let Some(mut t) = parsed.ok().and_then(|t| t.into_iter().next()) else {
                panic!("create_table_sql gave SQL that does not parse: {sql}");
            };
            t.id = 1;
            t
        }
        _ => match fuzz_table() {
            Some(t) => t,
            None => return run,
        },
    };
    let cfg = batch_config(table, Format::Arrow, FUZZ_INPUT);
    let mut rows = 0;
    for (number, batch) in batches.into_iter().enumerate() {
        let (roots, fields) = match match_columns(batch.schema().as_ref(), &cfg.table) {
            Ok(m) => m,
            Err(why) => {
                run.refused
                    .push(format!("{FUZZ_INPUT}: batch {number}: {why}"));
                continue;
            }
        };
        let Ok(batch) = batch.project(&roots) else {
            continue;
        };
        let n = batch.num_rows() as u64;
        let chunk = Chunk {
            seq: number as u64,
            file: 0,
            data: Vec::new(),
            first_line: rows + 1,
            offset: rows,
            map: Arc::new(FieldMap { fields }),
            batch: Some(ArrowBatch {
                rows: batch,
                number: number as u64,
            }),
            malformed: Vec::new(),
        };
        run.take(parse_chunk(&cfg, chunk));
        rows += n;
    }
    run
}
