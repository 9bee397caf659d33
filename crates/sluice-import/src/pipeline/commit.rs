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
//! 1. [`Baseline::take`], once the table is bound and (columnar) its latch held, before the
//!    import reads any of its rows: a [`Snapshot`] of the Db (none for a table the import
//!    creates), taken under the table's commit lock so that no commit of the table is half
//!    done at that moment.
//! 2. [`CommitLock::take`] at step 6, held from the check through the ingest: every import's
//!    commit (and every distributed job's, see `distributed::build::commit`) takes its table's
//!    lock — or, creating a table, the one lock all creating commits share (new tables take
//!    the next free id) — so no other commit of the table lands between a check and its
//!    ingest. Commits of other tables do not wait.
//! 3. [`Baseline::check`]: the catalog still matches (a table the import creates does not
//!    exist yet and its id is free; an existing table is still there under its id). Then, if
//!    the table's newest sequence number is not past the snapshot's, nothing changed: every
//!    import writes the table's catalog entry again, at a fresh sequence number (its file
//!    overlaps the entry before it), and row writes take fresh ones. Otherwise each primary
//!    key the import's files hold must have nothing newer than the snapshot and read the same
//!    at the snapshot and now (a file ingested at sequence number 0 is absent from the
//!    snapshot's version); else the commit is refused. Any change at all refuses a table
//!    with a unique index (whose entries are not keyed by the primary key). Imports of one
//!    table with disjoint keys still commit side by side. The per-key pass runs mostly before
//!    the lock ([`Baseline::precheck`], against a snapshot taken then). Under the lock, if
//!    the table changed since that snapshot (row deletes of the table wait for a commit
//!    holding the lock, and under a steady stream of them it does change), the engine lists
//!    the primary keys written since ([`Db::keys_written_since`]: the memtables and the files
//!    written since) and only those are looked up in the import's files. The whole pass runs
//!    again only if an import committed meanwhile (conservative: files at sequence number 0
//!    are in no list), a range deletion reached into the primary index, or the list would read
//!    more entries than the import has keys (at least 4096; see `written_since`).
//!
//! A refused commit changes nothing in the Db; the error names the key that moved. Cost: the
//! snapshot holds the Db as it was for the import's length — the version and memtables it
//! was taken on (files compacted away meanwhile stay on disk until the import ends), and
//! compactions anywhere in the Db keep the versions it can see; the per-key reads (a newest
//! sequence number and two point reads per primary key) run only when the table changed
//! during the import, each found as a point read finds its key (Bloom filters, one file a
//! level), and again under the lock only when it changed during that pass.
//!
//! The baseline is taken on the import's own thread, which may run at idle priority
//! (`--idle`): it holds the table's commit lock for one `Db::snapshot` call.

use std::path::Path;
use std::sync::Arc;

use sluice::{Db, InternalIterator, IterBounds, ReadOptions, Snapshot, Table, TableReadOptions};

use crate::catalog;
pub(crate) use crate::commit_lock::CommitLock;
use crate::keycode::{prefix, prefix_successor};
use crate::schema::{TableDef, PRIMARY_INDEX_ID};
use crate::ImportError;

/// How the catalog `now` differs for `table` (which the import or job creates if `created`)
/// from what its plan found, worded to follow the table's name; `None` if it does not: a
/// table to create is still absent and its id free, an existing one still there under its id.
/// Shared by every commit's check (`Baseline::check`, the distributed job's).
pub(crate) fn catalog_change(now: &[TableDef], table: &TableDef, created: bool) -> Option<String> {
    match (created, catalog::find(now, &table.name)) {
        (true, Some(_)) => Some("was created by another import".into()),
        (true, None) => now
            .iter()
            .any(|o| o.id == table.id)
            .then(|| format!("had its id {} taken by another table", table.id)),
        (false, None) => Some("was dropped".into()),
        (false, Some(t)) => (t.id != table.id).then(|| "was dropped and created again".into()),
    }
}

/// The Db as an import found it (see the module documentation, step 1).
#[derive(Debug)]
pub(crate) struct Baseline {
    /// `None` for a table the import creates: nothing of it was read.
    snapshot: Option<Snapshot>,
}

