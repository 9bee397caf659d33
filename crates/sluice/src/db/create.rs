//! Creating a Db atomically, and what a directory holds before an open ([`DirContents`]).
//!
//! A new Db becomes a Db at one instant: the rename that puts `CURRENT` in place, the last
//! step of its first open, after its (empty) WAL, its MANIFEST and its OPTIONS file. A process
//! killed before that instant — or a power loss before the directory sync that follows it —
//! leaves a directory without `CURRENT` holding only *creation leftovers*
//! ([`creation_leftover`]: `LOCK`, `MANIFEST-N`, `OPTIONS-N[.tmp]`, `CURRENT.N.tmp`, empty
//! WALs). Such a directory is a Db that does not exist yet, not a damaged one: the next
//! writable open with `create_if_missing` removes the leftovers and creates the Db afresh, and
//! a read-only open says the creation has not finished. So creation is atomic as seen by every
//! open: a directory is a whole Db or none.
//!
//! Why not build the Db in a temporary directory and rename it: the directory a user names
//! may already exist (empty, or a mount point) and must stay the same inode, and two creators
//! racing would each build one and the loser's rename would fail with a message about a
//! directory it never asked for. Taking `LOCK` first serialises creators on the directory
//! itself, so the loser hears "locked by another process".
//!
//! Invariants:
//! 1. A directory holding `CURRENT` is a Db: nothing here deletes or rewrites anything in it.
//! 2. A WAL gets records only after `CURRENT` exists (writes start once the open returns), so
//!    without `CURRENT` an empty WAL (or a preallocated one, all zeros) is a leftover and a
//!    WAL with records is a Db that lost its `CURRENT`: refused, never removed. Tables
//!    likewise.
//! 3. Anything that is not a creation leftover (a table, a WAL with records, a user's file or
//!    folder) makes an open refuse the directory and leaves it exactly as it was: the first
//!    look, without the lock, refuses before even `LOCK` is created.
//! 4. Leftovers are removed only under `LOCK`, after a second look taken under it (the verdict
//!    that counts): a creator racing us holds `LOCK`, so we fail with "locked by another
//!    process" instead of judging — or deleting — its half-built directory. `LOCK` itself is
//!    never removed here (a process may have opened it and be about to lock it). The one
//!    place that removes it is the CLI taking away a Db it created when its command failed
//!    ([`Db::close_keeping_lock`](super::Db::close_keeping_lock)), while holding it; so a
//!    real file system's lock, once taken, checks that the path still names the file it
//!    locked, and refuses it otherwise.

use std::path::Path;

use crate::base::error::{Error, Result};
use crate::base::filenames::{classify, creation_leftover, FileKind};
use crate::fs::{DirLock, FileSystem};

use super::Options;

/// What a directory holds, as far as opening a Db in it goes ([`DirContents::inspect`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DirContents {
    /// Nothing is at the path.
    Missing,
    /// The path is a file.
    NotADirectory,
    /// An empty directory.
    Empty,
    /// A Db: `CURRENT` is there.
    Db,
    /// No `CURRENT`, and only what a Db's first open writes before it (these names): another
    /// process is creating the Db, or a creation was interrupted. A writable open with
    /// `create_if_missing` removes them and creates the Db.
    Unfinished(Vec<String>),
    /// No `CURRENT`, and names a creation never writes (the first five, sorted): not a
    /// Db, or one that lost its `CURRENT`. No open touches it.
    Foreign(Vec<String>),
}

/// How many names [`DirContents::Foreign`] keeps (for messages).
const SHOWN_NAMES: usize = 5;

