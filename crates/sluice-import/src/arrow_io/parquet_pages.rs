//! The pages of a Parquet file checked before its decoder sees them.
//!
//! parquet-rs sizes a dictionary from its page header's value count before decoding a value:
//! `DictDecoder::set_dict` resizes its dictionary to `num_values` values (a 4-byte value
//! each for INT32, 32 bytes for a byte array), and the byte-view reader reserves 16 bytes a
//! value, whatever the page holds. A damaged header that claims 1,206,910,975 values in an
//! 80-byte page made it reserve 4.8 GB. A dictionary page is always PLAIN-encoded (the
//! decoders refuse any other encoding), so each of its values takes at least a fixed number
//! of bytes of the decoded page: a page that claims more values than its bytes hold is
//! refused here, naming the row group, the column and the page's offset.
//!
//! The pages are walked with parquet's own page reader, as the import's decoder walks them:
//! data pages by their headers alone (`peek_next_page`, `skip_next_page`); a dictionary page
//! (at most one a column chunk) is read and decompressed, as the decoder will read it, to know
//! how many bytes it holds. A data page's value count is not bounded by its size (a run of
//! NULLs or of one dictionary index takes a few bytes for any number of values) and the
//! decoders read data pages a batch at a time, so it is not checked.
//!
//! Before that, every page header of a selected column chunk is read on its own (the thrift
//! compact protocol, fields 2 and 3 of `PageHeader`; parquet-rs keeps its header type to
//! itself): parquet-rs reserves a page's claimed decompressed size before it decompresses
//! (up to 2 GiB from an `i32`), so a page must fit in its column chunk and claim at most
//! [`MAX_EXPANSION`] times its stored bytes or [`PAGE_FLOOR`] decompressed, whichever is
//! more. Memory is then bounded by the input (and the floor), not by a length in it.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parquet::arrow::ProjectionMask;
use parquet::basic::Type as PhysicalType;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::serialized_reader::SerializedPageReader;

use crate::ImportError;

/// The most a page may claim to expand by decompression: deflate's limit (1032:1). Other
/// codecs can go further (zstd's RLE blocks); a page doing so must stay under [`PAGE_FLOOR`].
pub const MAX_EXPANSION: u64 = 1032;

/// Decompressed bytes any page may claim, whatever its stored size (writers cut pages at
/// about 1 MiB by default; DuckDB's largest are about 100 MB).
pub const PAGE_FLOOR: u64 = 120 << 20;

/// The sizes a page header states.
struct PageSizes {
    /// Bytes of the header itself.
    header: u64,
    compressed: u64,
    uncompressed: u64,
}

/// Reads the page header at `at` of `file`, which must end by `end`.
fn page_sizes(file: &File, at: u64, end: u64) -> Result<PageSizes, String> {
    use std::io::{Read, Seek, SeekFrom};
    use thrift::protocol::{TCompactInputProtocol, TInputProtocol, TType};

    /// Counts the bytes the protocol took (the buffer below it reads ahead).
    struct Counted<'a, R> {
        inner: R,
        taken: &'a std::cell::Cell<u64>,
    }
    impl<R: Read> Read for Counted<'_, R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.taken.set(self.taken.get() + n as u64);
            Ok(n)
        }
    }
    let mut f = file;
    f.seek(SeekFrom::Start(at)).map_err(|e| e.to_string())?;
    let taken = std::cell::Cell::new(0);
    let reader = Counted {
        inner: std::io::BufReader::with_capacity(512, f.take(end.saturating_sub(at))),
        taken: &taken,
    };
    let mut proto = TCompactInputProtocol::new(reader);
    let bad = |e: thrift::Error| format!("the page header at offset {at} is unreadable: {e}");
    let (mut compressed, mut uncompressed) = (None, None);
    proto.read_struct_begin().map_err(bad)?;
    loop {
        let field = proto.read_field_begin().map_err(bad)?;
        if field.field_type == TType::Stop {
            break;
        }
        match (field.id, field.field_type) {
            (Some(2), TType::I32) => uncompressed = Some(proto.read_i32().map_err(bad)?),
            (Some(3), TType::I32) => compressed = Some(proto.read_i32().map_err(bad)?),
            (_, t) => proto.skip(t).map_err(bad)?,
        }
        proto.read_field_end().map_err(bad)?;
    }
    proto.read_struct_end().map_err(bad)?;
    let (Some(c), Some(u)) = (compressed, uncompressed) else {
        return Err(format!(
            "the page header at offset {at} states no page size"
        ));
    };
    let (Ok(c), Ok(u)) = (u64::try_from(c), u64::try_from(u)) else {
        return Err(format!(
            "the page header at offset {at} states a negative page size"
        ));
    };
    Ok(PageSizes {
        header: taken.get(),
        compressed: c,
        uncompressed: u,
    })
}

/// The file, remembering where the page reader read first since [`Tracked::mark`]: the
/// start of the page it goes on to read (its header, or its location in the page index).
struct Tracked {
    file: File,
    first: AtomicU64,
}

impl Tracked {
    fn mark(&self) {
        self.first.store(u64::MAX, Ordering::Relaxed);
    }

    fn touched(&self, start: u64) {
        let _ = self
            .first
            .compare_exchange(u64::MAX, start, Ordering::Relaxed, Ordering::Relaxed);
    }

    fn first(&self) -> Option<u64> {
        Some(self.first.load(Ordering::Relaxed)).filter(|&at| at != u64::MAX)
    }
}

