//! An import killed with SIGKILL at random points leaves the Db exactly as before (or, once
//! the ingest has committed, exactly as after), and the next open removes its leftovers.
//!
//! The test re-runs its own binary as the importing child (`SLUICE_IMPORT_CHILD` set) and
//! kills it after a random delay. A failure prints the seed; `SLUICE_CRASH_SEED=n` replays it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use sluice_import::{open_db, ImportError, ImportOptions};

const SCHEMA: &str = "CREATE TABLE k (id BIGINT PRIMARY KEY, name TEXT, n INT);
CREATE INDEX by_n ON k (n);";

/// Checkpoints every 256 KiB of input and after every final file of the merges (files of
/// 128 KiB, merged on two threads): a kill often lands between two of them.
fn child_opts() -> ImportOptions {
    ImportOptions {
        memory: 8 << 20,
        chunk_size: Some(64 << 10),
        target_file_size: 128 << 10,
        checkpoint_bytes: 256 << 10,
        ..opts()
    }
}

/// The child: imports `file` into `db` and exits.
#[test]
fn child_import() {
    let Ok(spec) = std::env::var("SLUICE_IMPORT_CHILD") else {
        return; // not the child: nothing to do
    };
    let (db, file) = spec.split_once('|').expect("db|file");
    let db = open_db(db, true).unwrap();
    import(&db, SCHEMA, vec![PathBuf::from(file)], child_opts()).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn spawn_child(db: &Path, file: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_import", "--nocapture", "--test-threads=1"])
        .env(
            "SLUICE_IMPORT_CHILD",
            format!("{}|{}", db.display(), file.display()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn sigkill_at_random_points_leaves_db_before_or_after() {
    let dir = tempfile::tempdir().unwrap();
    // A base Db with rows of the table, so the import also checks existing rows.
    let base = dir.path().join("base");
    {
        let db = open_db(&base, true).unwrap();
        let f = write(dir.path(), "seed.csv", b"-1,seed,5\n-2,seed,6\n");
        import(&db, SCHEMA, vec![f], opts()).unwrap();
    }
    let before = {
        let db = open_db(&base, false).unwrap();
        dump(&db)
    };
    let mut content = String::new();
    for i in 0..60_000u64 {
        let id = (i * 2_654_435_761) % 1_000_003;
        content.push_str(&format!(
            "{id},name-{i}-{},{}\n",
            "x".repeat((i % 17) as usize),
            i % 101
        ));
    }
    let file = write(dir.path(), "big.csv", content.as_bytes());
    // The state after a complete import, and how long one takes.
    let full = dir.path().join("full");
    copy_dir(&base, &full);
    let t0 = Instant::now();
    let status = spawn_child(&full, &file).wait().unwrap();
    assert!(status.success());
    let took = t0.elapsed();
    let after = {
        let db = open_db(&full, false).unwrap();
        dump(&db)
    };
    assert!(after.len() > before.len() + 100_000);

    let seed: u64 = std::env::var("SLUICE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("crash test seed {seed} (SLUICE_CRASH_SEED={seed} replays it); a full import takes {took:?}");
    let mut rng = seed | 1;
    let mut outcomes = (0, 0);
    let mut stages = std::collections::BTreeMap::new();
    for round in 0..8 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let delay = Duration::from_micros(rng % (took.as_micros() as u64 * 6 / 5 + 1));
        let db_dir = dir.path().join(format!("round{round}"));
        copy_dir(&base, &db_dir);
        let mut child = spawn_child(&db_dir, &file);
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let db = open_db(&db_dir, false).unwrap();
        let now = dump(&db);
        if now == before {
            outcomes.0 += 1;
        } else {
            assert!(
                now == after,
                "seed {seed} round {round} (kill after {delay:?}): neither before nor after"
            );
            outcomes.1 += 1;
        }
        // What the open removes (a killed import's temporary directory) is gone; a
        // resumable import's checkpoint stays for `resume`.
        let resumable = |e: &std::fs::DirEntry| {
            e.file_name()
                .to_string_lossy()
                .starts_with(sluice_import::pipeline::RESUME_PREFIX)
        };
        for e in std::fs::read_dir(&db_dir).unwrap().flatten() {
            assert!(
                e.file_type().unwrap().is_file() || resumable(&e),
                "seed {seed}: {:?} left",
                e.path()
            );
            if !resumable(&e) {
                continue;
            }
            // Where the kill left the import, for the tally printed at the end.
            let m = std::fs::read_to_string(e.path().join("CHECKPOINT")).unwrap_or_default();
            let at = m.find("\"stage\":\"").map(|i| m[i + 9..].split('"').next());
            let inside_merge = m.contains("\"merging\":{");
            *stages
                .entry(format!(
                    "{}{}",
                    at.flatten().unwrap_or("none"),
                    if inside_merge { "+files" } else { "" }
                ))
                .or_insert(0) += 1;
        }
        // Resumed, the import ends with the Db an uninterrupted one gives; killed after its
        // ingest, it is refused (the Db moved on since the checkpoint, or, the checkpoint
        // removed, every row is a duplicate now).
        let o = ImportOptions {
            resume: true,
            ..child_opts()
        };
        match import(&db, SCHEMA, vec![file.clone()], o) {
            Ok(_) => {
                assert!(
                    now == before && dump(&db) == after,
                    "seed {seed} round {round}: the resumed import differs"
                );
                assert!(leftovers(&db_dir).is_empty(), "seed {seed} round {round}");
            }
            Err(e) => assert!(
                now == after
                    && matches!(
                        e,
                        ImportError::CannotResume { .. } | ImportError::DuplicateKey { .. }
                    ),
                "seed {seed} round {round}: {e}"
            ),
        }
    }
    eprintln!("outcomes (before, after): {outcomes:?}; checkpoints resumed from: {stages:?}");
}

#[test]
fn a_killed_imports_directory_in_an_outside_tmp_dir_goes_with_the_next_import_there() {
    // No open of the Db looks into a `--tmp-dir` elsewhere: the next import using it removes
    // a dead process's directory, and leaves a running one's alone.
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    let dead_pid = {
        let mut c = Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    };
    let dead = tmp.join(format!("sluice-import-{dead_pid}-0"));
    let running = tmp.join("sluice-import-1-0"); // pid 1 always runs
    for d in [&dead, &running] {
        std::fs::create_dir_all(d.join("runs")).unwrap();
        std::fs::write(d.join("runs").join("0.sst"), b"spill").unwrap();
    }
    let db = open_db(dir.path().join("db"), true).unwrap();
    let f = write(dir.path(), "k.csv", b"1,a,2\n");
    import(
        &db,
        SCHEMA,
        vec![f],
        ImportOptions {
            tmp_dir: Some(tmp.clone()),
            ..opts()
        },
    )
    .unwrap();
    assert!(
        !dead.exists(),
        "the dead process's directory is still there"
    );
    assert!(
        running.exists(),
        "a running process's directory was removed"
    );
}
