//! Tests of the WAL stage: order across ring wraps, syncs, sticky failures, crash recovery,
//! foreign and corrupt rings. The in-memory ring runs under Miri (`scripts/miri.sh`).

use super::*;
use proptest::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;

/// A file in memory: what reached it, how many syncs, and a byte count after which every
/// write fails (EIO).
#[derive(Clone, Default)]
struct Sink {
    bytes: Arc<Mutex<Vec<u8>>>,
    synced: Arc<Mutex<Vec<usize>>>,
    fail_after: Arc<AtomicUsize>,
}

impl Sink {
    fn new() -> Sink {
        let s = Sink::default();
        s.fail_after.store(usize::MAX, Ordering::SeqCst);
        s
    }
    fn bytes(&self) -> Vec<u8> {
        self.bytes.lock().clone()
    }
}

impl Write for Sink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut b = self.bytes.lock();
        if b.len() + data.len() > self.fail_after.load(Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(5));
        }
        b.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl WritableFile for Sink {
    fn sync(&mut self) -> io::Result<()> {
        let n = self.bytes.lock().len();
        self.synced.lock().push(n);
        Ok(())
    }
}

/// Records `i` of a run: distinct bytes, lengths up to `max`.
fn record(i: usize, max: usize) -> Vec<u8> {
    let len = (i * 7919) % max + 1;
    (0..len).map(|j| (i * 31 + j) as u8).collect()
}

fn write_record(f: &mut Box<dyn WritableFile>, r: &[u8]) -> io::Result<()> {
    f.write_all(r)?;
    f.flush()
}

/// Waits until the drainer wrote `n` bytes to `sink` (a wait, not a timing check: it fails
/// only if they never arrive).
fn wait_for(sink: &Sink, n: usize) {
    for _ in 0..200_000 {
        if sink.bytes.lock().len() >= n {
            return;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    panic!("the drainer never wrote {n} bytes");
}

#[test]
fn ring_every_byte_reaches_the_file_in_order_across_wraps() {
    // A tiny ring: records wrap around it, and some are larger than all of it.
    let stage = WalStage::in_memory(256);
    let sink = Sink::new();
    let mut f = stage.wrap(Box::new(sink.clone()), 7).unwrap();
    let n = if cfg!(miri) { 40 } else { 3000 };
    let mut want = Vec::new();
    for i in 0..n {
        let r = record(i, 700);
        write_record(&mut f, &r).unwrap();
        want.extend_from_slice(&r);
    }
    wait_for(&sink, want.len());
    assert_eq!(sink.bytes(), want);
}

#[test]
fn ring_sync_drains_then_syncs_the_file() {
    let stage = WalStage::in_memory(4096);
    stage.pause(true); // only the sync may write the file
    let sink = Sink::new();
    let mut f = stage.wrap(Box::new(sink.clone()), 1).unwrap();
    write_record(&mut f, b"first").unwrap();
    write_record(&mut f, b"second").unwrap();
    assert!(sink.bytes().is_empty(), "the paused drainer wrote");
    f.sync().unwrap();
    assert_eq!(sink.bytes(), b"firstsecond");
    assert_eq!(*sink.synced.lock(), vec![11], "synced after the drain");
    let h = f.sync_handle();
    assert!(h.is_none(), "a sink has no handle of its own");
}

#[test]
fn ring_new_wal_gets_none_of_the_old_ones_bytes_and_the_old_handle_stops() {
    let stage = WalStage::in_memory(4096);
    stage.pause(true);
    let (a, b) = (Sink::new(), Sink::new());
    let mut fa = stage.wrap(Box::new(a.clone()), 1).unwrap();
    write_record(&mut fa, b"old").unwrap();
    // Published but not drained: the switch writes it to the old file first (invariant 3).
    let mut fb = stage.wrap(Box::new(b.clone()), 2).unwrap();
    assert_eq!(a.bytes(), b"old");
    write_record(&mut fb, b"new").unwrap();
    fb.sync().unwrap();
    assert_eq!(b.bytes(), b"new");
    assert_eq!(a.bytes(), b"old");
    assert!(fa.sync().is_err(), "the old WAL's handle still syncs");
}

#[test]
fn ring_failed_write_is_sticky_and_every_later_call_fails() {
    let stage = WalStage::in_memory(64);
    let sink = Sink::new();
    sink.fail_after.store(100, Ordering::SeqCst);
    let mut f = stage.wrap(Box::new(sink.clone()), 1).unwrap();
    let mut failed = None;
    for i in 0..1000 {
        if let Err(e) = write_record(&mut f, &[i as u8; 30]).and_then(|()| f.sync()) {
            failed = Some((i, e));
            break;
        }
    }
    let (i, e) = failed.expect("the write behind the stage failed and nobody heard");
    assert!(i <= 4, "failure reported only after record {i}");
    assert!(e.to_string().contains("os error 5"), "{e}");
    assert!(write_record(&mut f, b"more").is_err());
    assert!(f.sync().is_err());
    assert!(sink.bytes().len() <= 100);
}

fn tmp_dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap())
}

