//! Events (`sluice::events`): their order and contents under concurrent flushes, compactions,
//! ingests and writers, checked against the MANIFEST; a blocked listener never blocks the
//! Db; write stalls reported in begin/end pairs with their causes.

mod common;

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use common::{external, tiny_opts};
use sluice::events::{
    check_against_manifest, edit_files, manifest_edits, CompactionKind, Event, EventListener,
    FlushInput, LevelFiles, StallCause, TableFileDeletion,
};
use sluice::fs::MemFs;
use sluice::version::Version;
use sluice::{Db, IngestOptions, IngestedFile, JsonLinesListener, Options};

/// Keeps every event, with the name of the thread that delivered it.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<(Event, String)>>,
}

impl EventListener for Recorder {
    fn on_event(&self, event: &Event) {
        let thread = std::thread::current().name().unwrap_or("").to_string();
        self.events.lock().unwrap().push((event.clone(), thread));
    }
}

impl Recorder {
    fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|(e, _)| e.clone())
            .collect()
    }
}

fn with_listener(mut opts: Options, l: Arc<dyn EventListener>) -> Options {
    opts.listeners.push(l);
    opts
}

/// `threads` writers each putting `puts` keys `key(thread, i)` with `value_len`-byte values.
fn spawn_writers(
    db: &Arc<Db>,
    threads: u32,
    puts: u32,
    value_len: usize,
    key: fn(u32, u32) -> String,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..threads)
        .map(|t| {
            let db = Arc::clone(db);
            std::thread::spawn(move || {
                for i in 0..puts {
                    db.put(key(t, i).as_bytes(), &vec![b'v'; value_len])
                        .unwrap();
                }
            })
        })
        .collect()
}

/// Index of the first event matching `f`.
fn position(events: &[Event], f: impl Fn(&Event) -> bool) -> Option<usize> {
    events.iter().position(f)
}

/// Writers, ingests (some into the writers' key range, so some go the flushable path),
/// explicit flushes and a manual compaction, all at once on tiny options. Ingests go on until
/// `rec` has seen two on the flushable path (whether one is depends on a race with flushes).
fn concurrent_workload(db: &Arc<Db>, fs: &MemFs, rec: &Recorder) -> Vec<IngestedFile> {
    let writers = spawn_writers(db, 3, 1500, 100, |t, i| {
        format!("k{:06}", (i * 7919 + t * 104_729) % 50_000)
    });
    let flusher = {
        let db = Arc::clone(db);
        std::thread::spawn(move || {
            for _ in 0..8 {
                db.flush().unwrap();
            }
        })
    };
    let mut reports = Vec::new();
    let flushable = || {
        let events = rec.events.lock().unwrap();
        events
            .iter()
            .filter(|(e, _)| matches!(e, Event::Ingest(i) if i.flushable))
            .count()
    };
    for n in (0..400u32).take_while(|&n| n < 16 || flushable() < 2) {
        // Even: a range no writer touches (the version path); odd: inside the writers' range,
        // where a memtable often holds keys (the flushable path).
        let keys: Vec<String> = if n % 2 == 0 {
            (0..20).map(|i| format!("x{n:03}{i:03}")).collect()
        } else {
            (0..20).map(|i| format!("k{:06}", n * 100 + i)).collect()
        };
        if n % 2 == 1 {
            // A memtable now holds a key of the range: the flushable path, unless a flush
            // wins the race.
            db.put(keys[0].as_bytes(), b"w").unwrap();
        }
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let path = external(fs, &format!("in{n}.sst"), &refs, "ingested");
        reports.extend(db.ingest(&[path], &IngestOptions::default()).unwrap());
    }
    for w in writers {
        w.join().unwrap();
    }
    flusher.join().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_background_work().unwrap();
    reports
}

