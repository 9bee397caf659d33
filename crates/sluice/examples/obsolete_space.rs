//! Measures what the Db directory holds against its live tables after overwrites, a flush and
//! a full compaction, then a quiet pause — with no reader, and with a snapshot taken after the
//! first round and dropped before the pause (issue "Correctness first…", bug 9).
//!
//! `cargo run --release -p sluice --example obsolete_space [KEYS]`

use std::time::Duration;

use sluice::{Db, Options};

fn dir_table_bytes(dir: &std::path::Path) -> (u64, usize) {
    let mut bytes = 0;
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().ends_with(".sst") {
            bytes += e.metadata().unwrap().len();
            n += 1;
        }
    }
    (bytes, n)
}

fn run(keys: u32, with_snapshot: bool) {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 8 << 20,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let value = vec![b'v'; 100];
    let mut snap = None;
    for round in 0..5u8 {
        for i in 0..keys {
            let mut v = value.clone();
            v[0] = round;
            db.put(format!("key{i:010}").as_bytes(), &v).unwrap();
        }
        if round == 0 && with_snapshot {
            snap = Some(db.snapshot());
        }
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    drop(snap);
    std::thread::sleep(Duration::from_secs(3));
    let live: u64 = db.metrics().levels.iter().map(|l| l.bytes).sum();
    let (on_disk, files) = dir_table_bytes(dir.path());
    if std::env::var("DEBUG").is_ok() {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| {
                format!(
                    "{}:{}",
                    e.file_name().to_string_lossy(),
                    e.metadata().unwrap().len()
                )
            })
            .collect();
        names.sort();
        println!("{names:?}\n{}", db.current_version().describe());
    }
    println!(
        "keys={keys} snapshot={with_snapshot} live_table_bytes={live} dir_table_bytes={on_disk} dir_tables={files}"
    );
}

fn main() {
    let keys: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    run(keys, false);
    run(keys, true);
}
