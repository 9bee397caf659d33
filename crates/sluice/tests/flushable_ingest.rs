//! Flushable ingest: an ingest that overlaps the memtable is queued above it instead of waiting
//! for a flush, logged in the WAL, readable at once, installed by the flush; ordered against
//! concurrent ingests; its tables stay on disk while a reader of the queue holds them.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice::fs::{FileSystem, MemFs};
use sluice::{Db, IngestOptions, Options, ReadOptions};
use sluice::{WriteBatch, WriteOptions};

mod common;
use common::{external, mem_opts as opts};

fn put_sync(db: &Db, k: &str, v: &str) {
    let mut b = WriteBatch::new();
    b.put(k.as_bytes(), v.as_bytes());
    db.write(
        b,
        WriteOptions {
            sync: true,
            disable_wal: false,
            ..Default::default()
        },
    )
    .unwrap();
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

/// Overlapping the memtable: no flush before the ingest returns, the file's data is newer than
/// the memtable's, later writes newer still, and the flush installs the file in L0 as it is.
#[test]
fn overlapping_ingest_is_queued_above_the_memtable_without_a_flush() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    db.put(b"a", b"mem").unwrap();
    db.put(b"b", b"mem").unwrap();
    let f = external(&fs, "f.sst", &["a", "c"], "file");
    // Hold every MANIFEST sync: a flush could not complete, yet the ingest does.
    fs.hold_syncs_matching("MANIFEST");
    let placed = db.ingest(&[f], &IngestOptions::default()).unwrap();
    assert_eq!(placed[0].level, Some(0));
    assert!(placed[0].seqno > 0);
    assert_eq!(db.metrics().flushes, 0, "the ingest waited for no flush");
    assert!(db.metrics().immutable_memtables >= 1);
    assert_eq!(get(&db, "a").as_deref(), Some("file"));
    assert_eq!(get(&db, "b").as_deref(), Some("mem"));
    assert_eq!(get(&db, "c").as_deref(), Some("file"));
    db.put(b"a", b"after").unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("after"));
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut seen = Vec::new();
    while it.valid() {
        seen.push((
            String::from_utf8(it.key().to_vec()).unwrap(),
            String::from_utf8(it.value().to_vec()).unwrap(),
        ));
        it.next();
    }
    assert_eq!(
        seen,
        [("a", "after"), ("b", "mem"), ("c", "file")].map(|(k, v)| (k.to_string(), v.to_string()))
    );
    fs.release_syncs();
    db.flush().unwrap();
    assert_eq!(db.metrics().immutable_memtables, 0);
    assert_eq!(get(&db, "a").as_deref(), Some("after"));
    assert_eq!(get(&db, "c").as_deref(), Some("file"));
    let l0: Vec<u64> = db.current_version().levels[0]
        .iter()
        .map(|f| f.number)
        .collect();
    assert!(
        l0.contains(&placed[0].number),
        "the ingested table itself is in L0: {l0:?}"
    );
}

/// A crash after the ingest returned but before its flush: recovery replays the ingest record
/// from the WAL, between the writes before it and after it.
#[test]
fn crash_between_the_wal_record_and_the_flush_replays_the_ingest() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    put_sync(&db, "a", "before");
    put_sync(&db, "b", "before");
    let f = external(&fs, "f.sst", &["a", "b", "c"], "file");
    fs.hold_syncs_matching("MANIFEST");
    db.ingest(std::slice::from_ref(&f), &IngestOptions::default())
        .unwrap();
    put_sync(&db, "b", "after");
    // What a power loss now leaves: the WAL (synced) and the linked file, no flush edit.
    let image = fs.crashed_copy(None);
    fs.release_syncs();
    drop(db);
    for round in 0..2 {
        let db = Db::open("/db", opts(&image)).unwrap();
        assert_eq!(get(&db, "a").as_deref(), Some("file"), "round {round}");
        assert_eq!(get(&db, "b").as_deref(), Some("after"), "round {round}");
        assert_eq!(get(&db, "c").as_deref(), Some("file"), "round {round}");
        db.compact_range(None, None).unwrap();
        assert_eq!(get(&db, "b").as_deref(), Some("after"), "round {round}");
    }
    // The user's file is untouched (the Db copied it).
    assert_eq!(image.read_raw(&f), fs.read_raw(&f));
}

