//! Read-path properties: bounds cut work short (the block_writer lesson); a read's view holds
//! everything visible at its seqno while versions change under it; `get` finds keys at the
//! exclusive end of a range deletion; concurrent writers, ingests, compactions and snapshot
//! readers see consistent states.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use sluice::fs::MemFs;
use sluice::key::{make_internal_key, ValueKind};
use sluice::sst::table_builder::TableIdentity;
use sluice::{Db, IngestOptions, Options, ReadOptions, TableBuilder, TableOptions};
use sluice::{WriteBatch, WriteOptions};

mod common;
use common::{external_sst, get_at, mem_opts as opts, tiny_opts};

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
                            ..Default::default()
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
                                ..Default::default()
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

/// A read without a snapshot takes its seqno and its view in one critical section: while
/// flushes and compactions install new versions under four readers (gets and iterators), no
/// read misses a live key or returns a value older than one already acknowledged.
#[test]
fn reads_without_a_snapshot_never_see_stale_or_missing_values() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open("/db", tiny_opts(&fs)).unwrap());
    db.put(b"counter", &0u64.to_be_bytes()).unwrap();
    let written = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let pad = vec![b'x'; 200];
    let writer = {
        let (db, written, stop) = (Arc::clone(&db), Arc::clone(&written), Arc::clone(&stop));
        std::thread::spawn(move || {
            for i in 1..=20_000u64 {
                let mut b = WriteBatch::new();
                b.put(b"counter", &i.to_be_bytes());
                // Filler so memtables fill up and flushes and compactions keep running.
                b.put(format!("fill{:05}", i % 500).as_bytes(), &pad);
                db.write(b, WriteOptions::default()).unwrap();
                written.store(i, Ordering::Release);
            }
            stop.store(true, Ordering::Release);
        })
    };
    let readers: Vec<_> = (0..4)
        .map(|r| {
            let (db, written, stop) = (Arc::clone(&db), Arc::clone(&written), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut seen = 0u64;
                let mut anomalies = Vec::new();
                while !stop.load(Ordering::Acquire) {
                    let floor = written.load(Ordering::Acquire).max(seen);
                    let got = if r % 2 == 0 {
                        db.get(b"counter").unwrap()
                    } else {
                        let mut it = db
                            .iter(ReadOptions {
                                lower_bound: Some(b"counter".to_vec()),
                                upper_bound: Some(b"counter\0".to_vec()),
                                ..Default::default()
                            })
                            .unwrap();
                        it.seek_to_first();
                        it.valid().then(|| it.value().to_vec())
                    };
                    match got {
                        Some(v) => {
                            let n = u64::from_be_bytes(v.try_into().unwrap());
                            if n < floor {
                                anomalies.push(format!("read {n} after {floor} was acknowledged"));
                            }
                            seen = seen.max(n);
                        }
                        None => anomalies.push(format!("counter absent after {floor}")),
                    }
                }
                anomalies
            })
        })
        .collect();
    writer.join().unwrap();
    let anomalies: Vec<String> = readers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert!(
        anomalies.is_empty(),
        "{} wrong reads, first: {:?}",
        anomalies.len(),
        &anomalies[..anomalies.len().min(5)]
    );
}

/// Two disjoint files in one level, the first ending in an exclusive range-deletion end `k`,
/// the second starting at `k`: `get(k)` and an iterator find the second.
#[test]
fn get_finds_the_file_starting_at_an_exclusive_range_deletion_end() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    db.put(b"k", b"old").unwrap();
    db.compact_range(None, None).unwrap();
    let f1 = external_sst(&fs, "f1.sst", &[("a", "1")], &[("b", "k")]);
    let f2 = external_sst(&fs, "f2.sst", &[("k", "new")], &[]);
    let placed = db.ingest(&[f1, f2], &IngestOptions::default()).unwrap();
    assert_eq!(
        placed[0].level, placed[1].level,
        "the reproduction needs both files in one level: {placed:?}"
    );
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek(b"k");
    assert_eq!(it.value(), b"new");
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"new"[..]));
}

/// A compaction output cut at `k050` whose first file ends in the range deletion's exclusive
/// end `k050`: every key reads right, latest and at a snapshot taken before the deletion.
#[test]
fn get_after_a_compaction_cut_at_a_range_deletion_end() {
    let fs = MemFs::new();
    let db = Db::open("/db", tiny_opts(&fs)).unwrap();
    let v = vec![b'v'; 100];
    for i in 0..100 {
        db.put(format!("k{i:03}").as_bytes(), &v).unwrap();
    }
    let snap = db.snapshot();
    db.delete_range(b"k000", b"k050").unwrap();
    db.put(b"k050", b"live").unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..100 {
        let k = format!("k{i:03}");
        let want: Option<&[u8]> = match i {
            0..50 => None,
            50 => Some(b"live"),
            _ => Some(&v),
        };
        assert_eq!(db.get(k.as_bytes()).unwrap().as_deref(), want, "{k}");
        let through_snap = get_at(&db, &snap, k.as_bytes());
        assert_eq!(through_snap.as_deref(), Some(&v[..]), "{k} at the snapshot");
    }
}

