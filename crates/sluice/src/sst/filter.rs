//! RocksDB's full-file Bloom filter, "fullfilter.rocksdb.BuiltinBloomFilter" (the cache-local
//! "FastLocalBloom" used by format_version 5).
//!
//! Layout: `len` bytes of 64-byte cache lines, then 5 bytes of metadata:
//! `0xFF` (new-implementation marker), `0x00` (FastLocalBloom), `num_probes`, `0x00`, `0x00`.
//! Each key hashes to a 64-bit value `h` (XXPH3, RocksDB's frozen XXH3 preview, of the user key). The low 32 bits pick a cache
//! line (`(lo * num_lines) >> 32`); the high 32 bits, multiplied by the golden ratio after each
//! probe, give 9-bit bit positions inside that 512-bit line.

/// Metaindex key of the full filter block.
pub const FULL_FILTER_META_KEY: &str = "fullfilter.rocksdb.BuiltinBloomFilter";

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
    /// A filter this build cannot interpret: it answers "may contain" for every key.
    AlwaysTrue,
    /// A filter of an empty table: it answers "absent" for every key.
    AlwaysFalse,
}

impl BloomReader {
    /// Interprets a filter block. Unknown but well-formed variants degrade to `AlwaysTrue`;
    /// malformed ones are errors (reasons).
    pub fn new(mut block: Vec<u8>) -> Result<BloomReader, String> {
        if block.len() < METADATA_LEN {
            return Err(format!(
                "filter of {} bytes is shorter than its metadata",
                block.len()
            ));
        }
        let len = block.len() - METADATA_LEN;
        let meta = &block[len..];
        if meta[0] != 0xff {
            // Legacy Bloom (format_version < 5) or another policy: not interpreted.
            return Ok(BloomReader::AlwaysTrue);
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
            // Ribbon filters and future variants: answer conservatively.
            _ => Ok(BloomReader::AlwaysTrue),
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
            BloomReader::AlwaysTrue => true,
            BloomReader::AlwaysFalse => false,
        }
    }

    /// False only if `user_key` is certainly absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(filter_hash(user_key))
    }

    /// Bytes of memory held.
    pub fn charge(&self) -> usize {
        match self {
            BloomReader::FastLocal { data, .. } => data.capacity(),
            _ => 0,
        }
    }
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
