//! Tests of the skiplist: order, seeks, prefixes, chunks, concurrent readers, the splice.

use super::*;
use crate::base::key::{make_internal_key, ValueKind};
use std::sync::Arc;

#[test]
fn insert_and_iterate_in_order() {
    let l = SkipList::new();
    let n = if cfg!(miri) { 300u32 } else { 5000 };
    let mut keys: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            make_internal_key(
                &(i.wrapping_mul(2_654_435_761)).to_be_bytes(),
                u64::from(i),
                ValueKind::Value,
            )
        })
        .collect();
    for k in &keys {
        assert!(l.insert(k, b"v"));
    }
    assert!(!l.insert(&keys[0], b"dup"));
    keys.sort_by(|a, b| compare_internal(a, b));
    let mut it = SkipIter::new(&l);
    it.seek_to_first();
    for k in &keys {
        assert!(it.valid());
        assert_eq!(it.key(), &k[..]);
        it.next();
    }
    assert!(!it.valid());
    it.seek_to_last();
    for k in keys.iter().rev() {
        assert_eq!(it.key(), &k[..]);
        it.prev();
    }
    assert!(!it.valid());
    it.seek_for_prev(&keys[100]);
    assert_eq!(it.key(), &keys[100][..]);
}

proptest::proptest! {
    /// Invariant 4: unequal prefixes order keys as `compare_internal` does. Keys are drawn
    /// from a tiny alphabet (0, 1, 0xff) and short lengths so that shared prefixes, proper
    /// prefixes and zero bytes beside zero padding all occur.
    #[test]
    fn prefixes_order_keys_as_compare_internal(
        a in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0xff]), 0..11),
        b in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0xff]), 0..11),
        sa in 0u64..4, sb in 0u64..4,
    ) {
        let ka = make_internal_key(&a, sa, ValueKind::Value);
        let kb = make_internal_key(&b, sb, ValueKind::Value);
        let (pa, pb) = (key_prefix(&ka).unwrap(), key_prefix(&kb).unwrap());
        if pa != pb {
            proptest::prop_assert_eq!(pa.cmp(&pb), compare_internal(&ka, &kb));
        }
    }

    /// Inserts in runs of ascending keys (the writer's splice path) mixed with keys before
    /// the last one (the search from the head), duplicates among them: the list holds
    /// each key once, in order, seeks find them, and every level's links stay sorted.
    #[test]
    fn ascending_runs_and_jumps_back_keep_the_list_sorted(
        steps in proptest::collection::vec((0u32..2000, 1usize..40), 1..30),
    ) {
        let l = SkipList::new();
        let mut want = std::collections::BTreeSet::new();
        for (start, run) in steps {
            for k in start..start + run as u32 {
                let ik = make_internal_key(&k.to_be_bytes(), 1, ValueKind::Value);
                proptest::prop_assert_eq!(l.insert(&ik, b"v"), want.insert(k));
            }
        }
        let mut it = SkipIter::new(&l);
        it.seek_to_first();
        for k in &want {
            proptest::prop_assert!(it.valid());
            proptest::prop_assert_eq!(it.key(), &make_internal_key(&k.to_be_bytes(), 1, ValueKind::Value)[..]);
            it.next();
        }
        proptest::prop_assert!(!it.valid());
        for level in 0..MAX_HEIGHT {
            let mut x = l.next(HEAD, level);
            while x != NIL {
                let n = l.next(x, level);
                if n != NIL {
                    proptest::prop_assert_eq!(compare_internal(l.key(x), l.key(n)), CmpOrdering::Less);
                }
                x = n;
            }
        }
        for k in &want {
            let ik = make_internal_key(&k.to_be_bytes(), 1, ValueKind::Value);
            it.seek(&ik);
            proptest::prop_assert_eq!(it.key(), &ik[..]);
        }
    }

    /// The list stays sorted and finds every key when many keys tie on their 8-byte prefix.
    #[test]
    fn sorted_with_shared_prefixes(
        keys in proptest::collection::btree_set(
            proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0xff]), 0..12), 1..200),
    ) {
        let l = SkipList::new();
        let iks: Vec<Vec<u8>> = keys.iter().map(|k| make_internal_key(k, 7, ValueKind::Value)).collect();
        for k in iks.iter().rev() {
            proptest::prop_assert!(l.insert(k, b"v"));
        }
        let mut it = SkipIter::new(&l);
        it.seek_to_first();
        for k in &iks {
            proptest::prop_assert!(it.valid());
            proptest::prop_assert_eq!(it.key(), &k[..]);
            it.next();
        }
        for k in &iks {
            it.seek(k);
            proptest::prop_assert_eq!(it.key(), &k[..]);
        }
    }
}

