//! What a read-only open takes from a ring: the acknowledged bytes its drainer had not written
//! to the WAL yet, read consistently while a live writer goes on (see the parent module's
//! "Readers").
//!
//! A reader writes nothing and takes no lock a writer waits for, so it cannot stop the writer
//! to read the ring. It reads the header (`published₁`, then `drained₁`, the WAL), copies the ring's
//! bytes `[drained₁, published₁)`, then reads `drained₂` and the WAL again. A byte at offset `a`
//! is overwritten only by the copy of offset `a + ring`, which needs `drained > a` first
//! (invariant 2); so every byte at or past `drained₂` was intact while it was copied, and every
//! byte before it is in the WAL file before the reader reads that file (the drainer writes
//! before it moves `drained`). A WAL switch between the two looks makes the reader look again.

use std::path::Path;

use super::StageError;

/// Bytes a read-only open lays over one WAL's contents: they belong at `offset` of WAL
/// `wal_number`, and nothing after them had been acknowledged when they were read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Overlay {
    /// The WAL the bytes belong to.
    pub wal_number: u64,
    /// Their offset in that WAL.
    pub offset: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// The ring was made for another directory (this Db is a copy of the one a killed writer
    /// wrote): a copy taken before the crash may lack what the ring says was drained, and is
    /// then read as its files are, not refused.
    pub foreign: bool,
}

impl Overlay {
    /// Lays the bytes over `wal`, the WAL's contents read after the overlay was taken: a file
    /// that already holds them (the drainer wrote them since) is left as it is. `Err`: the
    /// file is shorter than the part the ring says was drained (a crashed writer's WAL cut
    /// short, as recovery would refuse it).
    pub fn apply(&self, wal: &mut Vec<u8>) -> Result<(), String> {
        let off = self.offset as usize;
        let end = off + self.bytes.len();
        if wal.len() >= end || (self.foreign && wal.len() < off) {
            return Ok(());
        }
        if wal.len() < off {
            return Err(format!(
                "{off} bytes drained from the WAL stage, but the WAL holds {}",
                wal.len()
            ));
        }
        wal.truncate(off);
        wal.extend_from_slice(&self.bytes);
        Ok(())
    }
}

/// For a read-only open of `db_dir`, before it reads any WAL: the bytes of the ring named by
/// the Db's marker that its drainer had not yet written. `None`: no marker, no ring of its
/// writer's, nothing undrained, or a ring a live process writes for another directory (this
/// one is a copy of its Db). A killed writer's ring made for another directory is read, as
/// recovery writes it. Writes and removes nothing; takes no lock a writer waits for.
/// `StageError::Io` with `PermissionDenied`: the ring is there but this user may not read it.
pub fn read_undrained(db_dir: &Path, stage_dir: &Path) -> Result<Option<Overlay>, StageError> {
    #[cfg(all(unix, target_pointer_width = "64"))]
    {
        imp::read_undrained(db_dir, stage_dir)
    }
    #[cfg(not(all(unix, target_pointer_width = "64")))]
    {
        // No stage is made here (`RealFs::wal_stage_dir`).
        let _ = (db_dir, stage_dir);
        Ok(None)
    }
}

#[cfg(all(unix, target_pointer_width = "64"))]
mod imp {
    use std::io;
    use std::os::unix::fs::{FileExt, MetadataExt};
    use std::path::Path;
    use std::sync::atomic::{fence, AtomicU64, Ordering};

    use super::super::recovery::{check_header, lock_shared, open_ring_of, read_marker, unlock};
    use super::super::{
        ring_made_for, StageError, DIR_AT, HEADER, MARKER, MAX_RING, W_BASE, W_DIR_DEV, W_DIR_INO,
        W_DIR_LEN, W_DRAINED, W_PUBLISHED, W_WAL,
    };
    use super::Overlay;

    /// How many times a reader looks again when a WAL switch falls inside a look.
    const TRIES: usize = 16;

