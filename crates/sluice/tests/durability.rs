//! Crash safety: simulated power loss over the fault-injecting file system, a real SIGKILL of a
//! writer process, corruption reporting, and the read-only state after a failed sync.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use sluice::fs::{FaultConfig, MemFs};
use sluice::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};

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
                disable_wal: false
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
    let db = Db::open(&dir, opts).unwrap();
    let mut out = std::io::stdout().lock();
    for i in 0u64.. {
        let mut wb = WriteBatch::new();
        wb.put(format!("key{i:08}").as_bytes(), &i.to_le_bytes().repeat(8));
        db.write(
            wb,
            WriteOptions {
                sync: true,
                disable_wal: false,
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
    for round in 0..3 {
        let stop_after: u64 = rng.gen_range(50..1500);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sigkill_child_writer",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("SLUICE_SIGKILL_CHILD_DIR", tmp.path())
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
        let db = Db::open(tmp.path(), Options::default()).unwrap();
        for i in &acked {
            let v = db.get(format!("key{i:08}").as_bytes()).unwrap();
            assert_eq!(
                v,
                Some(i.to_le_bytes().repeat(8)),
                "round {round}: acknowledged key {i} lost"
            );
        }
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
    }
}
