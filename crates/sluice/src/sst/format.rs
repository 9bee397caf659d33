//! Fixed layouts of RocksDB's block-based table: block handles, block trailers, the footer,
//! checksums and compression framing.
//!
//! ```text
//! [data block 0][trailer] … [data block n][trailer]
//! [filter block][trailer]          (optional, "fullfilter.rocksdb.BuiltinBloomFilter")
//! [properties block][trailer]      ("rocksdb.properties")
//! [index block][trailer]           (separator key -> handle of each data block)
//! [metaindex block][trailer]       (name -> handle of each meta block)
//! [footer: 53 bytes]               (see [`footer`](crate::sst::footer))
//! ```
//! Trailer = 1 compression-type byte + 4-byte checksum over `block bytes ‖ type byte` (from
//! format_version 6 plus a modifier of the block's offset, see
//! [`checksum_modifier`](crate::sst::footer::checksum_modifier)).

use crate::base::coding::{put_varint64, Reader};
use crate::base::crc::mask_crc;

pub use crate::sst::footer::{Footer, BLOCK_BASED_TABLE_MAGIC, FOOTER_LEN};

/// Size of the trailer after every block.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Largest encoding of a block handle (two varint64s).
pub const MAX_HANDLE_LEN: usize = 20;
/// The table format version Sluice writes.
pub const FORMAT_VERSION: u32 = 5;

/// Position and size (excluding the trailer) of a block in a table file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BlockHandle {
    /// Offset of the first byte of the block.
    pub offset: u64,
    /// Length of the block, trailer excluded.
    pub size: u64,
}

impl BlockHandle {
    /// Appends the varint encoding.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }
    /// Decodes a handle from the front of `r`.
    pub fn decode_from(r: &mut Reader<'_>) -> Option<BlockHandle> {
        Some(BlockHandle {
            offset: r.varint64()?,
            size: r.varint64()?,
        })
    }
    /// Decodes a handle that must fill `src` exactly.
    pub fn decode_exact(src: &[u8]) -> Option<BlockHandle> {
        let mut r = Reader::new(src);
        let h = Self::decode_from(&mut r)?;
        r.remaining().is_empty().then_some(h)
    }
}

/// Block checksum algorithm, numbered as in RocksDB's `ChecksumType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ChecksumType {
    /// Masked CRC32c (RocksDB's default).
    Crc32c = 1,
    /// xxHash32 (read only).
    XxHash = 2,
    /// xxHash64, lower 32 bits (read only).
    XxHash64 = 3,
    /// XXH3, lower 32 bits, with the type byte mixed in.
    Xxh3 = 4,
}

impl ChecksumType {
    /// Decodes the footer's checksum byte.
    pub fn from_u8(b: u8) -> Option<ChecksumType> {
        match b {
            1 => Some(ChecksumType::Crc32c),
            2 => Some(ChecksumType::XxHash),
            3 => Some(ChecksumType::XxHash64),
            4 => Some(ChecksumType::Xxh3),
            _ => None,
        }
    }
    /// Lowercase name used by the CLI.
    pub fn name(self) -> &'static str {
        match self {
            ChecksumType::Crc32c => "crc32c",
            ChecksumType::XxHash => "xxhash",
            ChecksumType::XxHash64 => "xxhash64",
            ChecksumType::Xxh3 => "xxh3",
        }
    }
    /// Parses a CLI name (`crc32c` or `xxh3`).
    pub fn from_name(s: &str) -> Option<ChecksumType> {
        match s {
            "crc32c" => Some(ChecksumType::Crc32c),
            "xxhash" => Some(ChecksumType::XxHash),
            "xxhash64" => Some(ChecksumType::XxHash64),
            "xxh3" => Some(ChecksumType::Xxh3),
            _ => None,
        }
    }
}

/// Checksum of `data ‖ last_byte`, as stored in a block trailer.
pub fn block_checksum(ty: ChecksumType, data: &[u8], last_byte: u8) -> u32 {
    match ty {
        ChecksumType::Crc32c => mask_crc(crc32c::crc32c_append(crc32c::crc32c(data), &[last_byte])),
        ChecksumType::XxHash => {
            let mut h = xxhash_rust::xxh32::Xxh32::new(0);
            h.update(data);
            h.update(&[last_byte]);
            h.digest()
        }
        ChecksumType::XxHash64 => {
            let mut h = xxhash_rust::xxh64::Xxh64::new(0);
            h.update(data);
            h.update(&[last_byte]);
            h.digest() as u32
        }
        ChecksumType::Xxh3 => {
            // XXH3 over the block alone, then the type byte mixed in by a multiply; this lets
            // the block be hashed in one pass before its type byte is known.
            const RANDOM_PRIME: u32 = 0x6b90_83d9;
            let v = xxhash_rust::xxh3::xxh3_64(data) as u32;
            v ^ u32::from(last_byte).wrapping_mul(RANDOM_PRIME)
        }
    }
}

