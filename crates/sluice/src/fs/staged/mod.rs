//! A write-ahead log staged through a ring in shared memory, written to its file by a thread.
//!
//! The writer's `write(2)` of each record was the largest cost on the put path after the
//! memtable (about a fifth of a single writer's CPU in block_writer, bench/profiles/README.md).
//! Pebble takes it off the writer's thread (a flusher goroutine writes the log), but a write
//! acknowledged before it reaches the kernel dies with the process. Here the writer copies each
//! record into a ring that lives in a file on a memory file system (`/dev/shm`, tmpfs), mapped
//! `MAP_SHARED`: the bytes are in the kernel's memory as soon as the copy returns, so a write
//! acknowledged after it survives `kill -9` as one written with `write(2)` does. A drainer
//! thread writes the ring's bytes to the WAL file behind the writer; a sync drains what is
//! left itself and then syncs the file, so a power loss keeps every synced write. A clean
//! close drains everything and removes the ring.
//!
//! ```text
//!   writer (holds the WAL lock)            drainer thread
//!   copy record → ring[pending..]          write ring[drained..published) to NNNNNN.log
//!   publish: published = pending ──────▶   drained = published
//!   sync: drain the rest, fdatasync        parks when idle; woken only then
//!
//!   /dev/shm/sluice-wal-stage-<id>:  [ header page | ring bytes … ]   (0600, flock'd live)
//!   header: magic, version, published, drained, WAL number, base (ring offset of the WAL's
//!           byte 0), ring length, id, the Db directory
//!   <db>/WAL-STAGE: the ring's file name
//! ```
//!
//! **Recovery** (`recovery.rs`). After a crash, the ring may hold acknowledged bytes the
//! drainer had not written yet: `[drained, published)`, which belong at file offset
//! `drained - base` of the WAL the header names. [`recover`] runs at a writable open, under the
//! Db's lock: it writes them there, syncs the WAL, then removes the marker and the ring.
//! Bytes published are whole copies of the writer's buffer; a record cut by the crash (a
//! group larger than the ring's free space) ends the log in a torn tail, which the WAL reader
//! drops, as it does after a short `write(2)`. A ring is known by its id, not its path; one
//! still locked is a live process's (this directory is a copy of a running Db) and is left
//! alone. The lock is a `flock`, which a child forked while the Db is open shares with it: a
//! crash leaves the ring locked until that child exits too, and the Db's LOCK with it (the two
//! never part, so no open can take a ring of a dead Db for a live copy's), while a close —
//! whose drain may have failed and kept the ring — unlocks the ring explicitly before the Db
//! unlocks its LOCK (`WalStage::close`). The ring lives as long as the tmpfs: after a reboot, or when `/dev/shm` is torn down
//! with the process (a container's own), it is gone, and with it whatever the drainer had not
//! written — non-synced writes, which a reboot or power loss may always lose.
//!
//! **Readers** (`reader.rs`). A read-only open writes nothing and stops no writer, so it reads
//! a live ring as it changes: [`read_undrained`] loads `published` then `drained`, copies
//! `[drained, published)`, and looks at `drained` again; the bytes at or past the second
//! `drained` were intact (invariant 2) and the ones before it are in the WAL file, which it
//! reads after. It lays them over that WAL's contents ([`Overlay::apply`]), so it sees every
//! write acknowledged before its open, as it would with the WAL written directly (the open
//! around it holds the WALs it reads: `Db::read_only_view`).
//!
//! **Invariants.**
//! 1. Only the writer (holding the WAL lock) writes ring bytes and `published`; only the
//!    holder of `target` writes the WAL file and `drained`.
//! 2. `drained <= published <= drained + ring`: the writer copies only into free space, the
//!    drainer reads only published bytes, so the two never touch the same byte at once.
//! 3. The header names a new WAL only when every byte of the previous one is drained.
//! 4. A failed write to the file is sticky: nothing is drained after it, the writer's next
//!    call fails (the Db refuses writes), and the ring is kept at close for the next open.

#![allow(unsafe_code)]

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::{SyncHandle, WritableFile};

mod reader;
mod recovery;

pub use reader::{read_undrained, Overlay};
use recovery::sweep_orphans;
pub use recovery::{recover, Recovered, StageError};

