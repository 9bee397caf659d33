//! What an import's commit checks, so that it never commits decisions made against a table
//! that changed under it.
//!
//! An import reads its table long before its ingest: a new table's id, the rows it already
//! holds (duplicates under `--on-duplicate`, unique indexes, row positions, the first row id).
//! Another import of the same table committing in between — or row writes — would make
//! those decisions stale, and the ingest would then store silently wrong data: two rows
//! under one primary key in a columnar table, a secondary-index entry left pointing at a
//! replaced row, a duplicate `--on-duplicate error` never reported, row ids given twice.
//!
//! 1. [`Baseline::take`], before the import reads the catalog: the Db's sequence number and,
//!    for a table that exists, a [`Snapshot`] of the Db (the view the import's decisions
//!    were made against, or an older one).
//! 2. [`CommitLock::take`] at step 6, held from the check through the ingest: every import's
//!    commit (and every distributed job's, see `distributed::build::commit`) takes it, so no
//!    other commit lands between a check and its ingest.
//! 3. [`Baseline::check`]: the catalog still matches (a table the import creates does not
//!    exist yet and its id is free; an existing table is still there under its id). Then, if
//!    the table's newest sequence number is not past the baseline's, nothing changed: every
//!    import writes the table's catalog entry again, at a fresh sequence number (its file
//!    overlaps the entry before it), and row writes take fresh ones. Otherwise every primary
//!    key the import's files hold is read at the snapshot and now; a difference refuses the
//!    commit, as does any change at all to a table with a unique index (whose entries are
//!    not keyed by the primary key). Imports of one table with disjoint keys still commit
//!    side by side.
//!
//! A refused commit changes nothing in the Db; the error says which key moved. Cost: the
//! snapshot pins the version and memtables it was taken on (files compacted away meanwhile
//! stay on disk until the import ends); the per-key reads (two point reads per primary key)
//! run only when the table changed during the import.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use sluice::{Db, InternalIterator, IterBounds, ReadOptions, Snapshot, Table, TableReadOptions};

use crate::catalog;
use crate::keycode::{prefix, prefix_successor};
use crate::schema::{TableDef, PRIMARY_INDEX_ID};
use crate::ImportError;

/// Db directories whose commit lock is held in this process (a Db is open in one process).
static HELD: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
static FREED: Condvar = Condvar::new();

/// The Db's commit lock, held until dropped (see the module documentation, step 2).
#[derive(Debug)]
pub(crate) struct CommitLock {
    dir: PathBuf,
}

impl CommitLock {
    /// Waits until no other commit into `db` holds the lock, then holds it.
    pub(crate) fn take(db: &Db) -> CommitLock {
        let dir = db.path().to_path_buf();
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        while held.contains(&dir) {
            held = FREED.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        held.insert(dir.clone());
        CommitLock { dir }
    }
}

impl Drop for CommitLock {
    fn drop(&mut self) {
        HELD.lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.dir);
        FREED.notify_all();
    }
}

/// The Db as an import found it (see the module documentation, step 1).
pub(crate) struct Baseline {
    seqno: u64,
    snapshot: Option<Snapshot>,
}

impl std::fmt::Debug for Baseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Baseline")
            .field("seqno", &self.seqno)
            .field("snapshot", &self.snapshot.is_some())
            .finish()
    }
}

impl Baseline {
    /// Taken before the import reads anything of the Db.
    pub(crate) fn take(db: &Db) -> Baseline {
        let snapshot = db.snapshot();
        Baseline {
            seqno: snapshot.seqno(),
            snapshot: Some(snapshot),
        }
    }

    /// Once the table is bound: a table the import creates needs no snapshot (nothing of it
    /// was read), so the pin goes at once.
    pub(crate) fn bound(&mut self, created: bool) {
        if created {
            self.snapshot = None;
        }
    }