impl Baseline {
    /// Taken once the table is bound (and, for a columnar table, its latch held), before the
    /// import reads any of its rows, under the table's commit lock: no commit of the table
    /// is then half done (an ingest takes its sequence number before it publishes it, so a
    /// snapshot taken during one could have a larger number and still not see its files).
    ///
    /// The catalog is checked here as at the commit: a table another import created since
    /// this import bound it is refused now, before any of the work, not after.
    pub(crate) fn take(db: &Db, table: &TableDef, created: bool) -> Result<Baseline, ImportError> {
        let baseline = match created {
            true => Baseline { snapshot: None },
            false => {
                let _lock = CommitLock::take(db, table, false);
                Baseline {
                    snapshot: Some(db.snapshot()),
                }
            }
        };
        match catalog_change(&catalog::load(db)?, table, created) {
            Some(what) => refused(
                table,
                &what,
                "after this import read the catalog",
                "nothing",
            ),
            None => Ok(baseline),
        }
    }

    /// Step 3's per-key work, before the [`CommitLock`]: if `table` changed since the
    /// baseline, its keys in `files` (the import's primary-index files) are checked against a
    /// snapshot taken now, so that under the lock [`Baseline::check`] reads only what changed
    /// since (a delete of the table waits for a commit through that read). Returns that
    /// snapshot; `None` if the table did not change (or the import creates it).
    pub(crate) fn precheck(
        &self,
        db: &Db,
        table: &TableDef,
        created: bool,
        files: &[&Path],
    ) -> Result<Option<Snapshot>, ImportError> {
        let Some(snapshot) = self.snapshot.as_ref().filter(|_| !created) else {
            return Ok(None);
        };
        if crate::pipeline::checkpoint::table_seqno(db, table)? <= snapshot.seqno() {
            return Ok(None);
        }
        refuse_unique(table)?;
        // Under the lock for a moment, as the baseline (no commit half done).
        let now = {
            let _lock = CommitLock::take(db, table, false);
            db.snapshot()
        };
        moved_key(db, table, files, snapshot.seqno(), snapshot, Some(&now))?;
        Ok(Some(now))
    }

    /// Step 3 of the module documentation, under the [`CommitLock`]: `Ok` if `table` (which
    /// the import creates if `created`) is as the import found it, as far as the keys of its
    /// primary-index files `files` go. `since`: [`Baseline::precheck`]'s snapshot, up to
    /// which those keys were checked.
    pub(crate) fn check(
        &self,
        db: &Db,
        table: &TableDef,
        created: bool,
        files: &[&Path],
        since: Option<&Snapshot>,
    ) -> Result<(), ImportError> {
        if let Some(what) = catalog_change(&catalog::load(db)?, table, created) {
            return refuse(table, what);
        }
        if created {
            return Ok(());
        }
        let Some(snapshot) = &self.snapshot else {
            return Err(ImportError::Internal(
                "an existing table's baseline has no snapshot".into(),
            ));
        };
        let checked = since.unwrap_or(snapshot);
        if crate::pipeline::checkpoint::table_seqno(db, table)? <= checked.seqno() {
            return Ok(());
        }
        refuse_unique(table)?;
        match written_since(db, table, files, checked)? {
            Some((keys, opened)) => refuse_any(table, &opened, &keys),
            None => moved_key(db, table, files, snapshot.seqno(), checked, None),
        }
    }
}

/// The table's primary keys written after `then` (held, so no deletion since is compacted
/// away), if the engine lists them: no import committed since (conservative: files ingested
/// at sequence number 0 are in no list, see [`moved_key`]), no range deletion reached into
/// the primary index, and no more entries to read than the import has keys (at least 4096; a
/// scan's entry costs less than the point read a key of [`moved_key`]'s pass). The entries
/// read are the memtables' and those of the files whose largest sequence number is past
/// `then`'s: the recent writes, unless a compaction since rewrote files of the table, whose
/// entries are then read too, up to that budget, before the pass runs after all. With the
/// keys, `files` opened. `None`: read every key.
fn written_since(
    db: &Db,
    table: &TableDef,
    files: &[&Path],
    then: &Snapshot,
) -> Result<Option<Listed>, ImportError> {
    if db.newest_seqno(&catalog::table_key(&table.name))? > then.seqno() {
        return Ok(None);
    }
    // Opened once: their entry counts bound the listing, and `refuse_any` probes them.
    let opened = files
        .iter()
        .map(|path| Table::open_path(path, &TableReadOptions::new()))
        .collect::<Result<Vec<_>, _>>()?;
    let keys: u64 = opened.iter().map(|t| t.properties().num_entries).sum();
    let budget = usize::try_from(keys).unwrap_or(usize::MAX).max(4096);
    let lo = prefix(table.id, PRIMARY_INDEX_ID);
    let Some(hi) = prefix_successor(&lo) else {
        return Ok(None);
    };
    Ok(db
        .keys_written_since(&lo, &hi, then.seqno(), budget)?
        .map(|keys| (keys, opened)))
}

