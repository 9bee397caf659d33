//! `sluice sst …`: build an SST from `HEXKEY<TAB>HEXVALUE` lines, dump it in the same format,
//! verify it, and print its properties.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::args::CmdResult;
use crate::text::{json_field, Enc};
use sluice::key::{parse_internal_key, ValueKind};
use sluice::sst::properties::TableProperties;
use sluice::{
    ChecksumType, CompressionType, InternalIterator, IterBounds, SstWriter, Table, TableOptions,
    TableReadOptions,
};

/// Subcommands of `sluice sst`.
#[derive(Subcommand)]
pub enum SstCommand {
    /// Build an SST from stdin lines `HEXKEY<TAB>HEXVALUE` (a line `HEXKEY` alone is a
    /// deletion), keys strictly increasing.
    Build(BuildArgs),
    /// Print every entry as `HEXKEY<TAB>HEXVALUE` (deletions as `HEXKEY` alone).
    Dump(DumpArgs),
    /// Verify every checksum and the key order; exit 2 naming the offset on failure (a
    /// valid feature this build does not read is reported as UNSUPPORTED, also exit 2).
    Check {
        /// The SST file.
        file: PathBuf,
    },
    /// Print every block in file order: data blocks (entries, first and last key), meta
    /// blocks, metaindex, index, footer.
    Layout {
        /// The SST file.
        file: PathBuf,
        /// One JSON object per block.
        #[arg(long)]
        json: bool,
    },
    /// Print the table properties and footer, and the smallest and largest key.
    Props {
        /// The SST file.
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Arguments of `sluice sst build`.
#[derive(Args)]
pub struct BuildArgs {
    /// Where to write the SST.
    #[arg(long)]
    out: PathBuf,
    /// Data block compression: none, snappy, lz4 or zstd.
    #[arg(long, default_value = "none")]
    compression: String,
    /// Block checksum: crc32c or xxh3.
    #[arg(long, default_value = "crc32c")]
    checksum: String,
    /// Bloom filter bits per key; 0 writes no filter.
    #[arg(long, default_value_t = 10.0)]
    bloom_bits: f64,
    /// Target data block size in bytes.
    #[arg(long, default_value_t = 4096)]
    block_size: usize,
    /// Entries between restart points.
    #[arg(long, default_value_t = 16)]
    restart_interval: usize,
    /// Read keys and values as escaped text (`KEY<TAB>VALUE`, the escapes of `sst dump
    /// --text`: `\\`, `\t`, `\n`, `\r`, `\xNN`) instead of hex.
    #[arg(long)]
    text: bool,
}

/// Arguments of `sluice sst dump`.
#[derive(Args)]
pub struct DumpArgs {
    /// The SST file.
    file: PathBuf,
    /// Add the sequence number and kind: `HEXKEY<TAB>HEXVALUE<TAB>SEQNO<TAB>KIND`.
    #[arg(long)]
    internal: bool,
    /// Print keys and values as text instead of hex: UTF-8 as is, reversible escapes
    /// (`\\`, `\t`, `\n`, `\r`, `\xNN`) for the rest, as `sst build --text` reads them.
    #[arg(long)]
    text: bool,
}

/// Runs one `sluice sst` subcommand.
pub fn run(cmd: SstCommand) -> CmdResult {
    match cmd {
        SstCommand::Build(a) => build(a),
        SstCommand::Dump(a) => dump(a),
        SstCommand::Check { file } => check(file),
        SstCommand::Props { file, json } => props(file, json),
        SstCommand::Layout { file, json } => layout(file, json),
    }
}

fn build(a: BuildArgs) -> CmdResult {
    let compression = CompressionType::from_name(&a.compression).ok_or_else(|| {
        format!(
            "unknown compression {:?} (expected none, snappy, lz4 or zstd)",
            a.compression
        )
    })?;
    let checksum = match a.checksum.as_str() {
        "crc32c" => ChecksumType::Crc32c,
        "xxh3" => ChecksumType::Xxh3,
        other => {
            return Err(format!("unknown checksum {other:?} (expected crc32c or xxh3)").into())
        }
    };
    let opts = TableOptions {
        block_size: a.block_size,
        restart_interval: a.restart_interval,
        compression,
        checksum,
        bloom_bits_per_key: (a.bloom_bits > 0.0).then_some(a.bloom_bits),
    };
    let mut w = SstWriter::create(&a.out, opts)?;
    let stdin = std::io::stdin().lock();
    for (i, line) in stdin.split(b'\n').enumerate() {
        let lineno = i + 1;
        let mut line = line?;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        let enc = if a.text { Enc::Text } else { Enc::Hex };
        let decode = |field: &[u8], what: &str| -> Result<Vec<u8>, String> {
            enc.field(field)
                .map_err(|e| format!("<stdin>:{lineno}: {what} is {e}"))
        };
        let mut parts = line.splitn(2, |&b| b == b'\t');
        let key = decode(parts.next().unwrap_or_default(), "key")?;
        let r = match parts.next() {
            Some(v) => w.put(&key, &decode(v, "value")?),
            None => w.delete(&key),
        };
        r.map_err(|e| format!("<stdin>:{lineno}: {e}"))?;
    }
    let info = w.finish()?;
    eprintln!(
        "wrote {}: {} entries, {} bytes",
        info.path.display(),
        info.entries,
        info.file_size
    );
    Ok(ExitCode::SUCCESS)
}

fn render(b: &[u8], text: bool) -> String {
    if text {
        Enc::Text.show(b)
    } else {
        hex::encode(b)
    }
}

fn dump(a: DumpArgs) -> CmdResult {
    let t = Table::open_path(&a.file, &TableReadOptions::new())?;
    let mut it = t.iter(IterBounds::default());
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    it.seek_to_first();
    while it.valid() {
        let p = parse_internal_key(it.key())
            .ok_or_else(|| format!("{}: malformed internal key", a.file.display()))?;
        let k = render(p.user_key, a.text);
        match (a.internal, p.kind) {
            (false, ValueKind::Deletion) => writeln!(out, "{k}")?,
            (false, _) => writeln!(out, "{k}\t{}", render(it.value(), a.text))?,
            (true, kind) => writeln!(
                out,
                "{k}\t{}\t{}\t{}",
                render(it.value(), a.text),
                p.seqno,
                kind.name()
            )?,
        }
        it.next();
    }
    it.status()?;
    if a.internal {
        // Range deletions live in their own block: START<TAB>END<TAB>SEQNO<TAB>rangedel.
        for t in t.range_deletions() {
            writeln!(
                out,
                "{}\t{}\t{}\t{}",
                render(&t.start, a.text),
                render(&t.end, a.text),
                t.seqno,
                ValueKind::RangeDeletion.name()
            )?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn check(file: PathBuf) -> CmdResult {
    let t = match Table::open_path(&file, &TableReadOptions::new()) {
        Ok(t) => t,
        Err(e @ sluice::Error::NotSupported(_)) => {
            // Not damage: a valid feature this build does not read.
            eprintln!("UNSUPPORTED: {e}");
            return Ok(ExitCode::from(2));
        }
        Err(e) => {
            eprintln!("FAILED: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    match t.verify() {
        Ok(n) => {
            println!(
                "OK: {} entries in {} data blocks, {} bytes, checksum {}",
                n,
                t.properties().num_data_blocks,
                t.file_size(),
                t.footer().checksum.name()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("FAILED: {e}");
            Ok(ExitCode::from(2))
        }
    }
}

fn props(file: PathBuf, json: bool) -> CmdResult {
    let t = Table::open_path(&file, &TableReadOptions::new())?;
    let (smallest, largest) = key_range(&t)?;
    let p = t.properties();
    let f = t.footer();
    if json {
        let mut m = serde_json::Map::new();
        m.insert("file".into(), file.display().to_string().into());
        m.insert("file_size".into(), t.file_size().into());
        m.insert("format_version".into(), f.format_version.into());
        m.insert("checksum".into(), f.checksum.name().into());
        m.insert("has_filter".into(), t.has_filter().into());
        if let (Some(lo), Some(hi)) = (&smallest, &largest) {
            json_field(&mut m, "smallest_key", lo, false);
            json_field(&mut m, "largest_key", hi, false);
        }
        let mut props = serde_json::Map::new();
        for (k, v) in &p.raw {
            let shown = TableProperties::display_value(k, v);
            let value = shown
                .parse::<u64>()
                .map(serde_json::Value::from)
                .unwrap_or_else(|_| shown.into());
            props.insert(k.clone(), value);
        }
        m.insert("properties".into(), props.into());
        println!("{}", serde_json::to_string_pretty(&m)?);
    } else {
        println!("file: {}", file.display());
        println!("file size: {}", t.file_size());
        println!("format version: {}", f.format_version);
        println!("checksum: {}", f.checksum.name());
        println!("metaindex: {} blocks", t.metaindex().len());
        if let (Some(lo), Some(hi)) = (&smallest, &largest) {
            println!("smallest key: {}", Enc::Text.show(lo));
            println!("largest key: {}", Enc::Text.show(hi));
        }
        for (k, v) in &p.raw {
            println!("{k}: {}", TableProperties::display_value(k, v));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A table's smallest and largest user key, if it has any.
type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The smallest and largest user key of a table's entries and range deletions (an empty
/// table has neither).
fn key_range(t: &std::sync::Arc<Table>) -> Result<KeyRange, sluice::Error> {
    let mut it = t.iter(IterBounds::default());
    let mut lo: Option<Vec<u8>> = None;
    let mut hi: Option<Vec<u8>> = None;
    it.seek_to_first();
    if it.valid() {
        lo = parse_internal_key(it.key()).map(|p| p.user_key.to_vec());
    }
    it.seek_to_last();
    if it.valid() {
        hi = parse_internal_key(it.key()).map(|p| p.user_key.to_vec());
    }
    it.status()?;
    for r in t.range_deletions() {
        if lo.as_ref().is_none_or(|l| r.start < *l) {
            lo = Some(r.start.clone());
        }
        if hi.as_ref().is_none_or(|h| r.end > *h) {
            hi = Some(r.end.clone());
        }
    }
    Ok((lo, hi))
}

/// One block of `sst layout`.
struct BlockRow {
    offset: u64,
    /// On-disk size, trailer included (the footer: its own length).
    size: u64,
    kind: String,
    /// Data blocks: entries, first and last user key.
    data: Option<(u64, Vec<u8>, Vec<u8>)>,
}

fn layout(file: PathBuf, json: bool) -> CmdResult {
    use sluice::sst::block::KeyOrder;
    use sluice::sst::format::{BLOCK_TRAILER_LEN, FOOTER_LEN};
    let t = Table::open_path(&file, &TableReadOptions::new())?;
    let trailer = BLOCK_TRAILER_LEN as u64;
    let mut rows = Vec::new();
    for (i, h) in t.data_block_handles()?.into_iter().enumerate() {
        let b = t.data_block(h)?;
        let mut it = b.iter(KeyOrder::Internal);
        it.seek_to_first();
        let (mut n, mut first, mut last) = (0u64, Vec::new(), Vec::new());
        while it.valid() {
            let user = parse_internal_key(it.key())
                .map(|p| p.user_key.to_vec())
                .ok_or_else(|| {
                    format!(
                        "{}: data block at offset {} holds a malformed key",
                        file.display(),
                        h.offset
                    )
                })?;
            if n == 0 {
                first = user;
            } else {
                last = user;
            }
            n += 1;
            it.next();
        }
        if let Some(e) = it.error() {
            return Err(
                sluice::Error::corruption(&file, h.offset, format!("data block: {e}")).into(),
            );
        }
        if n == 1 {
            last = first.clone();
        }
        rows.push(BlockRow {
            offset: h.offset,
            size: h.size + trailer,
            kind: format!("data #{i}"),
            data: Some((n, first, last)),
        });
    }
    for (name, h) in t.metaindex() {
        rows.push(BlockRow {
            offset: h.offset,
            size: h.size + trailer,
            kind: format!("meta {name}"),
            data: None,
        });
    }
    let f = t.footer();
    rows.push(BlockRow {
        offset: f.metaindex.offset,
        size: f.metaindex.size + trailer,
        kind: "metaindex".into(),
        data: None,
    });
    let ih = t.index_handle();
    if !rows.iter().any(|r| r.offset == ih.offset) {
        rows.push(BlockRow {
            offset: ih.offset,
            size: ih.size + trailer,
            kind: "index".into(),
            data: None,
        });
    }
    rows.push(BlockRow {
        offset: t.file_size().saturating_sub(FOOTER_LEN as u64),
        size: FOOTER_LEN as u64,
        kind: "footer".into(),
        data: None,
    });
    rows.sort_by_key(|r| r.offset);
    let mut out = BufWriter::new(std::io::stdout().lock());
    if !json {
        writeln!(out, "offset\tsize\tblock\tentries\tfirst key\tlast key")?;
    }
    for r in &rows {
        if json {
            let mut m = serde_json::Map::new();
            m.insert("offset".into(), r.offset.into());
            m.insert("size".into(), r.size.into());
            m.insert("block".into(), r.kind.clone().into());
            if let Some((n, first, last)) = &r.data {
                m.insert("entries".into(), (*n).into());
                json_field(&mut m, "first_key", first, false);
                json_field(&mut m, "last_key", last, false);
            }
            writeln!(out, "{}", serde_json::Value::Object(m))?;
        } else if let Some((n, first, last)) = &r.data {
            writeln!(
                out,
                "{}\t{}\t{}\t{n}\t{}\t{}",
                r.offset,
                r.size,
                r.kind,
                Enc::Text.show(first),
                Enc::Text.show(last)
            )?;
        } else {
            writeln!(out, "{}\t{}\t{}", r.offset, r.size, r.kind)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