/// Entries of every size, among them values larger than an arena chunk (a chunk of
/// their own) and nodes that would straddle a chunk's end, read back whole and in order.
#[test]
fn entries_of_every_size_cross_chunks_and_read_back() {
    let l = SkipList::new();
    let sizes: Vec<usize> = if cfg!(miri) {
        vec![
            0,
            1,
            7,
            127,
            128,
            CHUNK - 40,
            CHUNK + 1,
            3,
            2 * CHUNK + 5,
            64,
        ]
    } else {
        let mut v: Vec<usize> = (0..3000).map(|i| (i * 7919) % 4000).collect();
        v.extend([
            127,
            128,
            16_383,
            16_384,
            CHUNK - 40,
            CHUNK - 23,
            CHUNK,
            CHUNK + 1,
            3 * CHUNK + 17,
            0,
            5,
        ]);
        v
    };
    let value = |i: usize, n: usize| -> Vec<u8> { (0..n).map(|j| (i * 31 + j) as u8).collect() };
    for (i, &n) in sizes.iter().enumerate() {
        let k = make_internal_key(&(i as u32).to_be_bytes(), 1, ValueKind::Value);
        assert!(l.insert(&k, &value(i, n)));
    }
    assert_eq!(l.len(), sizes.len());
    let mut it = SkipIter::new(&l);
    it.seek_to_first();
    for (i, &n) in sizes.iter().enumerate() {
        assert!(it.valid());
        let k = make_internal_key(&(i as u32).to_be_bytes(), 1, ValueKind::Value);
        assert_eq!(it.key(), &k[..]);
        assert_eq!(it.value(), &value(i, n)[..], "entry {i} of {n} bytes");
        it.next();
    }
    assert!(!it.valid());
    // Every byte charged: at least the entries' bytes and headers (two lengths of at least a
    // byte each).
    let data: usize = sizes.iter().map(|n| n + 12 + 2 + NODE_HEADER + 4).sum();
    assert!(l.approximate_bytes() as usize >= data);
}

/// Keys and values whose lengths take one, two and three varint bytes in an entry's header
/// (127/128, 16,383/16,384) read back exactly, by scan and by seek.
#[test]
fn lengths_across_the_varint_steps_read_back() {
    let l = SkipList::new();
    let key_lens: &[usize] = if cfg!(miri) {
        &[0, 127, 128]
    } else {
        &[
            0, 1, 119, 120, 127, 128, 129, 16_375, 16_376, 16_383, 16_384, 40_000,
        ]
    };
    let val_lens: &[usize] = if cfg!(miri) {
        &[0, 127, 128]
    } else {
        &[0, 1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152]
    };
    let mut keys = Vec::new();
    for (i, &kl) in key_lens.iter().enumerate() {
        for (j, &vl) in val_lens.iter().enumerate() {
            // A distinct user key of `kl` bytes (8 of them set apart the pairs).
            let mut uk = vec![b'k'; kl.max(8)];
            uk[..8].copy_from_slice(&((i * 100 + j) as u64).to_be_bytes());
            uk.truncate(kl.max(8));
            let k = make_internal_key(&uk, 1, ValueKind::Value);
            let v: Vec<u8> = (0..vl).map(|x| (x * 7 + i + j) as u8).collect();
            assert!(l.insert(&k, &v));
            keys.push((k, v));
        }
    }
    keys.sort_by(|a, b| crate::base::key::compare_internal(&a.0, &b.0));
    let mut it = SkipIter::new(&l);
    it.seek_to_first();
    for (k, v) in &keys {
        assert!(it.valid());
        assert_eq!(it.key(), &k[..]);
        assert_eq!(it.value(), &v[..]);
        it.next();
    }
    assert!(!it.valid());
    for (k, v) in keys.iter().rev() {
        it.seek(k);
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
    }
}

/// The arena keeps an entry's memory close to its bytes: a 16-byte user key (24-byte
/// internal key) with a 100-byte value is charged under 148 bytes on average (~145: 128 of
/// entry, ~17 of node; it was 149 with two `u32` lengths, 228 with per-entry boxes and fixed
/// 12-level towers), and the keys given as parts equal the keys given whole.
#[test]
fn a_small_entry_costs_little_more_than_its_bytes() {
    let n = if cfg!(miri) { 200 } else { 100_000u64 };
    let l = SkipList::new();
    let whole = SkipList::new();
    for i in 0..n {
        let uk = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .to_be_bytes()
            .repeat(2);
        let trailer = crate::base::key::pack_trailer(i, ValueKind::Value as u8).to_le_bytes();
        assert!(l.insert_parts(&uk, &trailer, &[7u8; 100]));
        let k = make_internal_key(&uk, i, ValueKind::Value);
        assert!(whole.insert(&k, &[7u8; 100]));
    }
    let per_entry = l.approximate_bytes() / n;
    assert!(
        (124..148).contains(&per_entry),
        "{per_entry} bytes per entry"
    );
    let (mut a, mut b) = (SkipIter::new(&l), SkipIter::new(&whole));
    a.seek_to_first();
    b.seek_to_first();
    while b.valid() {
        assert!(a.valid());
        assert_eq!(a.key(), b.key());
        assert_eq!(a.value(), b.value());
        a.next();
        b.next();
    }
    assert!(!a.valid());
}

