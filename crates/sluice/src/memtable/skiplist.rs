//! A concurrent skiplist over internal keys: one writer at a time, any number of lock-free
//! readers.
//!
//! Everything lives in two arenas of raw memory chunks that never move and are freed only with
//! the whole list: one for the nodes a search walks, one for the keys and values. Both are
//! addressed by `u32` references (byte offsets in units of [`ALIGN`]), so links are plain
//! atomics:
//!
//! ```text
//! node (index arena)                      entry (data arena)
//!  0: prefix  u64 (unaligned)  ───────┐    key_len varint32 (1–5 bytes)
//!  8: entry   u32 (data ref)   ───────┼──▶ val_len varint32 (1–5 bytes)
//! 12: next    h × AtomicU32           │    internal key bytes, then the value bytes
//!     (one link per level)            └─ `key_prefix` of the key (invariant 4)
//! ```
//!
//! A 24-byte internal key with a 100-byte value takes 16 bytes of node (at tower height 1,
//! ~17 on average) and 128 bytes of entry (126 rounded up to [`ALIGN`]) — against 228 bytes
//! when each node was a fixed 88-byte slot with a 12-level tower plus a separately allocated
//! key/value box, and 132 when the lengths were two `u32`s. A memtable of the same size so
//! holds ~1.57× the entries, the write path makes no allocation per entry, and a search walks
//! a dense index (~17 bytes a node) that touches entries only on prefix ties.
//!
//! Invariants:
//! 1. A node's and its entry's bytes (prefix, entry ref, lengths, key, value, the node's own
//!    links) are written before any link to the node is stored, links are stored with
//!    `Release` and loaded with `Acquire`, and nothing but links is ever written again: a
//!    reader that reaches a node through a link reads fully written, immutable bytes.
//! 2. At every height, following `next` visits keys in strictly increasing internal-key order.
//! 3. Inserts (and so all arena allocation) are serialized by `writer`; readers take no lock.
//! 4. A node's `prefix` is [`key_prefix`] of its key. Searches compare prefixes first and
//!    touch the entry only when they tie: for random keys that saves a load of the entry on
//!    almost every node a search passes.
//! 5. Every reference names an allocation wholly inside one chunk of its arena: nothing spans
//!    chunks (an entry larger than a chunk gets a chunk of its own).
//! 6. A link at `level` is only read or written on a node whose tower is taller than `level`
//!    (a search reaches a node at level L only through a link at level L; `HEAD` is full).

// The arena is the one place the engine uses `unsafe` (see the crate's Cargo.toml).
#![allow(unsafe_code)]

use std::alloc::Layout;
use std::cmp::Ordering as CmpOrdering;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::base::key::{compare_internal, user_key, TRAILER_LEN};

/// Tallest tower a node can have.
pub const MAX_HEIGHT: usize = 12;
/// Alignment of every allocation and the unit of a reference.
const ALIGN: usize = 4;
/// 1 MiB chunks; 4 KiB under Miri, so that its tests cross chunks with little data.
const CHUNK_BITS: u32 = if cfg!(miri) { 12 } else { 20 };
/// Size of an ordinary arena chunk.
const CHUNK: usize = 1 << CHUNK_BITS;
/// References are `u32` in units of `ALIGN`: 16 GiB of address space per arena (16 MiB under
/// Miri, whose overflow table would otherwise take it minutes to build).
const MAX_CHUNKS: usize = if cfg!(miri) {
    1 << 12
} else {
    (1usize << 32) * ALIGN / CHUNK
};
const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;
/// Bytes of a node before its tower: prefix and entry ref.
const NODE_HEADER: usize = 12;
/// Most bytes of an entry before its key: the two lengths as varint32s.
const MAX_ENTRY_HEADER: usize = 10;

/// `key_len` and `val_len` as two varint32s (LEB128, as RocksDB's memtable entries) into
/// `out`; returns how many bytes they took.
#[inline]
fn entry_header(key_len: u32, val_len: u32, out: &mut [u8; MAX_ENTRY_HEADER]) -> usize {
    let mut n = 0;
    for mut v in [key_len, val_len] {
        while v >= 0x80 {
            out[n] = (v as u8) | 0x80;
            v >>= 7;
            n += 1;
        }
        out[n] = v as u8;
        n += 1;
    }
    n
}