const MAGIC: u64 = u64::from_le_bytes(*b"SLUSTAGE");
const VERSION: u64 = 1;
/// Bytes before the ring: the header, padded to a page.
const HEADER: usize = 4096;
/// Where the Db directory's path starts in the header.
const DIR_AT: usize = 128;
/// The ring of a Db: a few milliseconds of writes at disk speed, and two groups (1 MiB each).
pub const DEFAULT_RING: usize = 2 << 20;
/// Largest ring [`recover`] reads (a header claiming more is corrupt).
const MAX_RING: usize = 256 << 20;
/// The marker in the Db directory that names the ring.
pub const MARKER: &str = "WAL-STAGE";
const NAME_PREFIX: &str = "sluice-wal-stage-";

/// Header words (u64, little-endian in the file, atomics while mapped).
const W_MAGIC: usize = 0;
const W_VERSION: usize = 1;
const W_PUBLISHED: usize = 2;
const W_DRAINED: usize = 3;
const W_WAL: usize = 4;
const W_BASE: usize = 5;
const W_RING: usize = 6;
const W_DIR_LEN: usize = 7;
/// The ring's random id, also the hex tail of its file name (which the marker holds).
const W_ID: usize = 8;
/// The Db directory's device and inode (Unix; 0 elsewhere): a reader reaching the Db by
/// another path (a bind mount, a symlink) still knows its ring.
const W_DIR_DEV: usize = 9;
const W_DIR_INO: usize = 10;

/// How long the drainer sleeps between looks while writes flow, and how many empty looks it
/// makes before it parks (then a writer wakes it: a system call, only after a pause).
const POLL: Duration = Duration::from_micros(100);
const POLLS_BEFORE_PARK: u32 = 20;
const PARK: Duration = Duration::from_millis(50);

/// The memory the header and ring live in.
enum Backing {
    /// The mapping, and the ring's file, on which the live stage holds an exclusive `flock`:
    /// recovery and the orphan sweep leave a locked ring alone (its process is alive).
    Mapped(
        #[allow(dead_code)] memmap2::MmapMut,
        #[allow(dead_code)] std::fs::File,
    ),
    /// A leaked `Box<[AtomicU64]>` (a raw pointer, so that moving the backing does not
    /// invalidate `Region::ptr`), freed on drop.
    #[cfg_attr(not(test), allow(dead_code))]
    Heap(std::ptr::NonNull<[AtomicU64]>),
}

impl Drop for Backing {
    fn drop(&mut self) {
        if let Backing::Heap(p) = self {
            // SAFETY: made by `Box::into_raw` in `WalStage::in_memory`, freed once, here, when
            // the region (the only user of the pointer) goes.
            drop(unsafe { Box::from_raw(p.as_ptr()) });
        }
    }
}

/// Header and ring: `ptr` points at `HEADER + ring` bytes, 8-byte aligned, owned by `_backing`.
struct Region {
    ptr: *mut u8,
    ring: u64,
    _backing: Backing,
}

// SAFETY: the region is plain memory owned by `_backing`; concurrent access follows the
// module's invariants 1 and 2 (header words only through atomics, ring bytes handed over by
// `published`/`drained` with release/acquire).
unsafe impl Send for Region {}
// SAFETY: as for `Send`.
unsafe impl Sync for Region {}

impl Region {
    fn word(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < DIR_AT / 8);
        // SAFETY: the header's first `DIR_AT` bytes are in the region, 8-byte aligned (a page
        // of a mapping, or a `[AtomicU64]`), accessed only as atomics once shared, and live as
        // long as `self`.
        unsafe { AtomicU64::from_ptr(self.ptr.add(8 * i).cast::<u64>()) }
    }

    /// The ring's bytes `[from, to)` (ring offsets, `to - from <= ring`): one or two slices.
    ///
    /// # Safety
    /// Nobody may write these bytes while the slices live (invariant 2: they are published
    /// and not yet drained, and only the drainer, holding `target`, reads them).
    unsafe fn slices(&self, from: u64, to: u64) -> [&[u8]; 2] {
        let start = (from % self.ring) as usize;
        let len = (to - from) as usize;
        let first = len.min(self.ring as usize - start);
        // SAFETY: both ranges lie inside the ring; no writer touches them (the caller's
        // contract).
        unsafe {
            let base = self.ptr.add(HEADER);
            [
                std::slice::from_raw_parts(base.add(start), first),
                std::slice::from_raw_parts(base, len - first),
            ]
        }
    }

    /// Copies `data` to ring offset `at` (no wrap within `data`).
    ///
    /// # Safety
    /// The bytes must be free (invariant 2) and written by the writer alone (invariant 1).
    unsafe fn copy_in(&self, at: u64, data: &[u8]) {
        let start = (at % self.ring) as usize;
        debug_assert!(start + data.len() <= self.ring as usize);
        // SAFETY: inside the ring (above); free bytes nobody reads (the caller's contract).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(HEADER + start), data.len())
        }
    }
}

