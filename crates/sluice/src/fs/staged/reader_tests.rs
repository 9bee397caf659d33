//! Tests of a reader of a ring: a live writer's undrained bytes, a crashed one's, a copy's,
//! and a reader racing a busy writer whose WALs switch under it.

use super::super::{
    DIR_AT, HEADER, MAGIC, VERSION, W_BASE, W_DRAINED, W_ID, W_MAGIC, W_PUBLISHED, W_RING,
    W_VERSION, W_WAL,
};
use super::*;
use crate::fs::staged::{recover, WalStage, MARKER};
use crate::fs::{FileSystem, RealFs};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

std::thread_local! {
    /// Runs in [`read_undrained`] between its copy of the ring and its second look: a writer
    /// and drainer moving at exactly that moment.
    pub(super) static BETWEEN_LOOKS: std::cell::RefCell<Option<Box<dyn FnMut()>>> =
        const { std::cell::RefCell::new(None) };
}

/// Record `i` of a stream: distinct bytes, 1 to 300 of them.
fn record(i: usize) -> Vec<u8> {
    let len = (i * 7919) % 300 + 1;
    (0..len).map(|j| (i * 31 + j) as u8).collect()
}

fn wal_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.log"))
}

/// What a read-only open reads: the overlay first, then the WALs present, in order, each
/// read whole after the listing, the overlay laid over its own.
fn read_as_a_reader(db: &Path, shm: &Path) -> (Vec<u8>, usize) {
    let overlay = read_undrained(db, shm).unwrap();
    let mut wals: Vec<u64> = std::fs::read_dir(db)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    wals.sort_unstable();
    let mut all = Vec::new();
    for w in wals {
        let mut data = std::fs::read(wal_path(db, w)).unwrap();
        if let Some(o) = overlay.as_ref().filter(|o| o.wal_number == w) {
            o.apply(&mut data).unwrap();
        }
        all.extend_from_slice(&data);
    }
    (all, overlay.map_or(0, |o| o.bytes.len()))
}

#[test]
fn a_reader_gets_a_live_writers_undrained_bytes_and_changes_nothing() {
    let (db, shm) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let stage = WalStage::create(db.path(), shm.path(), 1024).unwrap();
    let ring = stage.path().unwrap().to_path_buf();
    let wal = wal_path(db.path(), 9);
    let mut f = stage.wrap(RealFs.create(&wal).unwrap(), 9).unwrap();
    let mut want = Vec::new();
    for i in 0..10 {
        f.write_all(&record(i)).unwrap();
        want.extend_from_slice(&record(i));
    }
    f.sync().unwrap();
    stage.pause(true);
    // Acknowledged, not drained, and wrapping past the ring's start.
    for i in 10..14 {
        f.write_all(&record(i)).unwrap();
        f.flush().unwrap();
        want.extend_from_slice(&record(i));
    }
    let on_disk = std::fs::read(&wal).unwrap();
    assert!(on_disk.len() < want.len());
    let ring_bytes = std::fs::read(&ring).unwrap();
    let (got, overlaid) = read_as_a_reader(db.path(), shm.path());
    assert_eq!(got, want);
    assert_eq!(overlaid, want.len() - on_disk.len());
    // Nothing was written, drained or removed by the reader.
    assert_eq!(std::fs::read(&wal).unwrap(), on_disk);
    assert_eq!(std::fs::read(&ring).unwrap(), ring_bytes);
    assert!(db.path().join(MARKER).exists());
    // A crashed writer's ring reads the same, and recovery still finds all of it.
    drop(f);
    stage.crash();
    assert_eq!(read_as_a_reader(db.path(), shm.path()).0, want);
    assert!(ring.exists());
    recover(db.path(), shm.path(), |n| wal_path(db.path(), n)).unwrap();
    assert_eq!(std::fs::read(&wal).unwrap(), want);
    assert_eq!(read_undrained(db.path(), shm.path()).unwrap(), None);
}

#[test]
fn a_live_ring_of_another_directory_is_not_read() {
    let (db, shm) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let copy = tempfile::tempdir().unwrap();
    let stage = WalStage::create(db.path(), shm.path(), 4096).unwrap();
    let mut f = stage
        .wrap(RealFs.create(&wal_path(db.path(), 2)).unwrap(), 2)
        .unwrap();
    stage.pause(true);
    f.write_all(b"the original's").unwrap();
    f.flush().unwrap();
    std::fs::copy(db.path().join(MARKER), copy.path().join(MARKER)).unwrap();
    assert_eq!(read_undrained(copy.path(), shm.path()).unwrap(), None);
    let mine = read_undrained(db.path(), shm.path()).unwrap().unwrap();
    assert_eq!((mine.wal_number, mine.offset), (2, 0));
    assert_eq!(mine.bytes, b"the original's");
    stage.pause(false);
    drop(f);
    stage.close().unwrap();
}

#[test]
fn a_wal_shorter_than_what_was_drained_is_refused() {
    let mut o = Overlay {
        wal_number: 1,
        offset: 10,
        bytes: b"abc".to_vec(),
        foreign: false,
    };
    let mut short = vec![0u8; 4];
    assert!(o.apply(&mut short).unwrap_err().contains("holds 4"));
    let mut partly = vec![7u8; 11];
    o.apply(&mut partly).unwrap();
    assert_eq!(partly, [&[7u8; 10][..], b"abc"].concat());
    let mut longer = vec![7u8; 20];
    o.apply(&mut longer).unwrap();
    assert_eq!(
        longer,
        vec![7u8; 20],
        "a file that has the bytes is left alone"
    );
    // A ring made for another directory (this Db a copy taken before its original's crash):
    // a WAL shorter than what was drained is read as it is.
    o.foreign = true;
    o.apply(&mut short).unwrap();
    assert_eq!(short, vec![0u8; 4]);
}

