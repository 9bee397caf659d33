//! Tiered L0 over a large base level (the compaction picker's policy 6,
//! `Options::l0_tiering_ratio_pct`): wide L0 files merge among themselves while a memtable of
//! other keys holds older seqnos, and never where a memtable holds a key of their span.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::{external_sst, mem_opts};
use sluice::events::{CompactionInfo, CompactionKind, Event, EventListener};
use sluice::fs::MemFs;
use sluice::{Db, IngestOptions, Options, ReadOptions};

/// Keeps every compaction's begin event and counts flushes that ended.
#[derive(Default)]
struct Compactions {
    begun: Mutex<Vec<CompactionInfo>>,
    flushes: Mutex<usize>,
}

impl EventListener for Compactions {
    fn on_event(&self, event: &Event) {
        match event {
            Event::CompactionBegin(c) => self.begun.lock().unwrap().push(c.clone()),
            Event::FlushEnd(_) => *self.flushes.lock().unwrap() += 1,
            _ => {}
        }
    }
}

/// A memtable that never fills here, small tables, and the listener.
fn opts(fs: &MemFs, l: &Arc<Compactions>) -> Options {
    let mut o = Options {
        write_buffer_size: 4 << 20,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 1 << 20,
        l0_compaction_trigger: 4,
        ..mem_opts(fs)
    };
    o.listeners.push(Arc::clone(l) as Arc<dyn EventListener>);
    o
}

fn bkey(j: usize) -> String {
    format!("b{j:05}")
}

/// The base level: keys `b00000..b01999` with 100-byte values, ingested into an empty Db
/// (bottommost).
fn load_base(db: &Db, fs: &MemFs, model: &mut BTreeMap<String, String>) {
    let puts: Vec<(String, String)> = (0..2000)
        .map(|j| (bkey(j), format!("base-{j}-{}", "x".repeat(90))))
        .collect();
    let refs: Vec<(&str, &str)> = puts.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let p = external_sst(fs, "base.sst", &refs, &[]);
    db.ingest(&[p], &IngestOptions::default()).unwrap();
    model.extend(puts);
}

/// Ingests `keys` with the value `ing<i>-<key>` from a new external file `i<i>.sst`.
fn ingest(db: &Db, fs: &MemFs, i: usize, keys: &[usize], model: &mut BTreeMap<String, String>) {
    let puts: Vec<(String, String)> = keys
        .iter()
        .map(|&j| (bkey(j), format!("ing{i}-{j}")))
        .collect();
    let refs: Vec<(&str, &str)> = puts.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let p = external_sst(fs, &format!("i{i}.sst"), &refs, &[]);
    db.ingest(&[p], &IngestOptions::default()).unwrap();
    model.extend(puts);
}

fn put(db: &Db, k: &str, v: &str, model: &mut BTreeMap<String, String>) {
    db.put(k.as_bytes(), v.as_bytes()).unwrap();
    model.insert(k.into(), v.into());
}

/// Every key of the model reads back, by point reads and by one scan of the whole Db.
fn check(db: &Db, model: &BTreeMap<String, String>) {
    for (k, v) in model {
        let got = db.get(k.as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(v.as_bytes()), "get {k}");
    }
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut scanned = BTreeMap::new();
    while it.valid() {
        scanned.insert(
            String::from_utf8(it.key().to_vec()).unwrap(),
            String::from_utf8(it.value().to_vec()).unwrap(),
        );
        it.next();
    }
    it.status().unwrap();
    assert!(scanned == *model, "the scan differs from the model");
}

/// A Db with the base level loaded and one put of the writers' own range (`w0`) in its
/// memtable, whose seqno (returned) is below every later ingest's.
fn setup() -> (MemFs, Arc<Compactions>, Db, BTreeMap<String, String>, u64) {
    let fs = MemFs::new();
    let l = Arc::new(Compactions::default());
    let db = Db::open("/db", opts(&fs, &l)).unwrap();
    let mut model = BTreeMap::new();
    load_base(&db, &fs, &mut model);
    put(&db, "w0", "first", &mut model);
    let w0 = db.metrics().last_sequence;
    (fs, l, db, model, w0)
}

#[test]
fn wide_ingests_beside_a_memtable_of_other_keys_merge_in_l0_and_read_back_newest_first() {
    let (fs, l, db, mut model, w0) = setup();
    // Eight files spanning the base's keys, two per residue mod 4: the later file of a pair
    // overwrites the earlier one's keys.
    for i in 0..8 {
        let keys: Vec<usize> = (0..2000).filter(|j| j % 4 == i % 4).collect();
        ingest(&db, &fs, i, &keys, &mut model);
        put(&db, &format!("w{}", i + 1), "w", &mut model);
    }
    db.wait_for_background_work().unwrap();
    assert_eq!(*l.flushes.lock().unwrap(), 0, "the memtable was flushed");
    let begun = l.begun.lock().unwrap().clone();
    let intra: Vec<&CompactionInfo> = begun
        .iter()
        .filter(|c| c.kind == CompactionKind::IntraL0)
        .collect();
    assert!(!intra.is_empty(), "no intra-L0 compaction: {begun:?}");
    // Their inputs lie above the unflushed memtable's oldest entry (w0).
    assert!(
        intra
            .iter()
            .all(|c| c.inputs.iter().all(|f| f.largest_seqno > w0)),
        "w0 at {w0}: {intra:?}"
    );
    // The base level was not rewritten for every four files.
    let into_base = begun.iter().filter(|c| c.output_level != 0).count();
    assert!(into_base < 2, "{begun:?}");
    check(&db, &model);

    // Newer writes into the ingested range, then more wide ingests above them (flushable, as
    // the memtable overlaps them), a flush, and compactions.
    for j in (0..2000).step_by(7) {
        put(&db, &bkey(j), &format!("put-{j}"), &mut model);
    }
    for i in 8..12 {
        let keys: Vec<usize> = (0..2000).filter(|j| j % 3 == i % 3).collect();
        ingest(&db, &fs, i, &keys, &mut model);
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    check(&db, &model);
    drop(db);
    let db = Db::open("/db", opts(&fs, &l)).unwrap();
    check(&db, &model);
    db.compact_range(None, None).unwrap();
    check(&db, &model);
}

#[test]
fn files_over_a_key_the_memtable_holds_older_than_them_are_not_merged_in_l0() {
    // File 1 holds b00500; a put of b00500 lands in the memtable after it; files 2–4 lie beside
    // that key (version path: the memtable holds no key of theirs). Merged in L0, the four
    // would make one file newer than the memtable's flush, which holds the newer b00500.
    let (fs, l, db, mut model, _) = setup();
    let first: Vec<usize> = (0..2000).step_by(4).collect();
    ingest(&db, &fs, 1, &first, &mut model);
    put(&db, &bkey(500), "put", &mut model);
    for i in 2..=4 {
        let keys: Vec<usize> = (600..2000).filter(|j| j % 3 == i % 3).collect();
        ingest(&db, &fs, i, &keys, &mut model);
    }
    db.wait_for_background_work().unwrap();
    assert_eq!(*l.flushes.lock().unwrap(), 0, "the memtable was flushed");
    let begun = l.begun.lock().unwrap().clone();
    assert!(
        begun.iter().all(|c| c.kind != CompactionKind::IntraL0),
        "{begun:?}"
    );
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    assert_eq!(
        db.get(bkey(500).as_bytes()).unwrap().as_deref(),
        Some(&b"put"[..])
    );
    check(&db, &model);
    drop(db);
    let db = Db::open("/db", opts(&fs, &l)).unwrap();
    check(&db, &model);
}
