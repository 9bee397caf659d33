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
