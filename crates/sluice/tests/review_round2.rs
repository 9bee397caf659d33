//! Outside review, round 2: flushable ingest, subcompactions, L0 sublevels. r2_1, r2_2 and r2_6
//! failed before their fixes (ingests ordered by `ingest_order`; L0 scored by sublevels like the
//! stalls; iterators pin queued ingests); the others pin behaviour the review found sound.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sluice::fs::{FileSystem, MemFs};
use sluice::{Db, IngestOptions, Options, ReadOptions};

mod common;
use common::external;

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn get(db: &Db, k: &str) -> Option<String> {
    db.get(k.as_bytes())
        .unwrap()
        .map(|v| String::from_utf8(v).unwrap())
}

fn iter_get(db: &Db, k: &str) -> Option<String> {
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek(k.as_bytes());
    if it.valid() && it.key() == k.as_bytes() {
        Some(String::from_utf8(it.value().to_vec()).unwrap())
    } else {
        None
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting for {what}");
}

/// R2-1. Two concurrent ingests of overlapping ranges: X (range [b,b]) sees no memtable
/// overlap and takes the version path; Y ([b,m]) overlaps the immutable memtable and is queued
/// as a flushable with seqno s. X, blocked on the manifest lock (a flush's MANIFEST sync is
/// held) allocates its seqno s+1 only after Y is queued, and lands at L5 (L6 holds "b"). Now
/// "b" has Y@s in the queue / L0 and X@s+1 in L5: `get` (newest source first, first hit wins)
/// returns Y, the iterator (merge by seqno) returns X, and a compaction later flips `get` to X
/// with no write in between.
#[test]
fn r2_1_concurrent_version_path_ingest_lands_below_an_older_flushable() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open("/db", opts(&fs)).unwrap());
    db.put(b"b", b"old").unwrap();
    db.compact_range(None, None).unwrap();
    db.put(b"m", b"mem").unwrap();
    let fx = external(&fs, "x.sst", &["b"], "X");
    let fy = external(&fs, "y.sst", &["b", "m"], "Y");
    fs.hold_syncs_matching("MANIFEST");
    let d = Arc::clone(&db);
    let flusher = std::thread::spawn(move || d.flush());
    wait_until("the flush to block in its MANIFEST sync", || {
        fs.waiting_syncs() >= 1
    });
    let d = Arc::clone(&db);
    let x = std::thread::spawn(move || d.ingest(&[fx], &IngestOptions::default()).unwrap());
    // X validates, links, latches, finds no memtable overlap, then waits for the manifest lock.
    std::thread::sleep(Duration::from_millis(300));
    // Y overlaps the immutable memtable. Ingests are ordered (the fix): Y waits for X.
    let d = Arc::clone(&db);
    let y = std::thread::spawn(move || d.ingest(&[fy], &IngestOptions::default()).unwrap());
    std::thread::sleep(Duration::from_millis(300));
    fs.release_syncs();
    flusher.join().unwrap().unwrap();
    let x = x.join().unwrap();
    let y = y.join().unwrap();
    assert!(
        y[0].seqno > x[0].seqno,
        "Y, applied after X, is newer: {x:?} {y:?}"
    );
    db.wait_for_background_work().unwrap();
    eprintln!("X: {x:?}\nY: {y:?}");
    let before = get(&db, "b");
    let by_iter = iter_get(&db, "b");
    db.compact_range(None, None).unwrap();
    let after = get(&db, "b");
    assert_eq!(
        before, by_iter,
        "get and iterator disagree on the newest value of b"
    );
    assert_eq!(
        before, after,
        "compaction changed the value of b without a write"
    );
}

