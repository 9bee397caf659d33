//! Opening an existing Db: recovery never hands out a number a file on disk has, an open killed
//! midway leaves a Db the next open and the tools read, and a read-only open writes nothing.

use std::path::Path;
use std::sync::Arc;

use sluice::fs::{FileSystem, MemFs};
use sluice::{Db, IngestOptions, Options, WriteBatch};

mod common;
use common::{external_sst, mem_opts, scan_all, sync};

/// Every file in `/db` with its bytes, by name.
fn files_in_db(fs: &MemFs) -> Vec<(String, Vec<u8>)> {
    let mut names = fs.list(Path::new("/db")).unwrap();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let data = fs.read_raw(&Path::new("/db").join(&n)).unwrap();
            (n, data)
        })
        .collect()
}

/// A crash after an ingest linked its file but before its MANIFEST edit: recovery never hands
/// that file's number out again, and never truncates the file (it may be a link to the user's
/// file).
#[test]
fn recovery_never_reuses_the_number_of_a_linked_file() {
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
    let src = external_sst(&fs, "user.sst", &[("x", "1"), ("y", "2")], &[]);
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

/// An open killed after pointing `CURRENT` at its new MANIFEST never leaves that MANIFEST
/// without its OPTIONS file, which `Options::load_latest` — and so every tool and import —
/// needs: the OPTIONS file is written first. A Db with no OPTIONS file at all loads the
/// caller's options.
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

/// A read-only open writes nothing (no flush of the WAL, no new MANIFEST/OPTIONS/WAL, no
/// deletion) and sees the unflushed writes; the persisted options load back, so a tool's open
/// keeps the Db's compression instead of resetting it.
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
    let before = files_in_db(&fs);
    let ro = Db::open_read_only("/db", mem_opts(&fs)).unwrap();
    assert_eq!(ro.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(ro.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert!(ro.put(b"c", b"3").is_err());
    assert!(ro.flush().is_err());
    assert!(ro.compact_range(None, None).is_err());
    drop(ro);
    let after = files_in_db(&fs);
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

/// A read-only open beside a writer that flushes all the time sees every write acknowledged
/// before it began: a flush that finishes while the open reads deletes a WAL whose writes are
/// in a table the open's version lacks, so the open holds every WAL before it reads the
/// MANIFEST (read through the handle after the delete).
#[test]
fn read_only_opens_beside_a_flushing_writer_see_every_acknowledged_write() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let fs = MemFs::new();
    // Compactions run beside the views (L0 compacts at 2 files) and delete their inputs: the
    // views hold their tables open, so their reads still find them.
    let opts = Options {
        l0_compaction_trigger: 2,
        ..mem_opts(&fs)
    };
    let db = Arc::new(Db::open("/db", opts).unwrap());
    let key = |i: u64| format!("k{i:08}").into_bytes();
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (Arc::clone(&db), Arc::clone(&acked), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::SeqCst) {
                db.put(&key(i), &i.to_le_bytes()).unwrap();
                i += 1;
                acked.store(i, Ordering::SeqCst);
                if i.is_multiple_of(16) {
                    db.flush().unwrap();
                }
            }
        })
    };
    for round in 0..200 {
        let n = acked.load(Ordering::SeqCst);
        let ro = Db::open_read_only("/db", mem_opts(&fs)).unwrap();
        for i in n.saturating_sub(64)..n {
            assert_eq!(
                ro.get(&key(i)).unwrap(),
                Some(i.to_le_bytes().to_vec()),
                "round {round}: key {i} of the {n} acknowledged before the open"
            );
        }
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
}

/// A Db in `fs` at `/db` and a thread running `step(db, fs, n)` for n = 0, 1, … below `max`
/// until the returned flag is set; returns the Db, the flag and the thread.
fn writer_loop(
    fs: &MemFs,
    max: u32,
    step: impl Fn(&Db, &MemFs, u32) + Send + 'static,
) -> (
    Arc<Db>,
    Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<()>,
) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let db = Arc::new(Db::open("/db", mem_opts(fs)).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop, fs) = (Arc::clone(&db), Arc::clone(&stop), fs.clone());
        std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(Ordering::SeqCst) && n < max {
                step(&db, &fs, n);
                n += 1;
            }
        })
    };
    (db, stop, writer)
}