/// A WAL file in `dir` and its writable handle (a plain file: the drainer's target).
fn wal_file(dir: &Path, n: u64) -> (PathBuf, Box<dyn WritableFile>) {
    let p = dir.join(format!("{n:06}.log"));
    (p.clone(), super::super::RealFs.create(&p).unwrap())
}

use super::super::FileSystem;

#[test]
fn recovery_writes_what_a_crashed_drainer_left_and_removes_the_ring() {
    let (db, shm) = tmp_dirs();
    let stage = WalStage::create(db.path(), shm.path(), 1024).unwrap();
    let ring = stage.path().unwrap().to_path_buf();
    let (wal, file) = wal_file(db.path(), 9);
    let mut f = stage.wrap(file, 9).unwrap();
    let mut want = Vec::new();
    for i in 0..40 {
        let r = record(i, 50);
        write_record(&mut f, &r).unwrap();
        want.extend_from_slice(&r);
    }
    f.sync().unwrap();
    // Acknowledged, never drained: the ring wraps past its start with these.
    stage.pause(true);
    for i in 40..60 {
        let r = record(i, 50);
        write_record(&mut f, &r).unwrap();
        want.extend_from_slice(&r);
    }
    drop(f);
    stage.crash();
    assert!(std::fs::read(&wal).unwrap().len() < want.len());
    assert!(ring.exists() && db.path().join(MARKER).exists());
    let got = recover(db.path(), shm.path(), |n| {
        db.path().join(format!("{n:06}.log"))
    })
    .unwrap();
    let got = got.expect("a marker was there");
    assert_eq!(got.wal_number, 9);
    assert!(got.bytes > 0);
    assert_eq!(std::fs::read(&wal).unwrap(), want);
    assert!(!ring.exists() && !db.path().join(MARKER).exists());
    // Nothing left: a second recovery finds no marker.
    assert!(recover(db.path(), shm.path(), |_| unreachable!())
        .unwrap()
        .is_none());
}

#[test]
fn a_clean_close_drains_everything_and_removes_ring_and_marker() {
    let (db, shm) = tmp_dirs();
    let stage = WalStage::create(db.path(), shm.path(), 4096).unwrap();
    let ring = stage.path().unwrap().to_path_buf();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&ring).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the ring is readable by other users");
    }
    let (wal, file) = wal_file(db.path(), 3);
    let mut f = stage.wrap(file, 3).unwrap();
    write_record(&mut f, b"kept").unwrap();
    stage.close().unwrap();
    assert_eq!(std::fs::read(&wal).unwrap(), b"kept");
    assert!(!ring.exists() && !db.path().join(MARKER).exists());
    assert!(f.sync().is_err(), "a handle syncs after its stage closed");
}

