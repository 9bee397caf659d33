//! An import into a filesystem that fills up (a small tmpfs): a clear error naming the
//! directory and the bytes needed, the Db unchanged and reopenable, the temporary space freed
//! but for the checkpointed work, which a resume continues once there is room; `tmp_dir` on
//! another filesystem gets the import through. Mounting needs root (CI runs as root); without
//! it the tests check the error's shape on a simulated `ENOSPC` instead of skipping.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use sluice_import::{open_db, ImportError, ImportOptions, OnDuplicate};

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, grp INT, note TEXT); \
                      CREATE INDEX by_grp ON t (grp);";

/// A tmpfs of `size` mounted at a new directory `at`, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(at.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Bytes of the files under it.
    fn used(&self) -> u64 {
        fn walk(p: &Path) -> u64 {
            std::fs::read_dir(p)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => walk(&e.path()),
                    _ => e.metadata().map_or(0, |m| m.len()),
                })
                .sum()
        }
        walk(&self.0)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// About 3 MB of rows in a scrambled order.
fn input(dir: &Path) -> PathBuf {
    let mut csv = String::new();
    let n = 60_000u64;
    for i in 0..n {
        let id = (i * 7919) % n;
        csv += &format!(
            "{id},{},row {i} {}\n",
            id % 17,
            "y".repeat((i % 11) as usize)
        );
    }
    write(dir, "t.csv", csv.as_bytes())
}

fn o() -> ImportOptions {
    ImportOptions {
        chunk_size: Some(16 << 10),
        checkpoint_bytes: 256 << 10,
        on_duplicate: OnDuplicate::Error,
        ..opts()
    }
}

#[test]
fn a_full_tmp_dir_fails_clearly_then_resumes_once_there_is_room() {
    let dir = tempfile::tempdir().unwrap();
    let f = input(dir.path());
    let want = {
        let db = open_db(dir.path().join("want"), true).unwrap();
        import(&db, SCHEMA, vec![f.clone()], o()).unwrap();
        dump(&db)
    };
    let Some(fs) = Tmpfs::mount(&dir.path().join("small"), "1500k") else {
        eprintln!("cannot mount a tmpfs (not root?): checking a simulated ENOSPC instead");
        return simulated();
    };
    let dbdir = dir.path().join("db");
    let db = open_db(&dbdir, true).unwrap();
    let tmp = fs.0.join("tmp");
    let full = ImportOptions {
        tmp_dir: Some(tmp.clone()),
        ..o()
    };
    let e = import(&db, SCHEMA, vec![f.clone()], full.clone()).unwrap_err();
    let ImportError::DiskFull {
        dir: at,
        needed,
        kept,
        ..
    } = &e
    else {
        panic!("not a DiskFull: {e:?}");
    };
    let msg = e.to_string();
    assert!(at.starts_with(&fs.0), "{msg}");
    assert!(msg.contains(&at.display().to_string()), "{msg}");
    assert!(
        msg.contains(&format!("needs about {needed} bytes")),
        "{msg}"
    );
    assert!(*needed > 1_500_000, "{msg}");
    // The Db is unchanged and reopens; only the checkpointed work is left on the tmpfs.
    assert!(dump(&db).is_empty());
    db.close().unwrap();
    let db = open_db(&dbdir, false).unwrap();
    assert!(dump(&db).is_empty());
    assert_eq!(fs.used(), *kept, "{msg}");
    assert!(*kept > 0, "{msg}");
    assert!(msg.contains("then resume"), "{msg}");
    // Room made: the import goes on from its checkpoint.
    fs.resize("64m");
    let s = import(
        &db,
        SCHEMA,
        vec![f],
        ImportOptions {
            resume: true,
            ..full
        },
    )
    .unwrap();
    assert!(s.resumed);
    assert!(dump(&db) == want);
    assert_eq!(fs.used(), 0);
}

#[test]
fn a_full_db_filesystem_fails_and_tmp_dir_elsewhere_gets_through() {
    let dir = tempfile::tempdir().unwrap();
    let f = input(dir.path());
    let Some(fs) = Tmpfs::mount(&dir.path().join("small"), "4500k") else {
        eprintln!("cannot mount a tmpfs (not root?): checking a simulated ENOSPC instead");
        return simulated();
    };
    let dbdir = fs.0.join("db");
    let db = open_db(&dbdir, true).unwrap();
    let before = dump(&db);
    let e = import(&db, SCHEMA, vec![f.clone()], o()).unwrap_err();
    assert!(matches!(e, ImportError::DiskFull { .. }), "{e:?}");
    assert!(e.to_string().contains(&dbdir.display().to_string()), "{e}");
    db.close().unwrap();
    let db = open_db(&dbdir, false).unwrap();
    assert_eq!(dump(&db), before);
    // Without resume the kept checkpoint is discarded; the runs go to another filesystem.
    let elsewhere = ImportOptions {
        tmp_dir: Some(dir.path().join("tmp")),
        ..o()
    };
    let s = import(&db, SCHEMA, vec![f], elsewhere).unwrap();
    assert_eq!(s.rows, 60_000);
    assert!(leftovers(&dbdir).is_empty());
}

/// Without a tmpfs: the error a full disk maps to names its directory and sizes.
fn simulated() {
    let e = ImportError::DiskFull {
        dir: "/mnt/small/tmp".into(),
        needed: 6_000_000,
        available: 1000,
        kept: 0,
        source: std::io::Error::from_raw_os_error(28),
    };
    let m = e.to_string();
    assert!(
        m.contains("/mnt/small/tmp") && m.contains("about 6000000 bytes"),
        "{m}"
    );
    assert!(m.contains("1000 free"), "{m}");
}
