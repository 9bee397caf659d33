//! RocksDB's filters: the full-file filter "fullfilter.rocksdb.BuiltinBloomFilter" and, in a
//! partitioned table, each filter partition. Sluice writes the cache-local "FastLocalBloom"
//! (format_version ≥ 5) and reads it and the "Standard128Ribbon" filter (the Ribbon filter
//! policy), both keyed by the same 64-bit hash of the user key.
//!
//! Layout: `len` bytes of 64-byte cache lines, then 5 bytes of metadata:
//! `0xFF` (new-implementation marker), `0x00` (FastLocalBloom), `num_probes`, `0x00`, `0x00`.
//! Each key hashes to a 64-bit value `h` (XXPH3, RocksDB's frozen XXH3 preview, of the user key). The low 32 bits pick a cache
//! line (`(lo * num_lines) >> 32`); the high 32 bits, multiplied by the golden ratio after each
//! probe, give 9-bit bit positions inside that 512-bit line.

/// Metaindex key of the full filter block.
pub const FULL_FILTER_META_KEY: &str = "fullfilter.rocksdb.BuiltinBloomFilter";
/// Metaindex key of the top-level index of a partitioned filter.
pub const PARTITIONED_FILTER_META_KEY: &str = "partitionedfilter.rocksdb.BuiltinBloomFilter";

const CACHE_LINE: usize = 64;
const METADATA_LEN: usize = 5;

/// The 64-bit key hash the filter uses.
#[inline]
pub fn filter_hash(user_key: &[u8]) -> u64 {
    super::xxph3::xxph3_64(user_key)
}

/// RocksDB's probe count for a given density (in thousandths of a bit per key).
fn choose_num_probes(millibits_per_key: u32) -> u8 {
    match millibits_per_key {
        0..=2080 => 1,
        2081..=3580 => 2,
        3581..=5100 => 3,
        5101..=6640 => 4,
        6641..=8300 => 5,
        8301..=10070 => 6,
        10071..=11720 => 7,
        11721..=14001 => 8,
        14002..=16050 => 9,
        16051..=18300 => 10,
        18301..=22001 => 11,
        22002..=25501 => 12,
        m if m > 50000 => 24,
        m => ((m - 1) / 2000 - 1) as u8,
    }
}

/// Collects key hashes and builds the filter block at the end of the table.
#[derive(Debug)]
pub struct BloomBuilder {
    millibits_per_key: u32,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    /// A builder for `bits_per_key` bits per key (fractions allowed, > 0).
    pub fn new(bits_per_key: f64) -> Self {
        BloomBuilder {
            millibits_per_key: (bits_per_key * 1000.0).round().clamp(1.0, 100_000.0) as u32,
            hashes: Vec::new(),
        }
    }

    /// Adds one user key. Consecutive duplicates are added once.
    #[inline]
    pub fn add_key(&mut self, user_key: &[u8]) {
        let h = filter_hash(user_key);
        if self.hashes.last() != Some(&h) {
            self.hashes.push(h);
        }
    }

    /// Number of distinct keys added.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// True if no key was added.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Builds the filter block and resets the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        let n = self.hashes.len() as u64;
        let bytes = (n * u64::from(self.millibits_per_key)).div_ceil(8000);
        let lines = if n == 0 {
            0
        } else {
            bytes.div_ceil(CACHE_LINE as u64).max(1) as usize
        };
        let len = lines * CACHE_LINE;
        let num_probes = choose_num_probes(self.millibits_per_key);
        let mut out = vec![0u8; len + METADATA_LEN];
        for &h in &self.hashes {
            let line = fast_range32(h as u32, lines) * CACHE_LINE;
            let mut bits = (h >> 32) as u32;
            let cl = &mut out[line..line + CACHE_LINE];
            for _ in 0..num_probes {
                let bitpos = (bits >> (32 - 9)) as usize;
                cl[bitpos >> 3] |= 1 << (bitpos & 7);
                bits = bits.wrapping_mul(0x9e37_79b9);
            }
        }
        out[len] = 0xff;
        out[len + 1] = 0;
        out[len + 2] = num_probes;
        self.hashes.clear();
        out
    }
}

#[inline]
fn fast_range32(hash: u32, range: usize) -> usize {
    ((u64::from(hash) * range as u64) >> 32) as usize
}

/// A parsed filter block, ready for queries.
#[derive(Debug)]
pub enum BloomReader {
    /// FastLocalBloom: cache lines and probe count.
    FastLocal {
        /// Filter bytes without the metadata.
        data: Vec<u8>,
        /// Probes per key.
        num_probes: u8,
    },
    /// Standard128Ribbon (see [`RibbonReader`]).
    Ribbon(RibbonReader),
    /// A filter that admits every key: RocksDB's "always true" encodings (zero probes, a
    /// Ribbon of fewer than two blocks) and the legacy (format_version < 5) Bloom filter,
    /// which Sluice does not interpret.
    AlwaysTrue,
    /// A filter of an empty table: it answers "absent" for every key.
    AlwaysFalse,
}

