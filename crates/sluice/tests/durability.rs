//! Crash safety: simulated power loss over the fault-injecting file system, a real SIGKILL of a
//! writer process, corruption reporting and torn WAL tails, what is synced before an edit
//! names it (ingested files, earlier writes), failed MANIFEST syncs, and the read-only state
//! after a failed sync.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use sluice::fs::{FaultConfig, FileSystem, MemFs};
use sluice::{Db, Error, IngestOptions, Options, ReadOptions, WriteBatch, WriteOptions};

mod common;
use common::{external_sst, mem_opts, sst_bytes, sync};

fn options(fs: &MemFs) -> Options {
    Options {
        write_buffer_size: 16 << 10,
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 32 << 10,
        target_file_size: 16 << 10,
        block_size: 512,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn batch_key(b: u64, j: u64) -> Vec<u8> {
    format!("b{b:06}-{j:02}").into_bytes()
}

/// Every batch writes its own keys, so presence tells exactly which batches survived.
fn crash_once(seed: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let fs = MemFs::new();
    let dir = Path::new("/crash");
    let db = Db::open(dir, options(&fs)).unwrap();
    let batches = rng.gen_range(50..600u64);
    let mut last_synced: Option<u64> = None;
    let mut sizes = Vec::new();
    for b in 0..batches {
        let n = rng.gen_range(1..8u64);
        let mut wb = WriteBatch::new();
        for j in 0..n {
            wb.put(&batch_key(b, j), &vec![b as u8; rng.gen_range(10..200)]);
        }
        let sync = rng.gen_bool(0.3);
        db.write(
            wb,
            WriteOptions {
                sync,
                disable_wal: false,
                ..Default::default()
            },
        )
        .unwrap();
        if sync {
            last_synced = Some(b);
        }
        sizes.push(n);
        if rng.gen_bool(0.02) {
            db.flush().unwrap();
        }
    }
    // Power loss now: keep only synced bytes (and a torn prefix of the rest).
    let crashed = fs.crashed_copy(Some(seed));
    drop(db);
    let db = Db::open(dir, options(&crashed))
        .unwrap_or_else(|e| panic!("seed {seed}: reopen failed: {e}"));
    let mut present_batches = Vec::new();
    for (b, &n) in sizes.iter().enumerate() {
        let b = b as u64;
        let present: Vec<bool> = (0..n)
            .map(|j| db.get(&batch_key(b, j)).unwrap().is_some())
            .collect();
        assert!(
            present.iter().all(|&p| p) || present.iter().all(|&p| !p),
            "seed {seed}: batch {b} half applied: {present:?}"
        );
        if present[0] {
            present_batches.push(b);
        }
    }
    if let Some(s) = last_synced {
        assert!(
            present_batches.len() as u64 > s,
            "seed {seed}: synced batch {s} lost ({} present)",
            present_batches.len()
        );
    }
    // What survives is a prefix of the acknowledged writes.
    for (i, b) in present_batches.iter().enumerate() {
        assert_eq!(
            *b, i as u64,
            "seed {seed}: surviving batches are not a prefix"
        );
    }
    // And the reopened database keeps working.
    db.put(b"after-crash", b"ok").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(b"after-crash").unwrap().as_deref(), Some(&b"ok"[..]));
}

#[test]
fn simulated_power_loss_keeps_synced_batches_and_atomicity() {
    let rounds: u64 = std::env::var("SLUICE_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    for seed in 0..rounds {
        crash_once(seed);
    }
}

#[test]
fn failed_fsync_puts_the_db_in_read_only_error_state() {
    let fs = MemFs::new();
    let dir = Path::new("/ro");
    let db = Db::open(dir, options(&fs)).unwrap();
    db.put(b"a", b"1").unwrap();
    fs.set_faults(FaultConfig {
        fail_syncs: true,
        ..Default::default()
    });
    let e = db.flush().unwrap_err();
    assert!(e.to_string().contains("fsync failed"), "{e}");
    let e = db.put(b"b", b"2").unwrap_err();
    assert!(
        matches!(&e, Error::Poisoned(m) if m.contains("fsync failed")),
        "{e:?}"
    );
    // Reads still work.
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert!(db.metrics().background_error.is_some());
    drop(db);
    // After the fault clears, a reopen recovers every acknowledged write from the WAL.
    fs.set_faults(FaultConfig::default());
    let db = Db::open(dir, options(&fs)).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
}

#[test]
fn failed_write_of_a_sync_batch_is_reported_not_acknowledged() {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/full"), options(&fs)).unwrap();
    fs.set_faults(FaultConfig {
        fail_writes_after_bytes: Some(0),
        ..Default::default()
    });
    let mut wb = WriteBatch::new();
    wb.put(b"k", b"v");
    assert!(db
        .write(
            wb,
            WriteOptions {
                sync: true,
                disable_wal: false,
                ..Default::default()
            }
        )
        .is_err());
    assert_eq!(
        db.get(b"k").unwrap(),
        None,
        "a failed write must not become visible"
    );
}

#[test]
fn corruption_in_the_middle_of_a_wal_names_file_and_offset() {
    let fs = MemFs::new();
    let dir = Path::new("/walcorrupt");
    {
        let opts = Options {
            write_buffer_size: 1 << 20,
            ..options(&fs)
        };
        let db = Db::open(dir, opts).unwrap();
        for i in 0..2000u32 {
            let mut wb = WriteBatch::new();
            wb.put(format!("key{i:05}").as_bytes(), &[7u8; 40]);
            db.write(
                wb,
                WriteOptions {
                    sync: true,
                    disable_wal: false,
                    ..Default::default()
                },
            )
            .unwrap();
        }
        // Leave the WAL unflushed: forget the handle without a clean flush.
        std::mem::forget(db);
    }
    let crashed = fs.crashed_copy(None);
    let wal = crashed_list(&crashed, dir)
        .into_iter()
        .find(|n| n.ends_with(".log"))
        .expect("a WAL");
    let path = dir.join(&wal);
    let mut bytes = crashed.read_raw(&path).unwrap();
    assert!(bytes.len() > 40_000, "WAL should span several blocks");
    bytes[100] ^= 0xff;
    crashed.write_raw(&path, bytes);
    match Db::open(dir, options(&crashed)) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, path);
            // Records are 70 bytes (7 header + 12 batch header + 1 kind + 1+8 key + 1+40
            // value): byte 100 lies in the second record, which starts at 70.
            assert_eq!(offset, 70, "the damaged record is named");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

fn crashed_list(fs: &MemFs, dir: &Path) -> Vec<String> {
    use sluice::fs::FileSystem;
    fs.list(dir).unwrap()
}

/// Child side of the SIGKILL test: writes synced keys forever, printing each acknowledgement.
#[test]
fn sigkill_child_writer() {
    let Ok(dir) = std::env::var("SLUICE_SIGKILL_CHILD_DIR") else {
        return;
    };
    let opts = Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    // Unsynced writes survive a process crash too: the page cache (or /dev/shm) outlives the
    // process, written through write(2), through a mapping, or into the WAL stage's ring.
    let sync = std::env::var("SLUICE_SIGKILL_SYNC").as_deref() != Ok("0");
    let mode = std::env::var("SLUICE_SIGKILL_WAL").unwrap_or_default();
    let opts = Options {
        wal_mmap_writes: mode == "mmap",
        wal_staging: mode == "staged",
        ..opts
    };
    // Keys of their own per round: a write lost in this round cannot read back as an earlier
    // round's.
    let round = std::env::var("SLUICE_SIGKILL_ROUND").unwrap_or_default();
    let db = Db::open(&dir, opts).unwrap();
    let mut out = std::io::stdout().lock();
    for i in 0u64.. {
        let mut wb = WriteBatch::new();
        wb.put(
            format!("r{round}key{i:08}").as_bytes(),
            &i.to_le_bytes().repeat(8),
        );
        db.write(
            wb,
            WriteOptions {
                sync,
                disable_wal: false,
                ..Default::default()
            },
        )
        .unwrap();
        use std::io::Write;
        writeln!(out, "ack {i}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn sigkill_at_a_random_moment_loses_no_acknowledged_write() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(
        std::env::var("SLUICE_SIGKILL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(7),
    );
    let tmp = tempfile::tempdir().unwrap();
    for round in 0..6 {
        let stop_after: u64 = rng.gen_range(50..1500);
        let sync = if round % 2 == 0 { "1" } else { "0" };
        let wal = ["staged", "direct", "mmap"][round / 2];
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sigkill_child_writer",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("SLUICE_SIGKILL_CHILD_DIR", tmp.path())
            .env("SLUICE_SIGKILL_SYNC", sync)
            .env("SLUICE_SIGKILL_WAL", wal)
            .env("SLUICE_SIGKILL_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut acked: BTreeSet<u64> = BTreeSet::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if let Some(n) = line.strip_prefix("ack ") {
                acked.insert(n.trim().parse().unwrap());
                if [1, 2, 3]
                    .map(|q| stop_after * q / 4)
                    .contains(&(acked.len() as u64))
                {
                    // Beside the live writer (another process, flushing every 64 KiB).
                    read_only_sees_acked(
                        tmp.path(),
                        round,
                        &acked,
                        &format!("round {round}, live"),
                    );
                }
                if acked.len() as u64 >= stop_after {
                    child.kill().unwrap(); // SIGKILL
                    break;
                }
            }
        }
        child.wait().unwrap();
        assert!(
            !acked.is_empty(),
            "round {round}: child acknowledged nothing"
        );
        // A read-only open of the killed writer's Db sees it all too, and changes nothing.
        let ro = Db::open_read_only(tmp.path(), Options::default()).unwrap();
        assert_acked(&ro, round, &acked, &format!("round {round}, writer killed"));
        drop(ro);
        let db = Db::open(
            tmp.path(),
            Options {
                wal_staging: true,
                ..Options::default()
            },
        )
        .unwrap();
        assert_acked(&db, round, &acked, &format!("round {round}"));
        let it_count = {
            let mut it = db.iter(ReadOptions::default()).unwrap();
            it.seek_to_first();
            let mut n = 0;
            while it.valid() {
                n += 1;
                it.next();
            }
            n
        };
        assert!(it_count >= acked.len(), "round {round}");
        drop(db);
        assert!(
            !tmp.path().join("WAL-STAGE").exists(),
            "round {round}: a clean close left the WAL stage's marker"
        );
    }
}

/// Every key of round `round` in `acked` reads back with the child writer's value.
fn assert_acked(db: &Db, round: usize, acked: &BTreeSet<u64>, what: &str) {
    for i in acked {
        let v = db.get(format!("r{round}key{i:08}").as_bytes()).unwrap();
        assert_eq!(
            v,
            Some(i.to_le_bytes().repeat(8)),
            "{what}: acknowledged key {i} lost"
        );
    }
}

/// A read-only open beside a live writer sees every key in `acked`: the view holds its tables,
/// so a compaction of the live writer's that deletes them takes nothing from it.
fn read_only_sees_acked(dir: &Path, round: usize, acked: &BTreeSet<u64>, what: &str) {
    let ro = Db::open_read_only(dir, Options::default()).unwrap();
    for i in acked {
        let v = ro
            .get(format!("r{round}key{i:08}").as_bytes())
            .unwrap_or_else(|e| panic!("{what}: key {i}: {e}"));
        assert_eq!(
            v,
            Some(i.to_le_bytes().repeat(8)),
            "{what}: acknowledged key {i} not seen by a read-only open"
        );
    }
}

fn put_sync(db: &Db, k: &[u8], v: &[u8]) {
    let mut b = WriteBatch::new();
    b.put(k, v);
    db.write(b, sync()).unwrap();
}

/// After a torn tail: the synced put of `first` is there, the lost one of `second` is not.
fn assert_only_first_survived(db: &Db) {
    assert_eq!(db.get(b"first").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"second").unwrap(), None);
}

/// Waits until a sync is held (`MemFs::hold_syncs_matching`), makes every sync fail, and lets
/// the held ones go.
fn fail_held_syncs(fs: &MemFs) {
    while fs.waiting_syncs() == 0 {
        std::thread::yield_now();
    }
    fs.set_faults(FaultConfig {
        fail_syncs: true,
        ..Default::default()
    });
    fs.release_syncs();
}

fn newest_wal(fs: &MemFs, dir: &str) -> PathBuf {
    let name = fs
        .list(Path::new(dir))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .max()
        .unwrap();
    Path::new(dir).join(name)
}

/// `FileSystem::create` over an existing name fails instead of truncating it (`MemFs` and
/// `RealFs`): the name may be a link to a user's file.
#[test]
fn creating_a_file_never_truncates_an_existing_one() {
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

/// A torn WAL tail whose lost record's payload contains log-framed bytes is dropped, not
/// reported as corruption in the middle.
#[test]
fn a_torn_tail_with_a_log_framed_payload_is_dropped() {
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
    let wal = newest_wal(&fs, "/db");
    let data = fs.read_raw(&wal).unwrap();
    let pos = data
        .windows(framed.len())
        .position(|w| w == framed.as_slice())
        .expect("embedded log present");
    fs.write_raw(&wal, data[..pos + framed.len() + 10].to_vec());
    let db = Db::open("/db", mem_opts(&fs)).expect("a torn tail is dropped, not an error");
    assert_only_first_survived(&db);
}

/// A flipped length field in a *synced* record of the last block, claiming bytes past the end
/// of the file, is corruption when complete, valid records follow it (policy 2 of
/// `wal/log.rs`): the open reports it, or every synced record reads back — the records after
/// the damage are never dropped silently as a torn tail.
#[test]
fn torn_tail_policy_does_not_hide_synced_records_after_a_corrupt_length() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    put_sync(&db, b"a", b"1");
    put_sync(&db, b"b", b"2");
    put_sync(&db, b"c", b"3");
    drop(db);
    let wal = newest_wal(&fs, "/db");
    let mut data = fs.read_raw(&wal).unwrap();
    assert!(data.len() > 30 && data.len() < 1000, "one small block");
    // The first record starts at 0: header = crc(4) len(2) type(1). Claim a length that still
    // fits the block but runs past the end of the file.
    let claimed = (data.len() + 100) as u16;
    data[4..6].copy_from_slice(&claimed.to_le_bytes());
    fs.write_raw(&wal, data);
    match Db::open("/db", mem_opts(&fs)) {
        Err(e) => {
            // Corruption in the middle reported: the policy works.
            assert!(matches!(e, sluice::Error::Corruption { .. }), "{e:?}");
        }
        Ok(db) => {
            let got: Vec<_> = [&b"a"[..], b"b", b"c"]
                .iter()
                .map(|k| db.get(k).unwrap())
                .collect();
            assert_eq!(
                got,
                vec![
                    Some(b"1".to_vec()),
                    Some(b"2".to_vec()),
                    Some(b"3".to_vec())
                ],
                "synced records b and c (complete and valid, after the damaged one) were \
                 dropped as a torn tail without any error"
            );
        }
    }
}

/// Opens a Db whose WAL ends in a record (a put of `second`) whose first page lost its rewrite
/// (zeros from the end of the synced first record to the page end), the rest surviving; the
/// value embeds a log-framed record when `embed`.
fn open_after_lost_header_page(embed: bool) -> (MemFs, sluice::Result<Db>) {
    // A log-framed record: the WAL of another Db.
    let other = MemFs::new();
    let db = Db::open("/o", mem_opts(&other)).unwrap();
    put_sync(&db, b"inner", &[7u8; 300]);
    drop(db);
    let framed = other.read_raw(&newest_wal(&other, "/o")).unwrap();

    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    put_sync(&db, b"first", b"1");
    let wal = newest_wal(&fs, "/db");
    let synced_len = fs.read_raw(&wal).unwrap().len();
    let mut value = vec![0u8; 6000];
    if embed {
        value.extend_from_slice(&framed);
    } else {
        value.extend(std::iter::repeat_n(0x5a, framed.len()));
    }
    value.extend_from_slice(&[0u8; 2000]);
    put_sync(&db, b"second", &value);
    drop(db);
    let mut data = fs.read_raw(&wal).unwrap();
    assert!(data.len() > 4096 + framed.len());
    for b in &mut data[synced_len..4096] {
        *b = 0;
    }
    fs.write_raw(&wal, data);
    let r = Db::open("/db", mem_opts(&fs));
    (fs, r)
}

/// A crash that lost only the rewrite of the page holding the last record's header (that page
/// keeps its synced content: the first record, then zeros), while the later pages of its
/// payload reached the disk, is a torn tail — also when the payload embeds a log-framed record,
/// which the probe for valid records after the damage must not take for one (it lies inside
/// the lost record itself).
#[test]
fn zero_filled_header_page_before_log_framed_payload_is_a_torn_tail() {
    // Control: the same damage without log-framed bytes in the value is a torn tail.
    let (_fs, r) = open_after_lost_header_page(false);
    let db = r.expect("control: plain payload");
    assert_only_first_survived(&db);
    drop(db);
    // With the embedded log, the probe must not take it for a record after the damage.
    let (_fs, r) = open_after_lost_header_page(true);
    let db =
        r.expect("a record whose header never reached the disk is a torn tail, not corruption");
    assert_only_first_survived(&db);
}

/// An ingest that survives a crash never survives without the writes acknowledged before it:
/// the WAL is synced before the ingest's edit.
#[test]
fn an_ingest_never_survives_a_crash_without_the_writes_before_it() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    db.put(b"a", b"unsynced-but-acknowledged").unwrap();
    let f = external_sst(&fs, "x.sst", &[("x", "1")], &[]);
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

/// With `link_files`, an ingest fsyncs the linked file before the MANIFEST edit names it (the
/// caller may never have synced it; RocksDB's ingestion job does the same): after a power loss
/// that follows the ingest, its keys read back.
#[test]
fn linked_ingest_syncs_the_file_before_the_manifest_names_it() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    put_sync(&db, b"a", b"1");
    // The caller wrote the file (e.g. RocksDB's SstFileWriter without sync) but did not fsync.
    let src = Path::new("/src/x.sst");
    let mut f = fs.create(src).unwrap();
    f.write_all(&sst_bytes(&[("x", "1"), ("y", "2")], &[]))
        .unwrap();
    drop(f);
    db.ingest(
        &[src],
        &IngestOptions {
            link_files: true,
            ..Default::default()
        },
    )
    .unwrap();
    // The ingest returned: it is durable. Power loss now.
    let image = fs.crashed_copy(None);
    drop(db);
    let db2 = Db::open("/db", mem_opts(&image)).unwrap();
    assert_eq!(db2.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    let x = db2.get(b"x");
    assert!(
        matches!(&x, Ok(Some(v)) if v == b"1"),
        "acknowledged ingest lost or unreadable after power loss: {x:?}"
    );
}

/// A failed MANIFEST sync does not mean the edit is not on disk (it was handed to the OS before
/// the sync failed): the failed ingest keeps the table the edit names, and the next open reads
/// the Db. RocksDB never deletes a file an edit that may be durable names.
#[test]
fn failed_manifest_sync_in_ingest_never_deletes_the_table_the_edit_names() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open("/db", mem_opts(&fs)).unwrap());
    put_sync(&db, b"a", b"1");
    fs.write_raw(Path::new("/src/x.sst"), sst_bytes(&[("x", "1")], &[]));
    fs.hold_syncs_matching("MANIFEST");
    let ingester = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || db.ingest(&["/src/x.sst"], &IngestOptions::default()))
    };
    fail_held_syncs(&fs);
    let r = ingester.join().unwrap();
    assert!(r.is_err(), "the MANIFEST sync failed");
    drop(Arc::try_unwrap(db).unwrap());
    fs.set_faults(FaultConfig::default());
    // Restart (the process exits on the error; the kernel still writes the page back).
    let db2 = Db::open("/db", mem_opts(&fs)).unwrap();
    assert_eq!(db2.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    let x = db2.get(b"x");
    assert!(
        matches!(&x, Ok(Some(_)) | Ok(None)),
        "the MANIFEST names a table the failed ingest deleted: {x:?}"
    );
}

