//! One regression test per engine bug of the correctness review (issue "Correctness first…").
//! Each test failed before its fix; the test names carry the bug number.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use sluice::fs::{FileSystem, MemFs};
use sluice::{Db, Error, IngestOptions, Options, ReadOptions, TableOptions};
use sluice::{WriteBatch, WriteOptions};

mod common;
use common::external_sst as external;

fn mem_opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn tiny_opts(fs: &MemFs) -> Options {
    Options {
        write_buffer_size: 4 << 10,
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 16 << 10,
        target_file_size: 4 << 10,
        block_size: 256,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn sync() -> WriteOptions {
    WriteOptions {
        sync: true,
        disable_wal: false,
    }
}

/// Bug 1: a read without a snapshot took its seqno before its view; a flush or compaction
/// installed in between made it see nothing (or an older value) for a live key.
#[test]
fn bug1_reads_without_snapshot_never_see_stale_or_missing_values() {
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

/// Bug 2 (first reproduction): two disjoint files in one level, the first ending in an
/// exclusive range-deletion end `k`, the second starting at `k`; `get(k)` must find the second.
#[test]
fn bug2_get_checks_the_file_starting_at_an_exclusive_range_deletion_end() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    db.put(b"k", b"old").unwrap();
    db.compact_range(None, None).unwrap();
    let f1 = external(&fs, "f1.sst", &[("a", "1")], &[("b", "k")]);
    let f2 = external(&fs, "f2.sst", &[("k", "new")], &[]);
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

/// Bug 2 (second reproduction): a compaction output cut at `k050` whose first file ends in the
/// range deletion's exclusive end `k050`.
#[test]
fn bug2_get_after_compaction_cut_at_a_range_deletion_end() {
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
        let through_snap = db
            .get_opt(
                k.as_bytes(),
                &ReadOptions {
                    snapshot: Some(&snap),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(through_snap.as_deref(), Some(&v[..]), "{k} at the snapshot");
    }
}

/// Bug 3: a crash after an ingest linked its file but before the MANIFEST edit; recovery must
/// not reuse that file number, and must never truncate a file that exists (it may be a link to
/// the user's file).
#[test]
fn bug3_recovery_never_reuses_the_number_of_a_linked_file() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open("/db", mem_opts(&fs)).unwrap());
    db.write(
        {
            let mut b = WriteBatch::new();
            b.put(b"a", b"synced");
            b
        },
        sync(),
    )
    .unwrap();
    let src = external(&fs, "user.sst", &[("x", "1"), ("y", "2")], &[]);
    let before = fs.read_raw(&src).unwrap();
    // Block the ingest at its MANIFEST sync: the link is durable, the edit is not.
    fs.hold_syncs_matching("MANIFEST");
    let ingester = {
        let (db, src) = (Arc::clone(&db), src.clone());
        std::thread::spawn(move || {
            let opts = IngestOptions {
                link_files: true,
                ..Default::default()
            };
            let _ = db.ingest(&[src], &opts);
        })
    };
    while fs.waiting_syncs() == 0 {
        std::thread::yield_now();
    }
    let image = fs.crashed_copy(None);
    fs.release_syncs();
    ingester.join().unwrap();
    let db2 = Db::open("/db", mem_opts(&image)).unwrap();
    assert_eq!(db2.get(b"a").unwrap().as_deref(), Some(&b"synced"[..]));
    assert_eq!(db2.get(b"x").unwrap(), None, "the ingest was not durable");
    assert_eq!(image.read_raw(&src).unwrap(), before, "user file changed");
    drop(db2);
    // And the image reopens again.
    let db3 = Db::open("/db", mem_opts(&image)).unwrap();
    assert_eq!(db3.get(b"a").unwrap().as_deref(), Some(&b"synced"[..]));
}

/// Bug 3, second half: creating a file over an existing name fails instead of truncating it.
#[test]
fn bug3_create_never_truncates_an_existing_file() {
    let fs = MemFs::new();
    let p = Path::new("/d/f");
    fs.write_raw(p, b"user data".to_vec());
    assert!(fs.create(p).is_err());
    assert_eq!(fs.read_raw(p).unwrap(), b"user data");
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("f");
    std::fs::write(&real, b"user data").unwrap();
    assert!(sluice::fs::RealFs.create(&real).is_err());
    assert_eq!(std::fs::read(&real).unwrap(), b"user data");
}

/// Bug 4: an ingest_behind whose range a running compaction writes into the bottom level
/// must not make the version edit fail (which put the Db in read-only error state).
#[test]
fn bug4_ingest_behind_respects_a_compaction_into_the_bottom_level() {
    for round in 0..3 {
        let fs = MemFs::new();
        // No automatic compactions: the data stays in L0 until the manual compaction.
        let opts = Options {
            l0_compaction_trigger: 50,
            l0_slowdown_writes_trigger: 60,
            l0_stop_writes_trigger: 70,
            ..tiny_opts(&fs)
        };
        let db = Arc::new(Db::open("/db", opts).unwrap());
        let v = vec![b'v'; 64];
        for i in 0..400 {
            db.put(format!("k{i:04}").as_bytes(), &v).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
        // Keys between the existing ones: the compaction's output range covers them.
        let puts: Vec<(String, String)> = (0..50)
            .map(|i| (format!("k{:04}-behind{round}", i * 7), "behind".to_string()))
            .collect();
        let refs: Vec<(&str, &str)> = puts.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let f = external(&fs, &format!("behind{round}.sst"), &refs, &[]);
        // Hold the compaction at its output's sync, so it is running during the ingest.
        fs.hold_syncs_matching(".sst");
        let compactor = {
            let db = Arc::clone(&db);
            std::thread::spawn(move || db.compact_range(None, None))
        };
        while fs.waiting_syncs() == 0 {
            std::thread::yield_now();
        }
        let ingester = {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                db.ingest(
                    &[f],
                    &IngestOptions {
                        ingest_behind: true,
                        link_files: true,
                        ..Default::default()
                    },
                )
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        fs.release_syncs();
        let r = ingester.join().unwrap();
        let c = compactor.join().unwrap();
        assert!(c.is_ok(), "round {round}: compaction failed: {c:?}");
        if let Err(e) = &r {
            // Refusing is allowed only with a clear reason, never by breaking the Db.
            assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        }
        assert!(db.metrics().background_error.is_none(), "round {round}");
        db.put(b"after", b"ok").unwrap();
        let want: Option<&[u8]> = if r.is_ok() { Some(b"behind") } else { None };
        assert_eq!(db.get(puts[0].0.as_bytes()).unwrap().as_deref(), want);
    }
}

/// Bug 5: with `small_file_threshold`, a failing ingest must leave nothing visible, and with
/// `allow_overlap` later files stay newer than earlier ones.
#[test]
fn bug5_small_files_keep_ingest_all_or_none_and_later_files_newer() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    let small = external(&fs, "small.sst", &[("s", "1")], &[]);
    let missing = PathBuf::from("/src/missing.sst");
    let opts = IngestOptions {
        small_file_threshold: 1 << 20,
        ..Default::default()
    };
    assert!(db.ingest(&[small.clone(), missing], &opts).is_err());
    assert_eq!(
        db.get(b"s").unwrap(),
        None,
        "a failed ingest left a file visible"
    );

    // A big file followed by a small file with the same key: the later (small) one wins.
    let mut big_keys: Vec<(String, String)> = (0..2000)
        .map(|i| (format!("b{i:05}"), "big".to_string()))
        .collect();
    big_keys.push(("z".into(), "big".into()));
    let refs: Vec<(&str, &str)> = big_keys
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let big = external(&fs, "big.sst", &refs, &[]);
    let later = external(&fs, "later.sst", &[("z", "small-later")], &[]);
    let big_size = fs.read_raw(&big).unwrap().len() as u64;
    let opts = IngestOptions {
        small_file_threshold: big_size / 2,
        allow_overlap: true,
        ..Default::default()
    };
    db.ingest(&[big, later], &opts).unwrap();
    assert_eq!(db.get(b"z").unwrap().as_deref(), Some(&b"small-later"[..]));
}

/// Bug 6: a torn WAL tail whose lost record's payload contains log-framed bytes is dropped,
/// not reported as corruption in the middle.
#[test]
fn bug6_torn_tail_with_log_framed_payload_is_dropped() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    db.write(
        {
            let mut b = WriteBatch::new();
            b.put(b"first", b"1");
            b
        },
        sync(),
    )
    .unwrap();
    // A value that is itself a valid log: a record framed exactly as the WAL frames them.
    let inner = MemFs::new();
    let p = Path::new("/inner");
    let mut w = sluice::wal::log::LogWriter::new(inner.create(p).unwrap());
    w.add_record(&[7u8; 300]).unwrap();
    drop(w);
    let framed = inner.read_all(p).unwrap();
    let mut value = vec![0u8; 1000];
    value.extend_from_slice(&framed);
    value.extend_from_slice(&[0u8; 2000]);
    db.write(
        {
            let mut b = WriteBatch::new();
            b.put(b"second", &value);
            b
        },
        sync(),
    )
    .unwrap();
    drop(db);
    // Tear the last record after the embedded log but before its end.
    let wal = fs
        .list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .max()
        .unwrap();
    let wal = Path::new("/db").join(wal);
    let data = fs.read_raw(&wal).unwrap();
    let pos = data
        .windows(framed.len())
        .position(|w| w == framed.as_slice())
        .expect("embedded log present");
    fs.write_raw(&wal, data[..pos + framed.len() + 10].to_vec());
    let db = Db::open("/db", mem_opts(&fs)).expect("a torn tail is dropped, not an error");
    assert_eq!(db.get(b"first").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"second").unwrap(), None);
}

/// Bug 7: an ingest that survives a crash never survives without the writes acknowledged
/// before it (the WAL is synced first).
#[test]
fn bug7_ingest_syncs_the_wal_first() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    db.put(b"a", b"unsynced-but-acknowledged").unwrap();
    let f = external(&fs, "x.sst", &[("x", "1")], &[]);
    db.ingest(&[f], &IngestOptions::default()).unwrap();
    let image = fs.crashed_copy(None);
    let db2 = Db::open("/db", mem_opts(&image)).unwrap();
    assert_eq!(db2.get(b"x").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(
        db2.get(b"a").unwrap().as_deref(),
        Some(&b"unsynced-but-acknowledged"[..]),
        "the ingest survived without a write acknowledged before it"
    );
}

/// Bug 8: ingest copies by default, so rewriting the source later cannot change the Db; a
/// table whose size differs from the MANIFEST is reported when opened.
#[test]
fn bug8_ingest_copies_by_default_and_table_size_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("m.sst");
    let write_src = |value: &[u8], n: usize| {
        let _ = std::fs::remove_file(&src);
        let mut w = sluice::SstWriter::create(&src, TableOptions::default()).unwrap();
        for i in 0..n {
            w.put(format!("m{i:04}").as_bytes(), value).unwrap();
        }
        w.finish().unwrap();
    };
    write_src(b"first", 10);
    let db_dir = dir.path().join("db");
    let db = Db::open(&db_dir, Options::default()).unwrap();
    db.ingest(&[&src], &IngestOptions::default()).unwrap();
    // The user rewrites the file in place (same inode if it were linked).
    let f = std::fs::OpenOptions::new().write(true).open(&src).unwrap();
    f.set_len(0).unwrap();
    drop(f);
    assert_eq!(db.get(b"m0000").unwrap().as_deref(), Some(&b"first"[..]));
    drop(db);

    // Linking stays available on request; a table whose size changed is then reported.
    write_src(b"second", 10);
    let db = Db::open(&db_dir, Options::default()).unwrap();
    let placed = db
        .ingest(
            &[&src],
            &IngestOptions {
                link_files: true,
                ..Default::default()
            },
        )
        .unwrap();
    drop(db);
    let table = db_dir.join(format!("{:06}.sst", placed[0].number));
    let mut data = std::fs::read(&table).unwrap();
    data.extend_from_slice(b"garbage");
    std::fs::write(&src, &data).unwrap(); // through the link
    let db = Db::open(&db_dir, Options::default()).unwrap();
    match db.get(b"m0000") {
        Err(Error::Corruption { reason, .. }) => assert!(reason.contains("size"), "{reason}"),
        other => panic!("expected a size mismatch, got {other:?}"),
    }
}

