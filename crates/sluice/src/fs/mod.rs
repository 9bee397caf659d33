//! All engine I/O goes through [`FileSystem`], so tests can run on [`MemFs`], an in-memory file
//! system that injects faults and simulates crashes (dropping whatever was not synced).
//!
//! Durability contract the engine relies on (and `MemFs` enforces in its crash model):
//! 1. Bytes written to a file survive a crash only once [`WritableFile::sync`] returned.
//! 2. A created, renamed or removed name survives a crash only once [`FileSystem::sync_dir`]
//!    of its directory returned.

pub mod failpoints;
mod file;
#[cfg(any(target_os = "linux", target_os = "android"))]
mod mapped;
mod mem;
mod rate_limiter;
pub mod staged;

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

pub use mem::{FaultConfig, MemFs};
pub use rate_limiter::RateLimiter;

pub use file::{open_file, RandomAccessFile};

/// A log written through a mapping ([`FileSystem::create_log`]) is a multiple of this long until
/// it is closed: how its reader knows that zeros at its end may be reserved space.
pub const MAPPED_LOG_ALIGN: u64 = 64 << 10;

/// True if a log `len` bytes long may be a mapped log still holding reserved space: a non-zero
/// multiple of [`MAPPED_LOG_ALIGN`].
pub fn may_be_mapped_log(len: u64) -> bool {
    len > 0 && len.is_multiple_of(MAPPED_LOG_ALIGN)
}

/// Makes durable what a file had handed to the OS when the handle was taken (or later).
pub type SyncHandle = Box<dyn FnOnce() -> io::Result<()> + Send>;

/// A file being written sequentially.
pub trait WritableFile: Write + Send {
    /// Makes everything written so far durable (flush + fdatasync).
    fn sync(&mut self) -> io::Result<()>;
    /// A handle syncing what was flushed to the OS so far, usable without access to the
    /// writer (so a WAL can be synced without holding its lock). It also reports the failure
    /// of any background sync started before it was taken. `None`: not supported.
    fn sync_handle(&mut self) -> Option<SyncHandle> {
        None
    }
    /// Reserves disk blocks for the first `len` bytes without changing the file's size
    /// (`fallocate` with `FALLOC_FL_KEEP_SIZE` on Linux), so that appends into them need no
    /// block allocation. Advice: where unsupported, or when it fails, nothing happens (the
    /// writes then allocate as they go, and report any error themselves).
    fn preallocate(&mut self, _len: u64) {}
}

/// A held lock on a database directory; released on drop.
pub trait DirLock: Send + Sync {}

