//! A concurrent skiplist over internal keys: one writer at a time, any number of lock-free
//! readers.
//!
//! Nodes live in an arena of fixed-size chunks and are addressed by `u32` index, so links are
//! plain atomics and no node ever moves or is freed before the whole list is dropped.
//!
//! Invariants:
//! 1. A node's entry is published (through its `OnceLock`) before any link to it is stored,
//!    and links are stored with `Release` and loaded with `Acquire`: a reader that sees a link
//!    sees the entry behind it.
//! 2. At every height, following `next` visits keys in strictly increasing internal-key order.
//! 3. Inserts are serialized by `write_lock`; readers take no lock.
//! 4. A node's `prefix` is [`key_prefix`] of its key, stored before the node is linked (so a
//!    reader that reaches the node through an `Acquire` load sees it). Searches compare
//!    prefixes first and touch the entry only when they tie: for random keys that saves the two
//!    dependent loads (entry, then its bytes) on almost every node a search passes.

use std::cmp::Ordering as CmpOrdering;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::base::key::{compare_internal, user_key, TRAILER_LEN};

/// Tallest tower a node can have.
pub const MAX_HEIGHT: usize = 12;
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
const MAX_CHUNKS: usize = 1 << 15;
const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;

struct Entry {
    /// Internal key followed by the value.
    data: Box<[u8]>,
    key_len: u32,
}

struct Node {
    /// [`key_prefix`] of the entry's key (invariant 4).
    prefix: AtomicU64,
    entry: OnceLock<Entry>,
    next: [AtomicU32; MAX_HEIGHT],
}

impl Node {
    fn new() -> Self {
        Node {
            prefix: AtomicU64::new(0),
            entry: OnceLock::new(),
            next: std::array::from_fn(|_| AtomicU32::new(NIL)),
        }
    }
}

/// The first 8 bytes of `ikey`'s user key, zero-padded, read big-endian; `None` for a key too
/// short to be an internal key (it is compared in full). When two prefixes differ they order
/// their keys as [`compare_internal`] does: the first differing byte is either a real byte of
/// both user keys, or padding (0) in a key that already ended, i.e. a proper prefix of the other
/// key, which sorts first — and the other key's byte there, differing from 0, is greater.
#[inline]
fn key_prefix(ikey: &[u8]) -> Option<u64> {
    if ikey.len() < TRAILER_LEN {
        return None;
    }
    let uk = user_key(ikey);
    let mut b = [0u8; 8];
    let n = uk.len().min(8);
    b[..n].copy_from_slice(&uk[..n]);
    Some(u64::from_be_bytes(b))
}

/// The skiplist.
pub struct SkipList {
    chunks: Box<[OnceLock<Box<[Node]>>]>,
    len: AtomicU32,
    height: AtomicUsize,
    write_lock: Mutex<u64>,
    bytes: AtomicU64,
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl SkipList {
    /// An empty list (just the head node).
    pub fn new() -> Self {
        let chunks: Box<[OnceLock<Box<[Node]>>]> =
            (0..MAX_CHUNKS).map(|_| OnceLock::new()).collect();
        let list = SkipList {
            chunks,
            len: AtomicU32::new(1),
            height: AtomicUsize::new(1),
            write_lock: Mutex::new(0x2545_F491_4F6C_DD1D),
            bytes: AtomicU64::new(0),
        };
        let _ = list.node_slot(HEAD);
        list
    }

    fn node_slot(&self, idx: u32) -> &Node {
        let chunk = self.chunks[(idx >> CHUNK_BITS) as usize]
            .get_or_init(|| (0..CHUNK).map(|_| Node::new()).collect());
        &chunk[(idx as usize) & (CHUNK - 1)]
    }

    #[inline]
    fn node(&self, idx: u32) -> &Node {
        // Every index reachable through a link was allocated (and its chunk initialised)
        // before the link was published.
        let chunk = self.chunks[(idx >> CHUNK_BITS) as usize]
            .get()
            .expect("linked node's chunk is initialised");
        &chunk[(idx as usize) & (CHUNK - 1)]
    }

    #[inline]
    fn entry(&self, idx: u32) -> &Entry {
        // Invariant 1: a node is published before any link to it.
        self.node(idx)
            .entry
            .get()
            .expect("linked node is published")
    }

    #[inline]
    fn key(&self, idx: u32) -> &[u8] {
        let e = self.entry(idx);
        &e.data[..e.key_len as usize]
    }

    #[inline]
    fn value(&self, idx: u32) -> &[u8] {
        let e = self.entry(idx);
        &e.data[e.key_len as usize..]
    }

    /// True if node `n`'s key sorts before `target` (whose [`key_prefix`] is `tprefix`).
    #[inline]
    fn before(&self, n: u32, target: &[u8], tprefix: Option<u64>) -> bool {
        if let Some(t) = tprefix {
            let p = self.node(n).prefix.load(Ordering::Relaxed);
            if p != t {
                return p < t;
            }
        }
        compare_internal(self.key(n), target) == CmpOrdering::Less
    }

    #[inline]
    fn next(&self, idx: u32, level: usize) -> u32 {
        self.node(idx).next[level].load(Ordering::Acquire)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire) as usize - 1
    }

    /// True if no entry was inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn add_bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Approximate memory held, in bytes.
    pub fn approximate_bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// First node with key >= `target`, filling `prev` with the last node < target per level.
    fn find_greater_or_equal(
        &self,
        target: &[u8],
        mut prev: Option<&mut [u32; MAX_HEIGHT]>,
    ) -> u32 {
        let tprefix = key_prefix(target);
        let mut x = HEAD;
        let mut level = self.height.load(Ordering::Acquire) - 1;
        loop {
            let n = self.next(x, level);
            if n != NIL && self.before(n, target, tprefix) {
                x = n;
                continue;
            }
            if let Some(p) = prev.as_deref_mut() {
                p[level] = x;
            }
            if level == 0 {
                return n;
            }
            level -= 1;
        }
    }

