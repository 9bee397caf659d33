//! Fuzz harnesses shared by the cargo-fuzz targets (`fuzz/`) and the seeded mutation test
//! that runs in `cargo test`: the schema parser and the CSV/TSV/JSON-lines readers must never
//! panic, whatever the bytes.

use std::sync::Arc;

use crate::input::{Boundaries, Chunker, CsvScanner, Format};
use crate::parse::{parse_chunk, Chunk, FieldMap, ParseConfig};
use crate::schema::parse_schema;

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
                },
            );
            rows += out.rows;
            seq += 1;
        }
    }
    rows
}