/// A stage whose 16 acknowledged bytes for WAL 4 (an empty file) failed to drain.
fn a_stage_whose_drain_failed() -> (tempfile::TempDir, tempfile::TempDir, WalStage, PathBuf) {
    let (db, shm) = tmp_dirs();
    let stage = WalStage::create(db.path(), shm.path(), 4096).unwrap();
    let wal = db.path().join("000004.log");
    std::fs::write(&wal, b"").unwrap();
    let sink = Sink::new();
    sink.fail_after.store(10, Ordering::SeqCst);
    let mut f = stage.wrap(Box::new(sink.clone()), 4).unwrap();
    write_record(&mut f, b"0123456789abcdef").unwrap();
    assert!(f.sync().is_err());
    drop(f);
    (db, shm, stage, wal)
}

#[test]
fn a_failed_drain_keeps_the_ring_for_the_next_open() {
    let (db, shm, stage, wal) = a_stage_whose_drain_failed();
    let ring = stage.path().unwrap().to_path_buf();
    assert!(
        stage.close().is_err(),
        "a close that left bytes in the ring reported success"
    );
    drop(stage);
    assert!(
        ring.exists(),
        "the ring holding unwritten bytes was removed"
    );
    let got = recover(db.path(), shm.path(), |n| {
        db.path().join(format!("{n:06}.log"))
    })
    .unwrap();
    assert_eq!(got.unwrap().bytes, 16);
    assert_eq!(std::fs::read(&wal).unwrap(), b"0123456789abcdef");
}

/// A child forked while the Db was open shares the ring's open file (and its lock) until it
/// execs. After a close whose drain failed, the next open must still find the ring unlocked
/// and write its bytes to the WAL, not take it for a live copy's.
#[test]
fn a_ring_kept_at_close_is_recovered_while_a_child_shares_its_file() {
    let (db, shm, stage, wal) = a_stage_whose_drain_failed();
    let Backing::Mapped(_, ring_file) = &stage.shared.region._backing else {
        unreachable!("a stage on a real directory maps its ring")
    };
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .stdin(std::process::Stdio::from(ring_file.try_clone().unwrap()))
        .spawn()
        .unwrap();
    assert!(stage.close().is_err());
    drop(stage);
    let got = recover(db.path(), shm.path(), |n| {
        db.path().join(format!("{n:06}.log"))
    });
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        got.unwrap().map(|r| r.bytes),
        Some(16),
        "the kept ring was skipped"
    );
    assert_eq!(std::fs::read(&wal).unwrap(), b"0123456789abcdef");
}

#[test]
fn a_copied_dbs_marker_leaves_the_original_ring_alone() {
    let (db, shm) = tmp_dirs();
    let copy = tempfile::tempdir().unwrap();
    let stage = WalStage::create(db.path(), shm.path(), 4096).unwrap();
    let ring = stage.path().unwrap().to_path_buf();
    std::fs::copy(db.path().join(MARKER), copy.path().join(MARKER)).unwrap();
    let got = recover(copy.path(), shm.path(), |_| unreachable!()).unwrap();
    assert!(got.is_none());
    assert!(ring.exists());
    assert!(!copy.path().join(MARKER).exists());
    drop(stage);
    assert!(!ring.exists());
}

#[test]
fn a_marker_whose_ring_is_gone_is_removed() {
    let (db, shm) = tmp_dirs();
    std::fs::write(db.path().join(MARKER), format!("{NAME_PREFIX}{:016x}", 123)).unwrap();
    let got = recover(db.path(), shm.path(), |_| unreachable!()).unwrap();
    assert_eq!(got, Some(Recovered::default()));
    assert!(!db.path().join(MARKER).exists());
}

#[test]
fn a_corrupt_marker_is_an_error_naming_it() {
    let (db, shm) = tmp_dirs();
    std::fs::write(db.path().join(MARKER), "../../etc/passwd").unwrap();
    match recover(db.path(), shm.path(), |_| unreachable!()) {
        Err(StageError::Corrupt(p, 0, _)) => assert_eq!(p, db.path().join(MARKER)),
        other => panic!("{other:?}"),
    }
}

