//! What a read-only open takes from a ring: the acknowledged bytes its drainer had not written
//! to the WAL yet, read consistently while a live writer goes on (see the parent module's
//! "Readers").
//!
//! A reader writes nothing and takes no lock a writer waits for, so it cannot stop the writer
//! to read the ring. It reads the header (`drained₁`, `published₁`, the WAL), copies the ring's
//! bytes `[drained₁, published₁)`, then reads `drained₂` and the WAL again. A byte at offset `a`
//! is overwritten only by the copy of offset `a + ring`, which needs `drained > a` first
//! (invariant 2); so every byte at or past `drained₂` was intact while it was copied, and every
//! byte before it is in the WAL file before the reader reads that file (the drainer writes
//! before it moves `drained`). A WAL switch between the two looks makes the reader look again.

use std::io;
use std::path::Path;
use std::sync::atomic::{fence, AtomicU64, Ordering};

use super::recovery::{lock_shared, open_ring, read_marker};
use super::{
    StageError, DIR_AT, HEADER, MAGIC, MAX_RING, VERSION, W_BASE, W_DIR_LEN, W_DRAINED, W_ID,
    W_MAGIC, W_PUBLISHED, W_RING, W_VERSION, W_WAL,
};

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
}

impl Overlay {
    /// Lays the bytes over `wal`, the WAL's contents read after the overlay was taken: a file
    /// that already holds them (the drainer wrote them since) is left as it is. `Err`: the
    /// file is shorter than the part the ring says was drained (a crashed writer's WAL cut
    /// short, as recovery would refuse it).
    pub fn apply(&self, wal: &mut Vec<u8>) -> Result<(), String> {
        let off = self.offset as usize;
        let end = off + self.bytes.len();
        if wal.len() >= end {
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

/// How many times a reader looks again when a WAL switch falls between its two looks.
const TRIES: usize = 16;

/// For a read-only open of `db_dir`, before it reads any WAL: the bytes of the ring named by
/// the Db's marker that its drainer had not yet written. `None`: no marker, no ring of ours,
/// nothing undrained, or a ring a live process writes for another directory (this one is a
/// copy of its Db). A crashed writer's ring made for another path is read, as recovery writes
/// it. Writes nothing, removes nothing, and never blocks a writer.
pub fn read_undrained(db_dir: &Path, stage_dir: &Path) -> Result<Option<Overlay>, StageError> {
    let io_err = |p: &Path, e: io::Error| StageError::Io(p.to_path_buf(), e);
    let Some((name, id)) = read_marker(db_dir)? else {
        return Ok(None);
    };
    let ring_path = stage_dir.join(name);
    let Some(ring) = open_ring(&ring_path).map_err(|e| io_err(&ring_path, e))? else {
        return Ok(None);
    };
    let live = !lock_shared(&ring);
    let corrupt = |at: u64, why: String| StageError::Corrupt(ring_path.clone(), at, why);
    let len = ring.metadata().map_err(|e| io_err(&ring_path, e))?.len();
    if len < HEADER as u64 || len > (HEADER + MAX_RING) as u64 {
        return Err(corrupt(0, format!("{len} bytes: not the size of a stage")));
    }
    let map = Header::map(&ring).map_err(|e| io_err(&ring_path, e))?;
    if map.word(W_MAGIC) != MAGIC || map.word(W_VERSION) != VERSION {
        return Err(corrupt(0, "not a WAL stage (bad magic or version)".into()));
    }
    if map.word(W_ID) != id {
        let why = format!("ring id {:016x}, its name says {id:016x}", map.word(W_ID));
        return Err(corrupt(8 * W_ID as u64, why));
    }
    let ring_len = map.word(W_RING);
    if ring_len == 0 || HEADER as u64 + ring_len != len {
        let why = format!("ring of {ring_len} bytes in a file of {len}");
        return Err(corrupt(8 * W_RING as u64, why));
    }
    if live && !map.made_for(db_dir) {
        return Ok(None);
    }
    for _ in 0..TRIES {
        let (wal, base) = (map.word(W_WAL), map.word(W_BASE));
        let drained = map.word(W_DRAINED);
        let published = map.word(W_PUBLISHED);
        if drained > published || published - drained > ring_len || base > drained {
            if live {
                continue; // A switch of WALs between the loads of one look.
            }
            let why = format!(
                "inconsistent offsets: published {published} drained {drained} base {base}"
            );
            return Err(corrupt(8 * W_PUBLISHED as u64, why));
        }
        let mut bytes = vec![0u8; (published - drained) as usize];
        read_ring(&ring, ring_len, drained, &mut bytes).map_err(|e| io_err(&ring_path, e))?;
        #[cfg(test)]
        tests::BETWEEN_LOOKS.with(|h| h.borrow_mut().as_mut().map(|f| f()));
        // The copy above happens before the second look (the loads below cannot move up).
        fence(Ordering::SeqCst);
        let drained_after = map.word(W_DRAINED);
        if map.word(W_WAL) != wal || map.word(W_BASE) != base || drained_after < drained {
            continue;
        }
        let keep = drained_after.min(published);
        bytes.drain(..(keep - drained) as usize);
        return Ok((!bytes.is_empty()).then(|| Overlay {
            wal_number: wal,
            offset: keep - base,
            bytes,
        }));
    }
    // The writer switched WALs under every look: what it had drained is in the files, a
    // consistent, slightly older prefix.
    Ok(None)
}

/// Copies the ring's bytes from ring offset `from` into `out` (wrapping at `ring`), with
/// `pread`: the kernel copies them, so a byte the writer overwrites meanwhile is a stale
/// byte (discarded by the caller), never a data race in this process.
#[cfg(unix)]
fn read_ring(f: &std::fs::File, ring: u64, from: u64, out: &mut [u8]) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let start = (from % ring) as usize;
    let first = out.len().min(ring as usize - start);
    let (a, b) = out.split_at_mut(first);
    f.read_exact_at(a, (HEADER + start) as u64)?;
    f.read_exact_at(b, HEADER as u64)
}

#[cfg(not(unix))]
fn read_ring(_: &std::fs::File, _: u64, _: u64, _: &mut [u8]) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// The ring's header page, mapped read-only: its words are read as atomics, as the live
/// writer and drainer store them.
struct Header(memmap2::Mmap);

impl Header {
    fn map(f: &std::fs::File) -> io::Result<Header> {
        // SAFETY: a ring is a file of this user that nobody truncates while it exists (the
        // stage's contract); its header page is read below only through atomic loads.
        let map = unsafe { memmap2::MmapOptions::new().len(HEADER).map(f)? };
        Ok(Header(map))
    }

    /// Header word `i`, loaded like the writer's atomics (relaxed, then an acquire fence: a
    /// relaxed load of a word is allowed on read-only memory, and the fence orders what is
    /// read after it behind the writer's stores before it).
    fn word(&self, i: usize) -> u64 {
        debug_assert!(8 * i + 8 <= DIR_AT);
        // SAFETY: the word lies inside the mapping (a page, 8-byte aligned at its start); a
        // `&AtomicU64` to read-only memory is sound for relaxed loads of a register's width
        // (core::sync::atomic, "Atomic accesses to read-only memory"), and the writer only
        // ever stores these words atomically.
        let w = unsafe { &*self.0.as_ptr().add(8 * i).cast::<AtomicU64>() };
        let v = w.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        v
    }

    /// Whether the ring was made for the Db in `db_dir` (its path, canonical, in the header).
    fn made_for(&self, db_dir: &Path) -> bool {
        let len = self.word(W_DIR_LEN) as usize;
        let Ok(dir) = std::fs::canonicalize(db_dir) else {
            return false;
        };
        len <= HEADER - DIR_AT
            && self.0[DIR_AT..DIR_AT + len] == *dir.as_os_str().as_encoded_bytes()
    }
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