/// True if the `size` bytes of `path` are all zero and `size` is a preallocated log's length
/// ([`MAPPED_LOG_ALIGN`](crate::fs::MAPPED_LOG_ALIGN)). Read a block at a time: bounded memory
/// whatever the file.
fn only_zeros(fs: &dyn FileSystem, path: &Path, size: u64) -> Result<bool> {
    if !crate::fs::may_be_mapped_log(size) {
        return Ok(false);
    }
    let f = fs.open(path).map_err(|e| Error::io(path, e))?;
    let mut buf = vec![0u8; crate::fs::MAPPED_LOG_ALIGN as usize];
    let mut at = 0;
    while at < size {
        f.read_exact_at(at, &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if buf.iter().any(|&b| b != 0) {
            return Ok(false);
        }
        at += buf.len() as u64;
    }
    Ok(true)
}

impl DirContents {
    /// Looks at `dir` without locking or changing anything. A verdict other than
    /// [`DirContents::Db`] is re-checked against `CURRENT` after the listing, so a creator that
    /// finishes while we look is seen as the Db it now is.
    pub fn inspect(fs: &dyn FileSystem, dir: &Path) -> Result<DirContents> {
        let names = match fs.list(dir) {
            Ok(names) => names,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(DirContents::Missing),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Ok(DirContents::NotADirectory)
            }
            Err(e) => return Err(Error::io(dir, e)),
        };
        if names.iter().any(|n| n == "CURRENT") {
            return Ok(DirContents::Db);
        }
        if names.is_empty() && !fs.exists(dir) {
            return Ok(DirContents::Missing);
        }
        let mut entries = Vec::with_capacity(names.len());
        for name in names {
            let path = dir.join(&name);
            match fs.file_size(&path) {
                Ok(size) => {
                    // A WAL written through a mapping holds its reserved space from the start:
                    // zeros until a record is written. Such a WAL holds no record.
                    let wal = matches!(classify(&name), FileKind::Wal(_));
                    let unwritten = wal && only_zeros(fs, &path, size)?;
                    entries.push((name, if unwritten { 0 } else { size }))
                }
                // Gone since the listing (a creator's temporary name, renamed): not there.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
        let verdict = Self::of_entries(&entries);
        if fs.exists(&dir.join("CURRENT")) {
            return Ok(DirContents::Db);
        }
        Ok(verdict)
    }

    /// The verdict on a directory without `CURRENT` holding `entries` (name, size in bytes):
    /// a pure function of the listing.
    pub fn of_entries(entries: &[(String, u64)]) -> DirContents {
        if entries.is_empty() {
            return DirContents::Empty;
        }
        let mut foreign: Vec<String> = entries
            .iter()
            .filter(|(name, size)| !creation_leftover(name, *size))
            .map(|(name, _)| name.clone())
            .collect();
        if foreign.is_empty() {
            let mut names: Vec<String> = entries.iter().map(|(n, _)| n.clone()).collect();
            names.sort();
            return DirContents::Unfinished(names);
        }
        foreign.sort();
        foreign.truncate(SHOWN_NAMES);
        DirContents::Foreign(foreign)
    }

    /// Why `dir`, holding this, cannot be opened as an existing Db (`None` for a Db). The
    /// messages name the case: missing, a file, empty, a creation not finished, foreign files.
    pub fn why_not_a_db(&self, dir: &Path) -> Option<String> {
        let d = dir.display();
        Some(match self {
            DirContents::Db => return None,
            DirContents::Missing => format!("{d} does not exist"),
            DirContents::NotADirectory => format!("{d} is a file, not a database directory"),
            DirContents::Empty => {
                format!("{d} is an empty directory, not a Sluice database (it has no CURRENT file)")
            }
            DirContents::Unfinished(names) => format!(
                "{d} is a Sluice database whose creation has not finished (no CURRENT file yet; \
                 it holds only {}): another process is creating it, or its creation was \
                 interrupted; the next write to it (e.g. an import) creates it afresh",
                names.join(", ")
            ),
            DirContents::Foreign(names) => {
                format!(
                "{d} is a directory but not a Sluice database (it has no CURRENT file, and holds \
                 {}{})",
                names.join(", "),
                if names.len() >= SHOWN_NAMES { ", …" } else { "" }
            )
            }
        })
    }
}

/// Step 1 of `Db::open`: locks `dir`, creating the Db's directory if it is new, as numbered
/// steps (the module header says why each is safe):
/// 1. look without the lock; refuse what no open may touch (a file, foreign files, a Db with
///    `error_if_exists`, anything but a Db without `create_if_missing`) — nothing created yet;
/// 2. create the directory and take `LOCK` (a racing creator holds it: "locked by another
///    process");
/// 3. look again under the lock, refuse as in 1, and remove a creation's leftovers so that the
///    open creates the Db in an empty directory.
pub(super) fn lock_or_create(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
) -> Result<Box<dyn DirLock>> {
    refuse(&DirContents::inspect(fs, dir)?, dir, opts)?;
    fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let lock_path = dir.join("LOCK");
    let lock = fs.lock(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
    let now = DirContents::inspect(fs, dir)?;
    refuse(&now, dir, opts)?;
    if let DirContents::Unfinished(names) = now {
        remove_leftovers(fs, dir, &names)?;
    }
    Ok(lock)
}

/// Steps 1 and 3: the verdicts an open refuses.
fn refuse(contents: &DirContents, dir: &Path, opts: &Options) -> Result<()> {
    match contents {
        DirContents::Db if opts.error_if_exists => Err(Error::InvalidArgument(format!(
            "{} already exists (error_if_exists is true)",
            dir.display()
        ))),
        DirContents::Db => Ok(()),
        DirContents::NotADirectory | DirContents::Foreign(_) => {
            Err(Error::InvalidArgument(format!(
                "{}; a new database is only created in a missing or empty directory",
                contents.why_not_a_db(dir).unwrap_or_default()
            )))
        }
        DirContents::Missing | DirContents::Empty | DirContents::Unfinished(_)
            if !opts.create_if_missing =>
        {
            Err(Error::InvalidArgument(format!(
                "{} (create_if_missing is false)",
                contents.why_not_a_db(dir).unwrap_or_default()
            )))
        }
        _ => Ok(()),
    }
}

/// Step 3: removes an interrupted creation's files (never `LOCK`: invariant 4), durably.
fn remove_leftovers(fs: &dyn FileSystem, dir: &Path, names: &[String]) -> Result<()> {
    for name in names.iter().filter(|n| *n != "LOCK") {
        let path = dir.join(name);
        match fs.remove(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
    }
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{DirContents, SHOWN_NAMES};

    fn entries(list: &[(&str, u64)]) -> Vec<(String, u64)> {
        list.iter().map(|(n, s)| (n.to_string(), *s)).collect()
    }

    #[test]
    fn verdicts_of_listings() {
        assert_eq!(DirContents::of_entries(&[]), DirContents::Empty);
        let killed = entries(&[("000002.log", 0), ("LOCK", 0), ("MANIFEST-000003", 60)]);
        assert_eq!(
            DirContents::of_entries(&killed),
            DirContents::Unfinished(vec![
                "000002.log".into(),
                "LOCK".into(),
                "MANIFEST-000003".into()
            ])
        );
        // A WAL with records, a table or a user's file: never a creation's.
        for extra in [("000002.log", 7), ("000009.sst", 0), ("notes.txt", 0)] {
            let mut e = killed.clone();
            e.retain(|(n, _)| n != extra.0);
            e.push((extra.0.to_string(), extra.1));
            assert_eq!(
                DirContents::of_entries(&e),
                DirContents::Foreign(vec![extra.0.to_string()]),
                "{extra:?}"
            );
        }
        let many: Vec<(String, u64)> = (0..9).map(|i| (format!("f{i}"), 1)).collect();
        match DirContents::of_entries(&many) {
            DirContents::Foreign(names) => assert_eq!(names.len(), SHOWN_NAMES),
            other => panic!("{other:?}"),
        }
    }

    /// A first open killed after creating its WAL (written through a mapping: preallocated,
    /// all zeros) left a creation leftover; one record in it makes a Db that lost `CURRENT`.
    #[test]
    fn a_preallocated_wal_without_records_is_a_leftover() {
        use crate::fs::FileSystem as _;
        let fs = crate::fs::MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let align = crate::fs::MAPPED_LOG_ALIGN as usize;
        fs.write_raw(&dir.join("000002.log"), vec![0; 3 * align]);
        fs.write_raw(&dir.join("MANIFEST-000003"), vec![1; 60]);
        assert!(matches!(
            DirContents::inspect(&fs, dir).unwrap(),
            DirContents::Unfinished(_)
        ));
        let mut wal = vec![0; 3 * align];
        wal[2 * align + 5] = 1;
        fs.write_raw(&dir.join("000002.log"), wal);
        assert!(matches!(
            DirContents::inspect(&fs, dir).unwrap(),
            DirContents::Foreign(_)
        ));
        // Zeros of another length are no preallocated WAL either.
        fs.write_raw(&dir.join("000002.log"), vec![0; align + 1]);
        assert!(matches!(
            DirContents::inspect(&fs, dir).unwrap(),
            DirContents::Foreign(_)
        ));
    }

    #[test]
    fn messages_name_the_case() {
        let d = Path::new("/db");
        assert_eq!(DirContents::Db.why_not_a_db(d), None);
        let unfinished = DirContents::Unfinished(vec!["LOCK".into()]);
        assert!(unfinished
            .why_not_a_db(d)
            .unwrap()
            .contains("creation has not finished"));
        let foreign = DirContents::Foreign(vec!["notes.txt".into()]);
        let m = foreign.why_not_a_db(d).unwrap();
        assert!(
            m.contains("not a Sluice database") && m.contains("notes.txt"),
            "{m}"
        );
    }
}