/// The operations the engine needs from a file system.
pub trait FileSystem: Send + Sync + 'static {
    /// Creates `path` for writing; fails with `AlreadyExists` if the name exists. Nothing in the
    /// engine ever truncates an existing file: the name may be a hard link to a user's file.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Creates a write-ahead log at `path` (which must not exist) with room reserved for its
    /// first `reserve` bytes. With `mapped`, a file system may write it through a memory
    /// mapping of the reserved space ([`RealFs`] does on Linux: an append is a copy into the
    /// page cache, no system call; the file's tail is zeros until it is closed). The default
    /// creates it with [`FileSystem::create`] and [`WritableFile::preallocate`]s it.
    fn create_log(
        &self,
        path: &Path,
        reserve: u64,
        mapped: bool,
    ) -> io::Result<Box<dyn WritableFile>> {
        let _ = mapped;
        create_preallocated(self, path, reserve)
    }
    /// Where a WAL may be staged ([`staged`]): a directory on a memory file system whose
    /// files outlive the process (Linux: `/dev/shm`). `None` (the default): nowhere, and the
    /// WAL is written directly.
    fn wal_stage_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// Opens `path` for positional reads.
    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>>;
    /// Reads a whole file.
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// File names (not paths) in `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Creates `dir` and its parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, dir: &Path) -> io::Result<()>;
    /// Makes the directory's entries durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Makes an existing file's contents durable (e.g. a file hard-linked in, whose writer may
    /// never have synced it).
    fn sync_file(&self, path: &Path) -> io::Result<()>;
    /// True if `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Size of a file in bytes.
    fn file_size(&self, path: &Path) -> io::Result<u64>;
    /// Hard-links `from` to `to`, or copies it where links are impossible; `to` must not exist.
    fn link_or_copy(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on `path` (the database's LOCK file), without waiting: a lock
    /// held elsewhere fails with `WouldBlock`. Once taken, `path` must still name the file
    /// locked (a holder may remove the LOCK before letting go of it: see `db/create.rs`,
    /// invariant 4); if it does not, the lock is refused the same way.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn DirLock>>;
}

/// Creates `path` with [`FileSystem::create`] and reserves `reserve` bytes for it.
fn create_preallocated<F: FileSystem + ?Sized>(
    fs: &F,
    path: &Path,
    reserve: u64,
) -> io::Result<Box<dyn WritableFile>> {
    let mut f = fs.create(path)?;
    f.preallocate(reserve);
    Ok(f)
}

/// Start background writeback after this many new bytes (RocksDB's `bytes_per_sync` idea):
/// `finish` then only waits for the tail instead of the whole file.
const BACKGROUND_SYNC_BYTES: u64 = 8 << 20;

/// How a [`SyncingFile`] gets its pages to disk while it is being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Writeback {
    /// Every 8 MiB a helper thread `fdatasync`s the file: writeback overlaps table building
    /// and `finish` waits only for the tail. Each sync also commits the file system's journal.
    #[default]
    SyncThread,
    /// Every 8 MiB the writing thread starts writeback of what it just wrote
    /// (`posix_fadvise(DONTNEED)`, Linux; elsewhere nothing until `finish`) and goes on: no
    /// journal commit every 8 MiB, and the submission runs on the writer's thread at its
    /// priority. (RocksDB's `bytes_per_sync` uses `sync_file_range`, which neither `rustix` nor
    /// `nix` offers; DONTNEED also evicts the range's pages already written back, so a file
    /// read soon after may come from disk again.) Slower to finish than `SyncThread` (see
    /// BENCHMARKS.md, notes from earlier measurements).
    Initiate,
}

impl From<Writeback> for FileWrites {
    fn from(writeback: Writeback) -> FileWrites {
        FileWrites {
            writeback,
            rate_limiter: None,
        }
    }
}

/// A file whose dirty pages go to disk as writing goes on ([`Writeback`]), so disk writeback
/// overlaps table building.
pub struct SyncingFile {
    file: std::fs::File,
    /// The file's path, for the named fault points ([`failpoints`]).
    #[cfg(feature = "failpoints")]
    fault_path: Option<std::path::PathBuf>,
    since_sync: u64,
    /// Where the next write goes: the file's position when wrapped, plus the bytes written
    /// through this wrapper since (the file is written sequentially).
    written: u64,
    syncer: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    /// Every fsync of the file, the background ones too, goes through it.
    gate: SyncGate,
    mode: Writeback,
    limiter: Option<Arc<RateLimiter>>,
}

/// One file's fsyncs, made one at a time and failing for good once one has failed. After a
/// failed fsync Linux marks the pages clean and reports the error once, to whichever fsync of
/// the open file asks first, so a later or concurrent fsync (another thread's, through a
/// [`SyncHandle`] or a background sync) could return success for bytes that never reached the
/// disk; here the one that failed and every one after it fail.
#[derive(Clone, Default)]
pub(crate) struct SyncGate(Arc<parking_lot::Mutex<bool>>);

impl SyncGate {
    /// Runs `sync` unless an earlier one failed; records its failure.
    pub(crate) fn sync(&self, sync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let mut failed = self.0.lock();
        if *failed {
            return Err(io::Error::other(
                "an earlier fsync of this file failed: its unwritten bytes may be lost",
            ));
        }
        let r = sync();
        *failed = r.is_err();
        r
    }
}

