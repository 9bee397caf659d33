//! One input file as a sequence of chunks ready to parse: text cut into record-aligned chunks
//! (after its header line, when asked), Parquet read as record batches. The pipeline's reader
//! thread and a distributed import's task read files through this one path, so a row's place
//! and value never depend on where the file is read.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{default_map, header_map, ArrowBatch, Chunk, FieldMap, ParseConfig};
use crate::arrow_io::parquet::{guarded, open_parquet};
use crate::arrow_io::ParquetInput;
use crate::error::{BadRow, RowPlace};
use crate::input::{open_input, Boundaries, ChunkError, Chunker, CsvScanner, Format, LineScanner};
use crate::ImportError;

/// The chunks of input file number `file`.
pub struct FileChunks<'p> {
    path: &'p Path,
    name: &'p str,
    file: usize,
    map: Arc<FieldMap>,
    kind: Kind,
    /// Bytes read of a text file (decompressed), rows of a Parquet file: where the next chunk
    /// starts, for row ids.
    consumed: u64,
    counter: Arc<AtomicU64>,
}

enum Kind {
    Text(Chunker<Box<dyn std::io::Read + Send>>),
    Parquet {
        input: ParquetInput,
        number: u64,
        size: u64,
    },
}

impl<'p> FileChunks<'p> {
    /// Opens `path` (input number `file`, `name` in messages) in `cfg`'s format: text chunks of
    /// about `chunk_size` bytes (the header line mapped first when `header`), Parquet batches of
    /// about as much. `counter` counts the input's bytes read.
    pub fn open(
        path: &'p Path,
        name: &'p str,
        file: usize,
        cfg: &ParseConfig,
        header: bool,
        chunk_size: usize,
        counter: Arc<AtomicU64>,
    ) -> Result<FileChunks<'p>, ImportError> {
        let (kind, map) = if cfg.format == Format::Parquet {
            // About a chunk's worth of rows: the table's columns at ~16 bytes a value.
            let rows = (chunk_size / (16 * cfg.table.columns.len().max(1))).clamp(1024, 65536);
            let mut input = open_parquet(path, &cfg.table, rows)?;
            let map = FieldMap {
                fields: std::mem::take(&mut input.columns),
            };
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            let kind = Kind::Parquet {
                input,
                number: 0,
                size,
            };
            (kind, map)
        } else {
            crate::failpoints::inject("import::input").map_err(|e| ImportError::io(path, e))?;
            let r = open_input(path, Arc::clone(&counter)).map_err(|e| ImportError::io(path, e))?;
            let bounds = match cfg.format {
                Format::Csv => Boundaries::Csv(CsvScanner::new(cfg.delimiter, cfg.quote)),
                _ => Boundaries::Lines(LineScanner::default()),
            };
            let mut chunker = Chunker::new(r, bounds, chunk_size);
            let map = if header && cfg.format != Format::Jsonl {
                match chunker
                    .next_chunk(true)
                    .map_err(|e| e.into_import(path, name))?
                {
                    Some(mut h) => {
                        if let Some((_, e)) = h.malformed.drain(..).next() {
                            return Err(ChunkError::Scan(e).into_import(path, name));
                        }
                        header_map(&cfg.table, cfg, name, &h.data)?
                    }
                    None => default_map(&cfg.table),
                }
            } else {
                default_map(&cfg.table)
            };
            (Kind::Text(chunker), map)
        };
        Ok(FileChunks {
            path,
            name,
            file,
            map: Arc::new(map),
            kind,
            consumed: 0,
            counter,
        })
    }

    /// Bytes (text) or rows (Parquet) of the file passed so far.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The next chunk (`seq` 0, `offset` within this file), or `None` at the end.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, ImportError> {
        match &mut self.kind {
            Kind::Text(chunker) => {
                let Some(raw) = chunker
                    .next_chunk(false)
                    .map_err(|e| e.into_import(self.path, self.name))?
                else {
                    return Ok(None);
                };
                self.consumed = raw.file_offset + raw.data.len() as u64;
                Ok(Some(Chunk {
                    seq: 0,
                    file: self.file,
                    data: raw.data,
                    first_line: raw.first_line,
                    offset: raw.file_offset,
                    map: Arc::clone(&self.map),
                    batch: None,
                    malformed: raw.malformed,
                }))
            }
            Kind::Parquet {
                input,
                number,
                size,
            } => {
                let rows = self.consumed;
                let bad = |reason: String| {
                    ImportError::BadRow(BadRow {
                        place: RowPlace {
                            file: self.name.to_string(),
                            line: rows + 1,
                        },
                        column: None,
                        value: None,
                        reason: format!("Parquet batch {number} does not decode: {reason}"),
                    })
                };
                let next = guarded(self.path, || Ok(input.reader.next()))
                    .map_err(|e| bad(e.to_string()))?;
                let Some(batch) = next else {
                    return Ok(None);
                };
                let batch = batch.map_err(|e| bad(e.to_string()))?;
                let n = batch.num_rows() as u64;
                let share = size.saturating_mul(n).checked_div(input.rows).unwrap_or(0);
                self.counter.fetch_add(share, Ordering::Relaxed);
                let chunk = Chunk {
                    seq: 0,
                    file: self.file,
                    data: Vec::new(),
                    first_line: rows + 1,
                    offset: rows,
                    map: Arc::clone(&self.map),
                    batch: Some(ArrowBatch {
                        rows: batch,
                        number: *number,
                    }),
                    malformed: Vec::new(),
                };
                *number += 1;
                self.consumed += n;
                Ok(Some(chunk))
            }
        }
    }
}