    pub(super) fn read_undrained(
        db_dir: &Path,
        stage_dir: &Path,
    ) -> Result<Option<Overlay>, StageError> {
        let io_err = |p: &Path, e: io::Error| StageError::Io(p.to_path_buf(), e);
        let Some((name, id)) = read_marker(db_dir)? else {
            return Ok(None);
        };
        // The marker's owner made the ring: the reader may be another user, or root.
        let marker = db_dir.join(MARKER);
        let owner = match std::fs::metadata(&marker) {
            Ok(m) => m.uid(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&marker, e)),
        };
        let ring_path = stage_dir.join(name);
        let ring = match open_ring_of(&ring_path, owner) {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                let why = format!(
                    "{e}: the WAL stage's ring holds the last writes the Db's writer \
                     acknowledged, and this user may not read it"
                );
                return Err(io_err(&ring_path, io::Error::new(e.kind(), why)));
            }
            Err(e) => return Err(io_err(&ring_path, e)),
        };
        // A live stage holds its ring's lock exclusively; a killed one's is free (and let go
        // of at once: a lock held here would be one more thing for others to wait on).
        let live = !lock_shared(&ring);
        if !live {
            unlock(&ring);
        }
        let corrupt = |at: u64, why: String| StageError::Corrupt(ring_path.clone(), at, why);
        let len = ring.metadata().map_err(|e| io_err(&ring_path, e))?.len();
        if len < HEADER as u64 || len > (HEADER + MAX_RING) as u64 {
            return Err(corrupt(0, format!("{len} bytes: not the size of a stage")));
        }
        let map = Header::map(&ring).map_err(|e| io_err(&ring_path, e))?;
        let ring_len =
            check_header(|i| map.word(i), len, id).map_err(|(at, why)| corrupt(at, why))?;
        let ours = made_for(&map, &ring, db_dir);
        if live && !ours {
            return Ok(None);
        }
        for _ in 0..TRIES {
            // `published` before `drained`: when `published` was loaded, `drained` was at
            // least `published - ring` (invariant 2), and it only grows; so without a WAL
            // switch inside the look (checked) the pair is consistent.
            let (wal, base) = (map.word(W_WAL), map.word(W_BASE));
            let published = map.word(W_PUBLISHED);
            let drained = map.word(W_DRAINED);
            let same_wal = || map.word(W_WAL) == wal && map.word(W_BASE) == base;
            if !same_wal() {
                continue;
            }
            if drained >= published {
                // Everything published when this look began is in the file.
                return Ok(None);
            }
            if published - drained > ring_len || base > drained {
                let why = format!(
                    "inconsistent offsets: published {published} drained {drained} base {base}"
                );
                return Err(corrupt(8 * W_PUBLISHED as u64, why));
            }
            let mut bytes = vec![0u8; (published - drained) as usize];
            read_ring(&ring, ring_len, drained, &mut bytes).map_err(|e| io_err(&ring_path, e))?;
            #[cfg(test)]
            super::tests::BETWEEN_LOOKS.with(|h| h.borrow_mut().as_mut().map(|f| f()));
            // The copy above happens before the second look (the loads below cannot move up).
            fence(Ordering::SeqCst);
            let drained_after = map.word(W_DRAINED).max(drained);
            if !same_wal() {
                continue;
            }
            // A byte at ring offset `a` is overwritten only once `drained > a`: the bytes at
            // or past `drained_after` were intact while they were copied; the ones before it
            // are in the file, which the open reads after this.
            let keep = drained_after.min(published);
            bytes.drain(..(keep - drained) as usize);
            return Ok((!bytes.is_empty()).then(|| Overlay {
                wal_number: wal,
                offset: keep - base,
                bytes,
                foreign: !ours,
            }));
        }
        // A WAL switch inside every look: each switch first drained everything published
        // before it, so the files hold every write acknowledged before this read began.
        Ok(None)
    }

    /// Copies the ring's bytes from ring offset `from` into `out` (wrapping at `ring`), with
    /// `pread`: the kernel copies them, so a byte the writer overwrites meanwhile is a stale
    /// byte (discarded by the caller), never a data race in this process.
    fn read_ring(f: &std::fs::File, ring: u64, from: u64, out: &mut [u8]) -> io::Result<()> {
        let start = (from % ring) as usize;
        let first = out.len().min(ring as usize - start);
        let (a, b) = out.split_at_mut(first);
        f.read_exact_at(a, (HEADER + start) as u64)?;
        f.read_exact_at(b, HEADER as u64)
    }

    /// Whether the ring was made for the Db in `db_dir`: its directory's device and inode
    /// (rings from before they were recorded: its canonical path, read with `pread`).
    fn made_for(map: &Header, ring: &std::fs::File, db_dir: &Path) -> bool {
        let recorded = || {
            let len = map.word(W_DIR_LEN) as usize;
            let mut path = vec![0u8; len.min(HEADER - DIR_AT)];
            ring.read_exact_at(&mut path, DIR_AT as u64).ok()?;
            Some(path)
        };
        ring_made_for((map.word(W_DIR_DEV), map.word(W_DIR_INO)), recorded, db_dir)
    }

    /// The ring's header page, mapped read-only: its words are read as atomics, as the live
    /// writer and drainer store them, and nothing else of the mapping is read.
    struct Header(memmap2::MmapRaw);

    impl Header {
        fn map(f: &std::fs::File) -> io::Result<Header> {
            let map = memmap2::MmapOptions::new()
                .len(HEADER)
                .map_raw_read_only(f)?;
            Ok(Header(map))
        }

        /// Header word `i`: a relaxed load, then an acquire fence (so what is read after it
        /// is ordered behind the writer's stores before the value loaded).
        fn word(&self, i: usize) -> u64 {
            assert!(8 * i + 8 <= DIR_AT);
            // SAFETY: the word lies inside the mapping (one page, 8-byte aligned), which lives
            // as long as `self` (a process of the ring's owner truncating it would raise
            // `SIGBUS`: no stage does). The memory is read-only and other processes store to
            // it, but only atomically; a relaxed load of a 64-bit word on a 64-bit target is
            // allowed on read-only memory (core::sync::atomic, "Atomic accesses to read-only
            // memory"), and no reference to the mapping's bytes is ever made.
            let w = unsafe { AtomicU64::from_ptr(self.0.as_ptr().add(8 * i) as *mut u64) };
            let v = w.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            v
        }
    }
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
