//! Creating a Db is atomic (issue 20, item A): a first open killed at any step, or cut by a
//! power loss, leaves a directory the next open creates afresh; a directory holding anything a
//! creation never writes is refused and left as it was; of two creators racing, one wins and
//! the other hears "locked by another process".

use std::path::Path;
use std::sync::{Arc, Barrier};

use sluice::fs::{FaultConfig, FileSystem, MemFs, RealFs};
use sluice::{Db, DirContents, Error, Options};

fn mem_opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn sorted_names(fs: &dyn FileSystem, dir: &Path) -> Vec<String> {
    let mut names = fs.list(dir).unwrap();
    names.sort();
    names
}

/// Opens (creating) the Db in `/db` of `fs`, writes a key, and checks it after a reopen that
/// may not create. Returns the names the creating open left, taken while it was open.
fn create_write_reopen(fs: &MemFs, what: &str) -> Vec<String> {
    let db = Db::open("/db", mem_opts(fs)).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    let names = sorted_names(fs, Path::new("/db"));
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let existing = Options {
        create_if_missing: false,
        ..mem_opts(fs)
    };
    let db = Db::open("/db", existing).unwrap_or_else(|e| panic!("{what}: second open: {e}"));
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]), "{what}");
    db.close().unwrap();
    names
}

#[test]
fn a_creation_killed_or_cut_at_every_step_reopens_as_a_new_db() {
    let pristine = {
        let fs = MemFs::new();
        create_write_reopen(&fs, "pristine")
    };
    let mut unfinished_seen = 0;
    let mut steps = 0;
    for n in 0.. {
        assert!(n < 1000, "the first open never completes");
        let fs = MemFs::new();
        fs.set_faults(FaultConfig {
            fail_after_ops: Some(n),
            ..FaultConfig::default()
        });
        let first = Db::open("/db", mem_opts(&fs));
        fs.set_faults(FaultConfig::default());
        if let Ok(db) = first {
            db.close().unwrap();
            steps = n;
            break;
        }
        // Killed there (every name as the process left it), or a power loss there (names as
        // of the last directory sync; unsynced bytes dropped or torn).
        let states = [
            ("killed", fs.clone()),
            ("power loss", fs.crashed_copy(None)),
            ("power loss, torn", fs.crashed_copy(Some(n + 1))),
        ];
        for (how, fs) in states {
            let what = format!("{how} after {n} steps");
            let had_current = fs.exists(Path::new("/db/CURRENT"));
            if let Err(e) = Db::open_read_only("/db", mem_opts(&fs)) {
                let m = e.to_string();
                assert!(!e.is_corruption(), "{what}: {m}");
                assert!(
                    m.contains("creation has not finished")
                        || m.contains("does not exist")
                        || m.contains("empty directory"),
                    "{what}: {m}"
                );
                unfinished_seen += usize::from(m.contains("creation has not finished"));
            }
            let names = create_write_reopen(&fs, &what);
            if !had_current {
                assert_eq!(names, pristine, "{what}: leftovers were not removed");
            }
        }
    }
    assert!(steps >= 8, "creation took only {steps} steps");
    assert!(unfinished_seen > 0, "no state left an unfinished creation");
}

#[test]
fn an_unfinished_creation_is_named_and_finished_by_the_next_creating_open() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    std::fs::create_dir(&db_dir).unwrap();
    // What the kill -9 left; the MANIFEST's bytes do not matter (a torn one is
    // garbage): nothing names it.
    std::fs::write(db_dir.join("000002.log"), b"").unwrap();
    std::fs::write(db_dir.join("LOCK"), b"").unwrap();
    std::fs::write(db_dir.join("MANIFEST-000003"), b"\x01garbage").unwrap();
    std::fs::write(db_dir.join("CURRENT.000003.tmp"), b"MANIFEST-0").unwrap();
    let before = sorted_names(&RealFs, &db_dir);
    assert!(matches!(
        DirContents::inspect(&RealFs, &db_dir).unwrap(),
        DirContents::Unfinished(_)
    ));
    let e = Db::open_read_only(&db_dir, Options::default()).unwrap_err();
    assert!(e.to_string().contains("creation has not finished"), "{e}");
    let no_create = Options {
        create_if_missing: false,
        ..Options::default()
    };
    let e = Db::open(&db_dir, no_create).unwrap_err();
    assert!(
        e.to_string().contains("creation has not finished")
            && e.to_string().contains("create_if_missing is false"),
        "{e}"
    );
    assert_eq!(
        sorted_names(&RealFs, &db_dir),
        before,
        "a refused open changed it"
    );
    // error_if_exists: a creation that never finished is no Db.
    let create_new = Options {
        error_if_exists: true,
        ..Options::default()
    };
    let db = Db::open(&db_dir, create_new).unwrap();
    db.put(b"a", b"1").unwrap();
    db.close().unwrap();
    let db = Db::open_read_only(&db_dir, Options::default()).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert!(!db_dir.join("CURRENT.000003.tmp").exists());
}