/// The file the drainer writes into, and the sticky failure (invariant 4).
struct Target {
    file: Option<Box<dyn WritableFile>>,
    /// Bumped by each [`WalStage::wrap`]: a handle of an older WAL can no longer write.
    generation: u64,
    error: Option<(io::ErrorKind, String)>,
}

struct Shared {
    region: Region,
    target: Mutex<Target>,
    /// The drainer parks here (`wake_cv`); a writer waiting for room waits here (`space_cv`).
    wake: Mutex<()>,
    wake_cv: Condvar,
    space_cv: Condvar,
    idle: AtomicBool,
    space_wait: AtomicBool,
    stop: AtomicBool,
    failed: AtomicBool,
    /// `target.generation`, readable without the lock: a handle of an older WAL (or any after
    /// a close) must not move `published`.
    generation: AtomicU64,
    /// Tests: the drainer leaves the ring alone (a crash before it ran).
    #[cfg(test)]
    paused: AtomicBool,
}

impl Shared {
    fn published(&self) -> u64 {
        self.region.word(W_PUBLISHED).load(Ordering::SeqCst)
    }

    fn drained(&self) -> u64 {
        self.region.word(W_DRAINED).load(Ordering::SeqCst)
    }

    fn error(t: &Target) -> Option<io::Error> {
        t.error
            .as_ref()
            .map(|(kind, msg)| io::Error::new(*kind, msg.clone()))
    }

    fn check(&self) -> io::Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(Self::error(&self.target.lock())
                .unwrap_or_else(|| io::Error::other("WAL stage failed")));
        }
        Ok(())
    }

    /// Makes `[.., pending)` visible to the drainer, waking it if it parked.
    fn publish(&self, pending: u64) {
        self.region
            .word(W_PUBLISHED)
            .store(pending, Ordering::SeqCst);
        if self.idle.load(Ordering::SeqCst) {
            let _g = self.wake.lock();
            self.wake_cv.notify_one();
        }
    }

    /// Writes every published byte to the target file (invariant 1: `t` is held).
    fn drain(&self, t: &mut Target) -> io::Result<()> {
        if let Some(e) = Self::error(t) {
            return Err(e);
        }
        let (from, to) = (self.drained(), self.published());
        if from == to {
            return Ok(());
        }
        let Some(file) = t.file.as_mut() else {
            return Err(io::Error::other("no WAL behind the stage"));
        };
        // SAFETY: `[from, to)` is published and not drained; the writer only writes free
        // bytes, and `drained` moves only below, under `t`.
        let r = unsafe { self.region.slices(from, to) }
            .into_iter()
            .try_for_each(|s| file.write_all(s))
            .and_then(|()| file.flush());
        match r {
            Ok(()) => {
                self.region.word(W_DRAINED).store(to, Ordering::SeqCst);
                if self.space_wait.load(Ordering::SeqCst) {
                    let _g = self.wake.lock();
                    self.space_cv.notify_all();
                }
                Ok(())
            }
            Err(e) => {
                self.fail(
                    t,
                    e.kind(),
                    format!("WAL write behind the stage failed: {e}"),
                );
                Err(e)
            }
        }
    }

    /// Makes the stage's failure sticky (invariant 4) and wakes writers waiting for room.
    fn fail(&self, t: &mut Target, kind: io::ErrorKind, msg: String) {
        t.error = Some((kind, msg));
        self.failed.store(true, Ordering::SeqCst);
        let _g = self.wake.lock();
        self.space_cv.notify_all();
    }

    /// Starts a new generation of handles: every earlier handle stops working.
    fn next_generation(&self, t: &mut Target) -> u64 {
        t.generation += 1;
        self.generation.store(t.generation, Ordering::SeqCst);
        t.generation
    }

    /// Waits until the ring has room beyond `pending` (or the stage failed).
    fn wait_for_room(&self, pending: u64) {
        let mut g = self.wake.lock();
        self.space_wait.store(true, Ordering::SeqCst);
        if pending - self.drained() >= self.region.ring && !self.failed.load(Ordering::SeqCst) {
            self.wake_cv.notify_one();
            self.space_cv.wait_for(&mut g, Duration::from_millis(1));
        }
        self.space_wait.store(false, Ordering::SeqCst);
    }

    fn may_drain(&self) -> bool {
        #[cfg(test)]
        if self.paused.load(Ordering::Acquire) {
            return false;
        }
        !self.failed.load(Ordering::Acquire) && self.published() != self.drained()
    }

    fn drain_loop(&self) {
        let mut empty = 0u32;
        loop {
            if self.may_drain() {
                let mut t = self.target.lock();
                if self.may_drain() {
                    let _ = self.drain(&mut t);
                }
                empty = 0;
                continue;
            }
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            if empty < POLLS_BEFORE_PARK {
                empty += 1;
                std::thread::sleep(POLL);
                continue;
            }
            let mut g = self.wake.lock();
            self.idle.store(true, Ordering::SeqCst);
            if !self.may_drain() && !self.stop.load(Ordering::SeqCst) {
                self.wake_cv.wait_for(&mut g, PARK);
            }
            self.idle.store(false, Ordering::SeqCst);
        }
    }
}

