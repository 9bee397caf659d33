//! Internal keys: a user key followed by an 8-byte little-endian trailer `seqno << 8 | kind`.
//!
//! Ordering (the "internal key comparator"): user keys ascending bytewise, then the trailer
//! descending, so that for one user key the newest version comes first.

use std::cmp::Ordering;

/// Largest sequence number that fits in the 56 bits of the trailer.
pub const MAX_SEQNO: u64 = (1 << 56) - 1;

/// Length of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;

/// The kind of an entry, encoded in the low byte of the trailer (RocksDB's numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ValueKind {
    /// A point deletion (tombstone).
    Deletion = 0x0,
    /// A value.
    Value = 0x1,
    /// A range deletion: the key is the start, the value the exclusive end.
    RangeDeletion = 0xF,
}

impl ValueKind {
    /// Decodes a kind byte; `None` for kinds Sluice does not understand.
    pub fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0x0 => Some(ValueKind::Deletion),
            0x1 => Some(ValueKind::Value),
            0xF => Some(ValueKind::RangeDeletion),
            _ => None,
        }
    }

    /// Short lowercase name for tools.
    pub fn name(self) -> &'static str {
        match self {
            ValueKind::Deletion => "del",
            ValueKind::Value => "put",
            ValueKind::RangeDeletion => "rangedel",
        }
    }
}

/// The kind byte used in seek keys: larger than every real kind, so that a seek key
/// `(user_key, seqno)` sorts before every entry for `user_key` with that seqno.
pub const KIND_FOR_SEEK: u8 = 0xFF;

/// Packs a seqno and kind byte into a trailer.
#[inline]
pub fn pack_trailer(seqno: u64, kind: u8) -> u64 {
    debug_assert!(seqno <= MAX_SEQNO);
    (seqno << 8) | u64::from(kind)
}

/// Appends `user_key ‖ trailer` to `dst`.
#[inline]
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seqno: u64, kind: u8) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seqno, kind).to_le_bytes());
}

/// Builds an owned internal key.
pub fn make_internal_key(user_key: &[u8], seqno: u64, kind: ValueKind) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut k, user_key, seqno, kind as u8);
    k
}

/// Builds the key used to seek to the newest version of `user_key` visible at `seqno`.
pub fn seek_key(user_key: &[u8], seqno: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut k, user_key, seqno, KIND_FOR_SEEK);
    k
}

/// The user-key part of an internal key; empty for a key shorter than a trailer (only a
/// corrupt file holds one, e.g. read with `verify_checksums` off: never a panic).
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

/// The trailer of an internal key; 0 for a key shorter than a trailer (see [`user_key`]).
#[inline]
pub fn trailer(ikey: &[u8]) -> u64 {
    match ikey.len().checked_sub(TRAILER_LEN) {
        Some(at) => {
            let t = &ikey[at..];
            u64::from_le_bytes([t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]])
        }
        None => 0,
    }
}

/// A decoded internal key borrowing its user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user key.
    pub user_key: &'a [u8],
    /// The sequence number.
    pub seqno: u64,
    /// The entry kind.
    pub kind: ValueKind,
}

/// Splits an internal key; `None` if it is too short or has an unknown kind.
pub fn parse_internal_key(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    if ikey.len() < TRAILER_LEN {
        return None;
    }
    let t = trailer(ikey);
    Some(ParsedKey {
        user_key: user_key(ikey),
        seqno: t >> 8,
        kind: ValueKind::from_u8(t as u8)?,
    })
}