fn table_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

fn live_bytes(db: &Db) -> u64 {
    db.metrics().levels.iter().map(|l| l.bytes).sum()
}

/// Bug 9: obsolete tables are deleted when their last reader lets go, not at the next open.
#[test]
fn bug9_obsolete_tables_go_when_the_last_reader_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let v = vec![b'v'; 100];
    let write_round = |r: u8| {
        for i in 0..5000u32 {
            let mut val = v.clone();
            val[0] = r;
            db.put(format!("k{i:06}").as_bytes(), &val).unwrap();
        }
    };
    write_round(0);
    let snap = db.snapshot();
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    for r in 1..4 {
        write_round(r);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // Readers still hold the old tables: they stay, and still read round 0.
    it.seek(b"k000100");
    assert_eq!(it.value()[0], 0);
    let snap_read = db
        .get_opt(
            b"k000100",
            &ReadOptions {
                snapshot: Some(&snap),
                ..Default::default()
            },
        )
        .unwrap()
        .unwrap();
    assert_eq!(snap_read[0], 0);
    drop(it);
    drop(snap);
    db.wait_for_background_work().unwrap();
    let (on_disk, live) = (table_bytes(dir.path()), live_bytes(&db));
    assert_eq!(
        on_disk, live,
        "directory holds {on_disk} table bytes for {live} live bytes"
    );
}

