//! A sharded LRU cache of decoded blocks, bounded in bytes and shared by every open table.
//!
//! Invariants:
//! 1. The sum of the charges of resident blocks in a shard never exceeds the shard's capacity
//!    after an insert returns (a block larger than a shard is simply not cached).
//! 2. Blocks are immutable and reference counted: eviction never invalidates a reader.
//!
//! Each shard is guarded by its own mutex; a lookup holds one shard lock for O(1): a hash map
//! from key to a slot, and the slots in a doubly linked recency list (indices into a slab).
//!
//! Evicted blocks no reader holds give their buffers to their shard's spares (at most
//! [`SPARES`] of at most [`SPARE_MAX`] bytes, and together at most an eighth of the shard's
//! capacity, so the cache holds at most 1.125 × its capacity), and a miss in that shard takes one to read the
//! block into: in a read-heavy workload over more data than the cache holds, each miss would
//! otherwise free a cold 4 KiB buffer, whose allocator bookkeeping (its header, its
//! neighbours') misses the CPU cache — 14% of readrandom's CPU in `bench/profiles/`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::block::Block;

const SHARDS: usize = 16;

/// Spare buffers kept per shard.
pub const SPARES: usize = 16;

/// Largest buffer kept as a spare (bytes of capacity).
pub const SPARE_MAX: usize = 64 << 10;

/// Identifies a block: the table's cache id and the block's offset in its file.
pub type CacheKey = (u64, u64);

/// No slot (list ends).
const NONE: usize = usize::MAX;

/// One cached block in the slab, linked into its shard's recency list.
struct Slot {
    key: CacheKey,
    block: Option<Arc<Block>>,
    /// Towards the most recently used end.
    prev: usize,
    /// Towards the least recently used end.
    next: usize,
}

/// A multiplicative hash of the key's two words (the table id and the offset are not chosen
/// by an adversary; SipHash cost 1% of readrandom).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        // The table picks buckets by the low bits, which the product takes from the low bits
        // of the words alone: fold the high half in.
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// Invariants: `map` holds exactly the keys of the slots with a block; those slots form one
/// list from `head` (most recent) to `tail` (least recent); `free` holds the other slots.
struct Shard {
    map: HashMap<CacheKey, usize, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    head: usize,
    tail: usize,
    usage: usize,
    spares: Vec<Vec<u8>>,
    /// Capacity of the spares, in bytes.
    spare_bytes: usize,
}

impl Default for Shard {
    fn default() -> Self {
        Shard {
            map: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NONE,
            tail: NONE,
            usage: 0,
            spares: Vec::new(),
            spare_bytes: 0,
        }
    }
}

impl Shard {
    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.slots[i].prev, self.slots[i].next);
        match prev {
            NONE => self.head = next,
            p => self.slots[p].next = next,
        }
        match next {
            NONE => self.tail = prev,
            n => self.slots[n].prev = prev,
        }
    }

    fn push_front(&mut self, i: usize) {
        self.slots[i].prev = NONE;
        self.slots[i].next = self.head;
        match self.head {
            NONE => self.tail = i,
            h => self.slots[h].prev = i,
        }
        self.head = i;
    }

    /// Removes the least recently used block.
    fn pop_back(&mut self) -> Option<Arc<Block>> {
        let i = self.tail;
        if i == NONE {
            return None;
        }
        self.unlink(i);
        self.map.remove(&self.slots[i].key);
        self.free.push(i);
        self.slots[i].block.take()
    }
}

/// What [`BlockCache::lookup`] found.
pub enum Lookup {
    /// The block, marked most recently used.
    Hit(Arc<Block>),
    /// Not cached; a spare buffer of the key's shard to read it into, if it has one.
    Miss(Option<Vec<u8>>),
}

