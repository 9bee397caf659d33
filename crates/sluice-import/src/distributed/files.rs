//! Step 2 for whole files: a task reads one input file with the import's own readers (the
//! same chunker, parsers, NULL rules and header handling as `sluice import`), so a row's
//! place and value are exactly what the single-machine import sees.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use arrow_array::RecordBatch;

use super::JobPlan;
use crate::input::{open_input, Boundaries, Chunker, CsvScanner, Format, LineScanner};
use crate::parse::{default_map, header_map, parse_chunk, Chunk};
use crate::ImportError;

/// Bytes of text parsed at a time.
const CHUNK: usize = 4 << 20;

impl JobPlan {
    /// The format of input `path` under this plan's options.
    fn format_of(&self, path: &Path) -> Result<Format, ImportError> {
        Ok(match self.text.format.as_deref() {
            None => Format::from_path(path),
            Some("csv") => Format::Csv,
            Some("tsv") => Format::Tsv,
            Some("jsonl") => Format::Jsonl,
            Some("parquet") => Format::Parquet,
            Some(other) => {
                return Err(ImportError::InvalidOption {
                    option: "format",
                    reason: format!("{other:?} is not csv, tsv, jsonl or parquet"),
                })
            }
        })
    }

    /// Step 2 for input number `source` (a file): every row of it encoded, one batch per chunk
    /// (per Parquet batch). The file is read whole by this call: one file is one task's input.
    pub fn encode_file(&self, path: &Path, source: usize) -> Result<Vec<RecordBatch>, ImportError> {
        let name = self.sources.get(source).cloned().unwrap_or_default();
        let format = self.format_of(path)?;
        let mut out = Vec::new();
        if format == Format::Parquet {
            let mut input = crate::arrow_io::open_parquet(path, &self.table, 65536)?;
            let fields = Arc::new(crate::parse::FieldMap {
                fields: std::mem::take(&mut input.columns),
            });
            let mut rows = 0u64;
            for number in 0u64.. {
                let next = crate::arrow_io::parquet::guarded(path, || Ok(input.reader.next()))?;
                let Some(batch) = next else {
                    break;
                };
                let batch = batch.map_err(|e| {
                    ImportError::InvalidArgument(format!("{name}: Parquet batch {number}: {e}"))
                })?;
                let n = batch.num_rows() as u64;
                let chunk = Chunk {
                    seq: number,
                    file: source,
                    data: Vec::new(),
                    first_line: rows + 1,
                    offset: rows,
                    map: Arc::clone(&fields),
                    batch: Some(crate::parse::ArrowBatch {
                        rows: batch,
                        number,
                    }),
                };
                out.push(self.entries_batch(parse_chunk(&self.parse_config(format), chunk))?);
                rows += n;
            }
            return Ok(out);
        }
        let cfg = self.parse_config(format);
        let r =
            open_input(path, Arc::new(AtomicU64::new(0))).map_err(|e| ImportError::io(path, e))?;
        let bounds = match format {
            Format::Csv => Boundaries::Csv(CsvScanner::new(cfg.delimiter, cfg.quote)),
            _ => Boundaries::Lines(LineScanner::default()),
        };
        let mut chunker = Chunker::new(r, bounds, CHUNK);
        let scan_err = |e: crate::input::ChunkError| e.into_import(path, &name);
        let map = if self.text.header && format != Format::Jsonl {
            match chunker.next_chunk(true).map_err(scan_err)? {
                Some(h) => header_map(&self.table, &cfg, &name, &h.data)?,
                None => default_map(&self.table),
            }
        } else {
            default_map(&self.table)
        };
        let map = Arc::new(map);
        let mut seq = 0;
        while let Some(raw) = chunker.next_chunk(false).map_err(scan_err)? {
            let chunk = Chunk {
                seq,
                file: source,
                data: raw.data,
                first_line: raw.first_line,
                offset: raw.file_offset,
                map: Arc::clone(&map),
                batch: None,
            };
            out.push(self.entries_batch(parse_chunk(&cfg, chunk))?);
            seq += 1;
        }
        Ok(out)
    }
}