/// A ring file holding `header` words (then zeros; id 9, matching its name) for the Db in
/// `db`.
fn fake_ring(db: &Path, shm: &Path, words: &[u64], len: usize) -> PathBuf {
    let name = format!("{NAME_PREFIX}{:016x}", 9);
    let mut bytes = vec![0u8; len];
    for (i, w) in words.iter().enumerate() {
        bytes[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    if len >= 8 * W_ID + 8 {
        bytes[8 * W_ID..8 * W_ID + 8].copy_from_slice(&9u64.to_le_bytes());
    }
    let dir = std::fs::canonicalize(db).unwrap();
    let d = dir.as_os_str().as_encoded_bytes();
    if len >= DIR_AT + d.len() {
        bytes[DIR_AT..DIR_AT + d.len()].copy_from_slice(d);
        if words.len() <= W_DIR_LEN && len >= DIR_AT {
            bytes[8 * W_DIR_LEN..8 * W_DIR_LEN + 8]
                .copy_from_slice(&(d.len() as u64).to_le_bytes());
        }
    }
    let p = shm.join(&name);
    std::fs::write(&p, bytes).unwrap();
    std::fs::write(db.join(MARKER), name).unwrap();
    p
}

#[test]
fn inconsistent_offsets_are_corruption_at_their_offset() {
    let (db, shm) = tmp_dirs();
    // published 10 < drained 20.
    fake_ring(
        db.path(),
        shm.path(),
        &[MAGIC, VERSION, 10, 20, 1, 0, 64],
        HEADER + 64,
    );
    match recover(db.path(), shm.path(), |_| unreachable!()) {
        Err(StageError::Corrupt(_, 16, why)) => assert!(why.contains("published 10"), "{why}"),
        other => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 64 }))]

    /// Any header bytes: recovery answers (an error or a write inside the WAL's range),
    /// never panics, and never writes more than a ring's worth.
    #[test]
    fn any_ring_header_is_answered_without_panic(
        words in proptest::collection::vec(any::<u64>(), 0..8),
        magic_ok in any::<bool>(),
        small in 0u64..200,
        ring in 1usize..256,
    ) {
        let (db, shm) = tmp_dirs();
        let mut words = words;
        if magic_ok {
            let mut w = vec![MAGIC, VERSION, small + 50, 50, 1, small % 60, ring as u64];
            w.truncate(words.len().max(2));
            words = w;
        }
        fake_ring(db.path(), shm.path(), &words, HEADER + ring);
        let wal = db.path().join("000001.log");
        std::fs::write(&wal, [7u8; 50]).unwrap();
        let r = recover(db.path(), shm.path(), |n| db.path().join(format!("{n:06}.log")));
        let len = std::fs::metadata(&wal).unwrap().len();
        match r {
            Ok(Some(rec)) => prop_assert!(rec.bytes <= ring as u64 && len <= 50 + ring as u64),
            Ok(None) => prop_assert!(false, "an unlocked ring was taken for a live one"),
            Err(StageError::Corrupt(..)) => prop_assert_eq!(len, 50),
            Err(StageError::Io(p, e)) => prop_assert!(false, "io error {}: {}", p.display(), e),
        }
    }
}

#[test]
fn a_ring_whose_db_directory_is_gone_is_swept_and_no_other() {
    let shm = tempfile::tempdir().unwrap();
    let gone = tempfile::tempdir().unwrap();
    let live = tempfile::tempdir().unwrap();
    let crashed = WalStage::create(gone.path(), shm.path(), 4096).unwrap();
    let orphan = crashed.path().unwrap().to_path_buf();
    crashed.crash();
    let alive = WalStage::create(live.path(), shm.path(), 4096).unwrap();
    let alive_ring = alive.path().unwrap().to_path_buf();
    let foreign = shm.path().join("not-ours");
    std::fs::write(&foreign, b"x").unwrap();
    drop(gone);
    // The next stage made here sweeps: the orphan goes, the live ring and foreign files stay.
    let other = tempfile::tempdir().unwrap();
    let next = WalStage::create(other.path(), shm.path(), 4096).unwrap();
    assert!(!orphan.exists(), "the orphaned ring was kept");
    assert!(alive_ring.exists() && foreign.exists());
    drop(next);
    drop(alive);
}

