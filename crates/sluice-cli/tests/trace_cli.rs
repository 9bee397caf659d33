//! `sluice get|scan --trace`: the output on stdout is unchanged and the trace follows on
//! stderr — memtable probe, the table consulted with its filter answer, the data block and its
//! cache miss, the seeks of a scan and their counters; the table forms trace too.

mod common;

use std::path::Path;

fn ok(args: &[&str], stdin: &[u8]) -> (String, String) {
    let out = common::run(args, stdin);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "sluice {args:?}: {err}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), err)
}

/// Keys `k0000..k0999` flushed into one table.
fn db_with_one_table(dir: &Path) -> String {
    let d = dir.join("db").to_str().unwrap().to_string();
    let tsv: String = (0..1000).map(|k| format!("k{k:04}\tvalue{k}\n")).collect();
    ok(&["load", "--db", &d], tsv.as_bytes());
    ok(&["flush", "--db", &d], b"");
    d
}

#[test]
fn get_trace_shows_memtable_table_filter_and_block_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let d = db_with_one_table(dir.path());
    let (out, err) = ok(&["get", "--db", &d, "--trace", "k0500"], b"");
    assert_eq!(out, "value500\n", "stdout holds only the value");
    assert!(err.starts_with(" offset ms"), "{err}");
    for want in [
        "get k0500 result=found",
        "memtable probe (active) result=miss",
        " L0.0 result=value(8 bytes)",
        "filter result=positive",
        "index block pinned=",
        "cache=miss read=",
        "counters: ",
        "cache_misses=1",
    ] {
        assert!(err.contains(want), "missing {want:?} in\n{err}");
    }
    // Without --trace, nothing on stderr.
    let (_, quiet) = ok(&["get", "--db", &d, "k0500"], b"");
    assert_eq!(quiet, "");
}

#[test]
fn get_trace_of_a_missing_key_shows_the_negative_filter() {
    let dir = tempfile::tempdir().unwrap();
    let d = db_with_one_table(dir.path());
    let out = common::run(&["get", "--db", &d, "--trace", "k0500x"], b"");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("filter result=negative"), "{err}");
    assert!(!err.contains("data block"), "{err}");
}

#[test]
fn scan_trace_counts_keys_and_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    let d = db_with_one_table(dir.path());
    ok(&["delete", "--db", &d, "k0011"], b"");
    let args = [
        "scan", "--db", &d, "--start", "k0010", "--end", "k0013", "--trace",
    ];
    let (out, err) = ok(&args, b"");
    assert_eq!(out, "k0010\tvalue10\nk0012\tvalue12\n");
    assert!(err.contains("iterator setup memtables="), "{err}");
    assert!(err.contains(" table_iters=1 "), "{err}");
    assert!(
        err.contains("seek_to_first entries=1 tombstones=0"),
        "{err}"
    );
    assert!(err.contains("keys_returned=2"), "{err}");
    assert!(err.contains("tombstones=1"), "{err}");
}

#[test]
fn table_get_trace_traces_the_row_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db").to_str().unwrap().to_string();
    common::import_penguins(&d);
    let (out, err) = ok(&["get", "--db", &d, "--pk", "4", "--trace"], b"");
    assert!(out.starts_with("{\"id\":4,"), "{out}");
    assert!(err.contains("result=found"), "{err}");
    assert!(err.contains(" L6 result=value"), "{err}");
}