/// Reads a varint32 written by [`entry_header`] at `*p` and moves `*p` past it.
///
/// # Safety
/// `*p` must point at a complete varint32 inside a live allocation (an entry's header, which
/// its writer finished before publishing it: invariant 1).
#[inline]
unsafe fn read_len(p: &mut *const u8) -> usize {
    let mut v = 0usize;
    let mut shift = 0;
    loop {
        // SAFETY: the caller's contract: every byte up to the varint's last is inside it.
        let b = unsafe { p.read() };
        // SAFETY: as above; at most one past the varint's last byte, still inside the entry
        // (its key follows) or one past its end.
        *p = unsafe { p.add(1) };
        v |= usize::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
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

/// Asks the CPU to bring `p`'s cache line in (a hint: no fault, no effect on what any load
/// reads).
#[inline]
fn prefetch(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: a prefetch never faults and reads nothing into the program; `p` points into a
    // live arena chunk anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = p;
}

/// One block of arena memory, aligned to [`ALIGN`], freed on drop. Not zeroed: every byte a
/// reader loads was written before its node was published (invariant 1), and zeroing a fresh
/// 1 MiB chunk faulted in all its pages inside one insert (3–5 ms on a VM) where an insert that
/// touches a new page faults in that page alone.
struct Chunk {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Chunk {
    fn new(size: usize) -> Chunk {
        let layout = Layout::from_size_align(size, ALIGN).expect("chunk layout");
        // SAFETY: `layout` has a non-zero size (every allocation holds a header).
        let raw = unsafe { std::alloc::alloc(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Chunk { ptr, layout }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: allocated in `Chunk::new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: a chunk is plain memory owned by its list. Its bytes are shared between the writer
// and readers under the list's invariants 1 and 3: each byte other than a link is written by
// the one writer before its node is published and only read afterwards, and links are only
// accessed as atomics.
unsafe impl Send for Chunk {}
// SAFETY: as for `Send`.
unsafe impl Sync for Chunk {}

/// Chunk slots held inline in an arena: its first 256 chunks (256 MiB, more than a memtable of
/// the default size holds), so that a new list costs 2 KiB of slots per arena rather than a
/// table for the whole reference range (512 KiB, faulted in while a memtable switch or a
/// flushable ingest held the write queue). 16 in the crate's tests and under Miri, so that
/// they reach the overflow table.
const INLINE_SLOTS: usize = if cfg!(any(test, miri)) { 16 } else { 256 };

/// Chunks of memory handed out from a tail that only grows. Slot `i` holds the address of the
/// chunk covering offsets `[i·CHUNK, (i+1)·CHUNK)` (null until allocated); a chunk larger than
/// `CHUNK` sits in its first slot and the slots after it stay unused.
struct Arena {
    inline: [AtomicPtr<u8>; INLINE_SLOTS],
    /// Slots from `INLINE_SLOTS` on, made when the writer first needs one.
    overflow: OnceLock<Box<[AtomicPtr<u8>]>>,
    /// The chunks, freed with the arena (the writer pushes; nothing else touches it).
    owned: Mutex<Vec<Chunk>>,
}

impl Arena {
    fn new() -> Arena {
        Arena {
            inline: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            overflow: OnceLock::new(),
            owned: Mutex::new(Vec::new()),
        }
    }

    /// Slot `idx` (< `MAX_CHUNKS`).
    #[inline]
    fn slot(&self, idx: usize) -> &AtomicPtr<u8> {
        match idx.checked_sub(INLINE_SLOTS) {
            None => &self.inline[idx],
            Some(i) => &self.overflow.get_or_init(|| {
                (INLINE_SLOTS..MAX_CHUNKS)
                    .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                    .collect()
            })[i],
        }
    }

    /// Allocates a chunk of `size` bytes into slot `idx` (writer only). Published with
    /// `Release`: a reader reaches an allocation in it only through a link stored later.
    fn fill(&self, idx: usize, size: usize) {
        let chunk = Chunk::new(size);
        let p = chunk.ptr.as_ptr();
        self.owned.lock().push(chunk);
        self.slot(idx).store(p, Ordering::Release);
    }

    /// Reserves `size` bytes (a multiple of `ALIGN`) at `tail` (writer only); returns the
    /// reference and the bytes the tail moved (with any chunk end skipped).
    fn alloc(&self, tail: &mut usize, size: usize) -> (u32, usize) {
        debug_assert_eq!(size % ALIGN, 0);
        let before = *tail;
        let mut off = *tail;
        let within = off & (CHUNK - 1);
        if size > CHUNK {
            // A chunk of its own (invariant 5), covering as many chunk slots as its size.
            if within != 0 {
                off = (off | (CHUNK - 1)) + 1;
            }
            let idx = off >> CHUNK_BITS;
            let slots = size.div_ceil(CHUNK);
            assert!(
                idx + slots <= MAX_CHUNKS,
                "memtable arena exceeds {} bytes",
                MAX_CHUNKS * CHUNK
            );
            debug_assert!(self.slot(idx).load(Ordering::Relaxed).is_null());
            self.fill(idx, size);
            *tail = (idx + slots) << CHUNK_BITS;
        } else {
            if within + size > CHUNK {
                off = (off | (CHUNK - 1)) + 1;
            }
            let idx = off >> CHUNK_BITS;
            assert!(
                idx < MAX_CHUNKS,
                "memtable arena exceeds {} bytes",
                MAX_CHUNKS * CHUNK
            );
            // Only the writer stores slots, so its own Relaxed load sees the last store.
            if self.slot(idx).load(Ordering::Relaxed).is_null() {
                self.fill(idx, CHUNK);
            }
            *tail = off + size;
        }
        let r = u32::try_from(off / ALIGN).expect("offsets fit the reference range");
        (r, *tail - before)
    }

    /// Address of the allocation `r`, which must have been handed out (invariant 5).
    #[inline]
    fn ptr(&self, r: u32) -> *mut u8 {
        let off = r as usize * ALIGN;
        let base = self.slot(off >> CHUNK_BITS).load(Ordering::Acquire);
        assert!(!base.is_null(), "a referenced allocation's chunk exists");
        // SAFETY: the allocation starts inside this chunk (invariant 5), so the offset is in
        // bounds of the chunk's memory.
        unsafe { base.add(off & (CHUNK - 1)) }
    }
}

/// The writer's state: the xorshift state for tower heights and both arenas' tails.
struct Writer {
    rng: u64,
    node_tail: usize,
    entry_tail: usize,
    /// The node linked last (NIL before the first), and per level the node a key just after
    /// it follows: itself up to its height, its predecessors above (the splice of RocksDB's
    /// and Pebble's sequential-insert hint). Only inserts change links, and only under
    /// `writer`, so the splice is current whenever the writer holds it.
    last: u32,
    splice: [u32; MAX_HEIGHT],
}

/// The skiplist.
pub struct SkipList {
    nodes: Arena,
    entries: Arena,
    len: AtomicU32,
    height: AtomicUsize,
    writer: Mutex<Writer>,
    bytes: AtomicU64,
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl SkipList {
    /// An empty list (just the head node, with a full tower and an empty entry).
    pub fn new() -> Self {
        let list = SkipList {
            nodes: Arena::new(),
            entries: Arena::new(),
            len: AtomicU32::new(0),
            height: AtomicUsize::new(1),
            writer: Mutex::new(Writer {
                rng: 0x2545_F491_4F6C_DD1D,
                node_tail: 0,
                entry_tail: 0,
                last: NIL,
                splice: [HEAD; MAX_HEIGHT],
            }),
            bytes: AtomicU64::new(0),
        };
        {
            let mut w = list.writer.lock();
            let head = list.new_node(&mut w, MAX_HEIGHT, &[], &[], &[]);
            debug_assert_eq!(head, HEAD);
        }
        list.bytes.store(0, Ordering::Relaxed);
        list
    }

    /// Allocates and writes a node of tower `height` with NIL links and its entry `key ‖
    /// trailer → value` (writer only; the node is not linked).
    fn new_node(
        &self,
        w: &mut Writer,
        height: usize,
        key: &[u8],
        trailer: &[u8],
        value: &[u8],
    ) -> u32 {
        let klen = key.len() + trailer.len();
        let key_len = u32::try_from(klen).expect("key length fits u32");
        let val_len = u32::try_from(value.len()).expect("value length fits u32");
        let mut header = [0u8; MAX_ENTRY_HEADER];
        let hlen = entry_header(key_len, val_len, &mut header);
        let entry_size = (hlen + klen + value.len()).next_multiple_of(ALIGN);
        let (e, moved_e) = self.entries.alloc(&mut w.entry_tail, entry_size);
        let (n, moved_n) = self.nodes.alloc(&mut w.node_tail, NODE_HEADER + 4 * height);
        self.bytes
            .fetch_add((moved_e + moved_n) as u64, Ordering::Relaxed);
        let ep = self.entries.ptr(e);
        // SAFETY: `alloc` reserved `entry_size` bytes at `ep` inside one chunk (invariant 5),
        // 4-byte aligned; no reader can reach them yet (invariant 1), so these plain writes
        // race with nothing.
        unsafe {
            std::ptr::copy_nonoverlapping(header.as_ptr(), ep, hlen);
            let data = ep.add(hlen);
            std::ptr::copy_nonoverlapping(key.as_ptr(), data, key.len());
            std::ptr::copy_nonoverlapping(trailer.as_ptr(), data.add(key.len()), trailer.len());
            std::ptr::copy_nonoverlapping(value.as_ptr(), data.add(klen), value.len());
        }
        let prefix = key_prefix(self.entry(e).0).unwrap_or(0);
        let np = self.nodes.ptr(n);
        // SAFETY: as above, for the node's `NODE_HEADER + 4 * height` bytes; its links are
        // written through atomics only (4-byte aligned: nodes are ALIGN-aligned and the tower
        // starts at offset 12).
        unsafe {
            np.cast::<u64>().write_unaligned(prefix);
            np.add(8).cast::<u32>().write(e);
            for level in 0..height {
                AtomicU32::from_ptr(np.add(NODE_HEADER + 4 * level).cast::<u32>())
                    .store(NIL, Ordering::Relaxed);
            }
        }
        n
    }

    /// Entry `e`'s internal key and value.
    #[inline]
    fn entry(&self, e: u32) -> (&[u8], &[u8]) {
        let p = self.entries.ptr(e);
        // SAFETY: an entry's lengths, key and value lie inside its chunk (invariant 5) and
        // were written before any reader could reach them (invariant 1), never to be written
        // again; the memory lives as long as `self`.
        unsafe {
            let mut data = p.cast_const();
            let key_len = read_len(&mut data);
            let val_len = read_len(&mut data);
            (
                std::slice::from_raw_parts(data, key_len),
                std::slice::from_raw_parts(data.add(key_len), val_len),
            )
        }
    }

    /// Node `n`'s entry reference.
    #[inline]
    fn entry_ref(&self, n: u32) -> u32 {
        // SAFETY: as `entry`: part of the node's immutable header.
        unsafe { self.nodes.ptr(n).add(8).cast::<u32>().read() }
    }

    /// Node `n`'s key and value bytes.
    #[inline]
    fn data(&self, n: u32) -> (&[u8], &[u8]) {
        self.entry(self.entry_ref(n))
    }

    #[inline]
    fn key(&self, n: u32) -> &[u8] {
        self.data(n).0
    }

    #[inline]
    fn value(&self, n: u32) -> &[u8] {
        self.data(n).1
    }

    #[inline]
    fn prefix(&self, n: u32) -> u64 {
        // SAFETY: as `entry`: part of the node's immutable header.
        unsafe { self.nodes.ptr(n).cast::<u64>().read_unaligned() }
    }

    /// A scan's pipeline (`SkipIter::next`): a memtable filled in random order lays its nodes
    /// and entries all over the arenas, so each step of a scan was two dependent cache misses
    /// (the node, then its entry) — most of a flush's time (bench/profiles/README.md). At node
    /// `n`, the next node's header was asked for one step ago: read it now, and ask for that
    /// node's entry and the header after it, so each arrives while this step's entry is used.
    /// The first step after a seek only asks for the next header (`deep` false): a seek that
    /// reads an entry or two must not pay a load one step early for nothing.
    #[inline]
    fn prefetch_after(&self, n: u32, deep: bool) {
        if n == NIL {
            return;
        }
        let n1 = self.next(n, 0);
        if n1 == NIL {
            return;
        }
        if !deep {
            prefetch(self.nodes.ptr(n1));
            return;
        }
        prefetch(self.entries.ptr(self.entry_ref(n1)));
        let n2 = self.next(n1, 0);
        if n2 != NIL {
            prefetch(self.nodes.ptr(n2));
        }
    }

    /// Node `n`'s link at `level` (invariant 6: below its height).
    #[inline]
    fn link(&self, n: u32, level: usize) -> &AtomicU32 {
        // SAFETY: the tower lies inside the node's chunk (invariants 5 and 6), 4-byte aligned,
        // and links are only ever accessed through `AtomicU32` (invariant 1); the chunk lives
        // as long as `self`.
        unsafe { AtomicU32::from_ptr(self.nodes.ptr(n).add(NODE_HEADER + 4 * level).cast::<u32>()) }
    }

    /// True if node `n`'s key sorts before `target` (whose [`key_prefix`] is `tprefix`).
    #[inline]
    fn before(&self, n: u32, target: &[u8], tprefix: Option<u64>) -> bool {
        if let Some(t) = tprefix {
            let p = self.prefix(n);
            if p != t {
                return p < t;
            }
        }
        compare_internal(self.key(n), target) == CmpOrdering::Less
    }

    #[inline]
    fn next(&self, r: u32, level: usize) -> u32 {
        self.link(r, level).load(Ordering::Acquire)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire) as usize
    }

    /// True if no entry was inserted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn add_bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Approximate memory held, in bytes: the arena bytes used by nodes.
    pub fn approximate_bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// First node with key >= `target`, filling `prev` with the last node < target per level.
    fn find_greater_or_equal(&self, target: &[u8], prev: Option<&mut [u32; MAX_HEIGHT]>) -> u32 {
        self.find_from(target, key_prefix(target), prev, None)
    }

    /// [`find_greater_or_equal`](Self::find_greater_or_equal) from a writer's splice, when
    /// given: `target` must sort after the node linked last. Each level's walk then starts at
    /// the splice's node of that level (HEAD or before `target`, and never behind the node
    /// the walk above stopped at while that walk has not moved), until some level's walk
    /// moves: it is then past the last node linked, so past every splice node below too.
    /// `tprefix` is [`key_prefix`] of `target`.
    fn find_from(
        &self,
        target: &[u8],
        tprefix: Option<u64>,
        mut prev: Option<&mut [u32; MAX_HEIGHT]>,
        start: Option<&[u32; MAX_HEIGHT]>,
    ) -> u32 {
        let mut x = HEAD;
        let mut level = self.height.load(Ordering::Acquire) - 1;
        let mut moved = false;
        if let Some(s) = start {
            x = s[level];
        }
        loop {
            let n = self.next(x, level);
            if n != NIL && self.before(n, target, tprefix) {
                x = n;
                moved = true;
                continue;
            }
            if let Some(p) = prev.as_deref_mut() {
                p[level] = x;
            }
            if level == 0 {
                return n;
            }
            level -= 1;
            if let (Some(s), false) = (start, moved) {
                x = s[level];
            }
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
    #[cfg(test)]
    pub fn insert(&self, ikey: &[u8], value: &[u8]) -> bool {
        self.insert_parts(ikey, &[], value)
    }

    /// Inserts the internal key `key ‖ trailer` (usually a user key and its 8-byte trailer)
    /// → `value`, without building the internal key elsewhere first. Returns false (and links
    /// nothing) if that key is already present; its arena bytes stay used.
    pub fn insert_parts(&self, key: &[u8], trailer: &[u8], value: &[u8]) -> bool {
        let mut w = self.writer.lock();
        let mut height = 1;
        while height < MAX_HEIGHT {
            w.rng ^= w.rng << 13;
            w.rng ^= w.rng >> 7;
            w.rng ^= w.rng << 17;
            if !w.rng.is_multiple_of(4) {
                break;
            }
            height += 1;
        }
        // Write the node first, then search with its own key bytes (no copy of the key).
        let r = self.new_node(&mut w, height, key, trailer, value);
        let ikey = self.key(r);
        let iprefix = key_prefix(ikey);
        let mut prev = [HEAD; MAX_HEIGHT];
        let after_last = w.last != NIL && self.before(w.last, ikey, iprefix);
        let start = after_last.then_some(w.splice);
        let found = self.find_from(ikey, iprefix, Some(&mut prev), start.as_ref());
        // A duplicate shares the node's prefix: comparing prefixes first spares the load of
        // `found`'s entry, a cache miss on nearly every random insert (~10% of fillrandom's
        // samples went to that load).
        if found != NIL
            && iprefix.is_none_or(|p| p == self.prefix(found))
            && compare_internal(self.key(found), ikey) == CmpOrdering::Equal
        {
            return false;
        }
        let cur = self.height.load(Ordering::Relaxed);
        if height > cur {
            for p in prev.iter_mut().take(height).skip(cur) {
                *p = HEAD;
            }
            // Readers seeing the new height before the links find NIL from HEAD: harmless.
            self.height.store(height, Ordering::Release);
        }
        for (level, p) in prev.iter().enumerate().take(height) {
            self.link(r, level)
                .store(self.next(*p, level), Ordering::Relaxed);
            self.link(*p, level).store(r, Ordering::Release);
        }
        self.len.fetch_add(1, Ordering::Release);
        for (level, s) in w.splice.iter_mut().enumerate() {
            *s = if level < height { r } else { prev[level] };
        }
        w.last = r;
        true
    }
}

/// A cursor over a [`SkipList`]. Holds no lock; sees every entry linked before each move.
pub struct SkipIter<L: std::ops::Deref<Target = SkipList>> {
    list: L,
    node: u32,
    /// A `next` ran since the last positioning: the scan pipeline is primed
    /// (`prefetch_after`).
    primed: bool,
}

impl<L: std::ops::Deref<Target = SkipList>> SkipIter<L> {
    /// An unpositioned iterator.
    pub fn new(list: L) -> Self {
        SkipIter {
            list,
            node: NIL,
            primed: false,
        }
    }
    /// True when positioned on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.node != NIL && self.node != HEAD
    }
    /// Makes the iterator invalid.
    pub fn invalidate(&mut self) {
        self.primed = false;
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
    /// Moves to the next entry, and asks the CPU for what the move after it will read.
    #[inline]
    pub fn next(&mut self) {
        self.node = self.list.next(self.node, 0);
        self.list.prefetch_after(self.node, self.primed);
        self.primed = true;
    }
    /// Moves to the previous entry.
    pub fn prev(&mut self) {
        self.primed = false;
        let k = self.key().to_vec();
        let p = self.list.find_less_than(&k);
        self.node = if p == HEAD { NIL } else { p };
    }
    /// First entry >= target.
    pub fn seek(&mut self, target: &[u8]) {
        self.primed = false;
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
        self.primed = false;
        self.node = self.list.next(HEAD, 0);
    }
    /// Last entry.
    pub fn seek_to_last(&mut self) {
        self.primed = false;
        let l = self.list.find_last();
        self.node = if l == HEAD { NIL } else { l };
    }
}

#[cfg(test)]
#[path = "skiplist_tests.rs"]
mod tests;
