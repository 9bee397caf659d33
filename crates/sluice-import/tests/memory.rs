//! Peak RSS stays under `--memory` plus a stated constant while importing a file several times
//! larger than the budget. The import runs in a child process (this test binary re-run with
//! `SLUICE_IMPORT_RSS_CHILD` set), which reports its `VmHWM` from `/proc/self/status`.
//!
//! Budget 64 MiB, input ≈ 300 MB in random key order (so it is sorted in runs and spilled).
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
CREATE INDEX by_n ON m (n);";
const BUDGET: u64 = 64 << 20;
const SLACK: u64 = 40 << 20;
const INPUT_BYTES: u64 = 300_000_000;

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
    let (db, file) = spec.split_once('|').expect("db|file");
    let before = vm_hwm_kib();
    let db = open_db(db, true).unwrap();
    let s = import(
        &db,
        SCHEMA,
        vec![PathBuf::from(file)],
        sluice_import::ImportOptions {
            memory: BUDGET,
            chunk_size: None,
            threads: 2,
            ..opts()
        },
    )
    .unwrap();
    println!(
        "RSS-RESULT hwm_kib={} start_kib={before} rows={} runs={} secs={:.2}",
        vm_hwm_kib(),
        s.rows,
        s.runs_spilled,
        s.total_secs
    );
}

#[test]
fn peak_rss_stays_under_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.csv");
    {
        let mut w = BufWriter::new(std::fs::File::create(&file).unwrap());
        let mut written = 0u64;
        let mut i = 0u64;
        while written < INPUT_BYTES {
            let id = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1;
            let line = format!("{id},name number {i} of many,{},{}.25\n", i % 1000, i % 77);
            w.write_all(line.as_bytes()).unwrap();
            written += line.len() as u64;
            i += 1;
        }
        w.flush().unwrap();
    }
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
            format!("{}|{}", db.display(), file.display()),
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
        .unwrap_or_else(|| panic!("no result in {stdout}"));
    eprintln!("{line}");
    let hwm: u64 = line
        .split_whitespace()
        .find_map(|f| f.strip_prefix("hwm_kib="))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(
        line.contains("runs=") && !line.contains("runs=0 "),
        "{line}"
    );
    assert!(
        hwm * 1024 <= BUDGET + SLACK,
        "peak RSS {} MiB over budget {} MiB + {} MiB",
        hwm / 1024,
        BUDGET >> 20,
        SLACK >> 20
    );
    // The data is all there.
    let db = open_db(&db, false).unwrap();
    let r = sluice_import::TableReader::open(&db, None).unwrap();
    let mut n = 0;
    r.scan(None, None, None, Some(10), |_| {
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, 10);
    assert!(leftovers(dir.path().join("db").as_path()).is_empty());
}
