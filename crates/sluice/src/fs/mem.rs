//! An in-memory [`FileSystem`] with fault injection and a crash model.
//!
//! Crash model ([`MemFs::crash`]): every name reverts to the directory state of the last
//! `sync_dir`, and every file loses the bytes written after its last `sync` — optionally
//! keeping a random prefix of them (a torn write), as a real disk might.

use std::collections::{BTreeMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::{DirLock, FileSystem, RandomAccessFile, WritableFile};

#[derive(Default, Debug)]
struct Inode {
    data: Vec<u8>,
    synced_len: usize,
}

type InodeRef = Arc<Mutex<Inode>>;

/// Faults to inject; change them at any time with [`MemFs::set_faults`].
#[derive(Debug, Clone, Default)]
pub struct FaultConfig {
    /// Fail every write once this many more bytes have been written (`None`: never).
    pub fail_writes_after_bytes: Option<u64>,
    /// Fail every `sync` and `sync_dir`.
    pub fail_syncs: bool,
    /// Fail creating files whose name contains this string.
    pub fail_create_containing: Option<String>,
    /// Fail every change to the file system (create, write, sync, rename, remove, link,
    /// directory create and sync) once this many more have succeeded (`None`: never). It
    /// freezes the files where a process killed after that many steps would leave them (then
    /// [`MemFs::crash`] for what a power loss there would leave): step through `Some(0)`,
    /// `Some(1)`, … to kill an operation at each of its steps.
    pub fail_after_ops: Option<u64>,
}

#[derive(Default)]
struct State {
    names: BTreeMap<PathBuf, InodeRef>,
    durable_names: BTreeMap<PathBuf, InodeRef>,
    dirs: HashSet<PathBuf>,
    locks: HashSet<PathBuf>,
    faults: FaultConfig,
    bytes_written: u64,
    /// Changes counted against `faults.fail_after_ops`.
    ops: u64,
}

impl State {
    /// Counts one change to the file system, or fails it (`FaultConfig::fail_after_ops`).
    fn op(&mut self) -> io::Result<()> {
        if let Some(limit) = self.faults.fail_after_ops {
            if self.ops >= limit {
                return Err(injected("the process was killed here"));
            }
        }
        self.ops += 1;
        Ok(())
    }
}

struct Shared {
    state: Mutex<State>,
    /// While true, every sync blocks (to observe what proceeds during a slow fsync).
    sync_held: Mutex<bool>,
    /// With `sync_held`, only syncs of paths containing this string block (all when `None`).
    sync_hold_pattern: Mutex<Option<String>>,
    sync_cv: Condvar,
    syncs: AtomicU64,
    waiting_syncs: AtomicU64,
}

/// The in-memory file system. Clones share the same files.
#[derive(Clone)]
pub struct MemFs {
    shared: Arc<Shared>,
}

impl Default for MemFs {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemFs").finish()
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not found", path.display()),
    )
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected fault: {what}"))
}