/// Rings whose creation never finished (a process killed inside `WalStage::create`, before
/// the header): the sweep removes those unlocked and unchanged for over a minute whose magic
/// (the header's last store) is zero — empty, sized, with the Db path copied in, or with
/// some header words stored — and leaves a fresh one (its maker may be about to lock it), a
/// locked one, and one with its magic stored.
#[cfg(unix)]
#[test]
fn the_sweep_removes_rings_whose_creation_never_finished() {
    let shm = tempfile::tempdir().unwrap();
    let old = std::time::SystemTime::now() - 2 * recovery::UNFINISHED_RING_AGE;
    let ring = |name: &str, bytes: &[u8], modified: std::time::SystemTime| {
        let path = shm.path().join(format!("{NAME_PREFIX}{name}"));
        std::fs::write(&path, bytes).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_modified(modified).unwrap();
        (path, f)
    };
    let zeros = vec![0u8; HEADER + 4096];
    let (empty, _) = ring("00000000000000e0", &[], old);
    let (sized, _) = ring("00000000000000e1", &zeros, old);
    let (fresh, _) = ring("00000000000000e2", &zeros, std::time::SystemTime::now());
    let (locked, held) = ring("00000000000000e3", &zeros, old);
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    let mut path_only = zeros.clone();
    path_only[DIR_AT] = b'/';
    let (partly, _) = ring("00000000000000e4", &path_only, old);
    let mut some_words = path_only.clone();
    some_words[8 * W_ID..8 * W_ID + 8].copy_from_slice(&7u64.to_le_bytes());
    let (half_header, _) = ring("00000000000000e6", &some_words, old);
    let mut headed = zeros.clone();
    headed[..8].copy_from_slice(&MAGIC.to_le_bytes());
    let (with_header, _) = ring("00000000000000e5", &headed, old);
    let db = tempfile::tempdir().unwrap();
    let stage = WalStage::create(db.path(), shm.path(), 4096).unwrap();
    assert!(!empty.exists(), "an empty unfinished ring was kept");
    assert!(!sized.exists(), "a sized unfinished ring was kept");
    assert!(fresh.exists(), "a ring made just now was removed");
    assert!(locked.exists(), "a locked ring was removed");
    assert!(
        !partly.exists(),
        "a ring with only its Db path written was kept"
    );
    assert!(!half_header.exists(), "a ring with half a header was kept");
    assert!(
        with_header.exists(),
        "a ring with its magic stored was removed"
    );
    drop(stage);
    drop(held);
}

/// A stage for the Db in `db` whose writer was killed with the 12-byte record
/// `acknowledged` of WAL 5 still in its ring (the drainer paused); returns the ring's path.
fn crashed_with_undrained_record(db: &Path, shm: &Path) -> PathBuf {
    let stage = WalStage::create(db, shm, 4096).unwrap();
    let ring = stage.path().unwrap().to_path_buf();
    let (_, file) = wal_file(db, 5);
    let mut f = stage.wrap(file, 5).unwrap();
    stage.pause(true);
    write_record(&mut f, b"acknowledged").unwrap();
    drop(f);
    stage.crash();
    ring
}

#[test]
fn a_crashed_dbs_copy_gets_its_tail_and_the_original_keeps_its_ring() {
    let (db, shm) = tmp_dirs();
    let copy = tempfile::tempdir().unwrap();
    let ring = crashed_with_undrained_record(db.path(), shm.path());
    for name in [MARKER, "000005.log"] {
        std::fs::copy(db.path().join(name), copy.path().join(name)).unwrap();
    }
    let wal_of = |d: &Path| {
        let d = d.to_path_buf();
        move |n: u64| d.join(format!("{n:06}.log"))
    };
    // The copy replays the same history: it gets the tail, the ring stays for the original.
    let got = recover(copy.path(), shm.path(), wal_of(copy.path())).unwrap();
    assert_eq!(got.unwrap().bytes, 12);
    assert_eq!(
        std::fs::read(copy.path().join("000005.log")).unwrap(),
        b"acknowledged"
    );
    assert!(ring.exists());
    let got = recover(db.path(), shm.path(), wal_of(db.path())).unwrap();
    assert_eq!(got.unwrap().bytes, 12);
    assert_eq!(
        std::fs::read(db.path().join("000005.log")).unwrap(),
        b"acknowledged"
    );
    assert!(!ring.exists());
}

