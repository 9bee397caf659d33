//! Compaction as the directory sees it: L0 is picked by its sublevels before writes stop, and
//! the tables a compaction replaced leave the directory once no reader holds them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice::events::{CompactionKind, Event, EventListener};
use sluice::fs::MemFs;
use sluice::{Db, Options, ReadOptions};

mod common;
use common::{external_sst, get_at, live_bytes, mem_opts, scan_all, table_bytes};

/// The kind of every compaction begun.
#[derive(Default)]
struct Kinds(Mutex<Vec<CompactionKind>>);

impl EventListener for Kinds {
    fn on_event(&self, event: &Event) {
        if let Event::CompactionBegin(c) = event {
            self.0.lock().unwrap().push(c.kind);
        }
    }
}

/// Tables of 64 KiB: the 5,000 keys of a round fill several.
fn small_table_opts() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        ..Options::default()
    }
}

/// Writes keys `k000000`..`k004999`, each a 100-byte value starting with byte `r`.
fn write_round(db: &Db, r: u8) {
    let mut val = vec![b'v'; 100];
    val[0] = r;
    for i in 0..5000u32 {
        db.put(format!("k{i:06}").as_bytes(), &val).unwrap();
    }
}

/// L0 is scored by its sublevels, the measure the write stalls use: a staircase of flushes
/// (each file overlapping only its predecessor, at one shared key) adds a sublevel per file at
/// depth 2 everywhere, and is compacted before the sublevels reach `l0_stop_writes_trigger`,
/// so no write stalls with nothing picked.
#[test]
fn a_staircase_of_l0_files_is_compacted_before_writes_stop() {
    let fs = MemFs::new();
    let o = Options {
        l0_compaction_trigger: 4,
        l0_slowdown_writes_trigger: 4,
        l0_stop_writes_trigger: 5,
        ..mem_opts(&fs)
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

/// Tables a compaction replaced stay while an iterator and a snapshot read them, and leave the
/// directory when the last of them lets go, not at the next open.
#[test]
fn obsolete_tables_go_when_the_last_reader_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_table_opts()).unwrap();
    write_round(&db, 0);
    let snap = db.snapshot();
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    for r in 1..4 {
        write_round(&db, r);
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

/// Without any reader, the inputs of a manual compaction are gone when it returns.
#[test]
fn compaction_inputs_are_deleted_when_no_reader_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_table_opts()).unwrap();
    for r in 0..4u8 {
        write_round(&db, r);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let (on_disk, live) = (table_bytes(dir.path()), live_bytes(&db));
    assert_eq!(
        on_disk, live,
        "directory holds {on_disk} table bytes for {live} live bytes"
    );
}

/// While one long-lived snapshot keeps obsolete tables, only the reader that drops a version's
/// last reference purges (readers purging on every drop slowed point reads down: BENCHMARKS.md,
/// notes from earlier measurements). The old tables stay while the snapshot holds them, reads
/// stay right, and they go when it is dropped.
#[test]
fn obsolete_tables_held_by_an_old_snapshot_stay_until_it_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 16 << 10,
        target_file_size: 8 << 10,
        max_bytes_for_level_base: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let (old, new) = (vec![b'o'; 100], vec![b'n'; 100]);
    for i in 0..10_000u32 {
        db.put(format!("k{i:06}").as_bytes(), &old).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let snap = db.snapshot();
    for i in 0..10_000u32 {
        db.put(format!("k{i:06}").as_bytes(), &new).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in (0..10_000u32).step_by(97) {
        let k = format!("k{i:06}");
        assert_eq!(db.get(k.as_bytes()).unwrap().as_deref(), Some(&new[..]));
        let at_snap = get_at(&db, &snap, k.as_bytes());
        assert_eq!(at_snap.as_deref(), Some(&old[..]));
    }
    assert!(
        table_bytes(dir.path()) > live_bytes(&db),
        "the snapshot's tables must stay while it lives"
    );
    drop(snap);
    assert_eq!(
        table_bytes(dir.path()),
        live_bytes(&db),
        "dropping the snapshot frees its tables"
    );
}

/// Picker policy 7: small files ingested side by side into the bottom level (a columnar
/// table's appends add one per column each) stay as they are by default, and
/// `Db::merge_small_files` (which an import calls for its table) merges them there, in their
/// level, on the caller's thread; every key reads back, also after a reopen.
#[test]
fn small_files_ingested_side_by_side_are_merged_in_their_level() {
    let fs = MemFs::new();
    let kinds = Arc::new(Kinds::default());
    let mut o = Options {
        // Small files: under 4 KiB.
        target_file_size: 256 << 10,
        ..mem_opts(&fs)
    };
    o.listeners
        .push(Arc::clone(&kinds) as Arc<dyn EventListener>);
    let db = Db::open("/db", o.clone()).unwrap();
    let mut want = Vec::new();
    for i in 0..40 {
        let keys: Vec<String> = (0..3).map(|j| format!("k{i:03}-{j}")).collect();
        let puts: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), "v")).collect();
        let p = external_sst(&fs, &format!("in{i}.sst"), &puts, &[]);
        db.ingest(&[p], &sluice::IngestOptions::default()).unwrap();
        want.extend(keys.iter().map(|k| (k.as_bytes().to_vec(), b"v".to_vec())));
    }
    db.wait_for_background_work().unwrap();
    assert_eq!(
        db.metrics().levels[6].files,
        40,
        "merged with the policy off"
    );
    // Within their first key byte ("k"); a range holding none of them merges nothing.
    assert_eq!(db.merge_small_files(1, 1 << 20, b"a", b"b").unwrap(), 0);
    let merges = db.merge_small_files(1, 1 << 20, b"k", b"l").unwrap();
    assert!(merges > 0);
    let m = db.metrics();
    let files: Vec<usize> = m.levels.iter().map(|l| l.files).collect();
    assert_eq!(files[..6].iter().sum::<usize>(), 0, "{files:?}");
    assert!(
        files[6] < 40 / 4,
        "the 40 ingested files are still {} files",
        files[6]
    );
    assert_eq!(scan_all(&db), want);
    // Closed, every event was delivered: each merge was reported as what it is, not as a
    // level's due merge.
    db.close().unwrap();
    let begun = kinds.0.lock().unwrap().clone();
    assert_eq!(
        begun,
        vec![CompactionKind::SmallFiles; merges],
        "the compactions begun"
    );
    let db = Db::open("/db", o).unwrap();
    assert_eq!(scan_all(&db), want);
    assert_eq!(db.metrics().levels[6].files, files[6]);
}
