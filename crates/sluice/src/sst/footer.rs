//! The table footer (the last [`FOOTER_LEN`] bytes) and the context-aware block checksums of
//! format_version ≥ 6.
//!
//! ```text
//! format_version 1..=5:
//!   checksum type (1) ‖ metaindex handle ‖ index handle ‖ zero padding to 41 bytes
//!   ‖ format_version (fixed32) ‖ magic (fixed64)
//! format_version 6 and 7:
//!   checksum type (1) ‖ extended magic 3e 00 7a 00 (4) ‖ footer checksum (fixed32)
//!   ‖ base context checksum (fixed32) ‖ metaindex size (fixed32) ‖ 16 unchecked bytes
//!   ‖ 8 reserved bytes that must be zero ‖ format_version (fixed32) ‖ magic (fixed64)
//! ```
//! Invariants:
//! 1. A format_version ≥ 6 footer is trusted only after its own checksum (over the 53 bytes
//!    with the checksum field zeroed, plus the context modifier of the footer's offset) matches.
//! 2. From format_version 6 the metaindex lies directly before the footer (its handle is
//!    derived from its size), and the index handle is not in the footer but in the metaindex
//!    under [`INDEX_META_KEY`].
//! 3. From format_version 6 every stored block checksum is the plain checksum *plus*
//!    [`checksum_modifier`]`(base, block offset)` (wrapping), so a block that is intact but
//!    read from the wrong place fails its check.

use crate::base::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64};
use crate::sst::format::{
    block_checksum, BlockHandle, ChecksumType, BLOCK_TRAILER_LEN, MAX_HANDLE_LEN,
};

/// Magic number at the end of every block-based table.
pub const BLOCK_BASED_TABLE_MAGIC: u64 = 0x88e2_41b7_85f4_cff7;
/// Size of the footer for every format version Sluice reads.
pub const FOOTER_LEN: usize = 53;
/// Metaindex key of the index block (format_version ≥ 6).
pub const INDEX_META_KEY: &str = "rocksdb.index";
/// Newest format version Sluice reads.
pub const MAX_READ_FORMAT_VERSION: u32 = 7;

const EXTENDED_MAGIC: [u8; 4] = [0x3e, 0x00, 0x7a, 0x00];
/// Offset of the checksum field of a format_version ≥ 6 footer.
const FOOTER_CHECKSUM_AT: usize = 5;

/// The value added to a block's checksum in a format_version ≥ 6 table: the file's base context
/// checksum mixed with the block's offset. Zero when `base` is zero (no context).
pub fn checksum_modifier(base: u32, offset: u64) -> u32 {
    if base == 0 {
        return 0;
    }
    base ^ (offset as u32).wrapping_add((offset >> 32) as u32)
}

/// The checksum stored in the trailer of the block at `offset` (block bytes, then the trailer's
/// type byte), context included when `base` is non-zero.
pub fn stored_block_checksum(
    ty: ChecksumType,
    base: u32,
    offset: u64,
    data: &[u8],
    type_byte: u8,
) -> u32 {
    block_checksum(ty, data, type_byte).wrapping_add(checksum_modifier(base, offset))
}

/// The decoded footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Checksum algorithm of every block (and, from format_version 6, of the footer).
    pub checksum: ChecksumType,
    /// Where the metaindex block is.
    pub metaindex: BlockHandle,
    /// Where the index block is; `None` from format_version 6 (it is in the metaindex).
    pub index: Option<BlockHandle>,
    /// Table format version.
    pub format_version: u32,
    /// Base of the per-block checksum context (format_version ≥ 6; zero before).
    pub base_context_checksum: u32,
}

impl Footer {
    /// Encodes a footer (exactly [`FOOTER_LEN`] bytes) that starts at `footer_offset`.
    /// Format versions before 6 need `index`; 6 and later need a non-zero
    /// `base_context_checksum` and a metaindex that ends right before the footer.
    pub fn encode(&self, footer_offset: u64) -> Vec<u8> {
        let mut b = Vec::with_capacity(FOOTER_LEN);
        b.push(self.checksum as u8);
        if self.format_version >= 6 {
            debug_assert_ne!(self.base_context_checksum, 0);
            debug_assert_eq!(
                self.metaindex.offset + self.metaindex.size + BLOCK_TRAILER_LEN as u64,
                footer_offset
            );
            b.extend_from_slice(&EXTENDED_MAGIC);
            put_fixed32(&mut b, 0);
            put_fixed32(&mut b, self.base_context_checksum);
            put_fixed32(&mut b, self.metaindex.size as u32);
        } else {
            self.metaindex.encode_to(&mut b);
            self.index.unwrap_or_default().encode_to(&mut b);
        }
        b.resize(1 + 2 * MAX_HANDLE_LEN, 0);
        put_fixed32(&mut b, self.format_version);
        put_fixed64(&mut b, BLOCK_BASED_TABLE_MAGIC);
        debug_assert_eq!(b.len(), FOOTER_LEN);
        if self.format_version >= 6 {
            let sum = footer_checksum(self.checksum, &b)
                .wrapping_add(checksum_modifier(self.base_context_checksum, footer_offset));
            b[FOOTER_CHECKSUM_AT..FOOTER_CHECKSUM_AT + 4].copy_from_slice(&sum.to_le_bytes());
        }
        b
    }