/// The same in the flush path, with acknowledged synced writes: after a failed sync of the
/// flush's edit (its new table, `log_number` past the WAL), neither the flush nor the cleanup
/// after the background job deletes the table, so the writes survive the restart.
#[test]
fn failed_manifest_sync_in_flush_never_loses_synced_writes() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    for i in 0..100u32 {
        put_sync(&db, format!("k{i:03}").as_bytes(), b"synced");
    }
    fs.hold_syncs_matching("MANIFEST");
    let flusher = {
        let fs = fs.clone();
        std::thread::spawn(move || fail_held_syncs(&fs))
    };
    assert!(db.flush().is_err(), "the MANIFEST sync failed");
    flusher.join().unwrap();
    // Let the background worker run its post-job cleanup.
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(db);
    fs.set_faults(FaultConfig::default());
    let db2 = Db::open("/db", mem_opts(&fs)).unwrap();
    let got = db2.get(b"k050");
    assert!(
        matches!(&got, Ok(Some(v)) if v == b"synced"),
        "a synced, acknowledged write is lost after a failed MANIFEST sync: {got:?}"
    );
}

/// Without `wal_mmap_writes` (the default), a new WAL has a memtable's worth of blocks (and a tenth) reserved
/// while its size stays what was written: appends then need no block allocation, and recovery
/// reads no zeroes.
#[cfg(target_os = "linux")]
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
    use std::os::unix::fs::MetadataExt;
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

