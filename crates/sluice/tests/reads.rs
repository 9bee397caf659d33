//! Read-path properties: bounds cut work short (the block_writer lesson), and concurrent
//! writers and snapshot readers see consistent states.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sluice::fs::MemFs;
use sluice::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn tombstones_beyond_bound(flush: bool) {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/t"), opts(&fs)).unwrap();
    db.put(b"a-live", b"1").unwrap();
    for i in 0..100_000u32 {
        let k = format!("b-{i:08}");
        db.put(k.as_bytes(), b"x").unwrap();
        db.delete(k.as_bytes()).unwrap();
    }
    db.put(b"c-live", b"3").unwrap();
    if flush {
        db.flush().unwrap();
    }
    // Forward: seek next to 100,000 tombstones (200,000 entries) lying beyond the bound.
    let mut it = db
        .iter(ReadOptions {
            upper_bound: Some(b"b".to_vec()),
            ..Default::default()
        })
        .unwrap();
    it.seek(b"a");
    assert_eq!(it.key(), b"a-live");
    it.next();
    assert!(!it.valid());
    assert!(
        it.entries_touched() <= 4,
        "forward touched {} entries",
        it.entries_touched()
    );
    // Reverse: the same tombstones lying below the lower bound.
    let mut it = db
        .iter(ReadOptions {
            lower_bound: Some(b"c".to_vec()),
            ..Default::default()
        })
        .unwrap();
    it.seek_for_prev(b"z");
    assert_eq!(it.key(), b"c-live");
    it.prev();
    assert!(!it.valid());
    assert!(
        it.entries_touched() <= 4,
        "reverse touched {} entries",
        it.entries_touched()
    );
    // Without bounds the iterator has to walk them (the control that shows the counter works).
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek(b"a");
    it.next();
    assert_eq!(it.key(), b"c-live");
    assert!(
        it.entries_touched() > 100_000,
        "unbounded touched only {}",
        it.entries_touched()
    );
}

#[test]
fn bounded_seek_next_to_memtable_tombstones_touches_few_entries() {
    tombstones_beyond_bound(false);
}

#[test]
fn bounded_seek_next_to_sst_tombstones_touches_few_entries() {
    tombstones_beyond_bound(true);
}

#[test]
fn eight_writers_and_snapshot_readers() {
    let fs = MemFs::new();
    let o = Options {
        write_buffer_size: 64 << 10,
        l0_compaction_trigger: 2,
        target_file_size: 64 << 10,
        ..opts(&fs)
    };
    let db = Arc::new(Db::open(Path::new("/c"), o).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..8u32)
        .map(|w| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                for round in 0..1500u32 {
                    // Each batch sets the writer's two keys to the same round: readers must
                    // never see them differ.
                    let mut b = WriteBatch::new();
                    let v = round.to_be_bytes();
                    b.put(format!("w{w}-a").as_bytes(), &v);
                    b.put(format!("w{w}-b").as_bytes(), &v);
                    b.put(format!("w{w}-log-{round:06}").as_bytes(), &[0u8; 64]);
                    db.write(
                        b,
                        WriteOptions {
                            sync: round % 100 == 0,
                            disable_wal: false,
                        },
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let db = Arc::clone(&db);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) || checks < 50 {
                    let snap = db.snapshot();
                    let ro = ReadOptions {
                        snapshot: Some(&snap),
                        ..Default::default()
                    };
                    for w in 0..8 {
                        let a = db.get_opt(format!("w{w}-a").as_bytes(), &ro).unwrap();
                        let b = db.get_opt(format!("w{w}-b").as_bytes(), &ro).unwrap();
                        assert_eq!(a, b, "torn batch seen at a snapshot");
                        // The log keys visible at the snapshot are exactly rounds 0..=a.
                        let mut it = db
                            .iter(ReadOptions {
                                snapshot: Some(&snap),
                                lower_bound: Some(format!("w{w}-log-").into_bytes()),
                                upper_bound: Some(format!("w{w}-log.").into_bytes()),
                            })
                            .unwrap();
                        it.seek_to_first();
                        let mut n = 0u32;
                        while it.valid() {
                            n += 1;
                            it.next();
                        }
                        let want = a.map_or(0, |v| u32::from_be_bytes(v.try_into().unwrap()) + 1);
                        assert_eq!(
                            n, want,
                            "writer {w}: iterator disagrees with get at the snapshot"
                        );
                    }
                    checks += 1;
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    db.wait_for_background_work().unwrap();
    for w in 0..8 {
        assert_eq!(
            db.get(format!("w{w}-a").as_bytes()).unwrap(),
            Some(1499u32.to_be_bytes().to_vec())
        );
    }
    let m = db.metrics();
    assert!(m.flushes > 0 && m.compactions > 0, "{m:?}");
}