/// The reader's promise under a race: whatever it reads is a prefix of the stream, and holds
/// every byte acknowledged before it started, while the writer writes, the drainer drains, and
/// the WAL switches under it.
#[test]
fn a_reader_racing_a_busy_writer_reads_every_acknowledged_byte_and_no_more() {
    let (db, shm) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // A small ring: the writer laps it often, so overwritten bytes are common.
    let stage = Arc::new(WalStage::create(db.path(), shm.path(), 2048).unwrap());
    let acked = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let n = 30_000;
    let writer = {
        let (stage, acked, done) = (Arc::clone(&stage), Arc::clone(&acked), Arc::clone(&done));
        let dir = db.path().to_path_buf();
        std::thread::spawn(move || {
            let mut total = 0u64;
            let mut wal = 1;
            let mut f = stage
                .wrap(RealFs.create(&wal_path(&dir, wal)).unwrap(), wal)
                .unwrap();
            for i in 0..n {
                if i % 4000 == 3999 {
                    wal += 1;
                    f = stage
                        .wrap(RealFs.create(&wal_path(&dir, wal)).unwrap(), wal)
                        .unwrap();
                }
                let r = record(i);
                f.write_all(&r).unwrap();
                f.flush().unwrap();
                total += r.len() as u64;
                acked.store(total, Ordering::SeqCst);
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let mut want = Vec::new();
    let mut next = 0;
    let (mut reads, mut overlaid) = (0, 0);
    loop {
        let finished = done.load(Ordering::SeqCst);
        let before = acked.load(Ordering::SeqCst) as usize;
        let (got, o) = read_as_a_reader(db.path(), shm.path());
        while want.len() < got.len() && next < n {
            want.extend_from_slice(&record(next));
            next += 1;
        }
        assert!(
            got.len() >= before,
            "read {} bytes, {before} were acknowledged before",
            got.len()
        );
        assert!(got[..] == want[..got.len()], "not a prefix of the stream");
        reads += 1;
        overlaid += usize::from(o > 0);
        if finished {
            break;
        }
    }
    writer.join().unwrap();
    eprintln!("{reads} reads, {overlaid} with bytes from the ring");
    Arc::try_unwrap(stage).ok().unwrap().close().unwrap();
}

/// The one rule that makes the copy safe: bytes before the second look's `drained` may have
/// been overwritten while they were copied, and the WAL file has them; they are not used.
#[test]
fn bytes_overwritten_during_the_copy_are_taken_from_the_wal_not_the_ring() {
    use super::super::{NAME_PREFIX, W_DIR_LEN};
    use std::os::unix::fs::FileExt;
    let (db, shm) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let stream: Vec<u8> = (0..100u8).collect();
    // A crashed-looking ring of 64 bytes: WAL 1 from ring offset 0, 60 bytes published,
    // none drained; the ring holds them.
    let name = format!("{NAME_PREFIX}{:016x}", 5);
    let mut bytes = vec![0u8; HEADER + 64];
    let dir = std::fs::canonicalize(db.path()).unwrap();
    let d = dir.as_os_str().as_encoded_bytes();
    let words = [
        (W_MAGIC, MAGIC),
        (W_VERSION, VERSION),
        (W_PUBLISHED, 60),
        (W_DRAINED, 0),
    ];
    let words = words
        .into_iter()
        .chain([(W_WAL, 1), (W_BASE, 0), (W_RING, 64), (W_ID, 5)]);
    for (i, w) in words.chain([(W_DIR_LEN, d.len() as u64)]) {
        bytes[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    bytes[DIR_AT..DIR_AT + d.len()].copy_from_slice(d);
    bytes[HEADER..HEADER + 60].copy_from_slice(&stream[..60]);
    let ring = shm.path().join(&name);
    std::fs::write(&ring, bytes).unwrap();
    std::fs::write(db.path().join(MARKER), &name).unwrap();
    let wal = wal_path(db.path(), 1);
    std::fs::write(&wal, b"").unwrap();
    // While the reader copies: the drainer writes 40 bytes to the WAL, the writer publishes
    // 40 more, over ring offsets 60..64 and 0..36 (bytes the reader copied as 0..36).
    let (w, r) = (wal.clone(), ring.clone());
    let s = stream.clone();
    BETWEEN_LOOKS.with(|h| {
        *h.borrow_mut() = Some(Box::new(move || {
            std::fs::write(&w, &s[..40]).unwrap();
            let f = std::fs::OpenOptions::new().write(true).open(&r).unwrap();
            f.write_all_at(&s[60..64], (HEADER + 60) as u64).unwrap();
            f.write_all_at(&s[64..100], HEADER as u64).unwrap();
            f.write_all_at(&100u64.to_le_bytes(), 8 * W_PUBLISHED as u64)
                .unwrap();
            f.write_all_at(&40u64.to_le_bytes(), 8 * W_DRAINED as u64)
                .unwrap();
        }))
    });
    let o = read_undrained(db.path(), shm.path()).unwrap().unwrap();
    BETWEEN_LOOKS.with(|h| h.borrow_mut().take());
    assert_eq!((o.wal_number, o.offset), (1, 40));
    assert_eq!(o.bytes, &stream[40..60]);
    let mut data = std::fs::read(&wal).unwrap();
    o.apply(&mut data).unwrap();
    assert_eq!(data, &stream[..60]);
}
