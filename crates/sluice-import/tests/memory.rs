//! Peak RSS stays under `--memory` plus a stated constant while importing a file several times
//! larger than the budget. The import runs in a child process (this test binary re-run with
//! `SLUICE_IMPORT_RSS_CHILD` set), which reports its `VmHWM` from `/proc/self/status`.
//!
//! 1. Budget 64 MiB, input ≈ 300 MB in random key order (so it is sorted in runs and spilled).
//! 2. Budget 8 MiB (the least allowed), input ≈ 100 MB in random order with three indexes:
//!    thousands of runs, merged under `ulimit -n 256` (the child lowers its own limit) in
//!    bounded fan-in passes.
//!
//! The constant, 40 MiB, covers the test binary and allocator (≈ 10 MiB resident before the
//! import starts), thread stacks, the merge's read blocks and the SST builders' index and
//! filter blocks.

mod common;

use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::process::Command;

use common::*;
use sluice_import::open_db;

const SCHEMA: &str = "CREATE TABLE m (id BIGINT PRIMARY KEY, name TEXT, n INT, d DOUBLE);
CREATE INDEX by_n ON m (n);
CREATE INDEX by_d ON m (d);";
const SLACK: u64 = 40 << 20;

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// The child: imports and prints its peak RSS.
#[test]
fn child_rss_import() {
    let Ok(spec) = std::env::var("SLUICE_IMPORT_RSS_CHILD") else {
        return; // not the child
    };
    let v: Vec<&str> = spec.split('|').collect();
    let [db, file, budget, nofile] = v[..] else {
        panic!("db|file|budget|nofile: {spec}");
    };
    let budget: u64 = budget.parse().unwrap();
    let nofile: u64 = nofile.parse().unwrap();
    if nofile > 0 {
        let lim = rustix::process::Rlimit {
            current: Some(nofile),
            maximum: Some(nofile),
        };
        rustix::process::setrlimit(rustix::process::Resource::Nofile, lim).unwrap();
    }
    let before = vm_hwm_kib();
    let db = open_db(db, true).unwrap();
    let s = import(
        &db,
        SCHEMA,
        vec![PathBuf::from(file)],
        sluice_import::ImportOptions {
            memory: budget,
            chunk_size: None,
            threads: 2,
            ..opts()
        },
    )
    .unwrap();
    println!(
        "RSS-RESULT hwm_kib={} start_kib={before} rows={} runs={} premerged={} secs={:.2}",
        vm_hwm_kib(),
        s.rows,
        s.runs_spilled,
        s.runs_premerged,
        s.total_secs
    );
}

/// Writes `bytes` of rows in random key order; returns the row count.
fn write_input(file: &std::path::Path, bytes: u64) -> u64 {
    let mut w = BufWriter::new(std::fs::File::create(file).unwrap());
    let mut written = 0u64;
    let mut i = 0u64;
    while written < bytes {
        let id = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1;
        let line = format!("{id},name number {i} of many,{},{}.25\n", i % 1000, i % 77);
        w.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
        i += 1;
    }
    w.flush().unwrap();
    i
}

/// Runs the child on a fresh input; returns its result line after checking peak RSS and data.
fn import_in_child(input_bytes: u64, budget: u64, nofile: u64) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.csv");
    let rows = write_input(&file, input_bytes);
    let db = dir.path().join("db");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_rss_import",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            "SLUICE_IMPORT_RSS_CHILD",
            format!("{}|{}|{budget}|{nofile}", db.display(), file.display()),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.find("RSS-RESULT").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("no result in {stdout}"))
        .to_string();
    eprintln!("budget {} MiB, nofile {nofile}: {line}", budget >> 20);
    let field = |name: &str| -> u64 {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap()
    };
    assert!(field("runs=") > 0, "{line}");
    assert_eq!(field("rows="), rows, "{line}");
    let hwm = field("hwm_kib=");
    assert!(
        hwm * 1024 <= budget + SLACK,
        "peak RSS {} MiB over budget {} MiB + {} MiB",
        hwm / 1024,
        budget >> 20,
        SLACK >> 20
    );
    // The data is all there, in every index.
    let db = open_db(&db, false).unwrap();
    for index in [None, Some("by_n"), Some("by_d")] {
        let r = sluice_import::TableReader::open(&db, None).unwrap();
        let mut n = 0u64;
        r.scan(index, None, None, None, |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, rows, "{index:?}");
    }
    assert!(leftovers(dir.path().join("db").as_path()).is_empty());
    line
}

#[test]
fn peak_rss_stays_under_the_budget() {
    import_in_child(300_000_000, 64 << 20, 0);
}

#[test]
fn thousands_of_runs_merge_in_bounded_passes_under_a_small_budget_and_ulimit() {
    let line = import_in_child(100_000_000, 8 << 20, 256);
    let runs: u64 = line
        .split_whitespace()
        .find_map(|f| f.strip_prefix("runs="))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(runs >= 1000, "{line}");
    assert!(!line.contains("premerged=0 "), "{line}");
}