    /// Step 3 of the module documentation, under the [`CommitLock`]: `Ok` if `table` (which
    /// the import creates if `created`) is as the import found it, as far as the keys of its
    /// primary-index files `files` go.
    pub(crate) fn check(
        &self,
        db: &Db,
        table: &TableDef,
        created: bool,
        files: &[&Path],
    ) -> Result<(), ImportError> {
        let refuse = |what: String| {
            Err(ImportError::InvalidArgument(format!(
                "table {} {what} while this import ran, so its files were not ingested and \
                 nothing was changed; run the import again",
                table.name
            )))
        };
        let now = catalog::load(db)?;
        match (created, catalog::find(&now, &table.name)) {
            (true, Some(_)) => return refuse("was created by another import".into()),
            (true, None) if now.iter().any(|o| o.id == table.id) => {
                return refuse(format!("had its id {} taken by another table", table.id))
            }
            (true, None) => return Ok(()),
            (false, None) => return refuse("was dropped".into()),
            (false, Some(t)) if t.id != table.id => {
                return refuse("was dropped and created again".into())
            }
            (false, Some(_)) => {}
        }
        if crate::pipeline::checkpoint::table_seqno(db, table)? <= self.seqno {
            return Ok(());
        }
        if table.indexes.iter().any(|i| i.unique) {
            return refuse(
                "was written to (rows imported, replaced or deleted) and it has a unique \
                 index, whose entries this import checked against the rows it found"
                    .into(),
            );
        }
        let Some(snapshot) = &self.snapshot else {
            return Err(ImportError::Internal(
                "an existing table's baseline has no snapshot".into(),
            ));
        };
        let lo = prefix(table.id, PRIMARY_INDEX_ID);
        let bounds = IterBounds {
            upper: prefix_successor(&lo),
            lower: Some(lo),
        };
        let then = ReadOptions {
            snapshot: Some(snapshot),
            ..Default::default()
        };
        for path in files {
            let t = Table::open_path(path, &TableReadOptions::new())?;
            let mut it = t.iter(bounds.clone());
            it.seek_to_first();
            while it.valid() {
                let key = sluice::key::user_key(it.key());
                if db.get_opt(key, &then)? != db.get(key)? {
                    return refuse(format!(
                        "had the row under primary key {} written (imported, replaced or \
                         deleted) by someone else",
                        table.show_pk(key)
                    ));
                }
                it.next();
            }
            it.status()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Import, ImportOptions, Layout, OnDuplicate, ProgressMode, TableReader};

    const SCHEMA: &str = "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);\n\
                          CREATE INDEX by_v ON t (v);";

    fn opts(layout: Layout, on_duplicate: OnDuplicate) -> ImportOptions {
        ImportOptions {
            progress: ProgressMode::Off,
            threads: 2,
            memory: 16 << 20,
            layout: Some(layout),
            on_duplicate,
            ..ImportOptions::default()
        }
    }

    fn csv(dir: &Path, name: &str, ids: std::ops::Range<u64>, v: &str) -> PathBuf {
        let p = dir.join(name);
        let body: String = ids.map(|i| format!("{i},{v}{i}\n")).collect();
        std::fs::write(&p, body).unwrap();
        p
    }

    fn import(layout: Layout, on_dup: OnDuplicate, file: PathBuf) -> Import {
        Import::new(SCHEMA, vec![file], opts(layout, on_dup)).unwrap()
    }

    /// Every row by primary key, and every row through the secondary index.
    fn rows(db: &Db) -> (Vec<String>, Vec<String>) {
        let r = TableReader::open(db, Some("t")).unwrap();
        let mut by_pk = Vec::new();
        r.scan(None, None, None, None, |row| {
            by_pk.push(r.format_row(row, crate::OutputFormat::Csv));
            Ok(())
        })
        .unwrap();
        let mut by_v = Vec::new();
        r.scan(Some("by_v"), None, None, None, |row| {
            by_v.push(r.format_row(row, crate::OutputFormat::Csv));
            Ok(())
        })
        .unwrap();
        by_v.sort();
        let mut sorted = by_pk.clone();
        sorted.sort();
        assert_eq!(sorted, by_v, "the index and the rows disagree");
        (by_pk, by_v)
    }

    fn setup(layout: Layout) -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open_db(dir.path().join("db"), true).unwrap();
        let f = csv(dir.path(), "seed.csv", 0..10, "s");
        import(layout, OnDuplicate::Error, f).run(&db).unwrap();
        (dir, db)
    }

