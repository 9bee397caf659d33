//! Traces: what a read or a write attached to a `Trace` records — the entries and tombstones
//! an iterator steps over (bounded vs unbounded beside 100,000 tombstones, CockroachDB's
//! `block_writer` lesson), the filter and block cache of a point read, the group commit of a
//! write — and that nothing is recorded without one. No timing is asserted anywhere.

use std::path::Path;
use std::sync::Arc;

use sluice::fs::MemFs;
use sluice::{Db, ReadOptions, Span, Trace, WriteBatch, WriteOptions};

mod common;
use common::mem_opts;

const N: u32 = 100_000;

/// How the 100,000 dead entries beyond the bound are made.
#[derive(Clone, Copy, Debug)]
enum Dead {
    /// A point tombstone for each of `b-00000000..`.
    Point,
    /// One range tombstone `[b, c)` over a value for each of them.
    Range,
}

/// A Db holding `a-live`, 100,000 dead keys `b-*` and `c-live`; flushed to tables if asked.
fn dead_keys_beyond(dead: Dead, flush: bool) -> Db {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/t"), mem_opts(&fs)).unwrap();
    db.put(b"a-live", b"1").unwrap();
    let mut b = WriteBatch::new();
    for i in 0..N {
        let k = format!("b-{i:08}");
        match dead {
            Dead::Point => b.delete(k.as_bytes()),
            Dead::Range => b.put(k.as_bytes(), b"x"),
        }
    }
    db.write(b, WriteOptions::default()).unwrap();
    if let Dead::Range = dead {
        // Flushed apart, or the flush would drop the values the tombstone covers.
        if flush {
            db.flush().unwrap();
        }
        db.delete_range(b"b", b"c").unwrap();
    }
    db.put(b"c-live", b"3").unwrap();
    if flush {
        db.flush().unwrap();
    }
    db
}

/// Seeks to `a` under `upper`, steps once, and returns the trace and the keys read.
fn traced_seek(db: &Db, upper: Option<&[u8]>) -> (Trace, Vec<Vec<u8>>) {
    let trace = Trace::new();
    let mut it = db
        .iter(ReadOptions {
            upper_bound: upper.map(<[u8]>::to_vec),
            trace: Some(&trace),
            ..Default::default()
        })
        .unwrap();
    it.seek(b"a");
    let mut keys = Vec::new();
    while it.valid() && keys.len() < 2 {
        keys.push(it.key().to_vec());
        it.next();
    }
    it.status().unwrap();
    (trace, keys)
}

fn bounded_seek_touches_few_entries_beside_dead_keys(dead: Dead, flush: bool) {
    let db = dead_keys_beyond(dead, flush);
    let (bounded, keys) = traced_seek(&db, Some(b"b"));
    assert_eq!(keys, [b"a-live".to_vec()]);
    let text = bounded.render();
    assert!(
        bounded.counter("entries") <= 4,
        "{dead:?} flush={flush}\n{text}"
    );
    assert!(
        bounded.counter("tombstones") + bounded.counter("range_deleted") <= 4,
        "{text}"
    );
    let seek = find(&bounded.spans(), "seek a");
    assert!(
        field(&seek, "entries").parse::<u64>().unwrap() <= 4,
        "{text}"
    );
    // The control: without the bound the same seek and step walk every dead key.
    let (control, keys) = traced_seek(&db, None);
    assert_eq!(keys, [b"a-live".to_vec(), b"c-live".to_vec()]);
    let stepped = match dead {
        Dead::Point => control.counter("tombstones"),
        Dead::Range => control.counter("range_deleted"),
    };
    let text = control.render();
    assert_eq!(stepped, u64::from(N), "{dead:?} flush={flush}\n{text}");
    assert!(control.counter("entries") > u64::from(N), "{text}");
}

#[test]
fn bounded_seek_beside_point_tombstones_in_memtable_touches_few_entries() {
    bounded_seek_touches_few_entries_beside_dead_keys(Dead::Point, false);
}

#[test]
fn bounded_seek_beside_point_tombstones_in_table_touches_few_entries() {
    bounded_seek_touches_few_entries_beside_dead_keys(Dead::Point, true);
}