/// How a written file's bytes go to disk: when writeback starts, and how fast the file may be
/// written ([`SstWriter::create_with`](crate::SstWriter::create_with)).
#[derive(Debug, Clone, Default)]
pub struct FileWrites {
    /// When dirty pages are sent to disk while the file is written.
    pub writeback: Writeback,
    /// A rate shared with other files: each write waits for its share of it, and is passed to
    /// the OS in pieces of at most [`RateLimiter::MAX_REQUEST`] bytes. `None`: unpaced.
    pub rate_limiter: Option<Arc<RateLimiter>>,
}

impl SyncingFile {
    /// Wraps an open file ([`Writeback::SyncThread`]).
    pub fn new(file: std::fs::File) -> Self {
        Self::with_writeback(file, Writeback::SyncThread)
    }

    /// Wraps an open file, writing back as `mode` says. Writes go on from the file's position
    /// now (`pwrite(2)` at the offset this wrapper keeps): write the file only through it.
    pub fn with_writeback(file: std::fs::File, mode: Writeback) -> Self {
        use std::io::Seek as _;
        let written = (&file).stream_position().unwrap_or(0);
        SyncingFile {
            file,
            #[cfg(feature = "failpoints")]
            fault_path: None,
            since_sync: 0,
            written,
            syncer: None,
            gate: SyncGate::default(),
            mode,
            limiter: None,
        }
    }

    /// Wraps an open file, written as `writes` says.
    pub fn with_writes(file: std::fs::File, writes: FileWrites) -> Self {
        let mut f = Self::with_writeback(file, writes.writeback);
        f.limiter = writes.rate_limiter;
        f
    }

    fn reap(&mut self, wait: bool) -> std::io::Result<()> {
        if self
            .syncer
            .as_ref()
            .is_some_and(|h| wait || h.is_finished())
        {
            let h = self.syncer.take().expect("syncer present");
            h.join()
                .map_err(|_| std::io::Error::other("background sync thread panicked"))??;
        }
        Ok(())
    }

    /// Waits for background syncs, then makes the whole file durable.
    pub fn sync_all(&mut self) -> std::io::Result<()> {
        self.reap(true)?;
        #[cfg(feature = "failpoints")]
        if failpoints::fires("sst_writer::sync", self.fault_path.as_deref()) {
            return Err(failpoints::injected());
        }
        self.gate.sync(|| self.file.sync_all())
    }

    /// Makes the file subject to the named fault points as the file at `path`.
    #[cfg(feature = "failpoints")]
    pub(crate) fn with_fault_path(mut self, path: std::path::PathBuf) -> Self {
        self.fault_path = Some(path);
        self
    }
}