/// Block compression, numbered as in RocksDB's `CompressionType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CompressionType {
    /// Stored as is.
    None = 0,
    /// Raw Snappy.
    Snappy = 1,
    /// Raw deflate (read only), varint32 size prefix.
    Zlib = 2,
    /// BZip2 (read only), varint32 size prefix.
    Bzip2 = 3,
    /// LZ4 block format, varint32 size prefix.
    Lz4 = 4,
    /// LZ4HC (decoded like LZ4; read only), varint32 size prefix.
    Lz4hc = 5,
    /// Zstandard frame, varint32 size prefix.
    Zstd = 7,
}

impl CompressionType {
    /// Decodes a trailer's compression byte.
    pub fn from_u8(b: u8) -> Option<CompressionType> {
        match b {
            0 => Some(CompressionType::None),
            1 => Some(CompressionType::Snappy),
            2 => Some(CompressionType::Zlib),
            3 => Some(CompressionType::Bzip2),
            4 => Some(CompressionType::Lz4),
            5 => Some(CompressionType::Lz4hc),
            7 => Some(CompressionType::Zstd),
            _ => None,
        }
    }
    /// The name RocksDB records in the `rocksdb.compression` property.
    pub fn rocksdb_name(self) -> &'static str {
        match self {
            CompressionType::None => "NoCompression",
            CompressionType::Snappy => "Snappy",
            CompressionType::Zlib => "Zlib",
            CompressionType::Bzip2 => "BZip2",
            CompressionType::Lz4 => "LZ4",
            CompressionType::Lz4hc => "LZ4HC",
            CompressionType::Zstd => "ZSTD",
        }
    }
    /// Parses a CLI name: `none`, `snappy`, `lz4`, `zstd`.
    pub fn from_name(s: &str) -> Option<CompressionType> {
        match s {
            "none" => Some(CompressionType::None),
            "snappy" => Some(CompressionType::Snappy),
            "lz4" => Some(CompressionType::Lz4),
            "zstd" => Some(CompressionType::Zstd),
            _ => None,
        }
    }
    /// True for the types Sluice can write.
    pub fn writable(self) -> bool {
        matches!(
            self,
            CompressionType::None
                | CompressionType::Snappy
                | CompressionType::Lz4
                | CompressionType::Zstd
        )
    }
}

/// Which index block layout the table uses (RocksDB's `IndexType`, from the
/// `rocksdb.block.based.table.index.type` property).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexType {
    /// A single index block, binary-searched (0).
    BinarySearch,
    /// A binary-search index block plus prefix hash meta blocks, which Sluice ignores (1).
    HashSearch,
    /// A partitioned index: a top-level block over index partitions (2).
    TwoLevel,
    /// A single index block whose values also hold each block's first key (3).
    BinarySearchWithFirstKey,
}

impl IndexType {
    /// Decodes the property value (fixed32). Errors are reasons.
    pub fn from_property(raw: &[u8]) -> Result<IndexType, String> {
        match crate::base::coding::decode_fixed32(raw).filter(|_| raw.len() == 4) {
            Some(0) => Ok(IndexType::BinarySearch),
            Some(1) => Ok(IndexType::HashSearch),
            Some(2) => Ok(IndexType::TwoLevel),
            Some(3) => Ok(IndexType::BinarySearchWithFirstKey),
            _ => Err(format!("unknown index type {raw:?}")),
        }
    }
}

/// Checks a format_version ≥ 7 `rocksdb.compression` property, which names the compression
/// manager and the compression types the file uses (`BuiltinV2;0407;` = LZ4 and ZSTD): only
/// RocksDB's built-in manager, whose types Sluice decodes by number, is accepted. A custom
/// manager may give its own meaning to a type number, so reading its blocks as built-in ones
/// could misread them.
pub fn check_compression_name(name: &str) -> Result<(), String> {
    let mut fields = name.split(';');
    let manager = fields.next().unwrap_or("");
    let Some(types) = fields.next() else {
        // The legacy form ("LZ4"), which some RocksDB builds still write in format_version 7:
        // built-in compression only.
        return Ok(());
    };
    if !matches!(manager, "" | "BuiltinV2") {
        return Err(format!(
            "compression manager {manager:?} (Sluice reads RocksDB's built-in compression only)"
        ));
    }
    if types.len() % 2 != 0 {
        return Err(format!("compression_name {name:?}: odd-sized type list"));
    }
    for pair in types.as_bytes().chunks(2) {
        let t = std::str::from_utf8(pair)
            .ok()
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .ok_or_else(|| format!("compression_name {name:?}: bad type list"))?;
        if CompressionType::from_u8(t).is_none_or(|c| c == CompressionType::None) {
            return Err(format!("compression type {t:#04x} is not read by Sluice"));
        }
    }
    Ok(())
}