/// A read-only open never shows a write without an ingest acknowledged before it: an ingest
/// installed while the open reads the WALs (only a MANIFEST edit, nothing in the WAL) would
/// otherwise be missing under a put the open replayed from its WAL.
#[test]
fn read_only_opens_beside_ingests_never_show_a_put_without_the_ingest_before_it() {
    use std::sync::atomic::Ordering;
    let fs = MemFs::new();
    let (_db, stop, writer) = writer_loop(&fs, 5000, |db, fs, n| {
        // `x` is ingested again and again: each file overlaps the last one, so it takes a
        // global seqno above every write before it.
        let v = format!("{n:06}");
        let f = external_sst(fs, &format!("x{n}.sst"), &[("x", &v)], &[]);
        db.ingest(&[f], &IngestOptions::default()).unwrap();
        db.put(b"p", v.as_bytes()).unwrap();
    });
    let mut checked = 0;
    // Views until 300 have been checked with a put in them, or the writer is done and one has
    // (a view opens in well under a millisecond: a fixed number of rounds can end before the
    // first put).
    let mut round = 0;
    while checked < 300 && round < 100_000 && (checked == 0 || !writer.is_finished()) {
        round += 1;
        let ro = Db::open_read_only("/db", mem_opts(&fs)).unwrap();
        // The view holds its tables: one compacted away under it still reads.
        let (p, x) = (ro.get(b"p").unwrap(), ro.get(b"x").unwrap());
        if p.is_none() {
            continue;
        }
        checked += 1;
        assert!(
            p <= x,
            "round {round}: the put {p:?} without the ingest acknowledged before it (x = {x:?})"
        );
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    assert!(checked > 0, "no view held a put");
}

/// The install marker, deterministically: a read-only open whose MANIFEST read ended before an
/// ingest's edit (here: the MANIFEST put back as it was before the ingest) replays the writes
/// before the ingest and stops at its marker, so the put acknowledged after the ingest is not
/// shown without it; with the whole MANIFEST it shows all three, as recovery does.
#[test]
fn a_read_only_view_stops_at_the_marker_of_an_ingest_its_manifest_read_missed() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    db.write(
        {
            let mut b = WriteBatch::new();
            b.put(b"a", b"before");
            b
        },
        sync(),
    )
    .unwrap();
    let manifest = |fs: &MemFs| {
        let name = fs
            .list(Path::new("/db"))
            .unwrap()
            .into_iter()
            .find(|n| n.starts_with("MANIFEST-"))
            .unwrap();
        Path::new("/db").join(name)
    };
    let before = fs.read_raw(&manifest(&fs)).unwrap();
    // Nothing in memory overlaps `x`: the version path, a MANIFEST edit and its marker.
    let f = external_sst(&fs, "x.sst", &[("x", "ingested")], &[]);
    let placed = db.ingest(&[f], &IngestOptions::default()).unwrap();
    assert!(placed[0].level.is_some());
    assert!(fs.read_raw(&manifest(&fs)).unwrap().len() > before.len());
    db.write(
        {
            let mut b = WriteBatch::new();
            b.put(b"b", b"after");
            b
        },
        sync(),
    )
    .unwrap();
    let whole = fs.crashed_copy(None);
    let cut = fs.crashed_copy(None);
    cut.write_raw(&manifest(&cut), before);
    drop(db);
    let get = |db: &Db, k: &[u8]| db.get(k).unwrap().map(|v| String::from_utf8(v).unwrap());

    let ro = Db::open_read_only("/db", mem_opts(&cut)).unwrap();
    assert_eq!(get(&ro, b"a").as_deref(), Some("before"));
    assert_eq!(get(&ro, b"x"), None, "the MANIFEST read missed the ingest");
    assert_eq!(
        get(&ro, b"b"),
        None,
        "a put acknowledged after an ingest the view lacks"
    );

    let ro = Db::open_read_only("/db", mem_opts(&whole)).unwrap();
    assert_eq!(get(&ro, b"a").as_deref(), Some("before"));
    assert_eq!(get(&ro, b"x").as_deref(), Some("ingested"));
    assert_eq!(get(&ro, b"b").as_deref(), Some("after"));
    drop(ro);
    // Recovery passes over the marker.
    let db = Db::open("/db", mem_opts(&whole)).unwrap();
    assert_eq!(get(&db, b"x").as_deref(), Some("ingested"));
    assert_eq!(get(&db, b"b").as_deref(), Some("after"));
}