impl std::io::Write for SyncingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        #[cfg(feature = "failpoints")]
        if failpoints::fires("sst_writer::write", self.fault_path.as_deref()) {
            // The torn half stays in the file, and later writes land after it (as `write(2)`
            // moved the file position).
            if let Ok(n) = self.write_at_end(&buf[..buf.len() / 2]) {
                self.written += n as u64;
            }
            return Err(failpoints::injected());
        }
        let buf = match &self.limiter {
            Some(l) => {
                let piece = &buf[..buf.len().min(RateLimiter::MAX_REQUEST)];
                l.request(piece.len() as u64);
                piece
            }
            None => buf,
        };
        let n = self.write_at_end(buf)?;
        self.since_sync += n as u64;
        self.written += n as u64;
        if self.since_sync >= BACKGROUND_SYNC_BYTES && self.mode == Writeback::Initiate {
            // DONTNEED starts writeback of the range's dirty pages (Linux) and evicts the pages
            // already clean. Advice, so a failure is no error.
            #[cfg(any(target_os = "linux", target_os = "android"))]
            let _ = rustix::fs::fadvise(
                &self.file,
                self.written - self.since_sync,
                std::num::NonZeroU64::new(self.since_sync),
                rustix::fs::Advice::DontNeed,
            );
            self.since_sync = 0;
        } else if self.since_sync >= BACKGROUND_SYNC_BYTES {
            self.reap(false)?;
            if self.syncer.is_none() {
                let f = self.file.try_clone()?;
                let gate = self.gate.clone();
                self.syncer = Some(std::thread::spawn(move || gate.sync(|| f.sync_data())));
                self.since_sync = 0;
            }
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for SyncingFile {
    fn drop(&mut self) {
        let _ = self.reap(true);
    }
}

impl SyncingFile {
    /// Writes at the end of what this wrapper wrote (`pwrite(2)` on Unix). The file is written
    /// sequentially from where it was wrapped, so this is the file position; a positional write skips the
    /// kernel's file-position lock, which a multi-threaded process takes on every `write(2)`
    /// (`fdget_pos`, 1.4% of a fillseq's CPU).
    fn write_at_end(&self, buf: &[u8]) -> std::io::Result<usize> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::write_at(&self.file, buf, self.written)
        }
        #[cfg(not(unix))]
        {
            (&self.file).write(buf)
        }
    }

    /// Waits for background syncs, then makes the file's data durable (no metadata).
    pub fn sync_data(&mut self) -> std::io::Result<()> {
        self.reap(true)?;
        self.gate.sync(|| self.file.sync_data())
    }

    /// The underlying file.
    pub fn file(&self) -> &std::fs::File {
        &self.file
    }
}

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

struct RealWritable {
    file: SyncingFile,
    buf: Vec<u8>,
}

const REAL_WRITE_BUFFER: usize = 1 << 20;

impl Write for RealWritable {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() + data.len() > REAL_WRITE_BUFFER {
            self.flush()?;
            if data.len() >= REAL_WRITE_BUFFER {
                self.file.write_all(data)?;
                return Ok(data.len());
            }
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            // The buffer is dropped even when the write fails: a short write (ENOSPC) may have
            // put part of it in the file already, and writing it again (on drop or on the next
            // flush) would put a copy after that part — a valid record behind damage, which
            // recovery must call corruption. After a failed write the file ends in at most a
            // torn tail; the caller treats the error as fatal (the Db refuses writes).
            let r = self.file.write_all(&self.buf);
            self.buf.clear();
            r?;
        }
        Ok(())
    }
}

impl WritableFile for RealWritable {
    fn preallocate(&mut self, len: u64) {
        // An appending write into blocks not yet allocated takes ext4's per-inode block-map
        // lock, which writeback of the same file (the background sync every 8 MiB, or the
        // kernel's flusher) holds while it allocates: a WAL write(2) sat 26 ms there behind
        // a group of writers (bench/profiles/README.md). RocksDB preallocates WALs alike.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let _ = rustix::fs::fallocate(
            self.file.file(),
            rustix::fs::FallocateFlags::KEEP_SIZE,
            0,
            len,
        );
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let _ = len;
    }
    fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        self.file.sync_data()
    }
    fn sync_handle(&mut self) -> Option<SyncHandle> {
        // Covers what was flushed out of `buf` (the log flushes after every record). A
        // background sync in flight is handed over: its error (which the kernel reports only
        // once) must reach whoever relies on this sync.
        self.flush().ok()?;
        let f = self.file.file().try_clone().ok()?;
        let pending = self.file.syncer.take();
        let gate = self.file.gate.clone();
        Some(Box::new(move || {
            if let Some(h) = pending {
                h.join()
                    .map_err(|_| io::Error::other("background sync thread panicked"))??;
            }
            gate.sync(|| f.sync_data())
        }))
    }
}