/// A Db's WAL stage: the ring, its drainer thread, and (for a ring in a file) the files to
/// remove at a clean close.
pub struct WalStage {
    shared: Arc<Shared>,
    drainer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The ring's file (none for a ring in process memory).
    path: Option<PathBuf>,
    /// The Db's marker naming the ring, taken by [`WalStage::close`].
    marker: Mutex<Option<PathBuf>>,
}

impl WalStage {
    /// Creates a ring of `ring` bytes in a new file in `stage_dir` for the Db in `db_dir`, and
    /// the marker naming it in `db_dir` (any ring of an earlier process must have been
    /// [`recover`]ed first). Fails if the memory is not there (`fallocate` reserves it, so a
    /// full tmpfs fails here rather than with `SIGBUS` later): the caller writes the WAL
    /// directly then.
    pub fn create(db_dir: &Path, stage_dir: &Path, ring: usize) -> io::Result<WalStage> {
        let id = random_id();
        let name = format!("{NAME_PREFIX}{id:016x}");
        let path = stage_dir.join(&name);
        sweep_orphans(stage_dir);
        let dir = std::fs::canonicalize(db_dir)?;
        let dir_bytes = dir.as_os_str().as_encoded_bytes();
        if dir_bytes.len() > HEADER - DIR_AT || ring == 0 || ring > MAX_RING {
            return Err(io::Error::other(
                "Db path too long or ring size out of range",
            ));
        }
        let made = (|| {
            let mut o = std::fs::OpenOptions::new();
            o.read(true).write(true).create_new(true);
            // `/dev/shm` is shared by every user of the machine: the ring holds the Db's
            // writes, writable by its owner only and readable by whom the Db's own files
            // are (its `CURRENT`'s read bits): a read-only open by another user who may read
            // the WAL may read its staged tail too.
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600 | db_read_bits(db_dir));
            let file = o.open(&path)?;
            #[cfg(unix)]
            rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
            // A maker stalled over a minute before its lock may have lost the name to the
            // orphan sweep: a ring no name leads to would be lost at a crash.
            #[cfg(unix)]
            if !super::still_named(&file, &path)? {
                return Err(io::Error::other("ring removed before it was locked"));
            }
            let len = (HEADER + ring) as u64;
            #[cfg(any(target_os = "linux", target_os = "android"))]
            rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, len)?;
            #[cfg(not(any(target_os = "linux", target_os = "android")))]
            file.set_len(len)?;
            // SAFETY: the file was just created by us with `len` bytes reserved; nobody else
            // truncates it (the module's contract: a stage file is the Db's own), so no page
            // of the mapping leaves the file.
            let mut map = unsafe {
                memmap2::MmapOptions::new()
                    .len(len as usize)
                    .map_mut(&file)?
            };
            // Touch every page now, so that no copy of a record faults later.
            map.fill(0);
            map[DIR_AT..DIR_AT + dir_bytes.len()].copy_from_slice(dir_bytes);
            Ok::<_, io::Error>((map, file))
        })();
        let (mut map, file) = match made {
            Ok(m) => m,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        let region = Region {
            ptr: map.as_mut_ptr(),
            ring: ring as u64,
            _backing: Backing::Mapped(map, file),
        };
        init_header(&region, dir_bytes.len(), id, dir_identity(&dir));
        let marker = db_dir.join(MARKER);
        if let Err(e) = write_marker(db_dir, &name) {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Self::start(region, Some((path, marker)))
    }

    /// A ring in process memory (no recovery after a crash): tests, Miri.
    #[cfg(test)]
    pub(crate) fn in_memory(ring: usize) -> WalStage {
        let words: Box<[AtomicU64]> = (0..(HEADER + ring).div_ceil(8))
            .map(|_| AtomicU64::new(0))
            .collect();
        let raw = Box::into_raw(words);
        let region = Region {
            ptr: raw.cast::<u8>(),
            ring: ring as u64,
            _backing: Backing::Heap(std::ptr::NonNull::new(raw).expect("a box is not null")),
        };
        init_header(&region, 0, 0, (0, 0));
        Self::start(region, None).expect("spawn drainer")
    }

    /// `files`: the ring's file and the Db's marker, for a ring in a file.
    fn start(region: Region, files: Option<(PathBuf, PathBuf)>) -> io::Result<WalStage> {
        let shared = Arc::new(Shared {
            region,
            target: Mutex::new(Target {
                file: None,
                generation: 0,
                error: None,
            }),
            wake: Mutex::new(()),
            wake_cv: Condvar::new(),
            space_cv: Condvar::new(),
            idle: AtomicBool::new(false),
            space_wait: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            #[cfg(test)]
            paused: AtomicBool::new(false),
        });
        let sh = Arc::clone(&shared);
        let drainer = std::thread::Builder::new()
            .name("sluice-wal".into())
            .spawn(move || {
                let run =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sh.drain_loop()));
                if run.is_err() {
                    // A writer waiting for room must not wait forever (invariant 4).
                    let msg = "the WAL stage's drainer panicked".to_string();
                    sh.fail(&mut sh.target.lock(), io::ErrorKind::Other, msg);
                }
            });
        let drainer = match drainer {
            Ok(h) => h,
            Err(e) => {
                if let Some((ring, marker)) = &files {
                    remove_ring_and_marker(ring, marker);
                }
                return Err(e);
            }
        };
        Ok(WalStage {
            shared,
            drainer: Mutex::new(Some(drainer)),
            path: files.as_ref().map(|(p, _)| p.clone()),
            marker: Mutex::new(files.map(|(_, m)| m)),
        })
    }

    /// Routes WAL `wal_number`'s writes through the ring; `file` is the new, empty WAL. Every
    /// byte of the previous WAL is written to it first (invariant 3), and its handle stops
    /// working.
    pub fn wrap(
        &self,
        file: Box<dyn WritableFile>,
        wal_number: u64,
    ) -> io::Result<Box<dyn WritableFile>> {
        let sh = &self.shared;
        let mut t = sh.target.lock();
        if t.file.is_some() {
            sh.drain(&mut t)?;
        }
        let old = t.file.replace(file);
        let generation = sh.next_generation(&mut t);
        let at = sh.published();
        sh.region.word(W_WAL).store(wal_number, Ordering::SeqCst);
        sh.region.word(W_BASE).store(at, Ordering::SeqCst);
        drop(t);
        drop(old);
        Ok(Box::new(StagedFile {
            shared: Arc::clone(sh),
            generation,
            pending: at,
        }))
    }

    /// The ring's file, if it has one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    #[cfg(test)]
    pub(crate) fn pause(&self, paused: bool) {
        // Under `target`: no drain is under way once this returns, and none starts after.
        let _t = self.shared.target.lock();
        self.shared.paused.store(paused, Ordering::Release);
    }

    /// Drops the stage as a crash would: the drainer stops where it is and nothing is removed.
    #[cfg(test)]
    pub(crate) fn crash(self) {
        self.pause(true);
        self.stop_drainer();
        self.release_lock();
        std::mem::forget(self);
    }

    /// Lets go of the ring's lock, as the death of the process would. `LOCK_UN` releases it
    /// for every holder of the ring's open file, which a child forked while the Db was open
    /// shares (until it execs, or for its whole life if it never does).
    pub(crate) fn release_lock(&self) {
        if let Backing::Mapped(_, f) = &self.shared.region._backing {
            let _ = rustix::fs::flock(f, rustix::fs::FlockOperation::Unlock);
        }
    }

    fn stop_drainer(&self) {
        {
            let _g = self.shared.wake.lock();
            self.shared.stop.store(true, Ordering::SeqCst);
            self.shared.wake_cv.notify_all();
        }
        if let Some(h) = self.drainer.lock().take() {
            let _ = h.join();
        }
    }

    /// Stops the drainer, writes what is left to the WAL and closes it, then removes the ring
    /// and the marker — unless the WAL lacks bytes the ring holds (a failed write): those stay
    /// for the next open (invariant 4). The Db calls this before it lets go of its directory
    /// lock; later writes through a handle fail at their sync.
    pub fn close(&self) -> io::Result<()> {
        self.stop_drainer();
        let sh = &self.shared;
        let mut t = sh.target.lock();
        let drained = match t.file.is_some() {
            true => sh.drain(&mut t),
            false => Self::failure(&t),
        };
        // Closes the WAL (its handle flushes nothing: the drain above wrote through it).
        t.file = None;
        sh.next_generation(&mut t);
        drop(t);
        // Taken once: a second close (the Db's, then `Drop`'s) must not remove a marker a
        // later open of the same directory has written since.
        let marker = self.marker.lock().take();
        if let (Some(ring), Some(marker), true) = (&self.path, marker, drained.is_ok()) {
            remove_ring_and_marker(ring, &marker);
        }
        // The stage is over: a ring kept for the next open must not look live to it. The Db
        // lets go of its LOCK next, and unlocks that explicitly too; a ring still locked by a
        // forked child would be taken for a live copy's and its bytes skipped.
        self.release_lock();
        drained
    }

    fn failure(t: &Target) -> io::Result<()> {
        Shared::error(t).map_or(Ok(()), Err)
    }
}

