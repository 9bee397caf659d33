//! Background threads run at `Options::background_nice`, the compaction workers 5 steps nicer.
//! One test in this binary: the check reads every thread of the process, and another test's Db
//! would add its own workers.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use sluice::{Db, Options};

/// (name, niceness) of each of this process's threads named `prefix…` (from /proc), by name.
fn nice_of_threads(prefix: &str) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = t.unwrap().path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        let name = comm.trim_end();
        if !name.starts_with(prefix) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // Fields after the parenthesised name: state is field 3, nice field 19.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        out.push((
            name.to_string(),
            rest.split(' ').nth(16).unwrap().parse().unwrap(),
        ));
    }
    out.sort();
    out
}

/// Waits (up to a minute: a worker names itself and sets its priority as it starts) until the
/// workers are exactly `want` (name, niceness); returns what it last saw.
fn workers_at(want: &[(&str, i64)]) -> Vec<(String, i64)> {
    let want: Vec<(String, i64)> = want.iter().map(|(n, x)| (n.to_string(), *x)).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let seen = nice_of_threads("sluice-bg-");
        if seen == want || Instant::now() > deadline {
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

/// Asserts that the workers reach exactly `want` (name, niceness); `what` says why.
fn check(want: &[(&str, i64)], what: &str) {
    let expected: Vec<(String, i64)> = want.iter().map(|(n, x)| (n.to_string(), *x)).collect();
    assert_eq!(workers_at(want), expected, "{what}");
}

/// The flush worker (`sluice-bg-0`) lowers its priority to `background_nice` (niceness is
/// absolute), the compaction workers to 5 more (at most 19); a lone worker, which runs both,
/// to `background_nice`; and 0 leaves them all at the opener's.
#[test]
fn background_threads_run_at_background_nice() {
    let base = own_nice();
    let dir = tempfile::tempdir().unwrap();
    let open = |name: &str, background_nice: i32, max_background_jobs: usize| {
        let opts = Options {
            background_nice,
            max_background_jobs,
            ..Options::default()
        };
        let db = Db::open(dir.path().join(name), opts).unwrap();
        db.put(b"k", b"v").unwrap();
        db.flush().unwrap();
        db
    };

    let db = open("a", 12, 2);
    let want = [("sluice-bg-0", 12.max(base)), ("sluice-bg-1", 17.max(base))];
    check(
        &want,
        &format!("two workers (the default): flushes at 12, compactions at 17 (opener at {base})"),
    );
    db.close().unwrap();

    let db = open("b", 16, 3);
    let want = [
        ("sluice-bg-0", 16.max(base)),
        ("sluice-bg-1", 19.max(base)),
        ("sluice-bg-2", 19.max(base)),
    ];
    check(&want, "compactions at most 19");
    db.close().unwrap();

    let db = open("c", 12, 1);
    let want = [("sluice-bg-0", 12.max(base))];
    check(&want, "one worker runs both at 12");
    db.close().unwrap();

    let db = open("d", 0, 2);
    let want = [("sluice-bg-0", base), ("sluice-bg-1", base)];
    check(&want, "background_nice 0 keeps the opener's");
    db.close().unwrap();

    let Err(e) = Db::open(
        dir.path().join("e"),
        Options {
            background_nice: 20,
            ..Options::default()
        },
    ) else {
        panic!("background_nice 20 is refused");
    };
    assert!(e.to_string().contains("background_nice"), "{e}");
}
