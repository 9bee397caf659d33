//! Opening the Db for an import and the import's temporary directories: created and
//! registered under one lock, removed on every exit path and on SIGINT/SIGTERM/SIGHUP
//! ([`remove_tmp_dirs_for_exit`]); a killed import's are removed at the next open.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use sluice::Db;

use crate::tmp_dirs::TMP_PREFIX;
use crate::ImportError;

/// Live temporary directories of this process (never removed as leftovers).
pub(crate) fn live_dirs() -> &'static Mutex<HashSet<PathBuf>> {
    static LIVE: std::sync::OnceLock<Mutex<HashSet<PathBuf>>> = std::sync::OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Set (under `live_dirs`' lock) by [`remove_tmp_dirs_for_exit`]: no temporary directory is
/// made afterwards.
pub(crate) static EXITING: AtomicBool = AtomicBool::new(false);

/// Removes the temporary directories of every import running in this process, for a process
/// about to exit on a signal (SIGINT, SIGTERM: an interrupted import leaves no
/// `sluice-import-*` behind); returns how many it removed. No import of this process can make
/// a temporary directory afterwards (each is made and registered under the same lock), so
/// call it only on the way out. The Db needs nothing: until its one ingest commits an import
/// has not changed it, and an interrupted ingest is recovered like a crash.
pub fn remove_tmp_dirs_for_exit() -> usize {
    let live = live_dirs().lock().unwrap_or_else(|e| e.into_inner());
    EXITING.store(true, Ordering::SeqCst);
    let mut n = 0;
    for path in live.iter() {
        // Workers may still be writing runs into it: retry until the directory is gone (a file
        // created during a pass makes that pass fail; once the directory is gone none can be).
        for _ in 0..100 {
            match std::fs::remove_dir_all(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => continue,
                _ => break,
            }
        }
        n += usize::from(!path.exists());
    }
    n
}

/// Removes `sluice-import-*` directories an earlier, killed import left in `dir` (the Db
/// directory): the Db lock held by the caller proves no other process is importing into it.
pub fn remove_leftovers(dir: &Path) -> usize {
    let live = live_dirs().lock().map(|l| l.clone()).unwrap_or_default();
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            let is_ours = e.file_name().to_string_lossy().starts_with(TMP_PREFIX);
            if is_ours && p.is_dir() && !live.contains(&p) && std::fs::remove_dir_all(&p).is_ok() {
                n += 1;
            }
        }
    }
    n
}

/// Removes the `sluice-import-*` directories in `parent` whose process has exited: a killed
/// import's, in a `--tmp-dir` outside the Db directory (which no open of the Db cleans). A
/// directory whose process runs — or may run: no `/proc` to tell — is left alone; so is one
/// of this process (`live`).
fn remove_dead(parent: &Path, live: &HashSet<PathBuf>) {
    for d in crate::find_tmp_dirs(parent) {
        if d.process_running == Some(false) && !live.contains(&d.path) {
            let _ = std::fs::remove_dir_all(&d.path);
        }
    }
}

/// Opens (or creates) a Db with its persisted options (defaults for a new one) and removes
/// what a killed import left in it.
pub fn open_db(dir: impl AsRef<Path>, create: bool) -> Result<Db, ImportError> {
    open_db_with(dir, create, |_| {})
}

/// Files of a table under this size are merged after each commit ([`merge_small_table_files`]):
/// 16 blocks; one merge reads and holds at most 64 of them (4 MiB), whatever the import's
/// memory budget, and never rewrites what an import with a small budget cut into files of
/// ordinary size.
pub(crate) const SMALL_TABLE_FILE_BYTES: u64 = 64 << 10;

/// After a commit into table `table_id`: the small files of its indexes merged, each index's
/// among themselves (`Db::merge_small_files` within the table's keys, runs of one 8-byte
/// table and index prefix). An append of a few rows leaves one small file per index (per
/// column of a columnar table) beside that index's earlier ones at the bottom, where no
/// compaction would ever merge them. Returns the merges run. A failure is not the import's
/// (it is committed): it poisons the Db, as a failed compaction does, and the next operation
/// says so; the caller reports it.
pub(crate) fn merge_small_table_files(db: &Db, table_id: u32) -> Result<usize, sluice::Error> {
    let lo = table_id.to_be_bytes();
    let hi = crate::keycode::prefix_successor(&lo).unwrap_or_else(|| vec![0xFF; 5]);
    let prefix = crate::keycode::PREFIX_LEN;
    db.merge_small_files(prefix, SMALL_TABLE_FILE_BYTES, &lo, &hi)
}

/// Imports of this process whose ingest has committed (a signal handler about to exit tells
/// the user whether the import it cuts short is already in the Db: what follows a commit,
/// merging small files and rewriting row groups, changes no row).
static COMMITTED: AtomicU64 = AtomicU64::new(0);

/// Held (shared) by each import from just before its `Db::ingest` until it is counted in
/// [`COMMITTED`] (its checkpoint removed); [`stop_commits_for_exit`] takes it exclusively.
static COMMIT_GATE: RwLock<()> = RwLock::new(());

