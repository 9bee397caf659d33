//! `Db::max_seqno_in_range`: writes outside a range never move it, not even when flushes and
//! compactions put the range's keys and its neighbours' newer keys in the same files; every
//! kind of write inside the range raises it; compaction leaves it as it was. `Db::newest_seqno`
//! of one key, and `Db::keys_written_since`, the keys of a range written after a seqno.

use std::path::Path;

use sluice::fs::MemFs;
use sluice::{Db, IngestOptions};

mod common;
use common::{external_sst, tiny_opts};

fn max_b(db: &Db) -> u64 {
    db.max_seqno_in_range(b"b/", b"b0").unwrap()
}

/// Writes `n` keys under `prefix`, numbered from `from`.
fn fill(db: &Db, prefix: &str, from: u32, n: u32) {
    for i in from..from + n {
        db.put(format!("{prefix}{i:06}").as_bytes(), &[b'x'; 40])
            .unwrap();
    }
}

#[test]
fn writes_beside_a_range_leave_it_and_writes_in_it_raise_it() {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/db"), tiny_opts(&fs)).unwrap();
    assert_eq!(max_b(&db), 0, "an empty range");
    // Interleaved, so that files hold keys of all three ranges.
    for round in 0..5 {
        fill(&db, "a/", round * 50, 50);
        fill(&db, "b/", round * 50, 50);
        fill(&db, "c/", round * 50, 50);
    }
    let m0 = max_b(&db);
    assert!(m0 > 0);
    // The neighbours move on, through flushes and compactions of files shared with b/.
    for round in 0..10 {
        fill(&db, "a/", round * 50, 50);
        fill(&db, "c/", round * 50, 50);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_background_work().unwrap();
    let shared = db
        .current_version()
        .levels
        .iter()
        .flatten()
        .any(|f| f.smallest_user() < &b"b/"[..] && f.largest_user() >= &b"b/"[..]);
    assert!(
        shared,
        "the test needs a file straddling the range's lower bound"
    );
    assert_eq!(max_b(&db), m0, "writes outside the range moved it");

    // A put inside it, in the memtable and then in a table.
    db.put(b"b/000007", b"new").unwrap();
    let m1 = max_b(&db);
    assert!(m1 > m0);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_background_work().unwrap();
    assert_eq!(max_b(&db), m1, "a compaction moved it");

    // A delete, a range deletion reaching into it, an ingest over its keys.
    db.delete(b"b/000008").unwrap();
    let m2 = max_b(&db);
    assert!(m2 > m1);
    db.delete_range(b"a/000100", b"b/000001").unwrap();
    let m3 = max_b(&db);
    assert!(m3 > m2);
    db.flush().unwrap();
    assert_eq!(max_b(&db), m3, "the flush lost the range deletion");
    let p = external_sst(
        &fs,
        "over.sst",
        &[("b/000009", "i"), ("b/000010", "i")],
        &[],
    );
    db.ingest(&[&p], &IngestOptions::default()).unwrap();
    let m4 = max_b(&db);
    assert!(m4 > m3);
    // A range deletion wholly beside it does not count.
    db.delete_range(b"c/", b"c/000100").unwrap();
    db.flush().unwrap();
    assert_eq!(max_b(&db), m4);
    db.close().unwrap();
}

#[test]
fn newest_seqno_of_a_key_follows_every_write_to_it_and_no_other() {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/db"), tiny_opts(&fs)).unwrap();
    assert_eq!(db.newest_seqno(b"k").unwrap(), 0, "no entry");
    fill(&db, "a/", 0, 200);
    db.put(b"k", b"1").unwrap();
    let s1 = db.snapshot().seqno();
    assert_eq!(db.newest_seqno(b"k").unwrap(), s1, "a put in the memtable");
    // Neighbours written, flushed and compacted around it: it stays.
    fill(&db, "a/", 0, 300);
    fill(&db, "z/", 0, 300);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_background_work().unwrap();
    assert_eq!(
        db.newest_seqno(b"k").unwrap(),
        s1,
        "in a table, after compaction"
    );
    assert_eq!(
        db.newest_seqno(b"j").unwrap(),
        0,
        "a missing key between files"
    );
    // A deletion, then the same value again: newer each time, though it reads the same.
    db.delete(b"k").unwrap();
    let s2 = db.snapshot().seqno();
    assert_eq!(db.newest_seqno(b"k").unwrap(), s2);
    db.put(b"k", b"1").unwrap();
    let s3 = db.snapshot().seqno();
    assert!(s3 > s2);
    assert_eq!(db.newest_seqno(b"k").unwrap(), s3);
    db.flush().unwrap();
    assert_eq!(db.newest_seqno(b"k").unwrap(), s3, "flushed");
    // A range deletion covering it, flushed or not.
    db.delete_range(b"j", b"l").unwrap();
    let s4 = db.snapshot().seqno();
    assert_eq!(db.newest_seqno(b"k").unwrap(), s4);
    db.flush().unwrap();
    assert_eq!(
        db.newest_seqno(b"k").unwrap(),
        s4,
        "a flushed range deletion"
    );
    // An ingested file overlapping it takes a fresh seqno; one overlapping nothing, seqno 0.
    let over = external_sst(&fs, "over.sst", &[("k", "2")], &[]);
    db.ingest(&[over], &IngestOptions::default()).unwrap();
    assert!(db.newest_seqno(b"k").unwrap() > s4);
    let alone = external_sst(&fs, "alone.sst", &[("~x", "3")], &[]);
    db.ingest(&[alone], &IngestOptions::default()).unwrap();
    assert_eq!(db.get(b"~x").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(db.newest_seqno(b"~x").unwrap(), 0, "ingested over nothing");
}

fn since_b(db: &Db, seqno: u64, budget: usize) -> Option<Vec<String>> {
    let keys = db.keys_written_since(b"b/", b"b0", seqno, budget).unwrap();
    keys.map(|k| {
        k.iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect()
    })
}

#[test]
fn keys_written_since_a_seqno_are_the_writes_after_it_wherever_they_went() {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/db"), tiny_opts(&fs)).unwrap();
    for round in 0..4 {
        fill(&db, "a/", round * 50, 50);
        fill(&db, "b/", round * 50, 50);
        fill(&db, "c/", round * 50, 50);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_background_work().unwrap();
    // Held: without it a compaction could drop a deletion with the value it deleted.
    let snap0 = db.snapshot();
    let s0 = snap0.seqno();
    assert_eq!(since_b(&db, s0, 1_000), Some(vec![]), "nothing since");
    assert_eq!(since_b(&db, 0, 10_000).unwrap().len(), 200, "every key");
    // Writes beside the range and in it: a put, a delete, the same key twice.
    fill(&db, "a/", 0, 100);
    db.put(b"b/000007", b"new").unwrap();
    db.delete(b"b/000150").unwrap();
    db.put(b"b/000007", b"newer").unwrap();
    fill(&db, "c/", 0, 100);
    let want = Some(vec!["b/000007".to_string(), "b/000150".to_string()]);
    assert_eq!(since_b(&db, s0, 1_000), want, "in the memtable");
    // Flushed, then compacted with the older keys of the range into the same files.
    db.flush().unwrap();
    assert_eq!(since_b(&db, s0, 1_000), want, "flushed");
    db.compact_range(None, None).unwrap();
    db.wait_for_background_work().unwrap();
    assert_eq!(since_b(&db, s0, 1_000), want, "compacted");
    drop(snap0);
    assert_eq!(
        since_b(&db, s0, 3),
        None,
        "more entries to read than the budget"
    );
    let snap1 = db.snapshot();
    let s1 = snap1.seqno();
    assert_eq!(since_b(&db, s1, 3), Some(vec![]), "old files are not read");
    // An ingest over the range's keys takes a seqno past s1; one over nothing, seqno 0.
    let over = external_sst(&fs, "over.sst", &[("b/000009", "i")], &[]);
    db.ingest(&[over], &IngestOptions::default()).unwrap();
    let alone = external_sst(&fs, "alone.sst", &[("b/~", "i")], &[]);
    db.ingest(&[alone], &IngestOptions::default()).unwrap();
    assert_eq!(since_b(&db, s1, 1_000), Some(vec!["b/000009".to_string()]));
    // A range deletion reaching into the range lists no keys: the caller reads it its way.
    let snap2 = db.snapshot();
    let s2 = snap2.seqno();
    db.delete_range(b"a/", b"b/000001").unwrap();
    assert_eq!(
        since_b(&db, s2, 1_000),
        None,
        "a range deletion in the memtable"
    );
    db.flush().unwrap();
    assert_eq!(since_b(&db, s2, 1_000), None, "a flushed range deletion");
    let snap3 = db.snapshot();
    let s3 = snap3.seqno();
    db.delete_range(b"c/", b"c/000100").unwrap();
    assert_eq!(
        since_b(&db, s3, 1_000),
        Some(vec![]),
        "one beside the range"
    );
    drop((snap1, snap2, snap3));
    db.close().unwrap();
}