impl Length for Tracked {
    fn len(&self) -> u64 {
        self.file.len()
    }
}

impl ChunkReader for Tracked {
    type T = <File as ChunkReader>::T;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.touched(start);
        self.file.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.touched(start);
        self.file.get_bytes(start, length)
    }
}

/// Checks the size every page header of `chunk` states (see the module's documentation):
/// walked header to header from the chunk's start, or, with a page index, the header at each
/// location it gives (and the dictionary page before them).
fn check_page_sizes(
    file: &File,
    chunk: &parquet::file::metadata::ColumnChunkMetaData,
    locations: Option<&[parquet::file::page_index::offset_index::PageLocation]>,
) -> Result<(), String> {
    let (start, len) = chunk.byte_range();
    let end = start
        .checked_add(len)
        .filter(|&e| e <= file.len())
        .ok_or_else(|| {
            format!("the column chunk at offset {start} of {len} bytes ends past the file")
        })?;
    let check = |at: u64| -> Result<u64, String> {
        let p = page_sizes(file, at, end)?;
        let body = at + p.header;
        if p.compressed > end - body {
            return Err(format!(
                "the page at offset {at} claims {} stored bytes, past its column chunk's end \
                 at {end}",
                p.compressed
            ));
        }
        let most = p.compressed.saturating_mul(MAX_EXPANSION).max(PAGE_FLOOR);
        if p.uncompressed > most {
            return Err(format!(
                "the page at offset {at} claims {} bytes decompressed from {} (more than \
                 {MAX_EXPANSION}x and over {PAGE_FLOOR} bytes)",
                p.uncompressed, p.compressed
            ));
        }
        Ok(body + p.compressed)
    };
    let first_located = locations
        .and_then(|l| l.first())
        .and_then(|l| u64::try_from(l.offset).ok());
    let mut at = start;
    while at < first_located.unwrap_or(end).min(end) {
        at = check(at)?;
    }
    for l in locations.unwrap_or_default() {
        let at = u64::try_from(l.offset)
            .ok()
            .filter(|&o| o >= start && o < end)
            .ok_or_else(|| {
                format!(
                    "the page index locates a page at {} outside its chunk",
                    l.offset
                )
            })?;
        check(at)?;
    }
    Ok(())
}

/// The fewest bits one PLAIN-encoded value of a column takes: a bit for a boolean, the
/// value's width for a fixed-size type, the 4-byte length before a byte array.
fn min_value_bits(physical: PhysicalType, type_length: i32) -> u64 {
    match physical {
        PhysicalType::BOOLEAN => 1,
        PhysicalType::INT32 | PhysicalType::FLOAT | PhysicalType::BYTE_ARRAY => 32,
        PhysicalType::INT64 | PhysicalType::DOUBLE => 64,
        PhysicalType::INT96 => 96,
        PhysicalType::FIXED_LEN_BYTE_ARRAY => 8 * u64::try_from(type_length).unwrap_or(0),
    }
}

/// Walks the pages of every column chunk of `file` that `mask` selects, as the import's
/// decoder will, and refuses a dictionary page that claims more values than its decoded bytes
/// can hold (see the module's documentation). An error names `path`, the row group, the
/// column and the page's offset; a page the page reader cannot read is an error naming the
/// row group and column.
pub fn check_pages(
    path: &Path,
    file: File,
    metadata: &ParquetMetaData,
    mask: &ProjectionMask,
) -> Result<(), ImportError> {
    let reader = Arc::new(Tracked {
        file,
        first: AtomicU64::new(u64::MAX),
    });
    let offset_index = metadata.offset_index();
    for (g, group) in metadata.row_groups().iter().enumerate() {
        for (c, chunk) in group.columns().iter().enumerate() {
            if !mask.leaf_included(c) {
                continue;
            }
            let column = chunk.column_path().string();
            let fail = |why: String| {
                ImportError::InvalidArgument(format!(
                    "{}: not a readable Parquet file: row group {g}, column {column}: {why}",
                    path.display()
                ))
            };
            // The page index, when the metadata has one, is what the decoder walks by.
            let locations = offset_index
                .and_then(|i| i.get(g))
                .and_then(|i| i.get(c))
                .map(|i| i.page_locations.clone());
            check_page_sizes(&reader.file, chunk, locations.as_deref()).map_err(&fail)?;
            let rows = usize::try_from(group.num_rows()).unwrap_or(0);
            let mut pages = SerializedPageReader::new(reader.clone(), chunk, rows, locations)
                .map_err(|e| fail(e.to_string()))?;
            let bits = min_value_bits(chunk.column_type(), chunk.column_descr().type_length());
            loop {
                reader.mark();
                let Some(next) = pages.peek_next_page().map_err(|e| fail(e.to_string()))? else {
                    break;
                };
                if !next.is_dict {
                    pages.skip_next_page().map_err(|e| fail(e.to_string()))?;
                    continue;
                }
                let page = pages.get_next_page().map_err(|e| fail(e.to_string()))?;
                let at = reader.first().unwrap_or_else(|| chunk.byte_range().0);
                if let Some(Page::DictionaryPage {
                    buf, num_values, ..
                }) = page
                {
                    let holds = buf.len() as u64 * 8 / bits.max(1);
                    if bits > 0 && u64::from(num_values) > holds {
                        return Err(fail(format!(
                            "the dictionary page at offset {at} claims {num_values} values, \
                             more than its {} bytes hold ({holds})",
                            buf.len()
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}