/// Runs an import's `commit` (its `Db::ingest` and what must go with it) and counts it once
/// it committed: an exiting process's [`stop_commits_for_exit`] waits for it, and after that
/// call none starts. Nothing slow before the ingest (prechecks, the commit lock) belongs in
/// it.
pub(crate) fn committing<T>(
    commit: impl FnOnce() -> Result<T, ImportError>,
) -> Result<T, ImportError> {
    let _gate = COMMIT_GATE.read().unwrap_or_else(|e| e.into_inner());
    let r = commit()?;
    COMMITTED.fetch_add(1, Ordering::SeqCst);
    Ok(r)
}

/// How many imports of this process have committed their ingest so far.
pub fn imports_committed() -> u64 {
    COMMITTED.load(Ordering::SeqCst)
}

/// For a process about to exit on a signal: waits up to `wait` for the ingests running now to
/// commit or fail, and keeps any later one from starting (it waits until the process exits).
/// Returns how many imports of this process committed, or `None` when an ingest was still
/// running after `wait` (it may yet commit before the exit).
pub fn stop_commits_for_exit(wait: std::time::Duration) -> Option<u64> {
    let until = std::time::Instant::now() + wait;
    loop {
        let gate = match COMMIT_GATE.try_write() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        // Held until the process exits.
        std::mem::forget(gate);
        return Some(imports_committed());
    }
}

/// [`open_db`], with `adjust` applied to the options before the open: settings that are not
/// persisted, such as event listeners (`sluice import --events`).
pub fn open_db_with(
    dir: impl AsRef<Path>,
    create: bool,
    adjust: impl FnOnce(&mut sluice::Options),
) -> Result<Db, ImportError> {
    let dir = dir.as_ref();
    let base = sluice::Options {
        create_if_missing: create,
        ..sluice::Options::default()
    };
    let mut opts = if dir.join("CURRENT").exists() {
        sluice::Options::load_latest(dir, base)?
    } else {
        base
    };
    adjust(&mut opts);
    let db = Db::open(dir, opts)?;
    remove_leftovers(dir);
    Ok(db)
}

/// Opens an existing Db read-only (for scans and gets beside a writer): nothing is written or
/// removed.
pub fn open_db_read_only(dir: impl AsRef<Path>) -> Result<Db, ImportError> {
    let dir = dir.as_ref();
    if !dir.join("CURRENT").exists() {
        let contents = sluice::DirContents::inspect(&sluice::fs::RealFs, dir)?;
        if let Some(why) = contents.why_not_a_db(dir) {
            return Err(ImportError::InvalidArgument(why));
        }
    }
    let opts = sluice::Options::load_latest(dir, sluice::Options::default())?;
    Ok(Db::open_read_only(dir, opts)?)
}

/// The import's temporary directory, removed on drop, except a resumable import's (see
/// [`TmpDir::resumable`]).
pub(crate) struct TmpDir {
    pub(crate) path: PathBuf,
    /// A resumable import's directory: kept on drop (it must survive a crash and a failure
    /// that a resume can get past); the import removes it when it finishes.
    pub(crate) resumable: bool,
}

impl TmpDir {
    pub(crate) fn create(parent: &Path) -> Result<TmpDir, ImportError> {
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{TMP_PREFIX}{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let path = parent.join(name);
        crate::failpoints::inject("import::tmp_dir").map_err(|e| ImportError::io(parent, e))?;
        std::fs::create_dir_all(parent).map_err(|e| ImportError::io(parent, e))?;
        // Made and registered under one lock: `remove_tmp_dirs_for_exit` sees it, or stops it.
        let mut live = live_dirs().lock().unwrap_or_else(|e| e.into_inner());
        remove_dead(parent, &live);
        if EXITING.load(Ordering::SeqCst) {
            return Err(ImportError::InvalidArgument(
                "the process is exiting".into(),
            ));
        }
        // Created new (never an existing directory) and private: the import later ingests the
        // files in it without re-verifying their keys, so no other user may place or swap one.
        let mut b = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&path).map_err(|e| ImportError::io(&path, e))?;
        live.insert(path.clone());
        Ok(TmpDir {
            path,
            resumable: false,
        })
    }

    /// A resumable import's directory at `path` (see `pipeline::checkpoint`), created private
    /// if missing, else taken over as it is. It is not registered for removal at exit: a
    /// process interrupted by a signal leaves it for `resume` (or the next import).
    /// The caller has claimed `path` (`checkpoint::claim`); dropping this releases it.
    pub(crate) fn resumable(path: PathBuf) -> Result<TmpDir, ImportError> {
        let dir = TmpDir {
            path,
            resumable: true,
        };
        if let Some(parent) = dir.path.parent() {
            // A killed import's `sluice-import-*` directory beside it goes, as in `create`.
            let live = live_dirs().lock().unwrap_or_else(|e| e.into_inner());
            remove_dead(parent, &live);
        }
        if !dir.path.is_dir() {
            let path = &dir.path;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| ImportError::io(parent, e))?;
            }
            let mut b = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b.recursive(true)
                .create(path)
                .map_err(|e| ImportError::io(path, e))?;
            // The directory's entry made durable: its checkpoints must outlive a power loss.
            crate::durable::sync_parent(path)?;
        }
        Ok(dir)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        if self.resumable {
            crate::pipeline::checkpoint::release(&self.path);
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
        if let Ok(mut l) = live_dirs().lock() {
            l.remove(&self.path);
        }
    }
}
