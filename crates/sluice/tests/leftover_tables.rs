//! `wait_for_background_work` must not return while a background worker still has obsolete
//! tables to unlink (crash seed 12001, kill 16: the leak check listed them).

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use sluice::fs::{DirLock, FileSystem, MemFs, RandomAccessFile, WritableFile};
use sluice::version::Version;
use sluice::{Db, Options};

#[derive(Default)]
struct Gate {
    /// A version the test held; dropped (as a plain `Arc`, no purge) by the first table
    /// removal a worker makes once armed.
    held: Option<Arc<Version>>,
    armed: bool,
    /// The table removal now blocked in a worker.
    blocked: Option<PathBuf>,
    open: bool,
}

#[derive(Clone)]
struct GateFs {
    inner: MemFs,
    gate: Arc<(Mutex<Gate>, Condvar)>,
}

fn on_worker() -> bool {
    std::thread::current()
        .name()
        .is_some_and(|n| n.starts_with("sluice-bg-"))
}

impl FileSystem for GateFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.inner.create(path)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path)
    }
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        let is_table = path.extension().is_some_and(|e| e == "sst");
        if is_table && on_worker() {
            let (m, cv) = &*self.gate;
            let mut g = m.lock();
            if g.armed {
                if let Some(v) = g.held.take() {
                    // The install's own purge removes the inputs nobody holds; the one the
                    // test's version held dies now, with no purge (a plain Arc).
                    drop(v);
                } else if !g.open {
                    g.blocked = Some(path.to_path_buf());
                    cv.notify_all();
                    while !g.open {
                        cv.wait(&mut g);
                    }
                }
            }
        }
        self.inner.remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.remove_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_file(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_size(path)
    }
    fn link_or_copy(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.link_or_copy(from, to)
    }
    fn lock(&self, path: &Path) -> io::Result<Box<dyn DirLock>> {
        self.inner.lock(path)
    }
}

fn leftover_tables(fs: &GateFs, db: &Db) -> Vec<String> {
    let live: HashSet<u64> = db
        .current_version()
        .levels
        .iter()
        .flatten()
        .map(|f| f.number)
        .collect();
    let mut out: Vec<String> = fs
        .list(db.path())
        .unwrap()
        .into_iter()
        .filter(|n| {
            n.strip_suffix(".sst")
                .and_then(|s| s.parse::<u64>().ok())
                .is_some_and(|num| !live.contains(&num))
        })
        .collect();
    out.sort();
    out
}

/// An obsolete table a worker took for deletion after its job finished (here: one the dead
/// version of a plain `Arc` held, as after the `ReadPin::drop` / `live_tables` race) is
/// still on disk when `wait_for_background_work` judges the Db idle and returns.
#[test]
fn wait_for_background_work_waits_for_a_workers_pending_deletions() {
    let fs = GateFs {
        inner: MemFs::new(),
        gate: Arc::new((Mutex::new(Gate::default()), Condvar::new())),
    };
    let opts = Options {
        l0_compaction_trigger: 2,
        // Two flushes of a few hundred bytes are due: by depth alone.
        l0_thin_sublevels_wait: false,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    for i in 0..50u32 {
        db.put(format!("k{i:03}").as_bytes(), b"one").unwrap();
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    assert_eq!(db.current_version().levels[0].len(), 1);
    {
        let (m, _) = &*fs.gate;
        let mut g = m.lock();
        g.held = Some(db.current_version()); // holds the first L0 table
        g.armed = true;
    }
    for i in 0..50u32 {
        db.put(format!("k{i:03}").as_bytes(), b"two").unwrap();
    }
    db.flush().unwrap(); // two L0 tables: a worker compacts them
                         // Wait (at most 10 s) until the worker blocks removing the first L0 table.
    {
        let (m, cv) = &*fs.gate;
        let mut g = m.lock();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while g.blocked.is_none() && std::time::Instant::now() < deadline {
            cv.wait_for(&mut g, Duration::from_millis(50));
        }
        assert!(g.blocked.is_some(), "the worker never removed the table");
    }
    // The worker unlinks it 300 ms from now (a worker at nice 10 on a busy machine).
    let gate = Arc::clone(&fs.gate);
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let (m, cv) = &*gate;
        m.lock().open = true;
        cv.notify_all();
    });
    db.wait_for_background_work().unwrap();
    let left = leftover_tables(&fs, &db);
    opener.join().unwrap();
    assert!(
        left.is_empty(),
        "tables outside the current version after wait_for_background_work: {left:?}"
    );
}
