//! The key spaces and the self-describing values.
//!
//! Three disjoint key spaces, so that each kind of writer owns its keys:
//! 1. `k{:08}`: the main space, written by every operation of every thread.
//! 2. `z{:08}`: reserved for `ingest_behind`; nothing else writes them and each is ingested
//!    at most once (allocated from a counter that only grows, across crashes too). They sort
//!    after every `k` key, so a fresh block never overlaps a bottom-level file.
//! 3. `s{:010}`: the sequential series of the prefix-check thread, each written once.
//!
//! A value is `"{key}:{version}:{padding}"`, where the padding is a pure function of key and
//! version: any value read can be checked byte for byte without remembering it.

/// A key of one of the three spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// Main space, index `0..keys`.
    K(u32),
    /// Ingest-behind space.
    Z(u32),
    /// Sequential series.
    S(u64),
}

impl Key {
    /// The key's bytes.
    pub fn bytes(self) -> Vec<u8> {
        self.to_string().into_bytes()
    }

    /// Parses key bytes produced by [`Key::bytes`].
    pub fn parse(b: &[u8]) -> Option<Key> {
        let s = std::str::from_utf8(b).ok()?;
        let (tag, num) = s.split_at_checked(1)?;
        if !num.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        match (tag, num.len()) {
            ("k", 8) => num.parse().ok().map(Key::K),
            ("z", 8) => num.parse().ok().map(Key::Z),
            ("s", 10) => num.parse().ok().map(Key::S),
            _ => None,
        }
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::K(i) => write!(f, "k{i:08}"),
            Key::Z(i) => write!(f, "z{i:08}"),
            Key::S(i) => write!(f, "s{i:010}"),
        }
    }
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn key_hash(key: &[u8]) -> u64 {
    key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The value of `key` at `version`: `"{key}:{version}:{padding}"`. Mostly short; one in 61
/// is 0.5–2 KiB so that values larger than a block (512 bytes in the stress options) occur.
pub fn make_value(key: &[u8], version: u64) -> Vec<u8> {
    let h = mix(key_hash(key) ^ version.wrapping_mul(0x2545_f491_4f6c_dd1d));
    let pad = if h.is_multiple_of(61) {
        500 + (h >> 8) % 1500
    } else {
        (h >> 8) % 64
    } as usize;
    let mut v = Vec::with_capacity(key.len() + 24 + pad);
    v.extend_from_slice(key);
    v.extend_from_slice(format!(":{version}:").as_bytes());
    let base = (h >> 20) as usize;
    v.extend((0..pad).map(|i| b'a' + ((base + i) % 26) as u8));
    v
}

/// Splits a value into its key and version; `None` when it is not of the form `key:version:`.
pub fn parse_value(v: &[u8]) -> Option<(&[u8], u64)> {
    let first = v.iter().position(|&c| c == b':')?;
    let rest = &v[first + 1..];
    let second = rest.iter().position(|&c| c == b':')?;
    let version = std::str::from_utf8(&rest[..second]).ok()?.parse().ok()?;
    Some((&v[..first], version))
}

/// Printable rendering of bytes for reports (long values are cut).
pub fn show(b: &[u8]) -> String {
    let s = sluice::error::escape_bytes(&b[..b.len().min(48)]);
    if b.len() > 48 {
        format!("{s}…({} bytes)", b.len())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_sort_by_space() {
        for k in [Key::K(0), Key::K(12_345), Key::Z(7), Key::S(9_999_999_999)] {
            assert_eq!(Key::parse(&k.bytes()), Some(k));
        }
        assert!(Key::K(99_999_999).bytes() < Key::Z(0).bytes());
        assert!(Key::S(0).bytes() < Key::Z(0).bytes());
        assert_eq!(Key::parse(b"k123"), None);
        assert_eq!(Key::parse(b"x00000001"), None);
    }

    #[test]
    fn values_carry_key_and_version() {
        let k = Key::K(42).bytes();
        let v = make_value(&k, 17);
        assert_eq!(parse_value(&v), Some((&k[..], 17)));
        assert_eq!(v, make_value(&k, 17), "deterministic");
        assert_ne!(v, make_value(&k, 18));
        let big = (0..2000).any(|ver| make_value(&k, ver).len() > 512);
        assert!(big, "some values exceed a block");
    }
}