impl BloomReader {
    /// Interprets a filter block. The encodings RocksDB defines as "always true" become
    /// `AlwaysTrue`; unknown or malformed ones are errors (reasons), so that a filter is never
    /// silently disabled.
    pub fn new(mut block: Vec<u8>) -> Result<BloomReader, String> {
        if block.len() < METADATA_LEN {
            return Err(format!(
                "filter of {} bytes is shorter than its metadata",
                block.len()
            ));
        }
        let len = block.len() - METADATA_LEN;
        let meta = &block[len..];
        if len == 0 && meta[0] != 0xff {
            // RocksDB reads a filter of metadata only as "no key added".
            return Ok(BloomReader::AlwaysFalse);
        }
        match meta[0] {
            0xff => {}
            0xfe => return RibbonReader::parse(block),
            // Zero probes: RocksDB's "always true".
            0 => return Ok(BloomReader::AlwaysTrue),
            // Legacy Bloom of format_version < 5 (1..=127 probes): not interpreted, admits all.
            1..=0x7f => return Ok(BloomReader::AlwaysTrue),
            m => return Err(format!("unknown filter implementation marker {m:#04x}")),
        }
        match meta[1] {
            0 => {
                let num_probes = meta[2];
                if len == 0 {
                    return Ok(BloomReader::AlwaysFalse);
                }
                if !len.is_multiple_of(CACHE_LINE)
                    || num_probes == 0
                    || num_probes > 30
                    || meta[2] & 0xe0 != 0
                {
                    return Err(format!(
                        "bad FastLocalBloom metadata: {len} bytes, {num_probes} probes"
                    ));
                }
                block.truncate(len);
                Ok(BloomReader::FastLocal {
                    data: block,
                    num_probes,
                })
            }
            other => Err(format!("unknown Bloom filter sub-implementation {other}")),
        }
    }

    /// False only if the key is certainly absent.
    #[inline]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        match self {
            BloomReader::FastLocal { data, num_probes } => {
                let lines = data.len() / CACHE_LINE;
                let line = fast_range32(h as u32, lines) * CACHE_LINE;
                let cl = &data[line..line + CACHE_LINE];
                let mut bits = (h >> 32) as u32;
                for _ in 0..*num_probes {
                    let bitpos = (bits >> (32 - 9)) as usize;
                    if cl[bitpos >> 3] & (1 << (bitpos & 7)) == 0 {
                        return false;
                    }
                    bits = bits.wrapping_mul(0x9e37_79b9);
                }
                true
            }
            BloomReader::Ribbon(r) => r.may_contain_hash(h),
            BloomReader::AlwaysTrue => true,
            BloomReader::AlwaysFalse => false,
        }
    }

    /// True for a filter that can reject keys (FastLocalBloom or Ribbon).
    pub fn is_effective(&self) -> bool {
        matches!(self, BloomReader::FastLocal { .. } | BloomReader::Ribbon(_))
    }

    /// False only if `user_key` is certainly absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(filter_hash(user_key))
    }

    /// Bytes of memory held.
    pub fn charge(&self) -> usize {
        match self {
            BloomReader::FastLocal { data, .. } => data.capacity(),
            BloomReader::Ribbon(r) => r.data.capacity(),
            _ => 0,
        }
    }
}

/// RocksDB's Standard128Ribbon filter: a solution matrix of 128-bit "segments" in interleaved
/// column-major blocks. A key's 64-bit hash, rehashed with the filter's seed, picks a start
/// slot, a 128-bit coefficient row and an expected result row of `num_columns` bits; the key
/// may be present only if, for every column, the parity of the solution bits under the
/// coefficient row equals the expected bit.
///
/// Layout: `len` bytes of segments, then 5 bytes of metadata: `0xFE` (Ribbon marker), the seed
/// (1 byte), the number of 128-slot blocks (3 bytes, little-endian).
#[derive(Debug)]
pub struct RibbonReader {
    data: Vec<u8>,
    num_starts: u32,
    upper_num_columns: u32,
    upper_start_block: u32,
    raw_seed: u64,
}

const RIBBON_COEFF_BITS: u32 = 128;
const RIBBON_SEGMENT: usize = 16;