/// R2-2. Backpressure counts L0 *sublevels*; the picker scores L0 by the deepest *interval*
/// (`max_depth_after_running`). A staircase of flushes — each file overlapping only its
/// predecessor, at one shared key — has one more sublevel per file but depth 2 everywhere:
/// L0 scores 2/trigger < 1, no compaction is ever picked, and once the sublevels reach
/// `l0_stop_writes_trigger` every write stalls forever (wait_for_background_work even
/// reports idle).
#[test]
fn r2_2_staircase_l0_stops_writes_forever() {
    let fs = MemFs::new();
    let o = Options {
        l0_compaction_trigger: 4,
        l0_slowdown_writes_trigger: 4,
        l0_stop_writes_trigger: 5,
        ..opts(&fs)
    };
    let db = Arc::new(Db::open("/db", o).unwrap());
    for i in 0..5 {
        db.put(format!("k{i:02}").as_bytes(), b"v").unwrap();
        db.put(format!("k{:02}", i + 1).as_bytes(), b"v").unwrap();
        db.flush().unwrap();
    }
    db.wait_for_background_work().unwrap();
    let m = db.metrics();
    eprintln!(
        "L0 files {} sublevels {}",
        m.levels[0].files, m.l0_sublevels
    );
    let d = Arc::clone(&db);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = d.put(b"zz", b"after");
        let _ = tx.send(r.is_ok());
    });
    let done = rx.recv_timeout(Duration::from_secs(5));
    assert_eq!(
        done,
        Ok(true),
        "a write stalled for 5 s with no compaction running or pending (L0 sublevels {})",
        db.metrics().l0_sublevels
    );
}

