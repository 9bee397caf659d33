//! Keyword arguments → the Rust option structs. Every key is a field of the Rust struct under
//! the same name; an unknown key is a `TypeError`, a bad value an `InvalidArgumentError`.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use sluice::{ChecksumType, CompressionType, IngestOptions, Options, TableOptions};
use sluice_import::{Format, ImportOptions, Layout, OnDuplicate, ProgressMode};

use crate::errors::{invalid, kwargs_items, unexpected_keyword};

fn compression(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<CompressionType> {
    let name: String = v.extract()?;
    CompressionType::from_name(&name).ok_or_else(|| {
        invalid(
            py,
            format!("compression: unknown {name:?} (none, snappy, lz4, zstd)"),
        )
    })
}

fn checksum(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<ChecksumType> {
    let name: String = v.extract()?;
    ChecksumType::from_name(&name)
        .ok_or_else(|| invalid(py, format!("checksum: unknown {name:?} (crc32c, xxh3, …)")))
}

/// Applies `sluice.open(**options)` to `o`.
pub fn apply_db_options(
    py: Python<'_>,
    o: &mut Options,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    for (k, v) in kwargs_items(kwargs)? {
        match k.as_str() {
            "write_buffer_size" => o.write_buffer_size = v.extract()?,
            "max_write_buffer_number" => o.max_write_buffer_number = v.extract()?,
            "l0_compaction_trigger" => o.l0_compaction_trigger = v.extract()?,
            "l0_slowdown_writes_trigger" => o.l0_slowdown_writes_trigger = v.extract()?,
            "l0_stop_writes_trigger" => o.l0_stop_writes_trigger = v.extract()?,
            "l0_tiering_ratio_pct" => o.l0_tiering_ratio_pct = v.extract()?,
            "small_file_merge_prefix" => o.small_file_merge_prefix = v.extract()?,
            "soft_pending_compaction_bytes_limit" => {
                o.soft_pending_compaction_bytes_limit = v.extract()?
            }
            "hard_pending_compaction_bytes_limit" => {
                o.hard_pending_compaction_bytes_limit = v.extract()?
            }
            "flush_split_bytes" => o.flush_split_bytes = v.extract()?,
            "l0_sublevels" => o.l0_sublevels = v.extract()?,
            "l0_thin_sublevels_wait" => o.l0_thin_sublevels_wait = v.extract()?,
            "max_bytes_for_level_base" => o.max_bytes_for_level_base = v.extract()?,
            "max_bytes_for_level_multiplier" => o.max_bytes_for_level_multiplier = v.extract()?,
            "target_file_size" => o.target_file_size = v.extract()?,
            "max_background_jobs" => o.max_background_jobs = v.extract()?,
            "max_subcompactions" => o.max_subcompactions = v.extract()?,
            "background_nice" => o.background_nice = v.extract()?,
            "max_open_files" => o.max_open_files = v.extract()?,
            "block_cache_bytes" => o.block_cache_bytes = v.extract()?,
            "block_size" => o.block_size = v.extract()?,
            "block_restart_interval" => o.block_restart_interval = v.extract()?,
            "verify_checksums" => o.verify_checksums = v.extract()?,
            "wal_mmap_writes" => o.wal_mmap_writes = v.extract()?,
            "max_manifest_file_size" => o.max_manifest_file_size = v.extract()?,
            "checksum" => o.checksum = checksum(py, &v)?,
            "compression" => o.compression_per_level = [compression(py, &v)?; _],
            "bloom_bits_per_key" => o.bloom_bits_per_level = [v.extract::<Option<f64>>()?; _],
            _ => return Err(unexpected_keyword("open", &k)),
        }
    }
    Ok(())
}

/// `sluice.SstWriter(path, **table_options)`.
pub fn table_options(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<TableOptions> {
    let mut o = TableOptions::default();
    for (k, v) in kwargs_items(kwargs)? {
        match k.as_str() {
            "block_size" => o.block_size = v.extract()?,
            "restart_interval" | "block_restart_interval" => o.restart_interval = v.extract()?,
            "compression" => o.compression = compression(py, &v)?,
            "checksum" => o.checksum = checksum(py, &v)?,
            "bloom_bits_per_key" => o.bloom_bits_per_key = v.extract()?,
            _ => return Err(unexpected_keyword("SstWriter", &k)),
        }
    }
    Ok(o)
}

/// `db.ingest(paths, **options)`.
pub fn ingest_options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<IngestOptions> {
    let mut o = IngestOptions::default();
    for (k, v) in kwargs_items(kwargs)? {
        match k.as_str() {
            "verify_checksums" => o.verify_checksums = v.extract()?,
            "verify_keys" => o.verify_keys = v.extract()?,
            "allow_overlap" => o.allow_overlap = v.extract()?,
            "small_file_threshold" => o.small_file_threshold = v.extract()?,
            "ingest_behind" => o.ingest_behind = v.extract()?,
            "fail_if_not_bottommost" => o.fail_if_not_bottommost = v.extract()?,
            "link_files" => o.link_files = v.extract()?,
            "wait_for_l0" => o.wait_for_l0 = v.extract()?,
            "max_l0_wait" => o.max_l0_wait = Duration::from_secs_f64(v.extract::<f64>()?),
            _ => return Err(unexpected_keyword("ingest", &k)),
        }
    }
    Ok(o)
}

fn one_byte(py: Python<'_>, option: &str, v: &Bound<'_, PyAny>) -> PyResult<u8> {
    let s: String = v.extract()?;
    match s.as_bytes() {
        [b] => Ok(*b),
        _ => Err(invalid(
            py,
            format!("{option}: must be one ASCII character, got {s:?}"),
        )),
    }
}

fn size(py: Python<'_>, option: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(n) = v.extract::<u64>() {
        return Ok(n);
    }
    let s: String = v.extract()?;
    sluice_import::parse_size(&s).map_err(|e| invalid(py, format!("{option}: {e}")))
}

fn choice<T: Copy>(
    py: Python<'_>,
    option: &str,
    v: &Bound<'_, PyAny>,
    names: &[(&str, T)],
) -> PyResult<T> {
    let s: String = v.extract()?;
    names
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let all: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            invalid(py, format!("{option}: unknown {s:?} ({})", all.join(", ")))
        })
}