    /// Decodes the last [`FOOTER_LEN`] bytes of a table, which start at `footer_offset` in the
    /// file. Errors are reasons for a `Corruption`, with offsets relative to the footer start.
    pub fn decode(src: &[u8], footer_offset: u64) -> Result<Footer, (u64, String)> {
        if src.len() != FOOTER_LEN {
            return Err((
                0,
                format!("footer must be {FOOTER_LEN} bytes, got {}", src.len()),
            ));
        }
        let magic = decode_fixed64(&src[45..]).unwrap_or(0);
        if magic != BLOCK_BASED_TABLE_MAGIC {
            return Err((
                45,
                format!("bad table magic number: expected {BLOCK_BASED_TABLE_MAGIC:#018x}, found {magic:#018x}"),
            ));
        }
        let format_version = decode_fixed32(&src[41..]).unwrap_or(0);
        if !(1..=MAX_READ_FORMAT_VERSION).contains(&format_version) {
            return Err((
                41,
                format!("unsupported format_version {format_version} (Sluice reads 1 to {MAX_READ_FORMAT_VERSION})"),
            ));
        }
        let checksum = ChecksumType::from_u8(src[0]).ok_or_else(|| {
            let why = if src[0] == 0 {
                "checksum type 0 (kNoChecksum): Sluice reads only checksummed tables".to_string()
            } else {
                format!("unknown checksum type {}", src[0])
            };
            (0, why)
        })?;
        if format_version >= 6 {
            return Self::decode_v6(src, footer_offset, checksum, format_version);
        }
        let mut r = crate::base::coding::Reader::new(&src[1..41]);
        let metaindex =
            BlockHandle::decode_from(&mut r).ok_or((1, "bad metaindex handle".to_string()))?;
        let index = BlockHandle::decode_from(&mut r).ok_or((1, "bad index handle".to_string()))?;
        Ok(Footer {
            checksum,
            metaindex,
            index: Some(index),
            format_version,
            base_context_checksum: 0,
        })
    }

    fn decode_v6(
        src: &[u8],
        footer_offset: u64,
        checksum: ChecksumType,
        format_version: u32,
    ) -> Result<Footer, (u64, String)> {
        if src[1..5] != EXTENDED_MAGIC {
            return Err((
                1,
                format!(
                    "bad extended magic {:02x?} in a format_version {format_version} footer",
                    &src[1..5]
                ),
            ));
        }
        let field = |at: usize| decode_fixed32(&src[at..]).unwrap_or(0);
        let stored = field(FOOTER_CHECKSUM_AT);
        let base = field(9);
        if base == 0 {
            return Err((9, "footer has a zero base context checksum".to_string()));
        }
        let computed =
            footer_checksum(checksum, src).wrapping_add(checksum_modifier(base, footer_offset));
        if stored != computed {
            return Err((
                FOOTER_CHECKSUM_AT as u64,
                format!(
                    "footer checksum mismatch ({}): stored {stored:#010x}, computed {computed:#010x}",
                    checksum.name()
                ),
            ));
        }
        if src[33..41].iter().any(|&b| b != 0) {
            return Err((
                33,
                "footer uses a reserved feature that this version of Sluice cannot read"
                    .to_string(),
            ));
        }
        let size = u64::from(field(13));
        let offset = footer_offset
            .checked_sub(BLOCK_TRAILER_LEN as u64)
            .and_then(|end| end.checked_sub(size))
            .ok_or_else(|| {
                (
                    13,
                    format!("metaindex of {size} bytes does not fit before the footer"),
                )
            })?;
        Ok(Footer {
            checksum,
            metaindex: BlockHandle { offset, size },
            index: None,
            format_version,
            base_context_checksum: base,
        })
    }
}