/// Compresses `raw` with `ty` in RocksDB's framing (format_version ≥ 2) into `out`.
/// Returns false if the type cannot be written by Sluice.
pub fn compress_block(ty: CompressionType, raw: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    match ty {
        CompressionType::None => {
            out.extend_from_slice(raw);
            true
        }
        CompressionType::Snappy => {
            out.resize(snap::raw::max_compress_len(raw.len()), 0);
            match snap::raw::Encoder::new().compress(raw, out) {
                Ok(n) => {
                    out.truncate(n);
                    true
                }
                Err(_) => false,
            }
        }
        CompressionType::Lz4 => {
            let Ok(len) = u32::try_from(raw.len()) else {
                return false;
            };
            crate::base::coding::put_varint32(out, len);
            let start = out.len();
            out.resize(
                start + lz4_flex::block::get_maximum_output_size(raw.len()),
                0,
            );
            match lz4_flex::block::compress_into(raw, &mut out[start..]) {
                Ok(n) => {
                    out.truncate(start + n);
                    true
                }
                Err(_) => false,
            }
        }
        CompressionType::Zstd => {
            let Ok(len) = u32::try_from(raw.len()) else {
                return false;
            };
            crate::base::coding::put_varint32(out, len);
            let start = out.len();
            out.resize(start + zstd::zstd_safe::compress_bound(raw.len()), 0);
            match zstd::bulk::compress_to_buffer(raw, &mut out[start..], 3) {
                Ok(n) => {
                    out.truncate(start + n);
                    true
                }
                Err(_) => false,
            }
        }
        _ => false,
    }
}

/// Largest decompressed block Sluice accepts when nothing tighter is known; bounds the memory
/// a corrupt size prefix can ask for.
pub const MAX_DECOMPRESSED_BLOCK: usize = 1 << 30;

/// How many bytes `len` compressed bytes can decompress to, at most, for the codecs whose
/// expansion is bounded by their format: a snappy copy of 64 bytes takes 3 bytes; an LZ4
/// match length grows by 255 per extra length byte.
fn expansion_bound(ty: CompressionType, len: usize) -> usize {
    match ty {
        CompressionType::Snappy => len.saturating_mul(22),
        CompressionType::Lz4 | CompressionType::Lz4hc => len.saturating_mul(255).saturating_add(19),
        _ => usize::MAX,
    }
}

/// How much to reserve for a block said to decompress to `n` bytes from `len`: never more
/// than a few times the input, so that a corrupt size prefix sizes no allocation (the output
/// grows with what the input really decompresses to).
fn reserve_for(n: usize, len: usize) -> usize {
    n.min(len.saturating_mul(4))
}