impl Drop for WalStage {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Removes a ring and the marker naming it. The ring first: a marker without its ring is
/// harmless (recovery removes it), a ring without its marker is found only by the sweep.
fn remove_ring_and_marker(ring: &Path, marker: &Path) {
    let _ = std::fs::remove_file(ring);
    let _ = std::fs::remove_file(marker);
}

/// A random ring id: std's per-process random hash keys over the process id, the time and a
/// counter (no randomness crate in the engine for 64 bits).
fn random_id() -> u64 {
    use std::hash::BuildHasher;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::collections::hash_map::RandomState::new().hash_one((
        std::process::id(),
        nanos,
        SEQ.fetch_add(1, Ordering::Relaxed),
    ))
}

/// The group and other read bits of the Db's files (`CURRENT`'s; none if it cannot be read).
fn db_read_bits(db_dir: &Path) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(db_dir.join("CURRENT")).map_or(0, |m| m.permissions().mode() & 0o044)
    }
    #[cfg(not(unix))]
    {
        let _ = db_dir;
        0
    }
}

/// Whether a ring whose header records directory `dir_id` (device, inode) was made for the Db
/// in `db_dir`; a ring from before those words were recorded (`(0, 0)`) by the canonical path
/// it holds (`recorded_path`, read only then). Recovery and the read-only reader decide alike,
/// so a Db reached through a bind mount or a symlink is recognised by both.
pub(super) fn ring_made_for(
    dir_id: (u64, u64),
    recorded_path: impl FnOnce() -> Option<Vec<u8>>,
    db_dir: &Path,
) -> bool {
    if dir_id != (0, 0) {
        return dir_identity(db_dir) == dir_id;
    }
    let Ok(dir) = std::fs::canonicalize(db_dir) else {
        return false;
    };
    recorded_path().is_some_and(|p| p == dir.as_os_str().as_encoded_bytes())
}

