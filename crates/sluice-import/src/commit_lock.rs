//! The commit lock of a table (one per table of a Db, and one shared by every commit that
//! creates a table): what makes an import's commit check and its ingest one step
//! (`pipeline::commit`), and keeps every commit from landing between a row delete's read of
//! the row and its write (`query::delete`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};

use sluice::Db;

use crate::schema::TableDef;

/// The commit locks held in this process, by (Db directory, table name — or `None` for the
/// one every import creating a table takes, since new tables take the next free id). A Db is
/// open in one process only (its LOCK file).
type Held = BTreeMap<(PathBuf, Option<String>), Holders>;
static HELD: Mutex<Held> = Mutex::new(Held::new());

/// Who holds one commit lock, and who waits for it alone.
#[derive(Debug, Default)]
struct Holders {
    /// Signalled when this lock is released: its waiters wait on it (each with its own clone,
    /// under `HELD`'s mutex), so releasing one table's lock wakes only that table's waiters.
    /// An entry removed while idle takes its condvar along; a waiter still holding a clone
    /// was notified through it and looks the entry up again.
    freed: Arc<Condvar>,
    /// A commit holds it (alone).
    commit: bool,
    /// Row deletes holding it side by side.
    deletes: usize,
    /// Commits waiting: a delete waits behind them, so that a stream of deletes cannot keep
    /// a commit out.
    commits_waiting: usize,
}

/// A commit lock, held until dropped (see `pipeline::commit`, step 2): one per table
/// of a Db, and one for every commit that creates a table. A commit holds it alone; row
/// deletes of the table ([`CommitLock::for_delete`]) hold it side by side, so that no
/// commit lands between a delete's read of a row and its write.
#[derive(Debug)]
pub(crate) struct CommitLock {
    key: (PathBuf, Option<String>),
    delete: bool,
}

impl CommitLock {
    /// Waits until no other commit of `table` (or, if `created`, no other commit creating a
    /// table) into `db` holds the lock, and no row delete of `table` does, then holds it.
    pub(crate) fn take(db: &Db, table: &TableDef, created: bool) -> CommitLock {
        let key = (
            db.path().to_path_buf(),
            (!created).then(|| table.name.clone()),
        );
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.entry(key.clone()).or_default().commits_waiting += 1;
        loop {
            let h = held.entry(key.clone()).or_default();
            if !h.commit && h.deletes == 0 {
                h.commits_waiting -= 1;
                h.commit = true;
                return CommitLock { key, delete: false };
            }
            let freed = Arc::clone(&h.freed);
            held = freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// For a row delete of `table`, from its read of the row through its write: waits while
    /// a commit of the table holds the lock or waits for it. A commit can otherwise land
    /// between the two — a `last` import replacing the row — and the delete then removes the
    /// new row but leaves its secondary-index entries behind.
    pub(crate) fn for_delete(db: &Db, table: &TableDef) -> CommitLock {
        let key = (db.path().to_path_buf(), Some(table.name.clone()));
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let h = held.entry(key.clone()).or_default();
            if !h.commit && h.commits_waiting == 0 {
                h.deletes += 1;
                return CommitLock { key, delete: true };
            }
            let freed = Arc::clone(&h.freed);
            held = freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Commits waiting for the lock of `table` (tests: a thread is seen blocked on it).
    #[cfg(test)]
    pub(crate) fn commits_waiting(db: &Db, table: &TableDef) -> usize {
        let key = (db.path().to_path_buf(), Some(table.name.clone()));
        let held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.get(&key).map_or(0, |h| h.commits_waiting)
    }
}

impl Drop for CommitLock {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        let Some(h) = held.get_mut(&self.key) else {
            return;
        };
        if self.delete {
            h.deletes -= 1;
        } else {
            h.commit = false;
        }
        let freed = Arc::clone(&h.freed);
        if !h.commit && h.deletes == 0 && h.commits_waiting == 0 {
            held.remove(&self.key);
        }
        drop(held);
        freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);\
                          CREATE TABLE u (id BIGINT PRIMARY KEY, v TEXT);";

    /// A commit holds its table's lock alone; row deletes hold it side by side, never with a
    /// commit. Two tables' locks are taken at once: each has its own waiters and condvar, and
    /// an idle lock's entry (its condvar with it) is dropped and made again between takes.
    #[test]
    fn the_commit_lock_is_held_by_one_commit_at_a_time_or_by_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open_db(dir.path().join("db"), true).unwrap();
        let tables = crate::parse_schema(SCHEMA).unwrap();
        assert_eq!(tables.len(), 2);
        std::thread::scope(|s| {
            for t in &tables {
                let db = &db;
                s.spawn(move || one_table_commits_and_deletes(db, t));
            }
        });
        let held = HELD.lock().unwrap();
        assert!(
            !held.keys().any(|(p, _)| p == db.path()),
            "an idle lock left its entry"
        );
    }

    /// Two commit threads and two delete threads on `t`'s lock: at most one commit at a time,
    /// and never a commit beside a delete.
    fn one_table_commits_and_deletes(db: &Db, t: &TableDef) {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let (commits, deletes) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let most_commits = AtomicUsize::new(0);
        let overlaps = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for i in 0..4 {
                let (commits, deletes) = (&commits, &deletes);
                let (most_commits, overlaps) = (&most_commits, &overlaps);
                s.spawn(move || {
                    for _ in 0..300 {
                        if i < 2 {
                            let _l = CommitLock::take(db, t, false);
                            most_commits.fetch_max(commits.fetch_add(1, SeqCst) + 1, SeqCst);
                            if deletes.load(SeqCst) != 0 {
                                overlaps.fetch_add(1, SeqCst);
                            }
                            std::thread::yield_now();
                            commits.fetch_sub(1, SeqCst);
                        } else {
                            let _l = CommitLock::for_delete(db, t);
                            deletes.fetch_add(1, SeqCst);
                            if commits.load(SeqCst) != 0 {
                                overlaps.fetch_add(1, SeqCst);
                            }
                            std::thread::yield_now();
                            deletes.fetch_sub(1, SeqCst);
                        }
                    }
                });
            }
        });
        assert_eq!(most_commits.into_inner(), 1, "table {}", t.name);
        assert_eq!(overlaps.into_inner(), 0, "table {}", t.name);
    }
}