/// Writer overwrites `c` with increasing values; an ingester ingests `{i: n}` files with
/// increasing n (overlapping, so each gets a global seqno in L0); flushes and manual
/// compactions run; readers do gets, iterators and snapshot reads and check that no value goes
/// backwards or disappears, and that two reads through one snapshot agree. Every reader drop
/// runs `ReadPin::drop` concurrently with installs. A hang beyond 60 s is reported as a deadlock.
#[test]
fn concurrent_reads_ingests_and_compactions_stay_monotonic() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let fs = MemFs::new();
    let opts = Options {
        write_buffer_size: 8 << 10,
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 32 << 10,
        target_file_size: 4 << 10,
        ..opts(&fs)
    };
    let db = Arc::new(Db::open("/db", opts).unwrap());
    db.put(b"c", &0u64.to_be_bytes()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(parking_lot_free::Errors::default());
    let mut handles = Vec::new();
    {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        handles.push(std::thread::spawn(move || {
            let pad = vec![b'p'; 200];
            let mut n = 1u64;
            while !stop.load(Ordering::Relaxed) {
                let mut b = WriteBatch::new();
                b.put(b"c", &n.to_be_bytes());
                b.put(format!("f{:04}", n % 300).as_bytes(), &pad);
                db.write(b, WriteOptions::default()).unwrap();
                n += 1;
            }
        }));
    }
    {
        let (db, stop, fs) = (Arc::clone(&db), Arc::clone(&stop), fs.clone());
        handles.push(std::thread::spawn(move || {
            let mut n = 1u64;
            while !stop.load(Ordering::Relaxed) {
                let identity = TableIdentity {
                    external_sst: true,
                    ..Default::default()
                };
                let mut b =
                    TableBuilder::new(Vec::new(), TableOptions::default(), identity).unwrap();
                b.add(
                    &make_internal_key(b"i", 0, ValueKind::Value),
                    &n.to_be_bytes(),
                )
                .unwrap();
                let p = PathBuf::from(format!("/src/i{n}.sst"));
                fs.write_raw(&p, b.finish().unwrap().0);
                db.ingest(&[&p], &IngestOptions::default()).unwrap();
                n += 1;
                if n.is_multiple_of(8) {
                    db.compact_range(None, None).unwrap();
                }
            }
        }));
    }
    for r in 0..3 {
        let (db, stop, errors) = (Arc::clone(&db), Arc::clone(&stop), Arc::clone(&errors));
        handles.push(std::thread::spawn(move || {
            let decode =
                |v: Option<Vec<u8>>| v.map(|v| u64::from_be_bytes(v[..8].try_into().unwrap()));
            let (mut last_c, mut last_i) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let c = decode(db.get(b"c").unwrap());
                let i = decode(db.get(b"i").unwrap());
                match c {
                    Some(c) if c >= last_c => last_c = c,
                    other => errors.push(format!("reader {r}: get(c) = {other:?} after {last_c}")),
                }
                match i {
                    Some(i) if i >= last_i => last_i = i,
                    None if last_i == 0 => {}
                    other => errors.push(format!("reader {r}: get(i) = {other:?} after {last_i}")),
                }
                let mut it = db.iter(ReadOptions::default()).unwrap();
                it.seek(b"c");
                if !(it.valid() && it.key() == b"c") {
                    errors.push(format!("reader {r}: iterator lost c"));
                } else {
                    let v = u64::from_be_bytes(it.value()[..8].try_into().unwrap());
                    if v < last_c {
                        errors.push(format!("reader {r}: iterator c = {v} after {last_c}"));
                    }
                }
                drop(it);
                let snap = db.snapshot();
                let ro = ReadOptions {
                    snapshot: Some(&snap),
                    ..Default::default()
                };
                let a = (
                    db.get_opt(b"c", &ro).unwrap(),
                    db.get_opt(b"i", &ro).unwrap(),
                );
                std::thread::yield_now();
                let b = (
                    db.get_opt(b"c", &ro).unwrap(),
                    db.get_opt(b"i", &ro).unwrap(),
                );
                if a != b {
                    errors.push(format!("reader {r}: snapshot reads differ"));
                }
                drop(snap);
            }
        }));
    }
    std::thread::sleep(std::time::Duration::from_secs(4));
    stop.store(true, Ordering::Relaxed);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    for h in handles {
        while !h.is_finished() {
            assert!(
                std::time::Instant::now() < deadline,
                "deadlock: a thread hangs"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        h.join().unwrap();
    }
    let errs = errors.take();
    assert!(
        errs.is_empty(),
        "{} anomalies, first: {:?}",
        errs.len(),
        &errs[..errs.len().min(5)]
    );
}

mod parking_lot_free {
    #[derive(Default)]
    pub struct Errors(std::sync::Mutex<Vec<String>>);
    impl Errors {
        pub fn push(&self, e: String) {
            self.0.lock().unwrap().push(e);
        }
        pub fn take(&self) -> Vec<String> {
            std::mem::take(&mut *self.0.lock().unwrap())
        }
    }
}