/// R2-3 (sanity). Subcompactions checked by point reads, not only scans: every key of the
/// key space by `get`, latest and at a snapshot, after one split compaction into L6.
#[test]
fn r2_3_split_compaction_point_reads_match_the_model() {
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    for seed in 0..3u64 {
        let fs = MemFs::new();
        let db = Db::open(
            "/db",
            Options {
                write_buffer_size: 16 << 10,
                target_file_size: 8 << 10,
                max_bytes_for_level_base: 64 << 10,
                l0_compaction_trigger: 100,
                l0_slowdown_writes_trigger: 200,
                l0_stop_writes_trigger: 300,
                max_subcompactions: 4,
                block_size: 512,
                ..opts(&fs)
            },
        )
        .unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut snap = None;
        let mut snap_model = None;
        for op in 0..6000u32 {
            let k = format!("k{:05}", rng.gen_range(0..3000u32)).into_bytes();
            match rng.gen_range(0..100) {
                0..=79 => {
                    let v = format!("v{op}-{}", "x".repeat(rng.gen_range(10..80))).into_bytes();
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
                80..=92 => {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                93..=97 => {
                    let start: u32 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
                    let end = format!("k{:05}", start + rng.gen_range(1..200u32)).into_bytes();
                    db.delete_range(&k, &end).unwrap();
                    let doomed: Vec<Vec<u8>> = model
                        .range(k.clone()..end)
                        .map(|(k, _)| k.clone())
                        .collect();
                    for d in doomed {
                        model.remove(&d);
                    }
                }
                _ => {
                    if snap.is_none() && op > 3000 {
                        snap = Some(db.snapshot());
                        snap_model = Some(model.clone());
                    }
                }
            }
        }
        db.compact_range(None, None).unwrap();
        for i in 0..3300u32 {
            let k = format!("k{i:05}").into_bytes();
            assert_eq!(
                db.get(&k).unwrap(),
                model.get(&k).cloned(),
                "seed {seed} key {i}"
            );
            if let (Some(s), Some(m)) = (&snap, &snap_model) {
                let got = db
                    .get_opt(
                        &k,
                        &ReadOptions {
                            snapshot: Some(s),
                            ..Default::default()
                        },
                    )
                    .unwrap();
                assert_eq!(
                    got,
                    m.get(&k).cloned(),
                    "seed {seed} key {i} at the snapshot"
                );
            }
        }
    }
}

/// R2-4 (sanity). The old memtable and the flushable are flushed and their tables compacted
/// away (auto compaction, trigger 1) while the memtable after the ingest still shares their WAL
/// (log_number stays at it): a crash now must skip the ingest record (its tables are gone) and
/// the writes before it, and replay the writes after it.
#[test]
fn r2_4_crash_with_flushed_and_compacted_ingest_in_a_live_wal() {
    let fs = MemFs::new();
    let o = Options {
        l0_compaction_trigger: 1,
        l0_slowdown_writes_trigger: 8,
        l0_stop_writes_trigger: 16,
        ..opts(&fs)
    };
    let db = Db::open("/db", o.clone()).unwrap();
    let sync = sluice::WriteOptions {
        sync: true,
        disable_wal: false,
    };
    let mut b = sluice::WriteBatch::new();
    b.put(b"a", b"before");
    db.write(b, sync).unwrap();
    let f = external(&fs, "f.sst", &["a", "c"], "file");
    let placed = db.ingest(&[f], &IngestOptions::default()).unwrap();
    assert_eq!(placed[0].level, Some(0));
    let mut b = sluice::WriteBatch::new();
    b.put(b"b", b"after");
    db.write(b, sync).unwrap();
    // Flushes of the old memtable and the ingest, then a compaction of both into L6.
    wait_until("both flushed and compacted out of L0", || {
        let m = db.metrics();
        m.immutable_memtables == 0 && m.levels[0].files == 0 && m.levels[6].files > 0
    });
    db.wait_for_background_work().unwrap();
    let image = fs.crashed_copy(None);
    drop(db);
    let db = Db::open(
        "/db",
        Options {
            fs: Arc::new(image.clone()),
            ..o
        },
    )
    .unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("file"));
    assert_eq!(get(&db, "b").as_deref(), Some("after"));
    assert_eq!(get(&db, "c").as_deref(), Some("file"));
}

/// R2-5 (sanity). A snapshot taken while a flushable ingest is queued keeps its tables readable
/// after the flush installed them and a compaction rewrote them away; dropping the snapshot
/// lets them go.
#[test]
fn r2_5_snapshot_holding_a_flushable_survives_its_compaction() {
    let fs = MemFs::new();
    let o = Options {
        max_open_files: 16,
        ..opts(&fs)
    };
    let db = Db::open("/db", o).unwrap();
    db.put(b"a", b"mem").unwrap();
    let f = external(&fs, "f.sst", &["a", "b"], "file");
    fs.hold_syncs_matching("MANIFEST");
    let placed = db.ingest(&[f], &IngestOptions::default()).unwrap();
    let n = placed[0].number;
    let snap = db.snapshot();
    fs.release_syncs();
    db.put(b"a", b"later").unwrap();
    db.compact_range(None, None).unwrap();
    let path = Path::new("/db").join(format!("{n:06}.sst"));
    assert!(fs.exists(&path), "the snapshot's queued table was deleted");
    let ro = ReadOptions {
        snapshot: Some(&snap),
        ..Default::default()
    };
    assert_eq!(
        db.get_opt(b"b", &ro).unwrap().as_deref(),
        Some(&b"file"[..])
    );
    assert_eq!(
        db.get_opt(b"a", &ro).unwrap().as_deref(),
        Some(&b"file"[..])
    );
    drop(snap);
    db.wait_for_background_work().unwrap();
    db.put(b"z", b"z").unwrap();
    db.compact_range(None, None).unwrap();
    assert!(!fs.exists(&path), "the table outlived its last reader");
    assert_eq!(get(&db, "a").as_deref(), Some("later"));
}

/// R2-6. An iterator (no snapshot) created while a flushable ingest is queued holds the ingest's
/// tables only through open table handles: its view's `imm` (the `IngestedTables` that
/// `live_ingested` tracks) is dropped when `iter()` returns, and its pinned version predates
/// the install. After the flush and a compaction, the table is unlinked under the live
/// iterator (invariant 7 says it stays while a reader holds it). POSIX keeps reading the
/// unlinked inode, so values still come back; the directory invariant is what breaks.
#[test]
fn r2_6_iterator_over_a_flushable_keeps_its_tables_on_disk() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    db.put(b"a", b"mem").unwrap();
    let f = external(&fs, "f.sst", &["a", "b"], "file");
    fs.hold_syncs_matching("MANIFEST");
    let placed = db.ingest(&[f], &IngestOptions::default()).unwrap();
    let n = placed[0].number;
    let mut it = db.iter(ReadOptions::default()).unwrap();
    fs.release_syncs();
    db.put(b"c", b"later").unwrap();
    db.compact_range(None, None).unwrap();
    let path = Path::new("/db").join(format!("{n:06}.sst"));
    let still_there = fs.exists(&path);
    it.seek_to_first();
    let mut got = Vec::new();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    assert_eq!(
        got,
        vec![
            (b"a".to_vec(), b"file".to_vec()),
            (b"b".to_vec(), b"file".to_vec())
        ]
    );
    assert!(
        still_there,
        "table {n} was deleted while a live iterator read it"
    );
}