/// A crashed Db's directory moved (renamed) before it is opened again: the same directory by
/// device and inode, another path. Another Db's orphan sweep leaves the ring (undrained
/// bytes), and recovery writes the tail and removes the ring as its own (by path it was taken
/// for a copy's, and left to the orphan sweep).
#[test]
fn a_crashed_db_moved_elsewhere_recovers_and_removes_its_ring() {
    let (db, shm) = tmp_dirs();
    let ring = crashed_with_undrained_record(db.path(), shm.path());
    let moved = db.path().with_extension("moved");
    std::fs::rename(db.path(), &moved).unwrap();
    // Another Db's stage sweeps first: the ring's recorded path is gone, but it holds
    // undrained bytes, so it stays.
    let other = tempfile::tempdir().unwrap();
    drop(WalStage::create(other.path(), shm.path(), 4096).unwrap());
    let kept = ring.exists();
    let wal = |n: u64| moved.join(format!("{n:06}.log"));
    let got = recover(&moved, shm.path(), wal);
    let _ = std::fs::rename(&moved, db.path());
    assert!(
        kept,
        "the sweep removed a moved Db's ring with undrained bytes"
    );
    assert_eq!(got.unwrap().unwrap().bytes, 12);
    assert_eq!(
        std::fs::read(db.path().join("000005.log")).unwrap(),
        b"acknowledged"
    );
    assert!(!ring.exists(), "the moved Db's own ring was left behind");
}

#[test]
fn undrained_bytes_for_a_missing_or_short_wal_are_an_error() {
    let (db, shm) = tmp_dirs();
    // published 60, drained 50, WAL 1, base 0: ten bytes for the first 50 of WAL 1.
    let words = [MAGIC, VERSION, 60, 50, 1, 0, 64];
    fake_ring(db.path(), shm.path(), &words, HEADER + 64);
    let wal = |n: u64| PathBuf::from(format!("/nonexistent-sluice-test/{n:06}.log"));
    match recover(db.path(), shm.path(), wal) {
        Err(StageError::Corrupt(_, 32, why)) => assert!(why.contains("gone"), "{why}"),
        other => panic!("{other:?}"),
    }
    std::fs::write(db.path().join("000001.log"), [1u8; 20]).unwrap();
    let wal = |n: u64| db.path().join(format!("{n:06}.log"));
    match recover(db.path(), shm.path(), wal) {
        Err(StageError::Corrupt(_, 24, why)) => assert!(why.contains("holds 20"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        std::fs::read(db.path().join("000001.log")).unwrap(),
        [1u8; 20]
    );
}

#[test]
fn a_fifo_or_symlink_in_the_rings_place_is_not_ours_and_blocks_nothing() {
    let (db, shm) = tmp_dirs();
    let fifo = shm.path().join(format!("{NAME_PREFIX}{:016x}", 1));
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let link = shm.path().join(format!("{NAME_PREFIX}{:016x}", 2));
    std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
    for planted in [&fifo, &link] {
        let name = planted.file_name().unwrap().as_encoded_bytes();
        std::fs::write(db.path().join(MARKER), name).unwrap();
        assert_eq!(
            recover(db.path(), shm.path(), |_| unreachable!()).unwrap(),
            Some(Recovered::default()),
            "{}",
            planted.display()
        );
    }
    // The sweep of a new stage passes both by.
    let stage = WalStage::create(db.path(), shm.path(), 4096).unwrap();
    assert!(fifo.exists() && link.symlink_metadata().is_ok());
    drop(stage);
}