/// The shared block cache.
pub struct BlockCache {
    shards: Vec<Mutex<Shard>>,
    shard_capacity: usize,
    next_id: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &(self.shard_capacity * SHARDS))
            .field("usage", &self.usage())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding at most `capacity_bytes` of blocks.
    pub fn new(capacity_bytes: usize) -> Arc<Self> {
        Arc::new(BlockCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_capacity: capacity_bytes / SHARDS,
            next_id: AtomicU64::new(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        })
    }

    /// A fresh id for a newly opened table, so its blocks never alias another file's.
    pub fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn shard(&self, key: CacheKey) -> &Mutex<Shard> {
        let h =
            key.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.1.wrapping_mul(0xff51_afd7_ed55_8ccd);
        &self.shards[(h >> 58) as usize % SHARDS]
    }

    /// Looks a block up and marks it most recently used.
    pub fn get(&self, key: CacheKey) -> Option<Arc<Block>> {
        match self.lookup_inner(key, false) {
            Lookup::Hit(b) => Some(b),
            Lookup::Miss(_) => None,
        }
    }

    /// [`BlockCache::get`], handing out a spare buffer on a miss (see the module docs).
    pub fn lookup(&self, key: CacheKey) -> Lookup {
        self.lookup_inner(key, true)
    }

    fn lookup_inner(&self, key: CacheKey, spare: bool) -> Lookup {
        let mut s = self.shard(key).lock();
        let s = &mut *s;
        match s.map.get(&key).copied() {
            Some(i) => {
                s.unlink(i);
                s.push_front(i);
                self.hits.fetch_add(1, Ordering::Relaxed);
                Lookup::Hit(Arc::clone(
                    s.slots[i].block.as_ref().expect("a mapped slot"),
                ))
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                let buf = if spare { s.spares.pop() } else { None };
                s.spare_bytes -= buf.as_ref().map_or(0, Vec::capacity);
                Lookup::Miss(buf)
            }
        }
    }

    /// Inserts a block, evicting least recently used ones to stay within capacity.
    pub fn insert(&self, key: CacheKey, block: Arc<Block>) {
        let charge = block.charge();
        if charge > self.shard_capacity {
            return;
        }
        let mut s = self.shard(key).lock();
        let s = &mut *s;
        match s.map.get(&key).copied() {
            Some(i) => {
                let old = s.slots[i].block.replace(block);
                s.usage -= old.map_or(0, |b| b.charge());
                s.unlink(i);
                s.push_front(i);
            }
            None => {
                let slot = Slot {
                    key,
                    block: Some(block),
                    prev: NONE,
                    next: NONE,
                };
                let i = match s.free.pop() {
                    Some(i) => {
                        s.slots[i] = slot;
                        i
                    }
                    None => {
                        s.slots.push(slot);
                        s.slots.len() - 1
                    }
                };
                s.map.insert(key, i);
                s.push_front(i);
            }
        }
        s.usage += charge;
        while s.usage > self.shard_capacity {
            let Some(b) = s.pop_back() else {
                break;
            };
            s.usage -= b.charge();
            if s.spares.len() < SPARES {
                if let Ok(b) = Arc::try_unwrap(b) {
                    let data = b.into_data();
                    let bytes = s.spare_bytes + data.capacity();
                    if data.capacity() <= SPARE_MAX && bytes <= self.shard_capacity / 8 {
                        s.spare_bytes = bytes;
                        s.spares.push(data);
                    }
                }
            }
        }
    }

    /// Bytes currently held.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().usage).sum()
    }

    /// (hits, misses) since creation.
    pub fn hit_stats(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(n: usize) -> Arc<Block> {
        let mut b = super::super::block::BlockBuilder::new(16);
        b.add(b"k", &vec![7u8; n]);
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    #[test]
    fn stays_within_capacity_and_evicts_lru() {
        let cache = BlockCache::new(SHARDS * 10_000);
        for off in 0..1000u64 {
            cache.insert((1, off), block(1000));
            assert!(cache.usage() <= SHARDS * 10_000);
        }
        // Recent blocks are present, the oldest were evicted.
        assert!(cache.get((1, 999)).is_some());
        assert!(cache.get((1, 0)).is_none());
        let (hits, misses) = cache.hit_stats();
        assert_eq!((hits, misses), (1, 1));
    }

    /// Random gets and inserts against a model: per shard, a list of keys from most to least
    /// recently used, cut to the blocks that fit.
    #[test]
    fn behaves_as_a_least_recently_used_list_per_shard() {
        let per_block = block(1000).charge();
        let cache = BlockCache::new(SHARDS * per_block * 5);
        let mut model: HashMap<*const Mutex<Shard>, Vec<CacheKey>> = HashMap::new();
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = (1 + (x >> 60) % 2, (x >> 33) % 64);
            let list = model.entry(cache.shard(key) as *const _).or_default();
            let pos = list.iter().position(|&k| k == key);
            if x & 1 == 0 {
                assert_eq!(cache.get(key).is_some(), pos.is_some(), "{key:?}");
                if let Some(p) = pos {
                    list.remove(p);
                    list.insert(0, key);
                }
            } else {
                cache.insert(key, block(1000));
                if let Some(p) = pos {
                    list.remove(p);
                }
                list.insert(0, key);
                list.truncate(5);
            }
        }
        let blocks: usize = model.values().map(Vec::len).sum();
        assert_eq!(cache.usage(), blocks * per_block);
    }

    #[test]
    fn evicted_blocks_no_reader_holds_become_spares() {
        // A shard holds about 200 blocks; its spares may take 25,000 bytes (an eighth).
        let cache = BlockCache::new(SHARDS * 200_000);
        let held = block(1000);
        cache.insert((1, 0), Arc::clone(&held));
        let shard = |k: CacheKey| cache.shard(k) as *const Mutex<Shard>;
        // Fill key (1, 0)'s shard until it is evicted, then until SPARES+ more are.
        let same: Vec<CacheKey> = (1..100_000u64)
            .map(|o| (1, o))
            .filter(|&k| shard(k) == shard((1, 0)))
            .take(200 + SPARES + 20)
            .collect();
        for &k in &same {
            cache.insert(k, block(1000));
        }
        let spares = cache.shard((1, 0)).lock().spares.len();
        // The held block was evicted but not recycled (a reader holds it); the others were,
        // up to SPARES.
        assert_eq!(spares, SPARES);
        assert!(cache.get((1, 0)).is_none());
        assert_eq!(held.data().len(), held.data().len());
        // A miss in the shard hands one out; a hit hands the block; a miss elsewhere with
        // no spares hands none.
        match cache.lookup((1, 0)) {
            Lookup::Miss(Some(buf)) => assert!(buf.capacity() >= 1000),
            _ => panic!("expected a spare"),
        }
        assert_eq!(cache.shard((1, 0)).lock().spares.len(), SPARES - 1);
        assert!(matches!(
            cache.lookup(*same.last().unwrap()),
            Lookup::Hit(_)
        ));
        let other = (2..)
            .map(|o| (9, o))
            .find(|&k| shard(k) != shard((1, 0)) && cache.shard(k).lock().spares.is_empty())
            .unwrap();
        assert!(matches!(cache.lookup(other), Lookup::Miss(None)));
        // A small cache keeps fewer: at most an eighth of a shard's capacity in spares.
        let small = BlockCache::new(SHARDS * 10_000);
        for o in 0..10_000u64 {
            small.insert((1, o), block(1000));
        }
        for sh in &small.shards {
            let sh = sh.lock();
            assert!(
                sh.spare_bytes <= 10_000 / 8 && sh.spares.len() == 1,
                "{}",
                sh.spare_bytes
            );
            assert_eq!(
                sh.spare_bytes,
                sh.spares.iter().map(Vec::capacity).sum::<usize>()
            );
        }
    }

    #[test]
    fn oversized_block_is_not_cached() {
        let cache = BlockCache::new(SHARDS * 100);
        cache.insert((1, 0), block(10_000));
        assert_eq!(cache.usage(), 0);
    }
}