/// The WAL files in `dir`.
fn wal_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    v.sort();
    v
}

/// With `wal_mmap_writes`, the WAL is written through a mapping of its reserved
/// space: the file is that long while the Db runs, its tail zeros. A copy of the directory
/// taken while the Db runs (what a process crash leaves: the page cache holds every acknowledged
/// write) opens with every write, the zero tail read as the log's end. Writes that reach a
/// second WAL (a memtable switch: the old mapped WAL is unmapped and cut to its records)
/// survive a close and reopen.
#[cfg(target_os = "linux")]
#[test]
fn a_mapped_wal_survives_a_crash_copy_and_a_memtable_switch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let opts = || Options {
        write_buffer_size: 1 << 20,
        wal_mmap_writes: true,
        ..Options::default()
    };
    let db = Db::open(&path, opts()).unwrap();
    let value = |i: u32| format!("value {i}").repeat(1 + i as usize % 9).into_bytes();
    for i in 0..500u32 {
        db.put(format!("k{i:05}").as_bytes(), &value(i)).unwrap();
    }
    let wals = wal_files(&path);
    assert_eq!(wals.len(), 1, "{wals:?}");
    let reserved = std::fs::metadata(&wals[0]).unwrap().len();
    assert!(reserved >= (1 << 20) + (1 << 20) / 10, "{reserved} bytes");
    // A crash now: copy every file as the page cache holds it.
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(&path).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
        }
    }
    {
        let crashed = Db::open(&copy, opts()).unwrap();
        for i in 0..500u32 {
            assert_eq!(
                crashed.get(format!("k{i:05}").as_bytes()).unwrap(),
                Some(value(i)),
                "key {i}"
            );
        }
        crashed.close().unwrap();
    }
    // Fill the memtable until it switches to a new WAL.
    let before = wal_files(&path);
    let mut i = 500u32;
    while wal_files(&path) == before {
        db.put(format!("k{i:05}").as_bytes(), &value(i)).unwrap();
        i += 1;
    }
    db.close().unwrap();
    let db = Db::open(&path, opts()).unwrap();
    for j in (0..i).step_by(7) {
        assert_eq!(
            db.get(format!("k{j:05}").as_bytes()).unwrap(),
            Some(value(j))
        );
    }
    db.close().unwrap();
}