    /// Import A reads the table, import B commits rows A also holds, then A's commit is
    /// refused and the Db holds B's rows alone (before the check, A's ingest went in: under
    /// `last` its rows replaced B's without B's index entries going; under `error` the
    /// duplicates were never reported).
    fn overlapping_import_is_refused(layout: Layout, on_dup: OnDuplicate) {
        let (dir, db) = setup(layout);
        let a = import(layout, on_dup, csv(dir.path(), "a.csv", 100..200, "a"));
        let b = import(layout, on_dup, csv(dir.path(), "b.csv", 150..250, "b"));
        let staged = a.stage(&db).unwrap();
        b.run(&db).unwrap();
        let before = rows(&db);
        let err = a.install(&db, staged).unwrap_err().to_string();
        assert!(
            err.contains("table t had the row under primary key (150)")
                && err.contains("nothing was changed"),
            "{layout:?} {on_dup:?}: {err}"
        );
        assert_eq!(rows(&db), before, "{layout:?} {on_dup:?}");
        assert_eq!(before.0.len(), 110);
        // Run again, the import sees B's rows.
        let again = import(layout, on_dup, csv(dir.path(), "a.csv", 100..200, "a")).run(&db);
        match on_dup {
            OnDuplicate::Error => assert!(again.unwrap_err().to_string().contains("150")),
            _ => {
                again.unwrap();
                assert_eq!(rows(&db).0.len(), 160);
            }
        }
    }

    #[test]
    fn an_import_overlapping_one_committed_meanwhile_is_refused() {
        for layout in [Layout::Row, Layout::Columnar] {
            for on_dup in [OnDuplicate::Error, OnDuplicate::First, OnDuplicate::Last] {
                overlapping_import_is_refused(layout, on_dup);
            }
        }
    }

    #[test]
    fn imports_with_disjoint_keys_commit_side_by_side() {
        for layout in [Layout::Row, Layout::Columnar] {
            let (dir, db) = setup(layout);
            // A's keys are the even ones from 100, B's the odd ones from 101: interleaved,
            // none in common. And a row deleted meanwhile, not one of A's.
            let write = |name: &str, first: u64| {
                let body: String = (0..100).map(|i| format!("{},x\n", first + 2 * i)).collect();
                std::fs::write(dir.path().join(name), body).unwrap();
                import(layout, OnDuplicate::Error, dir.path().join(name))
            };
            let (a, b) = (write("a.csv", 100), write("b.csv", 101));
            let staged = a.stage(&db).unwrap();
            b.run(&db).unwrap();
            TableReader::open(&db, Some("t"))
                .unwrap()
                .delete(&["3".to_string()], false)
                .unwrap();
            a.install(&db, staged).unwrap();
            assert_eq!(rows(&db).0.len(), 9 + 100 + 100, "{layout:?}");
        }
    }

    #[test]
    fn a_row_deleted_meanwhile_refuses_an_import_holding_it() {
        let (dir, db) = setup(Layout::Row);
        let a = import(
            Layout::Row,
            OnDuplicate::Last,
            csv(dir.path(), "a.csv", 5..20, "a"),
        );
        let staged = a.stage(&db).unwrap();
        TableReader::open(&db, Some("t"))
            .unwrap()
            .delete(&["7".to_string()], false)
            .unwrap();
        let before = rows(&db);
        let err = a.install(&db, staged).unwrap_err().to_string();
        assert!(err.contains("(7)"), "{err}");
        assert_eq!(rows(&db), before);
    }

    #[test]
    fn two_imports_creating_one_table_commit_once() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open_db(dir.path().join("db"), true).unwrap();
        let a = import(
            Layout::Row,
            OnDuplicate::Error,
            csv(dir.path(), "a.csv", 0..50, "a"),
        );
        let b = import(
            Layout::Row,
            OnDuplicate::Error,
            csv(dir.path(), "b.csv", 25..75, "b"),
        );
        let staged = a.stage(&db).unwrap();
        b.run(&db).unwrap();
        let err = a.install(&db, staged).unwrap_err().to_string();
        assert!(err.contains("was created by another import"), "{err}");
        let (by_pk, _) = rows(&db);
        assert_eq!(by_pk.len(), 50);
        assert!(by_pk.iter().all(|r| r.contains(",b")), "{by_pk:?}");
    }

    #[test]
    fn the_commit_lock_is_held_by_one_commit_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open_db(dir.path().join("db"), true).unwrap();
        let inside = std::sync::atomic::AtomicUsize::new(0);
        let most = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..200 {
                        let _l = CommitLock::take(&db);
                        let n = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        most.fetch_max(n, std::sync::atomic::Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(most.into_inner(), 1);
    }
}