/// A directory's device and inode (0, 0 where unknown).
pub(super) fn dir_identity(dir: &Path) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(dir).map_or((0, 0), |m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        (0, 0)
    }
}

/// Stores the header's words, the magic last: a ring whose magic is zero never got a whole
/// header, so no marker names it and it never held a record (the orphan sweep's premise).
fn init_header(r: &Region, dir_len: usize, id: u64, dir_id: (u64, u64)) {
    r.word(W_ID).store(id, Ordering::Relaxed);
    r.word(W_DIR_DEV).store(dir_id.0, Ordering::Relaxed);
    r.word(W_DIR_INO).store(dir_id.1, Ordering::Relaxed);
    r.word(W_VERSION).store(VERSION, Ordering::Relaxed);
    r.word(W_RING).store(r.ring, Ordering::Relaxed);
    r.word(W_DIR_LEN).store(dir_len as u64, Ordering::Relaxed);
    r.word(W_MAGIC).store(MAGIC, Ordering::SeqCst);
}

/// Writes `<db_dir>/WAL-STAGE` naming the ring: a temporary file renamed over it (a name
/// that is ours to replace; nothing is ever truncated). No fsync: the ring itself does not
/// outlive a reboot, so neither need its name.
fn write_marker(db_dir: &Path, name: &str) -> io::Result<()> {
    let tmp = db_dir.join(format!("{MARKER}.tmp"));
    if tmp.exists() {
        std::fs::remove_file(&tmp)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    f.write_all(name.as_bytes())?;
    drop(f);
    std::fs::rename(&tmp, db_dir.join(MARKER))
}

/// One WAL's handle on the ring (see the module docs).
struct StagedFile {
    shared: Arc<Shared>,
    generation: u64,
    /// Ring offset after the last byte copied in (published at `flush`).
    pending: u64,
}

impl StagedFile {
    /// Fails once the stage failed, or this handle's WAL is no longer the one written.
    fn check(&self) -> io::Result<()> {
        if self.shared.generation.load(Ordering::Acquire) != self.generation {
            return Err(io::Error::other("WAL closed"));
        }
        self.shared.check()
    }

    fn target(&self) -> io::Result<parking_lot::MutexGuard<'_, Target>> {
        let t = self.shared.target.lock();
        if t.generation != self.generation {
            return Err(io::Error::other("WAL closed"));
        }
        Ok(t)
    }
}