#[test]
fn events_match_the_manifest_under_concurrent_flush_compaction_and_ingest() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let rec = Arc::new(Recorder::default());
    let opts = Options {
        max_background_jobs: 3,
        ..with_listener(tiny_opts(&fs), rec.clone())
    };
    let db = Arc::new(Db::open(dir, opts).unwrap());
    let reports = concurrent_workload(&db, &fs, &rec);
    let final_version: Vec<u64> = db.current_version().file_numbers().collect();
    Arc::try_unwrap(db).unwrap().close().unwrap();
    // Close released every reference to the listener: nothing can call it any more.
    assert_eq!(Arc::strong_count(&rec), 1, "no event after close");
    let delivered = rec.events.lock().unwrap().clone();
    assert!(delivered.iter().all(|(_, t)| t == "sluice-events"));
    let events = rec.events();

    // The engine's checker: installs = the session's edits in MANIFEST order, jobs begin
    // then end, tables created before their job ends and deleted once, stalls paired.
    let m = check_against_manifest(&events, &fs, dir).unwrap();
    assert!(m.installs > 10 && m.deleted > 0, "{m:?}");
    // The whole history is this session's: the edits before its installs add nothing, and
    // every table an edit ever added was created, and deleted unless the version holds it.
    let edits = manifest_edits(&fs, dir).unwrap();
    let before = &edits[..edits.len() - m.installs];
    assert!(before
        .iter()
        .all(|e| e.added.is_empty() && e.deleted.is_empty()));
    let mut v = Version::default();
    for e in &edits {
        v = v.apply(e).unwrap();
    }
    assert_eq!(v.file_numbers().collect::<Vec<_>>(), final_version);
    let numbers =
        |f: fn(&Event) -> Option<u64>| -> BTreeSet<u64> { events.iter().filter_map(f).collect() };
    let created = numbers(|e| match e {
        Event::TableFileCreated(c) => Some(c.number),
        _ => None,
    });
    let deleted = numbers(|e| match e {
        Event::TableFileDeleted(d) => Some(d.number),
        _ => None,
    });
    let added: BTreeSet<u64> = edits
        .iter()
        .flat_map(|e| e.added.iter().map(|(_, f)| f.number))
        .collect();
    assert_eq!(created, added);
    let gone: BTreeSet<u64> = added
        .iter()
        .copied()
        .filter(|n| !final_version.contains(n))
        .collect();
    assert_eq!(deleted, gone);
    let kinds: HashSet<&str> = events.iter().map(Event::name).collect();
    for k in [
        "flush_end",
        "compaction_end",
        "ingest",
        "table_file_deleted",
    ] {
        assert!(kinds.contains(k), "no {k} event");
    }

    // 3. Ingests: each reported file in one ingest event with the same level and seqno; a
    // flushable ingest's tables installed later by a flush of exactly those tables.
    for r in &reports {
        let (i, file) = events
            .iter()
            .enumerate()
            .find_map(|(i, e)| match e {
                Event::Ingest(info) => info
                    .files
                    .iter()
                    .find(|f| f.table.as_ref().is_some_and(|t| t.number == r.number))
                    .map(|f| (i, f.clone())),
                _ => None,
            })
            .expect("an ingest event for every ingested file");
        let t = file.table.unwrap();
        assert_eq!((Some(t.level), t.smallest_seqno), (r.level, r.seqno));
        assert_eq!(file.source, r.source);
        let Event::Ingest(info) = &events[i] else {
            unreachable!()
        };
        if info.flushable {
            let flush = position(&events, |e| match e {
                Event::FlushEnd(f) => matches!(&f.input,
                    FlushInput::IngestedTables { numbers } if numbers.contains(&r.number)),
                _ => false,
            });
            assert!(
                flush.is_some_and(|f| f > i),
                "flushable ingest flushed after it"
            );
        }
    }
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Ingest(i) if i.flushable)));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Ingest(i) if !i.flushable)));
    let manual = events.iter().any(|e| matches!(e, Event::CompactionEnd(c) if c.kind == CompactionKind::Manual && c.score_x100.is_none()));
    assert!(manual, "the manual compaction reported");
}

/// Blocks every call until the test opens the gate; counts calls and events.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
    entered: AtomicUsize,
    events: Mutex<Vec<Event>>,
}

impl EventListener for Gate {
    fn on_event(&self, event: &Event) {
        self.entered.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
        self.events.lock().unwrap().push(event.clone());
    }
}

