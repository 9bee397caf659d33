//! A write-ahead log written through a shared memory mapping of space reserved for it.
//!
//! An append through `write(2)` costs a system call and ext4's buffered-write path: about a
//! microsecond, over half of all CPU in a single writer's `fillseq` (bench/profiles/README.md).
//! Here the file's blocks are allocated up front (`fallocate`, which also sets its size), the
//! reserved range is mapped `MAP_SHARED`, and an append is a copy into the page cache. The
//! durability of an acknowledged write is unchanged: the page cache outlives the process, so a
//! write survives a process crash as soon as the copy returns (a `write(2)` gives the same), and
//! [`WritableFile::sync`] makes it survive a power loss (`fdatasync`, which on Linux writes the
//! pages dirtied through a mapping too). RocksDB's `allow_mmap_writes` and LevelDB's early
//! `PosixMmapFile` wrote logs this way.
//!
//! The file is longer than the log while it is written: its tail is zeros (space reserved, not
//! yet written). A clean close truncates it to the log's length; after a crash the WAL reader
//! ends the log at a zero tail (`wal::log`, "preallocated tails"). Past the reservation, the
//! file grows by another reservation's worth, mapped in turn.
//!
//! Contract: nobody else truncates the file while it is mapped (a page past the end would raise
//! `SIGBUS`). The engine never does; a WAL is the Db's own file.

#![allow(unsafe_code)]

use std::io::{self, Write};
use std::path::Path;

use memmap2::{MmapMut, MmapOptions};

use super::{SyncHandle, WritableFile};

/// Mapped segments are multiples of this (a multiple of the page size on every platform we
/// run on).
const SEGMENT_ALIGN: u64 = super::MAPPED_LOG_ALIGN;
/// The smallest segment.
const MIN_SEGMENT: u64 = 1 << 20;

/// A log file appended to through a memory mapping (see the module docs).
pub(super) struct MappedLog {
    file: std::fs::File,
    /// The mapped segment being written, `[seg_start, seg_start + map.len())` of the file
    /// (`None` only in `Drop`, once unmapped).
    map: Option<MmapMut>,
    seg_start: u64,
    /// Bytes written into `map`.
    seg_pos: usize,
    /// Size of each further segment.
    grow: u64,
    /// Every fsync of the log goes through it.
    gate: super::SyncGate,
}

impl MappedLog {
    /// Creates `path` (which must not exist) with `reserve` bytes allocated and mapped. Fails
    /// where `fallocate` is unsupported or the space is not there: the caller then writes the
    /// log through `write(2)` instead, or reports the error.
    pub(super) fn create(path: &Path, reserve: u64) -> io::Result<MappedLog> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        let grow = reserve.max(MIN_SEGMENT).next_multiple_of(SEGMENT_ALIGN);
        let map = match Self::map_segment(&file, 0, grow) {
            Ok(m) => m,
            Err(e) => {
                drop(file);
                let _ = std::fs::remove_file(path);
                return Err(e);
            }
        };
        Ok(MappedLog {
            file,
            map: Some(map),
            seg_start: 0,
            seg_pos: 0,
            grow,
            gate: super::SyncGate::default(),
        })
    }

    /// Allocates `[start, start + len)` of `file` (extending it) and maps it.
    fn map_segment(file: &std::fs::File, start: u64, len: u64) -> io::Result<MmapMut> {
        rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), start, len)?;
        let len = usize::try_from(len).map_err(|_| io::Error::other("segment too large"))?;
        // SAFETY: the mapping covers `[start, start + len)`, which the `fallocate` above just
        // allocated inside the file, so every page is backed by the file. The file is this
        // writer's own (created with `create_new`, never handed out) and is shrunk only in
        // `Drop`, after the mapping is gone, so no page of a live mapping leaves the file
        // (the `SIGBUS` case). Other processes may read the file but the engine's contract
        // is that nobody else writes or truncates a Db's WAL.
        unsafe { MmapOptions::new().offset(start).len(len).map_mut(file) }
    }

    /// The log's length: everything written.
    fn written(&self) -> u64 {
        self.seg_start + self.seg_pos as u64
    }
}