#[test]
fn bounded_seek_beside_range_tombstone_in_memtable_touches_few_entries() {
    bounded_seek_touches_few_entries_beside_dead_keys(Dead::Range, false);
}

#[test]
fn bounded_seek_beside_range_tombstone_in_table_touches_few_entries() {
    bounded_seek_touches_few_entries_beside_dead_keys(Dead::Range, true);
}

/// The first span whose name starts with `prefix`.
fn find(spans: &[Span], prefix: &str) -> Span {
    spans
        .iter()
        .find(|s| s.name.starts_with(prefix))
        .unwrap_or_else(|| panic!("no span {prefix:?} in {spans:#?}"))
        .clone()
}

fn field(span: &Span, key: &str) -> String {
    span.fields
        .iter()
        .find(|(k, _)| *k == key)
        .unwrap_or_else(|| panic!("no field {key} in {span:?}"))
        .1
        .clone()
}

fn traced_get(db: &Db, key: &[u8]) -> (Option<Vec<u8>>, Trace) {
    let trace = Trace::new();
    let ro = ReadOptions {
        trace: Some(&trace),
        ..Default::default()
    };
    (db.get_opt(key, &ro).unwrap(), trace)
}

/// A Db whose keys `k000..k999` sit in one flushed table, reopened so that its block cache
/// is cold.
fn one_table() -> Db {
    let fs = MemFs::new();
    {
        let db = Db::open(Path::new("/t"), mem_opts(&fs)).unwrap();
        for i in 0..1000 {
            db.put(format!("k{i:03}").as_bytes(), b"value").unwrap();
        }
        db.flush().unwrap();
    }
    Db::open(Path::new("/t"), mem_opts(&fs)).unwrap()
}

#[test]
fn get_missing_key_stops_at_a_negative_filter() {
    let db = one_table();
    // "k5000" sorts inside the table's key range, so only the filter can rule it out.
    let (found, trace) = traced_get(&db, b"k5000");
    assert_eq!(found, None);
    let spans = trace.spans();
    let text = trace.render();
    find(&spans, "memtable probe (active)");
    let table = find(&spans, "table ");
    assert!(table.name.contains(" L0"), "{text}");
    assert_eq!(field(&table, "result"), "miss");
    assert_eq!(
        field(&find(&spans, "filter"), "result"),
        "negative",
        "{text}"
    );
    assert!(
        !spans.iter().any(|s| s.name.starts_with("data block")),
        "{text}"
    );
    assert_eq!(trace.counter("bytes_read"), 0);
    assert_eq!(trace.counter("filter_negative"), 1);
}

#[test]
fn get_reads_a_data_block_from_disk_then_from_the_cache() {
    let db = one_table();
    let (found, first) = traced_get(&db, b"k500");
    assert_eq!(found.as_deref(), Some(&b"value"[..]));
    let text = first.render();
    let spans = first.spans();
    assert_eq!(
        field(&find(&spans, "filter"), "result"),
        "positive",
        "{text}"
    );
    find(&spans, "index block");
    let block = find(&spans, "data block @");
    assert_eq!(field(&block, "cache"), "miss", "{text}");
    assert!(first.counter("bytes_read") > 0, "{text}");
    assert_eq!(first.counter("cache_misses"), 1, "{text}");
    assert!(field(&find(&spans, "table "), "result").starts_with("value(5 bytes)"));
    assert!(field(&find(&spans, "get "), "result") == "found");

    let (_, second) = traced_get(&db, b"k500");
    let text = second.render();
    assert_eq!(
        field(&find(&second.spans(), "data block @"), "cache"),
        "hit",
        "{text}"
    );
    assert_eq!(second.counter("bytes_read"), 0, "{text}");
    assert_eq!(second.counter("cache_hits"), 1, "{text}");
}

#[test]
fn get_found_in_memtable_consults_no_table() {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/t"), mem_opts(&fs)).unwrap();
    db.put(b"k", b"v").unwrap();
    let (found, trace) = traced_get(&db, b"k");
    assert_eq!(found.as_deref(), Some(&b"v"[..]));
    let spans = trace.spans();
    assert!(field(&find(&spans, "memtable probe"), "result").starts_with("value"));
    assert!(!spans.iter().any(|s| s.name.starts_with("table ")));
    // Spans nest under the read's root, and the rendering indents them.
    assert_eq!(spans[0].depth, 0);
    assert!(spans[1..].iter().all(|s| s.depth >= 1));
    assert!(trace.render().contains("    memtable probe (active)"));
}