/// What [`written_since`] lists: the keys written since, and the import's files it opened.
type Listed = (Vec<Vec<u8>>, Vec<Arc<Table>>);

/// Refuses if one of `keys` (primary keys written by someone else since the earlier pass) is
/// a primary key in `files` (the import's primary-index files).
fn refuse_any(table: &TableDef, files: &[Arc<Table>], keys: &[Vec<u8>]) -> Result<(), ImportError> {
    for t in files {
        for key in keys {
            if t.get(key, sluice::key::MAX_SEQNO)?.is_some() {
                return refuse(table, moved(table, key));
            }
        }
    }
    Ok(())
}

/// The refusal's words for a row whose primary key `key` someone else wrote.
fn moved(table: &TableDef, key: &[u8]) -> String {
    format!(
        "had the row under primary key {} written (imported, replaced or deleted) by someone \
         else",
        table.show_pk(key)
    )
}

/// The commit's refusal: `table` `what` while the import ran.
fn refuse(table: &TableDef, what: String) -> Result<(), ImportError> {
    refused(
        table,
        &what,
        "while this import ran",
        "its files were not ingested and nothing",
    )
}

/// The refusal of an import whose table changed `when`, having left `untouched` as it was.
fn refused<T>(table: &TableDef, what: &str, when: &str, untouched: &str) -> Result<T, ImportError> {
    Err(ImportError::InvalidArgument(format!(
        "table {} {what} {when}, so {untouched} was changed; run the import again",
        table.name
    )))
}

/// Any change at all refuses a table with a unique index (its entries are not keyed by the
/// primary key).
fn refuse_unique(table: &TableDef) -> Result<(), ImportError> {
    if table.indexes.iter().any(|i| i.unique) {
        return refuse(
            table,
            "was written to (rows imported, replaced or deleted) and it has a unique index, \
             whose entries this import checked against the rows it found"
                .into(),
        );
    }
    Ok(())
}

