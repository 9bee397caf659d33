//! What the engine asks of the operating system for the foreground's sake: background threads
//! at `Options::background_nice`, and WAL files whose blocks are reserved up front.
#![cfg(target_os = "linux")]

use std::os::unix::fs::MetadataExt;

use sluice::{Db, Options};

/// Niceness of each of this process's threads named `prefix…` (from /proc).
fn nice_of_threads(prefix: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = t.unwrap().path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap();
        // Fields after the parenthesised name: state is field 3, nice field 19.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        out.push(rest.split(' ').nth(16).unwrap().parse().unwrap());
    }
    out
}

fn own_nice() -> i64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(16).unwrap().parse().unwrap()
}

/// The background workers lower their own priority to `background_nice` (relative to nothing:
/// niceness is absolute), and 0 leaves them at the opener's.
#[test]
fn background_threads_run_at_background_nice() {
    let base = own_nice();
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        background_nice: 12,
        ..Options::default()
    };
    let db = Db::open(dir.path().join("a"), opts).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    let nice = nice_of_threads("sluice-bg-");
    assert_eq!(nice.len(), 2, "two background workers by default");
    assert!(
        nice.iter().all(|&n| n == 12.max(base)),
        "{nice:?} (opener at {base})"
    );
    db.close().unwrap();

    let db = Db::open(
        dir.path().join("b"),
        Options {
            background_nice: 0,
            ..Options::default()
        },
    )
    .unwrap();
    let nice = nice_of_threads("sluice-bg-");
    assert!(
        !nice.is_empty() && nice.iter().all(|&n| n == base),
        "{nice:?}"
    );
    db.close().unwrap();

    let Err(e) = Db::open(
        dir.path().join("c"),
        Options {
            background_nice: 20,
            ..Options::default()
        },
    ) else {
        panic!("background_nice 20 is refused");
    };
    assert!(e.to_string().contains("background_nice"), "{e}");
}

/// A new WAL has a memtable's worth of blocks (and a tenth) reserved while its size stays what
/// was written: appends then need no block allocation, and recovery reads no zeroes.
#[test]
fn a_new_wal_has_its_blocks_reserved_and_keeps_its_size() {
    let dir = tempfile::tempdir().unwrap();
    // Only where the file system supports it (tmpfs, ext4, xfs, btrfs do).
    let probe = dir.path().join("probe");
    let f = std::fs::File::create(&probe).unwrap();
    if rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::KEEP_SIZE, 0, 1 << 20).is_err() {
        panic!("the test directory's file system does not support fallocate");
    }
    let opts = Options {
        write_buffer_size: 8 << 20,
        ..Options::default()
    };
    let path = dir.path().join("db");
    let db = Db::open(&path, opts).unwrap();
    db.put(b"key", b"value").unwrap();
    let wals: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert_eq!(wals.len(), 1, "{wals:?}");
    let m = std::fs::metadata(&wals[0]).unwrap();
    assert!(m.len() < 4096, "size {} is what was written", m.len());
    assert!(
        m.blocks() * 512 >= (8 << 20) + (8 << 20) / 10,
        "{} bytes reserved",
        m.blocks() * 512
    );
    db.close().unwrap();
    let db = Db::open(&path, Options::default()).unwrap();
    assert_eq!(db.get(b"key").unwrap().as_deref(), Some(&b"value"[..]));
    db.close().unwrap();
}