#[test]
fn write_trace_shows_group_commit_wal_and_memtable() {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/t"), mem_opts(&fs)).unwrap();
    let trace = Trace::new();
    let mut b = WriteBatch::new();
    b.put(b"a", b"1");
    b.put(b"b", b"2");
    let opts = WriteOptions {
        sync: true,
        trace: Some(&trace),
        ..Default::default()
    };
    db.write(b, opts).unwrap();
    let spans = trace.spans();
    let text = trace.render();
    assert_eq!(field(&find(&spans, "write"), "entries"), "2", "{text}");
    // Alone in the queue, the writer leads its own group.
    assert_eq!(field(&find(&spans, "group commit wait"), "role"), "leader");
    assert_eq!(field(&find(&spans, "write group (leader)"), "writes"), "1");
    let wal = find(&spans, "WAL write");
    assert_eq!(field(&wal, "sync"), "true");
    assert!(field(&wal, "bytes").parse::<u64>().unwrap() > 0);
    assert_eq!(field(&find(&spans, "memtable insert"), "entries"), "2");
    assert!(!spans.iter().any(|s| s.name.starts_with("latch wait")));
    assert!(spans.iter().all(|s| s.duration.is_some()), "{text}");
}

#[test]
fn concurrent_writers_trace_their_own_role_in_the_group_commit() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open(Path::new("/t"), mem_opts(&fs)).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut traces = Vec::new();
                for i in 0..200 {
                    let trace = Trace::new();
                    let mut b = WriteBatch::new();
                    b.put(format!("t{t}-{i}").as_bytes(), b"v");
                    let opts = WriteOptions {
                        trace: Some(&trace),
                        ..Default::default()
                    };
                    db.write(b, opts).unwrap();
                    traces.push(trace);
                }
                traces
            })
        })
        .collect();
    for h in threads {
        for trace in h.join().unwrap() {
            let spans = trace.spans();
            let role = field(&find(&spans, "group commit wait"), "role");
            // A leader logs and applies; a follower's write was logged by another thread.
            let logged = spans.iter().any(|s| s.name == "WAL write");
            if role == "leader" {
                assert!(logged, "{}", trace.render());
            } else {
                assert!(role.starts_with("follower"), "{role}");
                assert!(!logged, "{}", trace.render());
            }
        }
    }
}

#[test]
fn nothing_is_recorded_without_a_trace_attached() {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/t"), mem_opts(&fs)).unwrap();
    let trace = Trace::new();
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    db.put(b"b", b"2").unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    while it.valid() {
        it.next();
    }
    assert!(trace.is_empty());

    // A finished operation's trace stays as it was while others run untraced.
    let (_, traced) = traced_get(&db, b"a");
    let before = (traced.spans(), traced.counters());
    assert!(!before.0.is_empty());
    db.get(b"a").unwrap();
    db.put(b"c", b"3").unwrap();
    assert_eq!((traced.spans(), traced.counters()), before);
}

#[test]
fn iterator_records_until_dropped_and_counts_keys() {
    let fs = MemFs::new();
    let db = Db::open(Path::new("/t"), mem_opts(&fs)).unwrap();
    for k in [b"a", b"b", b"c"] {
        db.put(k, b"v").unwrap();
    }
    db.delete(b"b").unwrap();
    let trace = Trace::new();
    let mut it = db
        .iter(ReadOptions {
            trace: Some(&trace),
            ..Default::default()
        })
        .unwrap();
    it.seek_to_first();
    while it.valid() {
        it.next();
    }
    drop(it);
    let text = trace.render();
    find(&trace.spans(), "iterator setup");
    find(&trace.spans(), "seek_to_first");
    assert_eq!(trace.counter("keys_returned"), 2, "{text}");
    assert_eq!(trace.counter("tombstones"), 1, "{text}");
    // a, b's tombstone, b's value (shadowed), c.
    assert_eq!(trace.counter("entries"), 4, "{text}");
}