/// Decompresses a block body of at most `max` decompressed bytes. Memory is bounded by the
/// input: a size prefix larger than the codec can expand the body to is refused, and the
/// codecs without such a bound (zstd, zlib, bzip2) decode as a stream cut at the prefix's
/// size, never into a buffer sized by it. Errors are human-readable reasons.
pub fn decompress_block(ty: CompressionType, data: &[u8], max: usize) -> Result<Vec<u8>, String> {
    let max = max.min(MAX_DECOMPRESSED_BLOCK);
    let check = |n: usize, body: usize| -> Result<(), String> {
        if n > max {
            return Err(format!(
                "decompressed size {n} is larger than the table allows ({max})"
            ));
        }
        if n > expansion_bound(ty, body) {
            return Err(format!(
                "decompressed size {n} is more than {body} compressed bytes can hold"
            ));
        }
        Ok(())
    };
    let sized = |data: &'_ [u8]| -> Result<(usize, usize), String> {
        let (n, used) = crate::base::coding::decode_varint32(data)
            .ok_or_else(|| "bad decompressed-size prefix".to_string())?;
        let n = n as usize;
        check(n, data.len() - used)?;
        Ok((n, used))
    };
    /// Reads all of `r`, which must give exactly `n` bytes.
    fn read_exactly(
        what: &str,
        r: impl std::io::Read,
        n: usize,
        len: usize,
    ) -> Result<Vec<u8>, String> {
        use std::io::Read;
        let mut out = Vec::with_capacity(reserve_for(n, len));
        r.take(n as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("{what}: {e}"))?;
        if out.len() != n {
            return Err(format!("{what}: expected {n} bytes, got {}", out.len()));
        }
        Ok(out)
    }
    match ty {
        CompressionType::None => Ok(data.to_vec()),
        CompressionType::Snappy => {
            let n = snap::raw::decompress_len(data).map_err(|e| format!("snappy: {e}"))?;
            check(n, data.len())?;
            snap::raw::Decoder::new()
                .decompress_vec(data)
                .map_err(|e| format!("snappy: {e}"))
        }
        CompressionType::Lz4 | CompressionType::Lz4hc => {
            let (n, used) = sized(data)?;
            let body = &data[used..];
            let mut out = vec![0u8; n];
            let got = lz4_flex::block::decompress_into(body, &mut out)
                .map_err(|e| format!("lz4: {e}"))?;
            if got != n {
                return Err(format!("lz4: expected {n} bytes, got {got}"));
            }
            Ok(out)
        }
        CompressionType::Zstd => {
            let (n, used) = sized(data)?;
            let body = &data[used..];
            let r =
                zstd::stream::read::Decoder::with_buffer(body).map_err(|e| format!("zstd: {e}"))?;
            read_exactly("zstd", r, n, body.len())
        }
        CompressionType::Zlib => {
            let (n, used) = sized(data)?;
            let body = &data[used..];
            read_exactly(
                "zlib",
                flate2::read::DeflateDecoder::new(body),
                n,
                body.len(),
            )
        }
        CompressionType::Bzip2 => {
            let (n, used) = sized(data)?;
            let body = &data[used..];
            read_exactly("bzip2", bzip2::read::BzDecoder::new(body), n, body.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the table_reader fuzz target: a snappy block whose size preamble said
    /// 1,017,639,004 bytes was allocated before a byte of it was decoded. A size past what
    /// the body can expand to is refused, for each codec whose expansion is bounded.
    #[test]
    fn a_size_past_what_the_body_can_hold_is_refused() {
        for ty in [CompressionType::Snappy, CompressionType::Lz4] {
            let mut block = Vec::new();
            crate::base::coding::put_varint32(&mut block, 1_017_639_004);
            block.extend_from_slice(&[0x11; 1000]);
            let e = decompress_block(ty, &block, MAX_DECOMPRESSED_BLOCK).unwrap_err();
            assert!(e.contains("compressed bytes can hold"), "{ty:?}: {e}");
        }
        // Zstd, zlib and bzip2 bodies decode as a stream cut at the claimed size: the claim
        // sizes nothing, and a body that does not decode to it is refused.
        for ty in [
            CompressionType::Zstd,
            CompressionType::Zlib,
            CompressionType::Bzip2,
        ] {
            let mut block = Vec::new();
            crate::base::coding::put_varint32(&mut block, 1 << 29);
            block.extend_from_slice(&[0x11; 1000]);
            assert!(
                decompress_block(ty, &block, MAX_DECOMPRESSED_BLOCK).is_err(),
                "{ty:?}"
            );
        }
    }

    #[test]
    fn every_writable_compression_roundtrips() {
        let raw: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for ty in [
            CompressionType::None,
            CompressionType::Snappy,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ] {
            let mut out = Vec::new();
            assert!(compress_block(ty, &raw, &mut out));
            assert_eq!(
                decompress_block(ty, &out, MAX_DECOMPRESSED_BLOCK).unwrap(),
                raw,
                "{ty:?}"
            );
        }
    }

    #[test]
    fn format_version_7_compression_names() {
        // As RocksDB ≥ 10.4 writes them (table_test.cc, db_table_properties_test.cc).
        for ok in [
            "BuiltinV2;01;",
            "BuiltinV2;0407;",
            ";;",
            "BuiltinV2;;",
            "ZSTD",
            "LZ4",
        ] {
            assert_eq!(check_compression_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "Custom;80;",
            "BuiltinV2;ff;",
            "BuiltinV2;0;",
            "BuiltinV2;00;",
            "Mine;01;",
        ] {
            assert!(check_compression_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn decompression_of_garbage_is_an_error() {
        let junk = [0xffu8, 0xff, 0xff, 0x7f, 1, 2, 3];
        for ty in [
            CompressionType::Snappy,
            CompressionType::Lz4,
            CompressionType::Zstd,
            CompressionType::Zlib,
            CompressionType::Bzip2,
        ] {
            assert!(
                decompress_block(ty, &junk, MAX_DECOMPRESSED_BLOCK).is_err(),
                "{ty:?}"
            );
        }
    }
}