/// After the flushable was installed and compacted, reopening never replays it again, nor the
/// writes before it (they are below the flushed seqno, though still in the same WAL).
#[test]
fn replay_skips_what_the_flush_installed() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    put_sync(&db, "k", "v1");
    let f = external(&fs, "f.sst", &["k"], "file");
    db.ingest(&[f], &IngestOptions::default()).unwrap();
    put_sync(&db, "k", "v2");
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    put_sync(&db, "k", "v3");
    let image = fs.crashed_copy(None);
    drop(db);
    let db = Db::open("/db", opts(&image)).unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("v3"));
    db.delete(b"k").unwrap();
    drop(db);
    let db = Db::open("/db", opts(&image)).unwrap();
    assert_eq!(get(&db, "k"), None);
}

/// Readers see an ingest of several files entirely or not at all, while it is queued above
/// memtables that writers keep filling.
#[test]
fn readers_see_a_flushable_ingest_whole_or_not_at_all() {
    let fs = MemFs::new();
    let db = Arc::new(
        Db::open(
            "/db",
            Options {
                write_buffer_size: 32 << 10,
                ..opts(&fs)
            },
        )
        .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut checks = 0u64;
            while !stop.load(Ordering::Acquire) {
                let snap = db.snapshot();
                let ro = ReadOptions {
                    snapshot: Some(&snap),
                    ..Default::default()
                };
                for round in 0..20 {
                    let a = db
                        .get_opt(format!("r{round:02}-a").as_bytes(), &ro)
                        .unwrap();
                    let z = db
                        .get_opt(format!("r{round:02}-z").as_bytes(), &ro)
                        .unwrap();
                    // "1" only comes from the ingest (the writer's own puts write "0").
                    let ingested = |v: &Option<Vec<u8>>| v.as_deref() == Some(&b"1"[..]);
                    assert_eq!(
                        ingested(&a),
                        ingested(&z),
                        "round {round}: half an ingest: a={a:?} z={z:?} snap={}",
                        snap.seqno()
                    );
                    checks += 1;
                }
            }
            checks
        })
    };
    for round in 0..20 {
        for i in 0..50 {
            db.put(format!("r{round:02}-m{i:03}").as_bytes(), &[b'x'; 100])
                .unwrap();
        }
        let a = external(
            &fs,
            &format!("a{round}.sst"),
            &[&format!("r{round:02}-a")],
            "1",
        );
        let z = external(
            &fs,
            &format!("z{round}.sst"),
            &[&format!("r{round:02}-z")],
            "1",
        );
        // Both overlap the memtable's range only through their neighbours: make it real.
        db.put(format!("r{round:02}-a").as_bytes(), b"0").unwrap();
        db.put(format!("r{round:02}-z").as_bytes(), b"0").unwrap();
        db.delete(format!("r{round:02}-a").as_bytes()).unwrap();
        db.delete(format!("r{round:02}-z").as_bytes()).unwrap();
        db.ingest(&[a, z], &IngestOptions::default()).unwrap();
    }
    stop.store(true, Ordering::Release);
    assert!(reader.join().unwrap() > 0);
    for round in 0..20 {
        assert_eq!(get(&db, &format!("r{round:02}-a")).as_deref(), Some("1"));
        assert_eq!(get(&db, &format!("r{round:02}-z")).as_deref(), Some("1"));
    }
}