#[test]
fn a_blocked_listener_blocks_neither_writers_nor_background_work() {
    let fs = MemFs::new();
    let gate = Arc::new(Gate::default());
    let db = Arc::new(Db::open("/db", with_listener(tiny_opts(&fs), gate.clone())).unwrap());
    // Writers, flushes and compactions run to completion while the listener is stuck in its
    // first call: were it called on their path, with a lock held, this would never finish.
    for w in spawn_writers(&db, 4, 800, 64, |t, i| format!("{t}-{i:05}")) {
        w.join().unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_background_work().unwrap();
    let m = db.metrics();
    assert!(m.flushes >= 5 && m.compactions >= 1, "{m:?}");
    assert_eq!(
        gate.entered.load(Ordering::SeqCst),
        1,
        "the listener is still in its first call"
    );
    assert!(gate.events.lock().unwrap().is_empty());
    assert_eq!(db.get(b"3-00799").unwrap(), Some(vec![b'v'; 64]));
    // Release it: every event arrives, and close waits for them.
    *gate.open.lock().unwrap() = true;
    gate.cv.notify_all();
    Arc::try_unwrap(db).unwrap().close().unwrap();
    let events = gate.events.lock().unwrap().clone();
    let count = |name: &str| events.iter().filter(|e| e.name() == name).count() as u64;
    assert_eq!(count("flush_end"), m.flushes);
    assert_eq!(count("flush_begin"), m.flushes);
    assert_eq!(count("compaction_end"), m.compactions);
    assert_eq!(gate.entered.load(Ordering::SeqCst), events.len());
}

/// Stall events of a Db whose one background worker flushes, then compacts L0 away.
fn stall_events(opts: Options) -> Vec<Event> {
    let fs = MemFs::new();
    let rec = Arc::new(Recorder::default());
    let opts = Options {
        // One worker: the stall check after the flush runs before any compaction can.
        max_background_jobs: 1,
        fs: Arc::new(fs.clone()),
        ..with_listener(opts, rec.clone())
    };
    let db = Db::open("/db", opts).unwrap();
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    db.put(b"b", b"2").unwrap();
    db.close().unwrap();
    rec.events()
        .into_iter()
        .filter(|e| matches!(e, Event::WriteStallBegin(_) | Event::WriteStallEnd(_)))
        .collect()
}

fn assert_one_stall(events: &[Event], stopped: bool, cause: StallCause) {
    let [Event::WriteStallBegin(b), Event::WriteStallEnd(e)] = events else {
        panic!("one begin, one end: {events:?}");
    };
    assert_eq!((b.stopped, &b.cause), (stopped, &cause));
    assert_eq!((e.stopped, e.cause.name()), (stopped, cause.name()));
}

#[test]
fn l0_stalls_begin_after_a_flush_and_end_after_the_compaction() {
    let delayed = Options {
        l0_compaction_trigger: 1,
        l0_slowdown_writes_trigger: 1,
        l0_stop_writes_trigger: 2,
        ..Options::default()
    };
    let cause = StallCause::L0Sublevels {
        sublevels: 1,
        files: 1,
        limit: 1,
    };
    assert_one_stall(&stall_events(delayed.clone()), false, cause.clone());
    let stopped = Options {
        l0_stop_writes_trigger: 1,
        ..delayed
    };
    assert_one_stall(&stall_events(stopped), true, cause);
}

#[test]
fn compaction_debt_stalls_name_their_limit() {
    let opts = Options {
        l0_compaction_trigger: 1,
        soft_pending_compaction_bytes_limit: 1,
        ..Options::default()
    };
    let events = stall_events(opts);
    let Some(Event::WriteStallBegin(b)) = events.first() else {
        panic!("{events:?}");
    };
    assert!(
        matches!(b.cause, StallCause::PendingCompactionBytes { bytes, limit: 1 } if bytes > 0),
        "{b:?}"
    );
    assert_one_stall(&events, false, b.cause.clone());
}

#[test]
fn stalls_under_a_write_load_come_in_pairs() {
    let fs = MemFs::new();
    let rec = Arc::new(Recorder::default());
    let opts = Options {
        l0_compaction_trigger: 1,
        l0_slowdown_writes_trigger: 2,
        l0_stop_writes_trigger: 3,
        ..with_listener(tiny_opts(&fs), rec.clone())
    };
    let db = Arc::new(Db::open("/db", opts).unwrap());
    for w in spawn_writers(&db, 3, 1500, 200, |t, i| format!("{i:05}-{t}")) {
        w.join().unwrap();
    }
    Arc::try_unwrap(db).unwrap().close().unwrap();
    let mut open: Option<(bool, &'static str)> = None;
    for e in rec.events() {
        match e {
            Event::WriteStallBegin(i) => {
                assert!(open.is_none(), "a stall begins while another is on");
                open = Some((i.stopped, i.cause.name()));
            }
            Event::WriteStallEnd(i) => {
                assert_eq!(open.take(), Some((i.stopped, i.cause.name())));
            }
            _ => {}
        }
    }
    assert!(open.is_none(), "every stall ended by close");
}

#[test]
fn json_lines_name_every_event_with_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("events.jsonl");
    let mut opts = Options::default();
    opts.listeners
        .push(Arc::new(JsonLinesListener::create(&out).unwrap()));
    let db = Db::open(dir.path().join("db"), opts).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(names, ["flush_begin", "table_file_created", "flush_end"]);
    assert!(lines.iter().all(|l| l["time_us"].as_u64().unwrap() > 0));
    assert_eq!(lines[2]["outputs"][0]["smallest_key"], "6b");
    assert_eq!(lines[1]["number"], lines[2]["outputs"][0]["number"]);
}

#[test]
fn recovery_at_open_is_reported_as_one_flush_of_the_wals() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, common::mem_opts(&fs)).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    db.close().unwrap(); // nothing flushed: the writes are in the WAL
    let rec = Arc::new(Recorder::default());
    let db = Db::open(dir, with_listener(common::mem_opts(&fs), rec.clone())).unwrap();
    db.close().unwrap();
    let events = rec.events();
    let names: Vec<&str> = events.iter().map(Event::name).collect();
    assert_eq!(names, ["flush_begin", "table_file_created", "flush_end"]);
    let (Event::TableFileCreated(created), Event::FlushEnd(end)) = (&events[1], &events[2]) else {
        unreachable!()
    };
    assert!(matches!(&end.input, FlushInput::Recovery { wal_numbers } if wal_numbers.len() == 1));
    assert_eq!(end.outputs.len(), 1);
    let table = &end.outputs[0];
    assert_eq!((created.number, created.level), (table.number, Some(0)));
    assert_eq!(
        (&table.smallest_key[..], &table.largest_key[..]),
        (&b"a"[..], &b"b"[..])
    );
    // The open's edit (the last) adds exactly that table to L0.
    let last = manifest_edits(&fs, dir).unwrap().pop().unwrap();
    let in_l0: LevelFiles = [(0, table.number)].into();
    assert_eq!(edit_files(&last), (in_l0, LevelFiles::new()));
    check_against_manifest(&events, &fs, dir).unwrap();
}