#[test]
fn a_directory_holding_anything_else_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    // Each beside the leftovers of a creation: a user's file, a table, a WAL with records (a
    // Db that lost its CURRENT), a folder, a temporary name that is not ours.
    let cases: [(&str, &[u8]); 5] = [
        ("notes.txt", b"mine"),
        ("000005.sst", b""),
        ("000002.log", b"records"),
        ("photos", b""),
        ("draft.tmp", b""),
    ];
    for (i, (name, bytes)) in cases.into_iter().enumerate() {
        let db_dir = dir.path().join(format!("case{i}"));
        std::fs::create_dir(&db_dir).unwrap();
        std::fs::write(db_dir.join("MANIFEST-000003"), b"x").unwrap();
        if name == "photos" {
            std::fs::create_dir(db_dir.join(name)).unwrap();
            std::fs::write(db_dir.join(name).join("a.jpg"), b"jpg").unwrap();
        } else {
            std::fs::write(db_dir.join(name), bytes).unwrap();
        }
        let before = sorted_names(&RealFs, &db_dir);
        let e = Db::open(&db_dir, Options::default()).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{name}: {e}");
        let m = e.to_string();
        assert!(
            m.contains("not a Sluice database") && m.contains(name),
            "{name}: {m}"
        );
        let e = Db::open_read_only(&db_dir, Options::default()).unwrap_err();
        assert!(
            e.to_string().contains("not a Sluice database"),
            "{name}: {e}"
        );
        assert_eq!(
            sorted_names(&RealFs, &db_dir),
            before,
            "{name}: a refused open changed the directory"
        );
        assert_eq!(std::fs::read(db_dir.join("MANIFEST-000003")).unwrap(), b"x");
    }
    // A file where the directory should be.
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let e = Db::open(&file, Options::default()).unwrap_err();
    assert!(e.to_string().contains("is a file"), "{e}");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

#[test]
fn of_two_racing_creators_one_wins_and_the_other_hears_locked() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..16 {
        let db_dir = dir.path().join(format!("db{round}"));
        if round % 2 == 1 {
            // A directory an earlier creation was killed in.
            std::fs::create_dir(&db_dir).unwrap();
            std::fs::write(db_dir.join("000002.log"), b"").unwrap();
            std::fs::write(db_dir.join("MANIFEST-000003"), b"").unwrap();
        }
        let start = Arc::new(Barrier::new(2));
        let done = Arc::new(Barrier::new(2));
        let racers: Vec<_> = (0..2)
            .map(|_| {
                let (db_dir, start, done) = (db_dir.clone(), start.clone(), done.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let r = Db::open(&db_dir, Options::default());
                    done.wait(); // the winner holds its Db until both have tried
                    r.map(Db::close).map_err(|e| e.to_string())
                })
            })
            .collect();
        let results: Vec<_> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        let wins = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "round {round}: {results:?}");
        for r in &results {
            match r {
                Ok(closed) => assert!(closed.is_ok(), "round {round}: {closed:?}"),
                Err(e) => assert!(
                    e.contains("locked by another process"),
                    "round {round}: {e}"
                ),
            }
        }
        let db = Db::open(&db_dir, Options::default()).unwrap();
        db.put(b"k", b"v").unwrap();
        db.close().unwrap();
    }
}

/// `close_keeping_lock` closes the Db (its writes are in its files) but holds its directory:
/// no open gets in until the lock is dropped, then one does and reads what was written.
#[test]
fn a_db_closed_keeping_its_lock_stays_locked_until_the_lock_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"k", b"v").unwrap();
    let lock = db.close_keeping_lock().unwrap();
    let e = Db::open(dir.path(), Options::default()).unwrap_err();
    assert!(e.to_string().contains("locked by another process"), "{e}");
    // A read-only open takes no lock and sees the closed Db's write.
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(ro.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(ro);
    drop(lock);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
}
