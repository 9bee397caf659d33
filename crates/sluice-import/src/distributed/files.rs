//! Step 2 for whole files: a task reads one input file with the import's own readers (the
//! same chunker, parsers, NULL rules and header handling as `sluice import`), so a row's
//! place and value are exactly what the single-machine import sees.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::rejects::over_limit;
use super::{Encoded, JobPlan};
use crate::input::Format;
use crate::parse::{parse_chunk, FileChunks};
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
    /// (per Parquet batch), and its bad rows (more than `max_errors` fail the call). The file
    /// is read whole by this call: one file is one task's input.
    pub fn encode_file(&self, path: &Path, source: usize) -> Result<Encoded, ImportError> {
        let name = self.sources.get(source).cloned().unwrap_or_default();
        crate::parse::check_text_options(
            self.text.delimiter,
            self.text.quote.unwrap_or(Some(b'"')),
        )?;
        let cfg = self.parse_config(self.format_of(path)?);
        let counter = Arc::new(AtomicU64::new(0));
        let mut chunks =
            FileChunks::open(path, &name, source, &cfg, self.text.header, CHUNK, counter)?;
        let (mut out, mut rejects) = (Vec::new(), Vec::new());
        while let Some(chunk) = chunks.next_chunk()? {
            let (batch, bad) = self.entries_batch(parse_chunk(&cfg, chunk))?;
            out.push(batch);
            rejects.extend(bad);
            if let Some(e) = over_limit(&rejects, self.max_errors) {
                return Err(e);
            }
        }
        Ok((out, rejects))
    }
}