impl RibbonReader {
    /// Parses a Ribbon filter block (metadata included). Errors are reasons.
    fn parse(mut block: Vec<u8>) -> Result<BloomReader, String> {
        let len = block.len() - METADATA_LEN;
        let meta = &block[len..];
        let seed = u32::from(meta[1]);
        let num_blocks = u32::from(meta[2]) | u32::from(meta[3]) << 8 | u32::from(meta[4]) << 16;
        let num_segments = len / RIBBON_SEGMENT;
        if num_blocks < 2 {
            // Never written by RocksDB, which defines it as "always true".
            return Ok(BloomReader::AlwaysTrue);
        }
        if !len.is_multiple_of(RIBBON_SEGMENT) {
            return Err(format!(
                "bad Ribbon filter metadata: {len} bytes, {num_blocks} blocks"
            ));
        }
        // Every block has `upper_num_columns` columns, except the first `upper_start_block`
        // blocks, which have one fewer; at most 32 (the width of the result row).
        let num_segments = u32::try_from(num_segments).map_err(|_| "Ribbon filter too large")?;
        let upper_num_columns = num_segments.div_ceil(num_blocks);
        if upper_num_columns == 0 || upper_num_columns > 32 {
            return Err(format!(
                "bad Ribbon filter metadata: {num_segments} segments for {num_blocks} blocks"
            ));
        }
        let upper_start_block = upper_num_columns * num_blocks - num_segments;
        block.truncate(len);
        Ok(BloomReader::Ribbon(RibbonReader {
            data: block,
            num_starts: num_blocks * RIBBON_COEFF_BITS - RIBBON_COEFF_BITS + 1,
            upper_num_columns,
            upper_start_block,
            raw_seed: raw_seed_from_ordinal(seed),
        }))
    }

    fn segment(&self, i: u32) -> Option<u128> {
        let at = i as usize * RIBBON_SEGMENT;
        let b = self.data.get(at..at + RIBBON_SEGMENT)?;
        Some(u128::from_le_bytes(b.try_into().ok()?))
    }

    /// False only if a key with filter hash `h` is certainly absent.
    pub fn may_contain_hash(&self, h: u64) -> bool {
        const REHASH: u64 = 0x6193_d459_236a_3a0d;
        const COEFF_AND_RESULT: u64 = 0xc28f_8282_2b65_0bed;
        const COEFF_XOR: u64 = 0xc367_844a_6e52_731d;
        let hash = (h ^ self.raw_seed).wrapping_mul(REHASH);
        let start_slot = ((u128::from(hash) * u128::from(self.num_starts)) >> 64) as u32;
        let start_block = start_slot / RIBBON_COEFF_BITS;
        let start_bit = start_slot % RIBBON_COEFF_BITS;
        let mut num_columns = self.upper_num_columns;
        let first = start_block * num_columns - start_block.min(self.upper_start_block);
        if start_block < self.upper_start_block {
            num_columns -= 1;
        }
        let a = hash.wrapping_mul(COEFF_AND_RESULT);
        let coeffs = (u128::from(a) << 64) ^ u128::from(a ^ COEFF_XOR) | 1;
        let expected = a.swap_bytes() as u32;
        for i in 0..num_columns {
            let bits = if start_bit == 0 {
                self.segment(first + i).map(|s| s & coeffs)
            } else {
                self.segment(first + i)
                    .zip(self.segment(first + num_columns + i))
                    .map(|(l, r)| {
                        (l & coeffs << start_bit) ^ (r & coeffs >> (RIBBON_COEFF_BITS - start_bit))
                    })
            };
            // Out of range cannot happen for a well-formed filter; admit the key.
            let Some(bits) = bits else { return true };
            if bits.count_ones() & 1 != (expected >> i) & 1 {
                return false;
            }
        }
        true
    }
}

/// RocksDB's reversible mixing of the 1-byte ordinal seed into the raw seed.
fn raw_seed_from_ordinal(seed: u32) -> u64 {
    let mut t = u64::from(seed).wrapping_mul(0xc782_19a2_3eea_dd03);
    t ^= (t & 0xf0f0_f0f0_f0f0_f0f0) >> 4;
    u64::from(t as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_low_false_positive_rate() {
        let mut b = BloomBuilder::new(10.0);
        for i in 0..10_000u32 {
            b.add_key(&i.to_be_bytes());
        }
        let r = BloomReader::new(b.finish()).unwrap();
        for i in 0..10_000u32 {
            assert!(r.may_contain(&i.to_be_bytes()));
        }
        let fp = (10_000..110_000u32)
            .filter(|i| r.may_contain(&i.to_be_bytes()))
            .count();
        // 10 bits/key with 6 probes in 512-bit lines: about 1%; 2% is a generous bound.
        assert!(fp < 2_000, "false positives {fp} / 100000");
    }

    #[test]
    fn empty_filter_rejects_everything() {
        let r = BloomReader::new(BloomBuilder::new(10.0).finish()).unwrap();
        assert!(!r.may_contain(b"x"));
    }

    #[test]
    fn malformed_metadata_is_an_error() {
        assert!(BloomReader::new(vec![0xff, 0]).is_err());
        let mut bad = vec![0u8; 64];
        bad.extend_from_slice(&[0xff, 0, 0, 0, 0]);
        assert!(BloomReader::new(bad).is_err());
    }
}