impl Drop for RealWritable {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// The LOCK file, held with `flock`. A `flock` belongs to the open file, which a child forked
/// while the Db was open shares until it execs (or for its whole life, if it never does: a
/// Python `multiprocessing` worker). So the lock is let go of explicitly when the Db closes:
/// `LOCK_UN` releases it for every holder of the open file, and the Db can be opened again at
/// once, here or elsewhere. A process that dies without closing keeps it held through such a
/// child until the child exits. That is the safe side: the WAL stage's ring is `flock`ed the
/// same way, so no open can take the Db while a ring of it still looks live.
struct RealLock(std::fs::File);
impl DirLock for RealLock {}

impl Drop for RealLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

impl FileSystem for RealFs {
    fn wal_stage_dir(&self) -> Option<std::path::PathBuf> {
        // 64-bit targets only: a reader loads the live header's 64-bit words from a read-only
        // mapping, which Rust allows only up to the register's width.
        #[cfg(all(
            any(target_os = "linux", target_os = "android"),
            target_pointer_width = "64"
        ))]
        {
            // Only a memory file system: a ring on a disk (a plain `/dev/shm` directory in a
            // chroot or a minimal container) would outlive a power loss the WAL's unsynced
            // tail does not, and recovery would write its bytes behind a hole.
            const TMPFS_MAGIC: u64 = 0x0102_1994;
            let shm = Path::new("/dev/shm");
            if rustix::fs::statfs(shm).is_ok_and(|s| s.f_type as u64 == TMPFS_MAGIC) {
                return Some(shm.to_path_buf());
            }
        }
        None
    }
    fn create_log(
        &self,
        path: &Path,
        reserve: u64,
        mapped: bool,
    ) -> io::Result<Box<dyn WritableFile>> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if mapped {
            match mapped::MappedLog::create(path, reserve) {
                Ok(f) => return Ok(Box::new(f)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(e),
                // No fallocate here (some file systems), no room for the reservation, no
                // mapping: write the log through write(2), which reports its own errors.
                Err(_) => {}
            }
        }
        let _ = mapped;
        create_preallocated(self, path, reserve)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(Box::new(RealWritable {
            file: SyncingFile::new(
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(path)?,
            ),
            buf: Vec::with_capacity(64 << 10),
        }))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(std::fs::File::open(path)?))
    }
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(dir)? {
            v.push(e?.file_name().to_string_lossy().into_owned());
        }
        Ok(v)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        std::fs::File::open(path)?.sync_all()
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }
    fn link_or_copy(&self, from: &Path, to: &Path) -> io::Result<()> {
        if to.exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", to.display()),
            ));
        }
        match std::fs::hard_link(from, to) {
            Ok(()) => Ok(()),
            Err(_) => {
                let r = std::fs::copy(from, to).and_then(|_| std::fs::File::open(to)?.sync_all());
                if r.is_err() {
                    let _ = std::fs::remove_file(to);
                }
                r
            }
        }
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn DirLock>> {
        Ok(Box::new(RealLock::take(path)?))
    }
}