/// The footer's own checksum: over all its bytes with the checksum field taken as zero.
fn footer_checksum(ty: ChecksumType, footer: &[u8]) -> u32 {
    let mut copy = [0u8; FOOTER_LEN];
    copy.copy_from_slice(footer);
    copy[FOOTER_CHECKSUM_AT..FOOTER_CHECKSUM_AT + 4].fill(0);
    block_checksum(ty, &copy[..FOOTER_LEN - 1], copy[FOOTER_LEN - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v5_footer_roundtrip_and_magic_check() {
        let f = Footer {
            checksum: ChecksumType::Xxh3,
            metaindex: BlockHandle {
                offset: 1000,
                size: 77,
            },
            index: Some(BlockHandle {
                offset: 1082,
                size: 300,
            }),
            format_version: 5,
            base_context_checksum: 0,
        };
        let enc = f.encode(2000);
        assert_eq!(enc.len(), FOOTER_LEN);
        assert_eq!(Footer::decode(&enc, 2000).unwrap(), f);
        let mut bad = enc.clone();
        bad[50] ^= 1;
        assert_eq!(Footer::decode(&bad, 2000).unwrap_err().0, 45);
    }

    #[test]
    fn v6_footer_roundtrip_for_every_checksum() {
        for checksum in [
            ChecksumType::Crc32c,
            ChecksumType::XxHash,
            ChecksumType::XxHash64,
            ChecksumType::Xxh3,
        ] {
            let f = Footer {
                checksum,
                metaindex: BlockHandle {
                    offset: 900,
                    size: 95,
                },
                index: None,
                format_version: 6,
                base_context_checksum: 0xdead_beef,
            };
            let enc = f.encode(1000);
            assert_eq!(Footer::decode(&enc, 1000).unwrap(), f, "{checksum:?}");
            // The footer checksum includes its offset: the same bytes elsewhere fail.
            assert_eq!(Footer::decode(&enc, 1001).unwrap_err().0, 5);
        }
    }

    /// The footer of testdata/rocksdb/fv6_default.sst (RocksDB 10.4.2, default options: XXH3),
    /// which starts at offset 2970 of its file.
    const FV6_XXH3_FOOTER: &str = "043e007a009d942dbaced4ed473800000000000000000000000000000000\
        000000000000000000000006000000f7cff485b741e288";
    /// The footer of testdata/rocksdb/fv6_crc32c.sst (crc32c), at offset 7579.
    const FV6_CRC32C_FOOTER: &str = "013e007a0082741e6646452e4f6800000000000000000000000000000000\
        000000000000000000000006000000f7cff485b741e288";
    /// The metaindex block (56 bytes) and trailer of fv6_default.sst, at offset 2909.
    const FV6_XXH3_METAINDEX: &str = "000d03726f636b7364622e696e646578b00f29001204726f636b7364622e\
        70726f70657274696573de0ffa0600000000130000000200000000de3bc666";

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn rocksdb_v6_footers_decode() {
        let f = Footer::decode(&unhex(FV6_XXH3_FOOTER), 2970).unwrap();
        assert_eq!(
            f,
            Footer {
                checksum: ChecksumType::Xxh3,
                metaindex: BlockHandle {
                    offset: 2909,
                    size: 56
                },
                index: None,
                format_version: 6,
                base_context_checksum: 0x47ed_d4ce,
            }
        );
        let f = Footer::decode(&unhex(FV6_CRC32C_FOOTER), 7579).unwrap();
        assert_eq!(f.checksum, ChecksumType::Crc32c);
        assert_eq!(f.base_context_checksum, 0x4f2e_4546);
        assert_eq!(
            f.metaindex,
            BlockHandle {
                offset: 7470,
                size: 104
            }
        );
        // Sluice encodes the same bytes.
        assert_eq!(f.encode(7579), unhex(FV6_CRC32C_FOOTER));
    }

    #[test]
    fn rocksdb_v6_footer_corruption_is_located() {
        let good = unhex(FV6_XXH3_FOOTER);
        // Any flipped bit of the checksummed fields fails the footer checksum (offset 5).
        for at in [0usize, 5, 9, 13, 20] {
            let mut b = good.clone();
            b[at] ^= 0x10;
            let (off, why) = Footer::decode(&b, 2970).unwrap_err();
            assert!(why.contains("checksum") || off == 0, "{at}: {why}");
        }
        let mut b = good.clone();
        b[2] ^= 1;
        let (off, why) = Footer::decode(&b, 2970).unwrap_err();
        assert_eq!(off, 1, "{why}");
        assert!(why.contains("extended magic"), "{why}");
        // A format_version beyond 7 is refused before anything else is trusted.
        let mut b = good.clone();
        b[41] = 8;
        assert_eq!(Footer::decode(&b, 2970).unwrap_err().0, 41);
        // The footer read from the wrong offset fails its checksum.
        let (off, why) = Footer::decode(&good, 2970 + 4096).unwrap_err();
        assert_eq!(off, 5, "{why}");
    }

    #[test]
    fn rocksdb_v6_block_checksum_includes_the_offset() {
        let blk = unhex(FV6_XXH3_METAINDEX);
        let (data, trailer) = blk.split_at(56);
        let stored = u32::from_le_bytes(trailer[1..5].try_into().unwrap());
        let sum =
            |off| stored_block_checksum(ChecksumType::Xxh3, 0x47ed_d4ce, off, data, trailer[0]);
        assert_eq!(sum(2909), stored);
        assert_ne!(sum(2908), stored);
        // Without the context the plain checksum does not match either.
        assert_ne!(block_checksum(ChecksumType::Xxh3, data, trailer[0]), stored);
    }

    #[test]
    fn context_modifier_mixes_both_halves_of_the_offset() {
        assert_eq!(checksum_modifier(0, 12345), 0);
        assert_eq!(checksum_modifier(7, 0), 7);
        assert_eq!(checksum_modifier(7, 1 << 32), 7 ^ 1);
        assert_eq!(checksum_modifier(0x1000, 0x10), 0x1010);
        assert_ne!(checksum_modifier(7, 5), checksum_modifier(7, 6));
    }
}
