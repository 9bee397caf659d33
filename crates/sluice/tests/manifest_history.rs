//! An open for writing appends to the current MANIFEST (keeping its history) while it is below
//! `max_manifest_file_size` and ends cleanly; otherwise it starts a new one.

use std::path::Path;
use std::sync::Arc;

use sluice::fs::{FaultConfig, FileSystem, MemFs};
use sluice::{Db, Options};

fn options(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn manifests(fs: &MemFs, dir: &Path) -> Vec<String> {
    let mut m: Vec<String> = fs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("MANIFEST-"))
        .collect();
    m.sort();
    m
}

fn current(fs: &MemFs, dir: &Path) -> String {
    String::from_utf8(fs.read_all(&dir.join("CURRENT")).unwrap())
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn reopening_carries_the_manifest_history_forward() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    for i in 0..5u32 {
        let db = Db::open(dir, options(&fs)).unwrap();
        db.put(format!("k{i}").as_bytes(), b"v").unwrap();
        db.close().unwrap();
    }
    // One MANIFEST at a time (each open writes a new one carrying the history; the old one
    // is deleted).
    assert_eq!(manifests(&fs, dir), vec![current(&fs, dir)]);
    let db = Db::open(dir, options(&fs)).unwrap();
    for i in 0..5u32 {
        assert_eq!(
            db.get(format!("k{i}").as_bytes()).unwrap(),
            Some(b"v".to_vec())
        );
    }
    let l0 = db.current_version().levels[0].len();
    assert_eq!(l0, 5, "each reopen flushed the previous WAL into L0");
    drop(db);
    // Every open's edit is still there: the first (snapshot) plus one per later open at least.
    let data = fs.read_all(&dir.join(current(&fs, dir))).unwrap();
    let mut r = sluice::wal::log::LogReader::new(&data, dir);
    let mut edits = 0;
    while r.next_record().unwrap().is_some() {
        edits += 1;
    }
    assert!(edits >= 6, "{edits} edits");
}

#[test]
fn a_size_limit_of_zero_starts_a_new_manifest_every_open() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let opts = || Options {
        max_manifest_file_size: 0,
        ..options(&fs)
    };
    let mut seen = Vec::new();
    for i in 0..3u32 {
        let db = Db::open(dir, opts()).unwrap();
        db.put(format!("k{i}").as_bytes(), b"v").unwrap();
        db.close().unwrap();
        seen.push(current(&fs, dir));
        assert_eq!(
            manifests(&fs, dir),
            vec![current(&fs, dir)],
            "the old one is deleted"
        );
    }
    seen.dedup();
    assert_eq!(seen.len(), 3);
    let db = Db::open(dir, options(&fs)).unwrap();
    assert_eq!(db.get(b"k2").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_torn_tail_is_never_carried_forward() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, options(&fs)).unwrap();
    db.put(b"a", b"1").unwrap();
    db.close().unwrap();
    let before = current(&fs, dir);
    let path = dir.join(&before);
    let mut data = fs.read_raw(&path).unwrap();
    data.extend_from_slice(&[0x12, 0x34, 0x56, 0x78, 0x40, 0x00, 0x01, b'x']); // torn record
    fs.write_raw(&path, data);
    let db = Db::open(dir, options(&fs)).unwrap();
    assert_ne!(
        current(&fs, dir),
        before,
        "a new MANIFEST after a torn tail"
    );
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    db.put(b"b", b"2").unwrap();
    db.close().unwrap();
    let db = Db::open(dir, options(&fs)).unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn a_crash_while_carrying_the_history_loses_nothing_acknowledged() {
    for limit in [0u64, 10, 40, 100, 400] {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let db = Db::open(dir, options(&fs)).unwrap();
        for i in 0..100u32 {
            db.put(format!("k{i:03}").as_bytes(), b"v").unwrap();
        }
        db.flush().unwrap();
        db.put(b"in-wal", b"w").unwrap();
        drop(db);
        // The reopen fails part-way through its writes (the new WAL, the L0 table of the old
        // WAL, the MANIFEST append), then the machine crashes.
        fs.set_faults(FaultConfig {
            fail_writes_after_bytes: Some(limit),
            ..FaultConfig::default()
        });
        let _ = Db::open(dir, options(&fs));
        fs.crash(Some(limit + 1));
        let db = Db::open(dir, options(&fs)).unwrap();
        assert_eq!(
            db.get(b"k099").unwrap(),
            Some(b"v".to_vec()),
            "limit {limit}"
        );
        drop(db);
        let db = Db::open(dir, options(&fs)).unwrap();
        assert_eq!(
            db.get(b"k000").unwrap(),
            Some(b"v".to_vec()),
            "limit {limit}"
        );
        let _ = db.get(b"in-wal").unwrap(); // unsynced: may or may not survive
    }
}