/// `db.import_files(schema, files, **options)`: the defaults of [`ImportOptions`], which are
/// the `sluice import` command's.
pub fn import_options(
    py: Python<'_>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<ImportOptions> {
    let mut o = ImportOptions::default();
    for (k, v) in kwargs_items(kwargs)? {
        match k.as_str() {
            "table" => o.table = v.extract()?,
            "format" if v.is_none() => o.format = None,
            "format" => {
                let formats = [
                    ("csv", Format::Csv),
                    ("tsv", Format::Tsv),
                    ("jsonl", Format::Jsonl),
                    ("parquet", Format::Parquet),
                ];
                o.format = Some(choice(py, "format", &v, &formats)?)
            }
            "header" => o.header = v.extract()?,
            "delimiter" if v.is_none() => o.delimiter = None,
            "delimiter" => o.delimiter = Some(one_byte(py, "delimiter", &v)?),
            "quote" if v.is_none() => o.quote = None,
            "quote" => o.quote = Some(one_byte(py, "quote", &v)?),
            "null" => o.null = v.extract()?,
            "threads" => o.threads = v.extract()?,
            "memory" => o.memory = size(py, "memory", &v)?,
            "tmp_dir" => o.tmp_dir = v.extract::<Option<PathBuf>>()?,
            "max_errors" => o.max_errors = v.extract()?,
            "rejects" => o.rejects = v.extract::<Option<PathBuf>>()?,
            "on_duplicate" => {
                let names = [
                    ("error", OnDuplicate::Error),
                    ("first", OnDuplicate::First),
                    ("last", OnDuplicate::Last),
                ];
                o.on_duplicate = choice(py, "on_duplicate", &v, &names)?
            }
            "target_file_size" => o.target_file_size = size(py, "target_file_size", &v)?,
            "progress" => {
                let names = [
                    ("auto", ProgressMode::Auto),
                    ("plain", ProgressMode::Plain),
                    ("off", ProgressMode::Off),
                ];
                o.progress = choice(py, "progress", &v, &names)?
            }
            "chunk_size" => o.chunk_size = v.extract()?,
            "rewrite_dead" => o.rewrite_dead = v.extract::<Option<f64>>()?,
            "layout" if v.is_none() => o.layout = None,
            "layout" => {
                let s: String = v.extract()?;
                o.layout = Some(Layout::parse(&s).ok_or_else(|| {
                    invalid(py, format!("layout: unknown {s:?} (row, columnar, cells)"))
                })?)
            }
            "resume" => o.resume = v.extract()?,
            "checkpoint_bytes" => o.checkpoint_bytes = size(py, "checkpoint_bytes", &v)?,
            // Tests: fail as if killed right after this many checkpoints.
            "_interrupt_after_checkpoints" => o.interrupt_after_checkpoints = v.extract()?,
            "nice" => o.nice = v.extract()?,
            "idle" => o.idle = v.extract()?,
            "write_rate" if v.is_none() => o.rate_limiter = None,
            "write_rate" => match size(py, "write_rate", &v)? {
                0 => return Err(invalid(py, "write_rate: must be at least 1 byte a second")),
                r => o.rate_limiter = Some(std::sync::Arc::new(sluice::RateLimiter::new(r))),
            },
            "parallel_merge_min_bytes" => {
                o.parallel_merge_min_bytes = size(py, "parallel_merge_min_bytes", &v)?
            }
            _ => return Err(unexpected_keyword("import_files", &k)),
        }
    }
    Ok(o)
}