/// While the ingest waits for its WAL fsync, writers anywhere — even into its range, since the
/// tables are already queued — never wait for that fsync.
#[test]
fn writers_never_wait_for_the_ingest_wal_sync() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open("/db", opts(&fs)).unwrap());
    db.put(b"m", b"mem").unwrap();
    let f = external(&fs, "f.sst", &["m", "n"], "file");
    fs.hold_syncs_matching(".log");
    let ingest = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || db.ingest(&[f], &IngestOptions::default()))
    };
    while fs.waiting_syncs() == 0 {
        std::thread::yield_now();
    }
    for i in 0..200u32 {
        db.put(format!("z{i:04}").as_bytes(), b"v").unwrap();
    }
    // Into the ingested range, on another thread: with the range still latched through the
    // fsync this put would wait for the release below, and the channel would stay empty.
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            let r = db
                .put(b"m5", b"in range")
                .and_then(|()| db.put(b"n", b"newer"));
            let _ = tx.send(r);
        });
    }
    let put = rx.recv_timeout(Duration::from_secs(60));
    assert!(
        matches!(put, Ok(Ok(()))),
        "a put into the ingested range waited for the ingest's WAL fsync: {put:?}"
    );
    assert_eq!(
        fs.waiting_syncs(),
        1,
        "the ingest still waits for its fsync"
    );
    assert_eq!(
        get(&db, "m").as_deref(),
        Some("file"),
        "readable before durable"
    );
    assert_eq!(get(&db, "m5").as_deref(), Some("in range"));
    assert_eq!(
        get(&db, "n").as_deref(),
        Some("newer"),
        "the later put is above the file"
    );
    assert_eq!(iter_get(&db, "n").as_deref(), Some("newer"));
    fs.release_syncs();
    ingest.join().unwrap().unwrap();
    assert_eq!(get(&db, "m").as_deref(), Some("file"));
    assert_eq!(get(&db, "n").as_deref(), Some("newer"));
    // And after a crash, once a synced put made the WAL durable: the WAL holds the ingest
    // record before the puts into its range.
    put_sync(&db, "zz", "synced");
    let image = fs.crashed_copy(None);
    let db = Db::open("/db", opts(&image)).unwrap();
    assert_eq!(get(&db, "m").as_deref(), Some("file"));
    assert_eq!(get(&db, "n").as_deref(), Some("newer"));
    assert_eq!(get(&db, "m5").as_deref(), Some("in range"));
}

/// Two concurrent ingests of overlapping ranges: X (`[b, b]`) sees no memtable overlap and takes
/// the version path, held at the manifest lock by a flush's MANIFEST sync; Y (`[b, m]`)
/// overlaps the immutable memtable and would be queued as a flushable. Ingests apply one at a
/// time (`ingest_order`), so Y, applied after X, gets the higher seqno: `get` (newest source
/// first) and the iterator (merge by seqno) agree on `b`, and a compaction does not change it
/// without a write.
#[test]
fn concurrent_ingests_around_a_flushable_apply_in_order() {
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

/// The old memtable and the flushable are flushed and their tables compacted away
/// (auto compaction, trigger 1) while the memtable after the ingest still shares their WAL
/// (`log_number` stays at it): after a crash, replay skips the ingest record (its tables are
/// gone) and the writes before it, and replays the writes after it.
#[test]
fn replay_skips_a_flushable_compacted_away_while_its_wal_lives() {
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
        ..Default::default()
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

/// A snapshot taken while a flushable ingest is queued keeps its tables readable after the
/// flush installed them and a compaction rewrote them away; dropping the snapshot lets them
/// go.
#[test]
fn a_snapshot_keeps_a_flushables_tables_after_their_compaction() {
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

/// An iterator (no snapshot) created while a flushable ingest is queued keeps the ingest's
/// tables in the directory through the flush and a compaction (invariant 7): open handles to
/// unlinked files are not enough (POSIX would keep reading them, hiding the broken invariant).
#[test]
fn an_iterator_over_a_flushable_keeps_its_tables_on_disk() {
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