impl MemFs {
    /// An empty file system.
    pub fn new() -> Self {
        MemFs {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                sync_held: Mutex::new(false),
                sync_hold_pattern: Mutex::new(None),
                sync_cv: Condvar::new(),
                syncs: AtomicU64::new(0),
                waiting_syncs: AtomicU64::new(0),
            }),
        }
    }

    /// Replaces the fault configuration.
    pub fn set_faults(&self, f: FaultConfig) {
        let mut s = self.shared.state.lock();
        s.bytes_written = 0;
        s.ops = 0;
        s.faults = f;
    }

    /// Makes every sync block until [`MemFs::release_syncs`].
    pub fn hold_syncs(&self) {
        *self.shared.sync_hold_pattern.lock() = None;
        *self.shared.sync_held.lock() = true;
    }

    /// Makes syncs of paths containing `pattern` block until [`MemFs::release_syncs`].
    pub fn hold_syncs_matching(&self, pattern: &str) {
        *self.shared.sync_hold_pattern.lock() = Some(pattern.to_string());
        *self.shared.sync_held.lock() = true;
    }

    /// Lets blocked syncs proceed.
    pub fn release_syncs(&self) {
        *self.shared.sync_held.lock() = false;
        self.shared.sync_cv.notify_all();
    }

    /// Number of syncs currently blocked by [`MemFs::hold_syncs`].
    pub fn waiting_syncs(&self) -> u64 {
        self.shared.waiting_syncs.load(Ordering::SeqCst)
    }

    /// Total syncs completed.
    pub fn sync_count(&self) -> u64 {
        self.shared.syncs.load(Ordering::SeqCst)
    }

    /// Simulates power loss. With `torn_seed`, each file keeps a pseudo-random prefix of its
    /// unsynced bytes instead of none. Locks are released (the process died).
    pub fn crash(&self, torn_seed: Option<u64>) {
        let mut s = self.shared.state.lock();
        let mut rng = torn_seed.unwrap_or(0) | 1;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        s.names = s.durable_names.clone();
        let inodes: Vec<InodeRef> = s.names.values().cloned().collect();
        for ino in inodes {
            let mut i = ino.lock();
            let unsynced = i.data.len() - i.synced_len;
            let keep = match (torn_seed, unsynced) {
                (Some(_), u) if u > 0 => (next() % (u as u64 + 1)) as usize,
                _ => 0,
            };
            let n = i.synced_len + keep;
            i.data.truncate(n);
            i.synced_len = n;
        }
        s.locks.clear();
        s.faults = FaultConfig::default();
    }

    /// A new file system holding what would survive power loss right now (see
    /// [`MemFs::crash`]); this one is left untouched, so a still-running database cannot
    /// write into the crashed image.
    pub fn crashed_copy(&self, torn_seed: Option<u64>) -> MemFs {
        let copy = MemFs::new();
        {
            let s = self.shared.state.lock();
            let mut c = copy.shared.state.lock();
            for (path, ino) in &s.durable_names {
                let i = ino.lock();
                let d = Inode {
                    data: i.data.clone(),
                    synced_len: i.synced_len,
                };
                let ino: InodeRef = Arc::new(Mutex::new(d));
                c.names.insert(path.clone(), ino.clone());
                c.durable_names.insert(path.clone(), ino);
            }
            c.dirs = s.dirs.clone();
        }
        copy.crash(torn_seed);
        copy
    }

    /// The current contents of a file (for tests that corrupt files).
    pub fn read_raw(&self, path: &Path) -> Option<Vec<u8>> {
        let s = self.shared.state.lock();
        s.names.get(path).map(|i| i.lock().data.clone())
    }

    /// Overwrites a file's contents, durably (for tests that corrupt files).
    pub fn write_raw(&self, path: &Path, data: Vec<u8>) {
        let mut s = self.shared.state.lock();
        let ino: InodeRef = Arc::new(Mutex::new(Inode {
            synced_len: data.len(),
            data,
        }));
        s.names.insert(path.to_path_buf(), ino.clone());
        s.durable_names.insert(path.to_path_buf(), ino);
    }

    fn wait_sync_gate(&self, path: &Path) {
        let matches = match &*self.shared.sync_hold_pattern.lock() {
            Some(p) => path.to_string_lossy().contains(p.as_str()),
            None => true,
        };
        if !matches {
            return;
        }
        let mut held = self.shared.sync_held.lock();
        if *held {
            self.shared.waiting_syncs.fetch_add(1, Ordering::SeqCst);
            while *held {
                self.shared.sync_cv.wait(&mut held);
            }
            self.shared.waiting_syncs.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn inode(&self, path: &Path) -> io::Result<InodeRef> {
        self.shared
            .state
            .lock()
            .names
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(path))
    }
}

struct MemWritable {
    fs: MemFs,
    inode: InodeRef,
    path: PathBuf,
}

