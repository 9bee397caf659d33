//! A sharded LRU cache of decoded blocks, bounded in bytes and shared by every open table.
//!
//! Invariants:
//! 1. The sum of the charges of resident blocks in a shard never exceeds the shard's capacity
//!    after an insert returns (a block larger than a shard is simply not cached).
//! 2. Blocks are immutable and reference counted: eviction never invalidates a reader.
//!
//! Each shard is guarded by its own mutex; a lookup holds one shard lock for O(log n).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::block::Block;

const SHARDS: usize = 16;

/// Identifies a block: the table's cache id and the block's offset in its file.
pub type CacheKey = (u64, u64);

#[derive(Default)]
struct Shard {
    map: HashMap<CacheKey, (Arc<Block>, u64)>,
    lru: BTreeMap<u64, CacheKey>,
    tick: u64,
    usage: usize,
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
        let mut s = self.shard(key).lock();
        let s = &mut *s;
        s.tick += 1;
        let tick = s.tick;
        match s.map.get_mut(&key) {
            Some((b, t)) => {
                s.lru.remove(t);
                *t = tick;
                s.lru.insert(tick, key);
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(Arc::clone(b))
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
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
        s.tick += 1;
        let tick = s.tick;
        if let Some((old, t)) = s.map.insert(key, (block, tick)) {
            s.lru.remove(&t);
            s.usage -= old.charge();
        }
        s.lru.insert(tick, key);
        s.usage += charge;
        while s.usage > self.shard_capacity {
            let Some((_, victim)) = s.lru.pop_first() else {
                break;
            };
            if let Some((b, _)) = s.map.remove(&victim) {
                s.usage -= b.charge();
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

    #[test]
    fn oversized_block_is_not_cached() {
        let cache = BlockCache::new(SHARDS * 100);
        cache.insert((1, 0), block(10_000));
        assert_eq!(cache.usage(), 0);
    }
}