/// The internal key comparator. Keys shorter than a trailer compare bytewise (they only occur
/// in corrupt files, which are rejected elsewhere; ordering them must still not panic).
#[inline]
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    if a.len() < TRAILER_LEN || b.len() < TRAILER_LEN {
        return a.cmp(b);
    }
    match user_key(a).cmp(user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// A short user key `k` with `start <= k < limit`, no longer than `start`; `start` itself
/// where none is shorter. Used for index separators (RocksDB's `FindShortestSeparator`).
///
/// Where the keys first differ at byte `i` (`start[i] < limit[i]`): `start[..i]` and then
/// `start[i] + 1` — which is below `limit`, or equal to `limit[..=i]`, a proper prefix of
/// `limit` when `limit` goes on past `i`. Where `limit` ends at `i` and `start[i] + 1 ==
/// limit[i]`, that would be `limit` itself: instead, keep `start[..=i]` and raise the first byte
/// of `start` after `i` that is not 0xff, cutting there. Dense keys (`…0041`, `…0042`, as
/// consecutive big-endian integers at a block's edges) so get separators of their differing
/// prefix rather than whole keys.
pub fn shortest_separator(start: &[u8], limit: &[u8]) -> Vec<u8> {
    let i = start.iter().zip(limit).take_while(|(a, b)| a == b).count();
    if i >= start.len().min(limit.len()) || start[i] >= limit[i] {
        // One is a prefix of the other, or `limit` is not above `start`.
        return start.to_vec();
    }
    if i + 1 < limit.len() || start[i] + 1 < limit[i] {
        // `start[i] < limit[i]`, so `start[i] + 1` does not overflow.
        let mut s = start[..=i].to_vec();
        s[i] += 1;
        return s;
    }
    match start[i + 1..].iter().position(|&b| b != 0xff) {
        Some(j) => {
            let j = i + 1 + j;
            let mut s = start[..=j].to_vec();
            s[j] += 1;
            s
        }
        None => start.to_vec(),
    }
}

/// Shortest user key `>= key` (RocksDB's `FindShortSuccessor`).
pub fn short_successor(key: &[u8]) -> Vec<u8> {
    for (i, &b) in key.iter().enumerate() {
        if b != 0xff {
            let mut s = key[..=i].to_vec();
            s[i] += 1;
            return s;
        }
    }
    key.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn newer_versions_sort_first() {
        let a = make_internal_key(b"k", 9, ValueKind::Value);
        let b = make_internal_key(b"k", 3, ValueKind::Value);
        let c = make_internal_key(b"l", 100, ValueKind::Value);
        assert_eq!(compare_internal(&a, &b), Ordering::Less);
        assert_eq!(compare_internal(&b, &c), Ordering::Less);
        assert_eq!(compare_internal(&seek_key(b"k", 9), &a), Ordering::Less);
    }

    #[test]
    fn parse_roundtrip_and_rejects_unknown_kind() {
        let k = make_internal_key(b"abc", 42, ValueKind::Deletion);
        let p = parse_internal_key(&k).unwrap();
        assert_eq!(
            (p.user_key, p.seqno, p.kind),
            (&b"abc"[..], 42, ValueKind::Deletion)
        );
        let mut bad = k.clone();
        let n = bad.len();
        bad[n - 8] = 0x7;
        assert!(parse_internal_key(&bad).is_none());
        assert!(parse_internal_key(b"short").is_none());
    }

    /// Corrupt-input bounds: a key shorter than its trailer never panics in the key helpers.
    #[test]
    fn short_internal_keys_do_not_panic() {
        assert_eq!(parse_internal_key(b"abc"), None);
        assert_eq!(user_key(b"abc"), b"");
        assert_eq!(trailer(b"abc"), 0);
    }

    #[test]
    fn separators_of_dense_keys_are_short() {
        let k = |i: u64, r: u64| [i.to_be_bytes(), r.to_be_bytes()].concat();
        // Consecutive integers: the differing prefix, as the next key's first 8 bytes.
        assert_eq!(
            shortest_separator(&k(0x41, 7), &k(0x42, 1)),
            k(0x42, 0)[..8]
        );
        // Further apart: the first differing byte raised.
        assert_eq!(
            shortest_separator(&k(0x41, 7), &k(0x45, 1)),
            k(0x42, 0)[..8]
        );
        // The limit ends at the differing byte and is one above it: a later byte of the start
        // is raised (RocksDB gives the same).
        assert_eq!(shortest_separator(b"AA1AAA", b"AA2"), b"AA1B");
        assert_eq!(shortest_separator(b"AA1\xff\xffA", b"AA2"), b"AA1\xff\xffB");
        assert_eq!(shortest_separator(b"AA1\xff\xff", b"AA2"), b"AA1\xff\xff");
        // A prefix of the other, or not ordered: unchanged.
        assert_eq!(shortest_separator(b"AA", b"AAB"), b"AA");
        assert_eq!(shortest_separator(b"AB", b"AA"), b"AB");
    }

    proptest! {
        #[test]
        fn separator_is_between(a: Vec<u8>, b: Vec<u8>) {
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            prop_assume!(lo < hi);
            let s = shortest_separator(&lo, &hi);
            prop_assert!(lo <= s && s < hi);
            prop_assert!(s.len() <= lo.len());
        }

        /// Keys that differ only in their last bytes, as dense big-endian integers do.
        #[test]
        fn separator_is_between_close_keys(p: Vec<u8>, a: u64, gap in 1u64..4, tail: Vec<u8>) {
            let lo = [&p[..], &a.to_be_bytes(), &tail[..]].concat();
            let hi = [&p[..], &a.saturating_add(gap).to_be_bytes()].concat();
            prop_assume!(lo < hi);
            let s = shortest_separator(&lo, &hi);
            prop_assert!(lo <= s && s < hi);
            prop_assert!(s.len() <= lo.len());
        }

        #[test]
        fn successor_is_not_smaller(a: Vec<u8>) {
            let s = short_successor(&a);
            prop_assert!(s >= a);
        }
    }
}