/// True if the open file `f`, opened at `path`, still has a name: a link is left and `path`
/// exists. What removes these files (the CLI's undo of a Db it created removes its LOCK, the
/// WAL stage's sweep an unfinished ring) unlinks them, which leaves the open file with no
/// link, also when a new file has taken the name since. Link counts, not inode numbers:
/// an overlay file system (Linux before 4.19) may give an open file and its path different
/// inode numbers once the file was copied up from a lower layer.
#[cfg(unix)]
pub(crate) fn still_named(f: &std::fs::File, path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    if f.metadata()?.nlink() == 0 {
        return Ok(false);
    }
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

impl RealLock {
    /// Opens (or makes) `path` and takes its lock without waiting.
    fn take(path: &Path) -> io::Result<RealLock> {
        Self::take_with(path, || {})
    }

    /// [`take`](Self::take), running `opened` between the open and the lock (tests).
    ///
    /// The file locked must still be the one at `path` once it is locked: a process that
    /// removed the LOCK between our open and our lock (the CLI taking away a Db it had just
    /// created, after its command failed) leaves us holding a file nobody else will open,
    /// while a creator after it makes and locks a new one. So the lock is refused, as one
    /// held by another process, when the file locked has no name left ([`still_named`]).
    fn take_with(path: &Path, opened: impl FnOnce()) -> io::Result<RealLock> {
        let locked = || {
            io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another process", path.display()),
            )
        };
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        opened();
        match f.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(locked()),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        let held = RealLock(f);
        #[cfg(unix)]
        if !still_named(&held.0, path)? {
            return Err(locked());
        }
        Ok(held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child that shares the LOCK's open file (as one forked while the Db is open does,
    /// until it execs) does not keep the lock once the Db lets go of it.
    #[cfg(unix)]
    #[test]
    fn a_child_sharing_the_lock_file_does_not_keep_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let held = RealLock::take(&path).unwrap();
        assert!(RealFs.lock(&path).is_err(), "a second lock must be refused");
        // The lock's own open file, handed to a child as its stdin.
        let dup = held.0.try_clone().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .stdin(std::process::Stdio::from(dup))
            .spawn()
            .unwrap();
        drop(held);
        let again = RealFs.lock(&path);
        let _ = child.kill();
        let _ = child.wait();
        assert!(again.is_ok(), "reopen refused: {:?}", again.err());
    }

    /// A LOCK removed (or replaced) between the open and the lock is refused, as held by
    /// another process: the file locked is no longer the Db's LOCK, and whoever opens the
    /// path next locks another file.
    #[cfg(unix)]
    #[test]
    fn a_lock_file_removed_before_it_is_locked_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let got = RealLock::take_with(&path, || std::fs::remove_file(&path).unwrap());
        let e = got.err().expect("a removed LOCK was taken");
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        let got = RealLock::take_with(&path, || {
            std::fs::remove_file(&path).unwrap();
            std::fs::write(&path, b"").unwrap();
        });
        assert!(got.is_err(), "a replaced LOCK was taken");
        // Untouched, it is taken; and the file left behind is lockable again.
        let held = RealLock::take(&path).unwrap();
        drop(held);
        assert!(RealLock::take(&path).is_ok());
    }

    /// Once one fsync of a file failed, every later one fails without being made (Linux
    /// reports the error once and marks the pages clean), through every path: the file's
    /// own sync, a handle taken before or after the failure.
    #[test]
    fn a_failed_fsync_fails_every_later_one() {
        let gate = SyncGate::default();
        let other = gate.clone();
        gate.sync(|| Ok(())).unwrap();
        assert!(gate.sync(|| Err(io::Error::from_raw_os_error(5))).is_err());
        let mut ran = false;
        assert!(other
            .sync(|| {
                ran = true;
                Ok(())
            })
            .is_err());
        assert!(
            !ran,
            "a later fsync was made and could have reported success"
        );
    }

    /// `SyncingFile` writes with `pwrite(2)` at its own offset: from where the file was when
    /// wrapped (a file opened at its end is appended to, not overwritten), each write after
    /// the last, as `write(2)` through the file position did.
    #[test]
    fn a_syncing_file_writes_on_from_the_files_position() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"head|").unwrap();
        let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        use std::io::Seek as _;
        f.seek(std::io::SeekFrom::End(0)).unwrap();
        let mut s = SyncingFile::new(f);
        s.write_all(b"one|").unwrap();
        s.write_all(b"two").unwrap();
        s.sync_data().unwrap();
        drop(s);
        assert_eq!(std::fs::read(&p).unwrap(), b"head|one|two");
        // A new file from offset 0.
        let q = dir.path().join("g");
        let mut s = SyncingFile::new(std::fs::File::create_new(&q).unwrap());
        s.write_all(b"abc").unwrap();
        s.write_all(b"def").unwrap();
        drop(s);
        assert_eq!(std::fs::read(&q).unwrap(), b"abcdef");
    }
}