impl Write for MemWritable {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        {
            let mut s = self.fs.shared.state.lock();
            if let Some(limit) = s.faults.fail_writes_after_bytes {
                if s.bytes_written + data.len() as u64 > limit {
                    return Err(injected("write failed (disk full)"));
                }
            }
            s.op()?;
            s.bytes_written += data.len() as u64;
        }
        self.inode.lock().data.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl MemFs {
    /// Makes everything written to `inode` so far durable (the body of every file sync).
    fn sync_inode(&self, path: &Path, inode: &InodeRef) -> io::Result<()> {
        self.wait_sync_gate(path);
        {
            let mut s = self.shared.state.lock();
            if s.faults.fail_syncs {
                return Err(injected("fsync failed"));
            }
            s.op()?;
        }
        let mut i = inode.lock();
        i.synced_len = i.data.len();
        self.shared.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

impl WritableFile for MemWritable {
    fn sync(&mut self) -> io::Result<()> {
        self.fs.sync_inode(&self.path, &self.inode)
    }
    fn sync_handle(&mut self) -> Option<super::SyncHandle> {
        let (fs, path, inode) = (self.fs.clone(), self.path.clone(), Arc::clone(&self.inode));
        Some(Box::new(move || fs.sync_inode(&path, &inode)))
    }
}

struct MemReader(InodeRef);

impl RandomAccessFile for MemReader {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let i = self.0.lock();
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = i
            .data
            .get(start..start.saturating_add(buf.len()))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.0.lock().data.len() as u64)
    }
}

struct MemLock {
    fs: MemFs,
    path: PathBuf,
}
impl DirLock for MemLock {}
impl Drop for MemLock {
    fn drop(&mut self) {
        self.fs.shared.state.lock().locks.remove(&self.path);
    }
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let mut s = self.shared.state.lock();
        if let Some(pat) = &s.faults.fail_create_containing {
            if path.to_string_lossy().contains(pat.as_str()) {
                return Err(injected("create failed"));
            }
        }
        if s.names.contains_key(path) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", path.display()),
            ));
        }
        s.op()?;
        let inode: InodeRef = Arc::new(Mutex::new(Inode::default()));
        s.names.insert(path.to_path_buf(), inode.clone());
        Ok(Box::new(MemWritable {
            fs: self.clone(),
            inode,
            path: path.to_path_buf(),
        }))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(MemReader(self.inode(path)?)))
    }
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        Ok(self.inode(path)?.lock().data.clone())
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.shared.state.lock();
        s.op()?;
        if s.dirs.remove(from) {
            // A directory: its entries move with it (durable ones stay durable, as a directory
            // rename carries its synced entries along).
            s.dirs.insert(to.to_path_buf());
            let under = |p: &PathBuf| p.starts_with(from);
            let renamed = |p: &Path| to.join(p.strip_prefix(from).expect("filtered on the prefix"));
            let live: Vec<PathBuf> = s.names.keys().filter(|p| under(p)).cloned().collect();
            for k in live {
                let ino = s.names.remove(&k).expect("listed above");
                s.names.insert(renamed(&k), ino);
            }
            let durable: Vec<PathBuf> = s
                .durable_names
                .keys()
                .filter(|p| under(p))
                .cloned()
                .collect();
            for k in durable {
                let ino = s.durable_names.remove(&k).expect("listed above");
                s.durable_names.insert(renamed(&k), ino);
            }
            return Ok(());
        }
        let ino = s.names.remove(from).ok_or_else(|| not_found(from))?;
        s.names.insert(to.to_path_buf(), ino);
        Ok(())
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.shared.state.lock();
        s.op()?;
        s.names
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let s = self.shared.state.lock();
        Ok(s.names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.shared.state.lock();
        s.op()?;
        s.dirs.insert(dir.to_path_buf());
        Ok(())
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.shared.state.lock();
        s.op()?;
        if s.names.keys().any(|p| p.parent() == Some(dir)) {
            return Err(io::Error::other(format!("{} is not empty", dir.display())));
        }
        if s.dirs.remove(dir) {
            Ok(())
        } else {
            Err(not_found(dir))
        }
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.wait_sync_gate(dir);
        let mut s = self.shared.state.lock();
        if s.faults.fail_syncs {
            return Err(injected("directory fsync failed"));
        }
        s.op()?;
        let in_dir: Vec<(PathBuf, InodeRef)> = s
            .names
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir))
            .map(|(p, i)| (p.clone(), i.clone()))
            .collect();
        s.durable_names.retain(|p, _| p.parent() != Some(dir));
        s.durable_names.extend(in_dir);
        Ok(())
    }
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        self.wait_sync_gate(path);
        {
            let mut s = self.shared.state.lock();
            if s.faults.fail_syncs {
                return Err(injected("fsync failed"));
            }
            s.op()?;
        }
        let ino = self.inode(path)?;
        let mut i = ino.lock();
        i.synced_len = i.data.len();
        self.shared.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn exists(&self, path: &Path) -> bool {
        let s = self.shared.state.lock();
        s.names.contains_key(path) || s.dirs.contains(path)
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        Ok(self.inode(path)?.lock().data.len() as u64)
    }
    fn link_or_copy(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.shared.state.lock();
        if s.names.contains_key(to) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", to.display()),
            ));
        }
        let ino = s.names.get(from).cloned().ok_or_else(|| not_found(from))?;
        s.op()?;
        s.names.insert(to.to_path_buf(), ino);
        Ok(())
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn DirLock>> {
        let mut s = self.shared.state.lock();
        if !s.locks.insert(path.to_path_buf()) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another process", path.display()),
            ));
        }
        Ok(Box::new(MemLock {
            fs: self.clone(),
            path: path.to_path_buf(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_drops_unsynced_bytes_and_names() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let mut f = fs.create(&dir.join("a")).unwrap();
        f.write_all(b"hello").unwrap();
        f.sync().unwrap();
        fs.sync_dir(dir).unwrap();
        f.write_all(b" world").unwrap();
        let mut g = fs.create(&dir.join("b")).unwrap();
        g.write_all(b"x").unwrap();
        g.sync().unwrap();
        fs.crash(None);
        assert_eq!(fs.read_all(&dir.join("a")).unwrap(), b"hello");
        assert!(!fs.exists(&dir.join("b")), "name never made durable");
    }

    #[test]
    fn injected_faults_fail_writes_and_syncs() {
        let fs = MemFs::new();
        let mut f = fs.create(Path::new("/x")).unwrap();
        fs.set_faults(FaultConfig {
            fail_writes_after_bytes: Some(3),
            ..Default::default()
        });
        assert!(f.write_all(b"ab").is_ok());
        assert!(f.write_all(b"cd").is_err());
        fs.set_faults(FaultConfig {
            fail_syncs: true,
            ..Default::default()
        });
        assert!(f.sync().is_err());
    }
}
