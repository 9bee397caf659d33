//! `Db::checkpoint`: a consistent copy that opens on its own and holds exactly the data.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sluice::{Db, Options};

mod common;
use common::scan_all as all;

#[test]
fn checkpoint_opens_with_exactly_the_data_and_shares_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    for i in 0..500u32 {
        db.put(format!("k{i:05}").as_bytes(), &i.to_le_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    db.delete_range(b"k00100", b"k00200").unwrap();
    db.put(b"only-in-memtable", b"yes").unwrap();
    let expected = all(&db);
    let cp = dir.path().join("cp");
    let info = db.checkpoint(&cp).unwrap();
    assert!(info.tables >= 2 && info.bytes > 0, "{info:?}");
    // Later writes are not in the checkpoint.
    db.put(b"after", b"x").unwrap();
    db.compact_range(None, None).unwrap();
    assert!(!dir.path().join("cp.tmp").exists());
    let copy = Db::open(&cp, Options::default()).unwrap();
    assert_eq!(all(&copy), expected);
    // The copy is writable and independent.
    copy.put(b"copy-only", b"1").unwrap();
    assert_eq!(db.get(b"copy-only").unwrap(), None);
    assert_eq!(copy.get(b"after").unwrap(), None);
    copy.close().unwrap();
    let copy = Db::open(&cp, Options::default()).unwrap();
    assert_eq!(copy.get(b"copy-only").unwrap(), Some(b"1".to_vec()));
    assert_eq!(
        copy.get(b"only-in-memtable").unwrap(),
        Some(b"yes".to_vec())
    );
    // A second checkpoint to the same directory is refused.
    assert!(db.checkpoint(&cp).is_err());
}

#[test]
fn checkpoint_under_concurrent_writes_is_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path().join("db"), Options::default()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) && i < 200_000 {
                db.put(format!("w{i:08}").as_bytes(), b"v").unwrap();
                i += 1;
            }
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(20));
    let cp = dir.path().join("cp");
    let r = db.checkpoint(&cp);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let Ok(info) = r else {
        return; // writes kept refilling the memtable: refused, not inconsistent
    };
    let copy = Db::open(&cp, Options::default()).unwrap();
    let keys: Vec<Vec<u8>> = all(&copy).into_iter().map(|(k, _)| k).collect();
    // One writer, keys in increasing order: the checkpoint holds a gap-free prefix.
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(k, format!("w{i:08}").as_bytes());
    }
    // Each put took one seqno from 1: the checkpoint holds exactly the writes up to
    // `last_sequence` (a seqno handed to a write group not yet in the memtable is not counted).
    assert_eq!(keys.len() as u64, info.last_sequence);
}

#[test]
fn checkpoint_on_the_in_memory_fs_survives_a_crash() {
    use sluice::fs::MemFs;
    let fs = MemFs::new();
    let opts = || Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", opts()).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}").as_bytes(), b"v").unwrap();
    }
    let info = db.checkpoint("/cp").unwrap();
    assert_eq!(info.last_sequence, 100);
    // A second checkpoint to the same place is refused and leaves nothing behind.
    assert!(db.checkpoint("/cp").is_err());
    drop(db);
    fs.crash(Some(7));
    let copy = Db::open("/cp", opts()).unwrap();
    assert_eq!(all(&copy).len(), 100);
    assert!(!sluice::fs::FileSystem::exists(
        &fs,
        std::path::Path::new("/cp.tmp")
    ));
}

#[test]
fn approximate_size_grows_with_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let value = vec![7u8; 200];
    for i in 0..5000u32 {
        db.put(format!("k{i:05}").as_bytes(), &value).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let total = db.approximate_size(None, None).unwrap();
    let half = db.approximate_size(None, Some(b"k02500")).unwrap();
    let tenth = db
        .approximate_size(Some(b"k01000"), Some(b"k01500"))
        .unwrap();
    assert!(total > 5000 * 200 / 2, "{total}");
    assert!(
        half > total / 3 && half < total * 2 / 3,
        "{half} of {total}"
    );
    assert!(
        tenth > total / 20 && tenth < total / 5,
        "{tenth} of {total}"
    );
    assert_eq!(db.approximate_size(Some(b"z"), None).unwrap(), 0);
    assert_eq!(db.approximate_size(Some(b"a"), Some(b"b")).unwrap(), 0);
}
