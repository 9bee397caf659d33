//! Flushable ingest (issue 10, part 2): an ingest that overlaps the memtable is queued above it
//! instead of waiting for a flush, logged in the WAL, readable at once, installed by the flush.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sluice::fs::MemFs;
use sluice::{Db, IngestOptions, Options, ReadOptions};
use sluice::{WriteBatch, WriteOptions};

mod common;
use common::external;

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn put_sync(db: &Db, k: &str, v: &str) {
    let mut b = WriteBatch::new();
    b.put(k.as_bytes(), v.as_bytes());
    db.write(
        b,
        WriteOptions {
            sync: true,
            disable_wal: false,
        },
    )
    .unwrap();
}

fn get(db: &Db, k: &str) -> Option<String> {
    db.get(k.as_bytes())
        .unwrap()
        .map(|v| String::from_utf8(v).unwrap())
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
    assert_eq!(
        fs.waiting_syncs(),
        1,
        "the ingest still waits for its fsync"
    );
    assert_eq!(
        get(&db, "n").as_deref(),
        Some("file"),
        "readable before durable"
    );
    fs.release_syncs();
    ingest.join().unwrap().unwrap();
    assert_eq!(get(&db, "m").as_deref(), Some("file"));
}