/// Corrupt-input bounds: a key shorter than its trailer never panics in the key helpers.
#[test]
fn short_internal_keys_do_not_panic() {
    assert_eq!(sluice::key::parse_internal_key(b"abc"), None);
    assert_eq!(sluice::key::user_key(b"abc"), b"");
    assert_eq!(sluice::key::trailer(b"abc"), 0);
}

/// Bug 9, without any reader: the inputs of a manual compaction are gone when it returns.
#[test]
fn bug9_compaction_inputs_are_deleted_when_no_reader_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let v = vec![b'v'; 100];
    for r in 0..4u8 {
        for i in 0..5000u32 {
            let mut val = v.clone();
            val[0] = r;
            db.put(format!("k{i:06}").as_bytes(), &val).unwrap();
        }
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let (on_disk, live) = (table_bytes(dir.path()), live_bytes(&db));
    assert_eq!(
        on_disk, live,
        "directory holds {on_disk} table bytes for {live} live bytes"
    );
}

/// Issue 12, bug 1 (engine side): a read-only open writes nothing (no flush of the WAL, no new
/// MANIFEST/OPTIONS/WAL, no deletion) and sees the unflushed writes; the persisted options load
/// back, so a tool's open keeps the Db's compression instead of resetting it.
#[test]
fn read_only_open_writes_nothing_and_options_load_back() {
    let fs = MemFs::new();
    let opts = Options {
        compression_per_level: [sluice::CompressionType::Zstd; 7],
        write_buffer_size: 1 << 20,
        ..mem_opts(&fs)
    };
    let db = Db::open("/db", opts).unwrap();
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    db.put(b"b", b"2").unwrap(); // only in the WAL
    let before: Vec<(String, Vec<u8>)> = {
        let mut names = fs.list(Path::new("/db")).unwrap();
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let data = fs.read_raw(&Path::new("/db").join(&n)).unwrap();
                (n, data)
            })
            .collect()
    };
    let ro = Db::open_read_only("/db", mem_opts(&fs)).unwrap();
    assert_eq!(ro.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(ro.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert!(ro.put(b"c", b"3").is_err());
    assert!(ro.flush().is_err());
    assert!(ro.compact_range(None, None).is_err());
    drop(ro);
    let after: Vec<(String, Vec<u8>)> = {
        let mut names = fs.list(Path::new("/db")).unwrap();
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let data = fs.read_raw(&Path::new("/db").join(&n)).unwrap();
                (n, data)
            })
            .collect()
    };
    assert_eq!(before, after, "a read-only open changed the directory");
    let loaded = Options::load_latest(Path::new("/db"), mem_opts(&fs)).unwrap();
    assert_eq!(
        loaded.compression_per_level,
        [sluice::CompressionType::Zstd; 7]
    );
    assert_eq!(loaded.write_buffer_size, 1 << 20);
    drop(db);
    assert!(Db::open_read_only("/nothing-here", mem_opts(&fs)).is_err());
}