impl Write for StagedFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let sh = &*self.shared;
        let ring = sh.region.ring;
        let mut rest = data;
        while !rest.is_empty() {
            self.check()?;
            let free = ring - (self.pending - sh.drained());
            if free == 0 {
                sh.publish(self.pending);
                sh.wait_for_room(self.pending);
                continue;
            }
            let to_end = ring - self.pending % ring;
            let n = (rest.len() as u64).min(free).min(to_end) as usize;
            // SAFETY: `n` bytes from `pending` are free (`pending + n <= drained + ring`) and
            // this handle, under the WAL lock, is the only writer (invariants 1, 2).
            unsafe { sh.region.copy_in(self.pending, &rest[..n]) };
            self.pending += n as u64;
            rest = &rest[n..];
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        self.shared.publish(self.pending);
        Ok(())
    }
}

impl WritableFile for StagedFile {
    fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        let mut t = self.target()?;
        self.shared.drain(&mut t)?;
        match t.file.as_mut() {
            Some(f) => f.sync(),
            None => Err(io::Error::other("WAL closed")),
        }
    }

    fn sync_handle(&mut self) -> Option<SyncHandle> {
        self.flush().ok()?;
        let mut t = self.target().ok()?;
        self.shared.drain(&mut t).ok()?;
        t.file.as_mut()?.sync_handle()
    }

    fn preallocate(&mut self, len: u64) {
        if let Ok(mut t) = self.target() {
            if let Some(f) = t.file.as_mut() {
                f.preallocate(len);
            }
        }
    }
}

#[cfg(test)]
#[path = "staged_tests.rs"]
mod tests;
