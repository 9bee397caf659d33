//! Background threads run at `Options::background_nice`. One test in this binary: the check
//! reads every thread of the process, and another test's Db would add its own workers.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use sluice::{Db, Options};

/// Niceness of each of this process's threads named `prefix…` (from /proc).
fn nice_of_threads(prefix: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = t.unwrap().path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap();
        // Fields after the parenthesised name: state is field 3, nice field 19.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        out.push(rest.split(' ').nth(16).unwrap().parse().unwrap());
    }
    out
}

/// Waits (up to a minute: a worker names itself and sets its priority as it starts) until
/// exactly `n` workers exist, all at niceness `want`; returns what it last saw.
fn workers_at(n: usize, want: i64) -> Vec<i64> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let seen = nice_of_threads("sluice-bg-");
        if (seen.len() == n && seen.iter().all(|&x| x == want)) || Instant::now() > deadline {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn own_nice() -> i64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(16).unwrap().parse().unwrap()
}

/// The background workers lower their own priority to `background_nice` (relative to nothing:
/// niceness is absolute), and 0 leaves them at the opener's.
#[test]
fn background_threads_run_at_background_nice() {
    let base = own_nice();
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        background_nice: 12,
        ..Options::default()
    };
    let db = Db::open(dir.path().join("a"), opts).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    let want = 12.max(base);
    let nice = workers_at(2, want);
    assert_eq!(
        nice,
        vec![want; 2],
        "two workers (the default) at 12 (opener at {base})"
    );
    db.close().unwrap();

    let db = Db::open(
        dir.path().join("b"),
        Options {
            background_nice: 0,
            ..Options::default()
        },
    )
    .unwrap();
    let nice = workers_at(2, base);
    assert_eq!(nice, vec![base; 2], "background_nice 0 keeps the opener's");
    db.close().unwrap();

    let Err(e) = Db::open(
        dir.path().join("c"),
        Options {
            background_nice: 20,
            ..Options::default()
        },
    ) else {
        panic!("background_nice 20 is refused");
    };
    assert!(e.to_string().contains("background_nice"), "{e}");
}
