//! The seed story of issue 22 in miniature (`sluice-bench l0-spiral` at full size): a stack of
//! narrow overlapping ingests over one range, then one flush of a memtable holding a key at each
//! end of the key space. With `Options::l0_sublevels` off (RocksDB's L0) the flush is one tiny
//! file as wide as the key space, and the L0 compaction takes every L0 file and the whole base
//! level; on, the flush is cut into narrow files and L0 compacts the stack alone.
//!
//! Deterministic: the L0 shape is built with compaction held off (a high trigger), then the Db
//! is reopened with the default trigger and the compactions it picks are read from its events.
//! No timing.

mod common;

use std::sync::{Arc, Mutex};

use common::external_sst;
use sluice::events::{CompactionInfo, Event, EventListener, TableFileInfo};
use sluice::fs::MemFs;
use sluice::{Db, IngestOptions, Options};

const CHUNKS: usize = 8;
const ROWS: usize = 200;
const STACK: usize = 6;
/// The chunk the stack of ingests lands on.
const HOT: usize = 3;

#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl EventListener for Recorder {
    fn on_event(&self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}

impl Recorder {
    fn take(&self) -> Vec<Event> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

fn opts(fs: &MemFs, l0_sublevels: bool, trigger: usize, rec: &Arc<Recorder>) -> Options {
    Options {
        l0_sublevels,
        l0_compaction_trigger: trigger,
        l0_slowdown_writes_trigger: 40,
        l0_stop_writes_trigger: 50,
        // A stack of a few KiB: by depth alone, as the spiral's 64 MiB memtables would be.
        l0_thin_sublevels_wait: false,
        listeners: vec![Arc::clone(rec) as Arc<dyn EventListener>],
        ..common::mem_opts(fs)
    }
}

fn key(chunk: usize, row: usize) -> String {
    format!("k{chunk}{row:05}")
}

/// Spans the key space's two ends ("a" and "z"): the housekeeping flush.
fn is_wide(f: &TableFileInfo) -> bool {
    f.smallest_key.starts_with(b"a") && f.largest_key.starts_with(b"z")
}

struct Run {
    /// L0 files and base-level (L6) files before compactions were allowed.
    l0_files: usize,
    base_files: usize,
    l0_sublevels: usize,
    /// Outputs of the housekeeping flush.
    flushed: Vec<TableFileInfo>,
    /// Every compaction out of L0 after the reopen.
    l0_compactions: Vec<CompactionInfo>,
}

fn run(l0_sublevels: bool) -> Run {
    let fs = MemFs::new();
    let rec = Arc::new(Recorder::default());
    let db = Db::open("/db", opts(&fs, l0_sublevels, 32, &rec)).unwrap();
    let value = "v".repeat(100);
    // 1. The base: one file per chunk, disjoint, straight to the bottom level.
    let base: Vec<_> = (0..CHUNKS)
        .map(|c| {
            let rows: Vec<(String, &str)> = (0..ROWS)
                .filter(|r| r % 2 == 0)
                .map(|r| (key(c, r), value.as_str()))
                .collect();
            let puts: Vec<(&str, &str)> = rows.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            external_sst(&fs, &format!("base{c}.sst"), &puts, &[])
        })
        .collect();
    db.ingest(&base, &IngestOptions::default()).unwrap();
    // 2. The out-of-order import: overlapping SSTs over one chunk, layered in L0.
    let stack: Vec<_> = (0..STACK)
        .map(|s| {
            let rows: Vec<(String, &str)> = (0..ROWS)
                .filter(|r| r % STACK == s)
                .map(|r| (key(HOT, r), value.as_str()))
                .collect();
            let puts: Vec<(&str, &str)> = rows.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            external_sst(&fs, &format!("stack{s}.sst"), &puts, &[])
        })
        .collect();
    let layered = IngestOptions {
        allow_overlap: true,
        ..Default::default()
    };
    db.ingest(&stack, &layered).unwrap();
    // 3. The housekeeping writer: one key at each end, flushed.
    db.put(b"a", b"range-local").unwrap();
    db.put(b"z", b"meta").unwrap();
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    let m = db.metrics();
    // Events arrive on the event thread; closing the Db delivers every one.
    db.close().unwrap();
    let flushed = rec
        .take()
        .into_iter()
        .filter_map(|e| match e {
            Event::FlushEnd(f) => Some(f.outputs),
            _ => None,
        })
        .flatten()
        .collect();
    // 4. Compaction allowed (the default trigger): what does L0 compact?
    let db = Db::open("/db", opts(&fs, l0_sublevels, 4, &rec)).unwrap();
    db.wait_for_background_work().unwrap();
    db.close().unwrap();
    let l0_compactions = rec
        .take()
        .into_iter()
        .filter_map(|e| match e {
            Event::CompactionBegin(c) if c.level == 0 => Some(c),
            _ => None,
        })
        .collect();
    Run {
        l0_files: m.levels[0].files,
        base_files: m.levels[6].files,
        l0_sublevels: m.l0_sublevels,
        flushed,
        l0_compactions,
    }
}

fn split(c: &CompactionInfo) -> (Vec<&TableFileInfo>, Vec<&TableFileInfo>) {
    c.inputs.iter().partition(|f| f.level == 0)
}

#[test]
fn sublevels_off_one_wide_flush_drags_all_of_l0_and_the_base_level_into_one_compaction() {
    let r = run(false);
    assert_eq!(r.base_files, CHUNKS);
    // The flush is one file, tiny and as wide as the key space.
    assert_eq!(r.flushed.len(), 1, "{:?}", r.flushed);
    assert!(is_wide(&r.flushed[0]));
    assert_eq!(r.l0_files, STACK + 1);
    // The first compaction out of L0 takes every L0 file, the wide one with them, and every
    // base-level file: the wide file overlaps them all.
    let first = r.l0_compactions.first().expect("an L0 compaction");
    let (l0, base) = split(first);
    assert_eq!(first.output_level, 6);
    assert_eq!(l0.len(), r.l0_files);
    assert!(l0.iter().any(|f| is_wide(f)));
    assert_eq!(base.len(), r.base_files);
}

#[test]
fn sublevels_on_the_flush_is_cut_and_l0_compacts_the_stack_alone() {
    let r = run(true);
    assert_eq!(r.base_files, CHUNKS);
    // The flush is cut at the base level's file boundaries: narrow files, none wide.
    assert!(r.flushed.len() >= 2, "{:?}", r.flushed);
    assert!(!r.flushed.iter().any(is_wide));
    assert!(r.l0_sublevels > 1);
    assert!(r.l0_files > r.l0_sublevels, "narrow files side by side");
    assert!(!r.l0_compactions.is_empty());
    for c in &r.l0_compactions {
        let (l0, base) = split(c);
        assert!(l0.len() < r.l0_files, "no compaction takes all of L0");
        assert!(base.len() < r.base_files, "nor the whole base level");
        assert!(!l0.iter().any(|f| is_wide(f)));
    }
}