#[test]
fn readers_run_concurrently_with_the_writer() {
    let l = Arc::new(SkipList::new());
    let (writes, scans) = if cfg!(miri) {
        (300u32, 3)
    } else {
        (20_000, 50)
    };
    let writer = {
        let l = Arc::clone(&l);
        std::thread::spawn(move || {
            for i in 0..writes {
                l.insert(
                    &make_internal_key(&i.to_be_bytes(), 1, ValueKind::Value),
                    &i.to_le_bytes(),
                );
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let l = Arc::clone(&l);
            std::thread::spawn(move || {
                for _ in 0..scans {
                    let mut it = SkipIter::new(&*l);
                    it.seek_to_first();
                    let mut prev: Option<Vec<u8>> = None;
                    while it.valid() {
                        let k = it.key().to_vec();
                        if let Some(p) = &prev {
                            assert_eq!(compare_internal(p, &k), CmpOrdering::Less);
                        }
                        assert_eq!(
                            it.value(),
                            &k[..4].iter().rev().copied().collect::<Vec<_>>()[..]
                        );
                        prev = Some(k);
                        it.next();
                    }
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(l.len(), writes as usize);
}

/// Past the arena's inline chunk slots (16 in tests): entries land in chunks held in the
/// overflow table, ordinary ones and one larger than a chunk, while a reader scans; all read
/// back whole and in order.
#[test]
fn entries_past_the_inline_chunk_slots_read_back() {
    let l = Arc::new(SkipList::new());
    let value_len = if cfg!(miri) { 700 } else { 150_000 };
    // Enough entries to fill every inline slot and a few overflow ones, then a big one.
    let n = (INLINE_SLOTS + 4) * CHUNK / value_len + 1;
    let value = |i: usize, len: usize| -> Vec<u8> { (0..len).map(|j| (i * 7 + j) as u8).collect() };
    let key = |i: usize| make_internal_key(&(i as u32).to_be_bytes(), 1, ValueKind::Value);
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (l, done) = (Arc::clone(&l), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut scans = 0;
            while !done.load(Ordering::Acquire) || scans == 0 {
                let mut it = SkipIter::new(&*l);
                it.seek_to_first();
                let mut i = 0;
                while it.valid() {
                    assert_eq!(it.key(), &key(i)[..]);
                    let len = if i == n { 2 * CHUNK + 9 } else { value_len };
                    assert_eq!(it.value(), &value(i, len)[..], "entry {i}");
                    i += 1;
                    it.next();
                }
                scans += 1;
            }
        })
    };
    for i in 0..n {
        assert!(l.insert(&key(i), &value(i, value_len)));
    }
    assert!(l.insert(&key(n), &value(n, 2 * CHUNK + 9)));
    done.store(true, Ordering::Release);
    reader.join().unwrap();
    assert!(
        l.entries.overflow.get().is_some(),
        "the overflow table was used"
    );
    let mut it = SkipIter::new(&*l);
    it.seek_to_first();
    for i in 0..=n {
        assert!(it.valid());
        assert_eq!(it.key(), &key(i)[..]);
        it.next();
    }
    assert!(!it.valid());
}

/// Entries larger than a chunk take two slots each from a chunk boundary (the head's entry
/// holds chunk 0), so with an even number of inline slots one of them starts in the last
/// inline slot and covers the first overflow slot; small entries after it land in overflow
/// chunks. All read back, and seeks find each.
#[test]
fn a_big_entry_across_the_end_of_the_inline_slots_reads_back() {
    let l = SkipList::new();
    let big = INLINE_SLOTS / 2 + 1;
    let value =
        |i: usize, len: usize| -> Vec<u8> { (0..len).map(|j| (i * 13 + j) as u8).collect() };
    let len = |i: usize| if i < big { CHUNK } else { 40 };
    let key = |i: usize| make_internal_key(&(i as u32).to_be_bytes(), 1, ValueKind::Value);
    for i in 0..big + 5 {
        assert!(l.insert(&key(i), &value(i, len(i))));
    }
    assert!(
        l.entries.overflow.get().is_some(),
        "the overflow table was used"
    );
    let mut it = SkipIter::new(&l);
    it.seek_to_first();
    for i in 0..big + 5 {
        assert!(it.valid());
        assert_eq!(it.key(), &key(i)[..]);
        assert_eq!(it.value(), &value(i, len(i))[..], "entry {i}");
        it.next();
    }
    assert!(!it.valid());
    for i in (0..big + 5).rev() {
        it.seek(&key(i));
        assert!(it.valid());
        assert_eq!(it.value(), &value(i, len(i))[..], "seek to entry {i}");
    }
}