#[test]
fn the_manifest_check_catches_a_missing_or_reordered_event() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let rec = Arc::new(Recorder::default());
    let db = Db::open(dir, with_listener(tiny_opts(&fs), rec.clone())).unwrap();
    for i in 0..600u32 {
        db.put(format!("{i:05}").as_bytes(), &[b'z'; 50]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let events = rec.events();
    check_against_manifest(&events, &fs, dir).unwrap();
    let is_end = |e: &Event| matches!(e, Event::FlushEnd(_) | Event::CompactionEnd(_));
    let first_end = events.iter().position(is_end).unwrap();
    let mut missing = events.clone();
    missing.remove(first_end);
    assert!(check_against_manifest(&missing, &fs, dir).is_err());
    let mut swapped = events.clone();
    let second_end = first_end + 1 + events[first_end + 1..].iter().position(is_end).unwrap();
    swapped.swap(first_end, second_end);
    assert!(check_against_manifest(&swapped, &fs, dir).is_err());
    let mut early = events.clone();
    let created = early
        .iter()
        .position(|e| e.name() == "table_file_created")
        .unwrap();
    let moved = early.remove(created);
    early.push(moved);
    assert!(check_against_manifest(&early, &fs, dir).is_err());
    let mut deleted_first = events.clone();
    let obsolete = |e: &Event| matches!(e, Event::TableFileDeleted(d) if d.reason == TableFileDeletion::Obsolete);
    let deletion = deleted_first.iter().position(obsolete).unwrap();
    let d = deleted_first.remove(deletion);
    deleted_first.insert(0, d);
    assert!(check_against_manifest(&deleted_first, &fs, dir).is_err());
}

/// Holds the last handle of its own Db and drops it from inside a call, once the test lets go.
struct LastHandle {
    db: Mutex<Option<Arc<Db>>>,
    test_let_go: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    dropped: Mutex<Option<std::sync::mpsc::Sender<()>>>,
}

impl EventListener for LastHandle {
    fn on_event(&self, _: &Event) {
        if let Some(rx) = self.test_let_go.lock().unwrap().take() {
            rx.recv().unwrap();
            drop(self.db.lock().unwrap().take()); // closes the Db on the event thread
            self.dropped
                .lock()
                .unwrap()
                .take()
                .unwrap()
                .send(())
                .unwrap();
        }
    }
}

#[test]
fn a_listener_may_drop_the_last_handle_of_its_own_db() {
    let fs = MemFs::new();
    let (let_go, test_let_go) = std::sync::mpsc::channel();
    let (dropped_tx, dropped) = std::sync::mpsc::channel();
    let l = Arc::new(LastHandle {
        db: Mutex::new(None),
        test_let_go: Mutex::new(Some(test_let_go)),
        dropped: Mutex::new(Some(dropped_tx)),
    });
    let db = Arc::new(Db::open("/db", with_listener(tiny_opts(&fs), l.clone())).unwrap());
    *l.db.lock().unwrap() = Some(Arc::clone(&db));
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap(); // the listener waits in its first call
    drop(db);
    let_go.send(()).unwrap();
    // The Db closed on its own event thread without joining it (which would fail or hang).
    dropped.recv().unwrap();
    let db = Db::open("/db", tiny_opts(&fs)).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

/// Flushes of disjoint key ranges give L0 files with nothing older beneath them and no base
/// file under them: each goes down by a trivial move (nothing rewritten), every value reads
/// back, also after a reopen, and the moves agree with the MANIFEST.
#[test]
fn a_lone_l0_file_moves_to_the_base_level_unrewritten() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let rec = Arc::new(Recorder::default());
    let opts = || Options {
        write_buffer_size: 64 << 10,
        l0_compaction_trigger: 1,
        ..with_listener(tiny_opts(&fs), rec.clone())
    };
    let db = Db::open(dir, opts()).unwrap();
    let key = |r: u32, i: u32| format!("{}{i:04}", char::from(b'a' + r as u8));
    for r in 0..6 {
        for i in 0..50 {
            db.put(key(r, i).as_bytes(), format!("v{r}.{i}").as_bytes())
                .unwrap();
        }
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
    }
    let check = |db: &Db| {
        for r in 0..6 {
            for i in 0..50 {
                let got = db.get(key(r, i).as_bytes()).unwrap();
                assert_eq!(got.as_deref(), Some(format!("v{r}.{i}").as_bytes()));
            }
        }
    };
    check(&db);
    assert!(db.current_version().levels[0].is_empty());
    db.close().unwrap();
    let events = rec.events();
    check_against_manifest(&events, &fs, dir).unwrap();
    let moves: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::CompactionEnd(c) if c.level == 0 => Some(c),
            _ => None,
        })
        .collect();
    assert!(!moves.is_empty());
    for c in &moves {
        assert_eq!(c.kind, CompactionKind::Move, "{c:?}");
        assert_eq!((c.inputs.len(), c.bytes_written), (1, 0), "{c:?}");
        assert_eq!(c.outputs[0].number, c.inputs[0].number);
        assert!(c.output_level > 0);
    }
    let db = Db::open(dir, opts()).unwrap();
    check(&db);
    db.close().unwrap();
}