/// Refuses if a primary key in `files` was written after sequence number `seqno` (the
/// baseline's), or reads otherwise at `then` than at `now` (`None`: the Db as it is).
///
/// The second test is for files ingested at sequence number 0, which only imports (and
/// distributed jobs) make, and each of them writes the table's catalog entry again at a fresh
/// sequence number: when that entry is no newer than `then`, no import committed since, and
/// the first test (one probe a key, not three) is all it takes.
fn moved_key(
    db: &Db,
    table: &TableDef,
    files: &[&Path],
    seqno: u64,
    then: &Snapshot,
    now: Option<&Snapshot>,
) -> Result<(), ImportError> {
    #[cfg(test)]
    tests::FULL_PASSES.with(|n| n.set(n.get() + 1));
    // Read now, so also past `now`: a commit since then only makes the pass the longer one.
    let imported = db.newest_seqno(&catalog::table_key(&table.name))? > then.seqno();
    let lo = prefix(table.id, PRIMARY_INDEX_ID);
    let bounds = IterBounds {
        upper: prefix_successor(&lo),
        lower: Some(lo),
    };
    let at = |snapshot| ReadOptions {
        snapshot,
        ..Default::default()
    };
    let (then, now) = (at(Some(then)), at(now));
    for path in files {
        let t = Table::open_path(path, &TableReadOptions::new())?;
        let mut it = t.iter(bounds.clone());
        it.seek_to_first();
        while it.valid() {
            let key = sluice::key::user_key(it.key());
            // Written since (a sequence number past the baseline's: also a row changed and
            // changed back), or there now and not then (a file ingested at sequence number
            // 0, which overlapped nothing — the earlier snapshot's version lacks it).
            if db.newest_seqno(key)? > seqno
                || (imported && db.get_opt(key, &then)? != db.get_opt(key, &now)?)
            {
                return refuse(table, moved(table, key));
            }
            it.next();
        }
        it.status()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Import, ImportOptions, Layout, OnDuplicate, ProgressMode, TableReader};
    use std::path::PathBuf;

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

    /// A row table seeded with rows 0..10, and import A (`last`, rows 5..20) staged on it.
    fn staged_last_5_to_20() -> (tempfile::TempDir, Db, Import, crate::pipeline::Staged) {
        let (dir, db) = setup(Layout::Row);
        let a = import(
            Layout::Row,
            OnDuplicate::Last,
            csv(dir.path(), "a.csv", 5..20, "a"),
        );
        let staged = a.stage(&db).unwrap();
        (dir, db, a, staged)
    }

    /// Import A (`last`, rows 5..20) found row 7 stored; it is deleted before A commits —
    /// and, if `stored_again`, imported again with the value it had, so that it reads the
    /// same at the baseline and at the commit. A must not commit over it either way.
    fn row_7_moved_refuses(stored_again: bool) {
        let (dir, db, a, staged) = staged_last_5_to_20();
        TableReader::open(&db, Some("t"))
            .unwrap()
            .delete(&["7".to_string()], false)
            .unwrap();
        if stored_again {
            let again = csv(dir.path(), "again.csv", 7..8, "s");
            import(Layout::Row, OnDuplicate::Error, again)
                .run(&db)
                .unwrap();
        }
        let before = rows(&db);
        assert_eq!(before.0.contains(&"7,s7".to_string()), stored_again);
        let err = a.install(&db, staged).unwrap_err().to_string();
        assert!(err.contains("(7)"), "{err}");
        assert_eq!(rows(&db), before);
    }

    #[test]
    fn a_row_deleted_meanwhile_refuses_an_import_holding_it() {
        row_7_moved_refuses(false);
    }

    #[test]
    fn a_row_deleted_and_stored_again_meanwhile_refuses_an_import_holding_it() {
        row_7_moved_refuses(true);
    }

    /// Import A (`last`, rows 5..20) found row 7 stored and commits while a delete of row 7
    /// has read the row and not yet written: the commit waits for the delete and is then
    /// refused (row 7 moved after A read it), and the index and the rows agree. Before the
    /// delete held the commit lock, A committed in between and the delete, writing what it
    /// had read, left A's index entry for row 7 pointing at no row.
    #[test]
    fn a_commit_waits_for_a_row_delete_between_its_read_and_write() {
        use crate::query::BETWEEN;
        for layout in [Layout::Row, Layout::Columnar] {
            let (dir, db) = setup(layout);
            let db = std::sync::Arc::new(db);
            let a = import(
                layout,
                OnDuplicate::Last,
                csv(dir.path(), "a.csv", 5..20, "a"),
            );
            let staged = a.stage(&db).unwrap();
            let t = crate::parse_schema(SCHEMA).unwrap().remove(0);
            let (tx, rx) = std::sync::mpsc::channel();
            let db2 = db.clone();
            let hook = move || {
                let db3 = db2.clone();
                let commit = std::thread::spawn(move || {
                    a.install(&db3, staged)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                });
                // Until A committed, or is seen waiting for the lock.
                while !commit.is_finished() && CommitLock::commits_waiting(&db2, &t) == 0 {
                    std::thread::yield_now();
                }
                tx.send(commit).unwrap();
            };
            *BETWEEN.lock().unwrap() = Some((db.path().to_path_buf(), Box::new(hook)));
            let deleted = TableReader::open(&db, Some("t"))
                .unwrap()
                .delete(&["7".to_string()], false)
                .unwrap();
            assert!(deleted);
            let committed = rx.recv().unwrap().join().unwrap();
            let err = committed.expect_err("A committed between the delete's read and write");
            assert!(err.contains("(7)"), "{layout:?}: {err}");
            let (by_pk, _) = rows(&db);
            assert_eq!(by_pk.len(), 9, "{layout:?}: {by_pk:?}");
            assert!(!by_pk.iter().any(|r| r.starts_with("7,")), "{by_pk:?}");
        }
    }

    thread_local! {
        /// How many times [`moved_key`]'s pass over every key of an import ran on this thread.
        pub(super) static FULL_PASSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// What happens to the table between the precheck and the check under the lock.
    #[derive(Debug, Clone, Copy)]
    enum Since {
        Nothing,
        /// A row delete.
        Delete(&'static str),
        /// A row delete, then a flush and a compaction of the whole Db.
        DeleteCompacted(&'static str),
        /// A range deletion of the primary key `id`.
        RangeDelete(i64),
        /// Another import of rows 100..110 commits.
        Import,
    }

    /// The key pass runs before the lock against a snapshot of then (a delete of row 3,
    /// not the import's, changed the table); under the lock only the keys written since are
    /// read again, listed by the engine (from the memtable, or from the files a flush and a
    /// compaction made of them), not the import's keys one by one: a delete of row 7 (the
    /// import's) after that snapshot still refuses the commit; one of row 4 (not the
    /// import's), or none, lets it through. A range deletion since (which the engine does not
    /// list by key), or another import's commit (whose files the list would not show if they
    /// went in at sequence number 0), takes the whole pass again, which refuses only if a key
    /// of the import's moved.
    #[test]
    fn a_row_moved_after_the_precheck_still_refuses_the_commit() {
        // (what happens since, refused, whole pass again)
        let cases = [
            (Since::Delete("7"), true, false),
            (Since::DeleteCompacted("7"), true, false),
            (Since::Delete("4"), false, false),
            (Since::DeleteCompacted("4"), false, false),
            (Since::Nothing, false, false),
            (Since::RangeDelete(7), true, true),
            (Since::RangeDelete(30), false, true),
            (Since::Import, false, true),
        ];
        for (since_then, refused, again) in cases {
            let (dir, db, _a, staged) = staged_last_5_to_20();
            let t = TableReader::open(&db, Some("t")).unwrap();
            assert!(t.delete(&["3".to_string()], false).unwrap());
            let files = crate::pipeline::ingest::primary_files(&staged.indexes);
            let plan = &staged.plan;
            let since = (plan.baseline)
                .precheck(&db, &plan.table, false, &files)
                .unwrap();
            assert!(
                since.is_some(),
                "the table changed: a snapshot to check from"
            );
            match since_then {
                Since::Nothing => {}
                Since::Delete(pk) => assert!(t.delete(&[pk.to_string()], false).unwrap()),
                Since::DeleteCompacted(pk) => {
                    assert!(t.delete(&[pk.to_string()], false).unwrap());
                    db.flush().unwrap();
                    db.compact_range(None, None).unwrap();
                }
                Since::RangeDelete(id) => {
                    let pk = |id: i64| {
                        let mut k = prefix(plan.table.id, PRIMARY_INDEX_ID);
                        crate::keycode::encode_value(&mut k, &crate::types::Value::Int(id));
                        k
                    };
                    db.delete_range(&pk(id), &pk(id + 1)).unwrap();
                }
                Since::Import => {
                    let b = csv(dir.path(), "b.csv", 100..110, "b");
                    import(Layout::Row, OnDuplicate::Error, b).run(&db).unwrap();
                }
            }
            let passes = FULL_PASSES.with(|n| n.get());
            let checked = (plan.baseline).check(&db, &plan.table, false, &files, since.as_ref());
            let case = format!("{since_then:?}: {checked:?}");
            assert_eq!(
                FULL_PASSES.with(|n| n.get()),
                passes + again as usize,
                "{case}"
            );
            match refused {
                true => assert!(checked.unwrap_err().to_string().contains("(7)"), "{case}"),
                false => checked.unwrap(),
            }
        }
    }

    /// A new Db and two imports that create the same table, rows 0..50 and 25..75.
    fn two_imports_creating_one_table() -> (tempfile::TempDir, Db, Import, Import) {
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
        (dir, db, a, b)
    }

    #[test]
    fn two_imports_creating_one_table_commit_once() {
        let (_dir, db, a, b) = two_imports_creating_one_table();
        let staged = a.stage(&db).unwrap();
        b.run(&db).unwrap();
        let err = a.install(&db, staged).unwrap_err().to_string();
        assert!(err.contains("was created by another import"), "{err}");
        let (by_pk, _) = rows(&db);
        assert_eq!(by_pk.len(), 50);
        assert!(by_pk.iter().all(|r| r.contains(",b")), "{by_pk:?}");
    }

    #[test]
    fn a_table_created_between_bind_and_baseline_is_refused_before_the_work() {
        let (_dir, db, a, b) = two_imports_creating_one_table();
        let (table, created) = a.bind_table(&db).unwrap();
        assert!(created);
        b.run(&db).unwrap();
        let Err(err) = a.prepare(&db, table, created) else {
            panic!("an import planned over a table created after its bind");
        };
        let err = err.to_string();
        assert!(
            err.contains("was created by another import") && err.contains("nothing was changed"),
            "{err}"
        );
        let (by_pk, _) = rows(&db);
        assert_eq!(by_pk.len(), 50);
    }
}