impl Write for MappedLog {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut rest = data;
        while !rest.is_empty() {
            let Some(map) = self.map.as_mut() else {
                return Err(io::Error::other("log file closed"));
            };
            if self.seg_pos == map.len() {
                // The reservation is used up: allocate and map the next segment. The old
                // mapping's dirty pages stay in the page cache when it is unmapped.
                let next = self.seg_start + map.len() as u64;
                *map = Self::map_segment(&self.file, next, self.grow)?;
                self.seg_start = next;
                self.seg_pos = 0;
            }
            let n = rest.len().min(map.len() - self.seg_pos);
            map[self.seg_pos..self.seg_pos + n].copy_from_slice(&rest[..n]);
            self.seg_pos += n;
            rest = &rest[n..];
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        // Nothing to hand over: the bytes are in the page cache already.
        Ok(())
    }
}

impl WritableFile for MappedLog {
    fn sync(&mut self) -> io::Result<()> {
        // Linux tracks pages written through a shared mapping as dirty pages of the file
        // (`page_mkwrite`), so `fdatasync` writes them like any others; `msync` first for the
        // platforms that do not promise that.
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        if let Some(map) = &self.map {
            map.flush_range(0, self.seg_pos)?;
        }
        self.gate.sync(|| self.file.sync_data())
    }

    fn sync_handle(&mut self) -> Option<SyncHandle> {
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        return None;
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let f = self.file.try_clone().ok()?;
            let gate = self.gate.clone();
            Some(Box::new(move || gate.sync(|| f.sync_data())))
        }
    }
}

impl Drop for MappedLog {
    fn drop(&mut self) {
        // Unmap first, then cut the reserved tail so a closed log is exactly its records.
        // Best effort: a log left long reads the same (its tail is zeros). Both take up to
        // milliseconds (the mapping's page tables, the tail's blocks), and a WAL is dropped at
        // a memtable switch under the Db's state lock, where every writer and new reader would
        // wait: done on a thread of its own, or here where no thread can be started.
        let written = self.written();
        let map = self.map.take();
        let Ok(file) = self.file.try_clone() else {
            drop(map);
            return;
        };
        let close = move || {
            drop(map);
            let _ = file.set_len(written);
        };
        // If no thread starts, the closure is dropped unrun: unmapped, the tail left.
        let _ = std::thread::Builder::new()
            .name("sluice-wal-close".into())
            .spawn(close);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file's contents once the close thread has cut it to `len` bytes (bounded wait).
    fn closed_contents(path: &Path, len: u64) -> Vec<u8> {
        for _ in 0..1000 {
            if std::fs::metadata(path).unwrap().len() == len {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        std::fs::read(path).unwrap()
    }

    /// Bytes that are never zero, so a zero shows an unwritten byte.
    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8 + 1).collect()
    }

    #[test]
    fn appends_cross_segments_and_a_closed_log_is_exactly_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000007.log");
        let want = data(MIN_SEGMENT as usize * 5 / 2 + 777);
        let mut log = MappedLog::create(&path, 1000).unwrap();
        assert_eq!(
            log.grow, MIN_SEGMENT,
            "a small reservation maps a whole segment"
        );
        assert!(
            MappedLog::create(&path, 1000).is_err(),
            "create_new: never reuses a name"
        );
        let mut at = 0;
        for (i, chunk) in want.chunks(40_000).enumerate() {
            log.write_all(chunk).unwrap();
            at += chunk.len();
            if i % 20 == 0 {
                log.sync().unwrap();
                // Written bytes are in the file for any reader; the rest of the space is
                // reserved and zero.
                let seen = std::fs::read(&path).unwrap();
                assert_eq!(seen.len() as u64 % MIN_SEGMENT, 0);
                assert_eq!(&seen[..at], &want[..at]);
                assert!(seen[at..].iter().all(|&b| b == 0));
            }
        }
        let handle = log.sync_handle().expect("a sync handle");
        handle().unwrap();
        assert_eq!(log.written(), want.len() as u64);
        drop(log);
        assert_eq!(closed_contents(&path, want.len() as u64), want);
    }

    #[test]
    fn a_reservation_is_rounded_up_and_grown_by() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000009.log");
        let reserve = 3 * MIN_SEGMENT + 1;
        let mut log = MappedLog::create(&path, reserve).unwrap();
        let grow = reserve.next_multiple_of(SEGMENT_ALIGN);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), grow);
        log.write_all(&data(grow as usize + 5)).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 2 * grow);
        drop(log);
        assert_eq!(closed_contents(&path, grow + 5).len() as u64, grow + 5);
    }
}