    /// Last node with key < `target` (HEAD if none).
    fn find_less_than(&self, target: &[u8]) -> u32 {
        let tprefix = key_prefix(target);
        let mut x = HEAD;
        let mut level = self.height.load(Ordering::Acquire) - 1;
        loop {
            let n = self.next(x, level);
            if n != NIL && self.before(n, target, tprefix) {
                x = n;
            } else if level == 0 {
                return x;
            } else {
                level -= 1;
            }
        }
    }

    fn find_last(&self) -> u32 {
        let mut x = HEAD;
        let mut level = self.height.load(Ordering::Acquire) - 1;
        loop {
            let n = self.next(x, level);
            if n != NIL {
                x = n;
            } else if level == 0 {
                return x;
            } else {
                level -= 1;
            }
        }
    }

    /// Inserts `ikey → value`. Returns false (and inserts nothing) if `ikey` is already present.
    pub fn insert(&self, ikey: &[u8], value: &[u8]) -> bool {
        let mut rng = self.write_lock.lock();
        let mut prev = [HEAD; MAX_HEIGHT];
        let found = self.find_greater_or_equal(ikey, Some(&mut prev));
        if found != NIL && compare_internal(self.key(found), ikey) == CmpOrdering::Equal {
            return false;
        }
        let mut height = 1;
        while height < MAX_HEIGHT {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            if !(*rng).is_multiple_of(4) {
                break;
            }
            height += 1;
        }
        let cur = self.height.load(Ordering::Relaxed);
        if height > cur {
            for p in prev.iter_mut().take(height).skip(cur) {
                *p = HEAD;
            }
            // Readers seeing the new height before the links find NIL from HEAD: harmless.
            self.height.store(height, Ordering::Release);
        }
        let idx = self.len.load(Ordering::Relaxed);
        assert!(
            (idx as usize) < MAX_CHUNKS * CHUNK,
            "memtable exceeds {} entries",
            MAX_CHUNKS * CHUNK
        );
        let node = self.node_slot(idx);
        // Invariant 4: stored before the links below publish the node.
        node.prefix
            .store(key_prefix(ikey).unwrap_or(0), Ordering::Relaxed);
        let mut data = Vec::with_capacity(ikey.len() + value.len());
        data.extend_from_slice(ikey);
        data.extend_from_slice(value);
        let _ = node.entry.set(Entry {
            data: data.into_boxed_slice(),
            key_len: ikey.len() as u32,
        });
        for (level, p) in prev.iter().enumerate().take(height) {
            node.next[level].store(self.next(*p, level), Ordering::Relaxed);
            self.node(*p).next[level].store(idx, Ordering::Release);
        }
        self.len.store(idx + 1, Ordering::Release);
        let charge = ikey.len() + value.len() + std::mem::size_of::<Node>() + 16;
        self.bytes.fetch_add(charge as u64, Ordering::Relaxed);
        true
    }
}

/// A cursor over a [`SkipList`]. Holds no lock; sees every entry linked before each move.
pub struct SkipIter<L: std::ops::Deref<Target = SkipList>> {
    list: L,
    node: u32,
}

impl<L: std::ops::Deref<Target = SkipList>> SkipIter<L> {
    /// An unpositioned iterator.
    pub fn new(list: L) -> Self {
        SkipIter { list, node: NIL }
    }
    /// True when positioned on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.node != NIL && self.node != HEAD
    }
    /// Makes the iterator invalid.
    pub fn invalidate(&mut self) {
        self.node = NIL;
    }
    /// The current internal key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        self.list.key(self.node)
    }
    /// The current value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.list.value(self.node)
    }
    /// Moves to the next entry.
    #[inline]
    pub fn next(&mut self) {
        self.node = self.list.next(self.node, 0);
    }
    /// Moves to the previous entry.
    pub fn prev(&mut self) {
        let k = self.key().to_vec();
        let p = self.list.find_less_than(&k);
        self.node = if p == HEAD { NIL } else { p };
    }
    /// First entry >= target.
    pub fn seek(&mut self, target: &[u8]) {
        self.node = self.list.find_greater_or_equal(target, None);
    }
    /// Last entry <= target.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if !self.valid() || compare_internal(self.key(), target) == CmpOrdering::Greater {
            let p = self.list.find_less_than(target);
            self.node = if p == HEAD { NIL } else { p };
        }
    }
    /// First entry.
    pub fn seek_to_first(&mut self) {
        self.node = self.list.next(HEAD, 0);
    }
    /// Last entry.
    pub fn seek_to_last(&mut self) {
        let l = self.list.find_last();
        self.node = if l == HEAD { NIL } else { l };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::key::{make_internal_key, ValueKind};
    use std::sync::Arc;

    #[test]
    fn insert_and_iterate_in_order() {
        let l = SkipList::new();
        let mut keys: Vec<Vec<u8>> = (0..5000u32)
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

    #[test]
    fn readers_run_concurrently_with_the_writer() {
        let l = Arc::new(SkipList::new());
        let writer = {
            let l = Arc::clone(&l);
            std::thread::spawn(move || {
                for i in 0..20_000u32 {
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
                    for _ in 0..50 {
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
        assert_eq!(l.len(), 20_000);
    }
}