/// As above with ingests of new keys (nothing overlaps them: global seqno 0) between puts:
/// a view that shows the put made after the n-th ingest shows ingests 0..=n too.
#[test]
fn read_only_opens_beside_seqno_zero_ingests_never_show_a_later_put_without_them() {
    use std::sync::atomic::Ordering;
    let fs = MemFs::new();
    let (_db, stop, writer) = writer_loop(&fs, 1000, |db, fs, n| {
        let k = format!("x{n:06}");
        let f = external_sst(fs, &format!("x{n}.sst"), &[(&k, "i")], &[]);
        let placed = db.ingest(&[f], &IngestOptions::default()).unwrap();
        assert_eq!(placed[0].seqno, 0, "a new key's ingest overlaps nothing");
        db.put(b"p", format!("{n:06}").as_bytes()).unwrap();
    });
    let mut checked = 0;
    // Views until 100 have been checked with a put in them, or the writer is done (as above).
    let mut round = 0;
    while checked < 100 && round < 100_000 && (checked == 0 || !writer.is_finished()) {
        round += 1;
        let ro = Db::open_read_only("/db", mem_opts(&fs)).unwrap();
        let Ok(Some(p)) = ro.get(b"p") else {
            continue;
        };
        let m: u32 = String::from_utf8(p).unwrap().parse().unwrap();
        for j in (0..=m).rev().take(64) {
            match ro.get(format!("x{j:06}").as_bytes()) {
                Ok(v) => assert!(
                    v.is_some(),
                    "round {round}: put after ingest {m} shown, ingest {j} not"
                ),
                Err(_) => break,
            }
        }
        checked += 1;
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    assert!(checked > 0);
}

/// The table files in `dir`, by name.
fn table_names(fs: &dyn FileSystem, dir: &Path) -> Vec<String> {
    let mut t: Vec<String> = fs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect();
    t.sort();
    t
}

/// A read-only view holds its table files from its open on: the writer beside it overwrites
/// and deletes every key, compacts the whole range (deleting every table the view was opened
/// with) before the view's first read, and the view still reads, by get and by scan, exactly
/// the Db as of its open; a view opened after that sees the new state.
fn a_read_only_view_keeps_its_tables_through_compactions(opts: impl Fn() -> Options, dir: &Path) {
    let key = |i: u32| format!("k{i:05}").into_bytes();
    // No compaction before the view opens (it would leave fewer tables to lose).
    let quiet = Options {
        l0_compaction_trigger: 1000,
        l0_slowdown_writes_trigger: 1000,
        l0_stop_writes_trigger: 1000,
        ..opts()
    };
    let db = Db::open(dir, quiet).unwrap();
    for round in 0..4u32 {
        for i in (round..2000).step_by(4) {
            db.put(&key(i), format!("old{i}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
    }
    // Some of the view's keys only in its memtable (the writer's WAL).
    for i in 2000..2100 {
        db.put(&key(i), format!("old{i}").as_bytes()).unwrap();
    }
    let fs = Arc::clone(&opts().fs);
    let before = table_names(&*fs, dir);
    assert!(before.len() >= 4, "{before:?}");
    // The view reads nothing before the compaction (a read would open and cache the tables).
    let view = Db::open_read_only(dir, opts()).unwrap();
    let seen: Vec<(Vec<u8>, Vec<u8>)> = (0..2100)
        .map(|i| (key(i), format!("old{i}").into_bytes()))
        .collect();
    for i in 0..2100 {
        if i % 2 == 0 {
            db.delete(&key(i)).unwrap();
        } else {
            db.put(&key(i), b"new").unwrap();
        }
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let after = table_names(&*fs, dir);
    assert!(
        before.iter().all(|t| !after.contains(t)),
        "every table the view opened with was compacted away: {before:?} -> {after:?}"
    );
    assert_eq!(scan_all(&view), seen, "the view's scan changed under it");
    for i in (0..2100).step_by(7) {
        assert_eq!(
            view.get(&key(i)).unwrap(),
            Some(format!("old{i}").into_bytes()),
            "key {i} through the view"
        );
    }
    let fresh = Db::open_read_only(dir, opts()).unwrap();
    assert_eq!(fresh.get(&key(0)).unwrap(), None);
    assert_eq!(fresh.get(&key(1)).unwrap(), Some(b"new".to_vec()));
    assert_eq!(scan_all(&fresh).len(), 1050);
}

#[test]
fn a_read_only_view_keeps_its_tables_through_compactions_in_memory() {
    let fs = MemFs::new();
    a_read_only_view_keeps_its_tables_through_compactions(|| mem_opts(&fs), Path::new("/db"));
}

#[test]
fn a_read_only_view_keeps_its_tables_through_compactions_on_disk() {
    let tmp = tempfile::tempdir().unwrap();
    a_read_only_view_keeps_its_tables_through_compactions(Options::default, &tmp.path().join("db"));
}

/// A table that is really gone (not compacted: lost) does not stop a read-only open, as it
/// does not stop a writable one: one round later the view opens without holding it, reads
/// of other tables work and a read of its keys fails naming it.
#[test]
fn a_read_only_view_opens_beside_a_lost_table() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    db.put(b"b", b"2").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let tables = table_names(&fs, Path::new("/db"));
    assert_eq!(tables.len(), 2, "{tables:?}");
    // The older table holds `a`.
    fs.remove(&Path::new("/db").join(&tables[0])).unwrap();
    let ro = Db::open_read_only("/db", mem_opts(&fs)).unwrap();
    assert_eq!(ro.get(b"b").unwrap(), Some(b"2".to_vec()));
    let err = ro.get(b"a").unwrap_err().to_string();
    assert!(err.contains(&tables[0]), "{err}");
}

/// A view of a Db with more tables than it holds (`max_open_files` 16: it holds 12) reads
/// everything: the held tables through their handles, the rest opened by name, within the
/// table cache's bound for them (4), again and again as a scan and gets go round.
#[test]
fn a_read_only_view_past_its_table_budget_reads_everything() {
    let fs = MemFs::new();
    let opts = || Options {
        max_open_files: 16,
        l0_compaction_trigger: 1000,
        l0_slowdown_writes_trigger: 1000,
        l0_stop_writes_trigger: 1000,
        ..mem_opts(&fs)
    };
    let db = Db::open("/db", opts()).unwrap();
    for t in 0..30u32 {
        for i in 0..20u32 {
            db.put(format!("k{:04}", i * 30 + t).as_bytes(), &t.to_le_bytes())
                .unwrap();
        }
        db.flush().unwrap();
    }
    let want = scan_all(&db);
    assert_eq!(want.len(), 600);
    let ro = Db::open_read_only("/db", opts()).unwrap();
    for _ in 0..3 {
        assert_eq!(scan_all(&ro), want);
        for (k, v) in want.iter().step_by(7) {
            assert_eq!(ro.get(k).unwrap().as_ref(), Some(v));
        }
    }
}