/// CI found it (sluice-import's kill -9 test): an open killed between pointing `CURRENT` at its
/// new MANIFEST and writing that MANIFEST's OPTIONS file left a Db that `load_latest` — and so
/// every tool and import — refused with "OPTIONS-N: not found". The OPTIONS file now comes first.
#[test]
fn crash_while_opening_never_leaves_current_without_its_options_file() {
    let fs = MemFs::new();
    let mut opts = mem_opts(&fs);
    opts.write_buffer_size = 3 << 20;
    let db = Db::open("/db", opts.clone()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    drop(db);
    // The next open fails where it creates its OPTIONS file, then the machine loses power.
    fs.set_faults(sluice::fs::FaultConfig {
        fail_create_containing: Some("OPTIONS".into()),
        ..Default::default()
    });
    assert!(Db::open("/db", opts.clone()).is_err());
    fs.set_faults(Default::default());
    fs.crash(None);
    let loaded = Options::load_latest(Path::new("/db"), mem_opts(&fs)).unwrap();
    assert_eq!(loaded.write_buffer_size, 3 << 20);
    let db = Db::open("/db", loaded).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(db);
    // A Db with no OPTIONS file at all (an older version's crash in its first open): the
    // caller's options, as `Db::open` would use them — not a refusal.
    for name in fs.list(Path::new("/db")).unwrap() {
        if name.starts_with("OPTIONS-") {
            fs.remove(&Path::new("/db").join(name)).unwrap();
        }
    }
    let loaded = Options::load_latest(Path::new("/db"), mem_opts(&fs)).unwrap();
    assert_eq!(loaded.write_buffer_size, mem_opts(&fs).write_buffer_size);
}
