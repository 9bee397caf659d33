//! `sluice import --resume` after a real `kill -9`: the import is killed once its first
//! checkpoint is on disk, resumed, and the Db's raw scan equals an uninterrupted import's.
//! No timing is asserted: a machine fast enough to finish before the kill still compares.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::run;

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, grp INT, note TEXT); \
                      CREATE INDEX by_grp ON t (grp);";

fn import_args<'a>(db: &'a str, schema: &'a str, input: &'a str) -> Vec<&'a str> {
    vec![
        "import",
        "--db",
        db,
        "--schema",
        schema,
        "--memory",
        "8M",
        "--threads",
        "2",
        "--checkpoint-every",
        "64K",
        "--on-duplicate",
        "last",
        "--quiet",
        input,
    ]
}

/// The checkpoint manifest of the resumable import in `db`, if one is on disk.
fn checkpoint_in(db: &Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(db).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let m = e.path().join("CHECKPOINT");
        (name.starts_with("sluice-resume-") && m.exists()).then_some(m)
    })
}

/// Spawns the import into `db` and SIGKILLs it once a checkpoint exists; whether it was
/// killed (it may have finished first).
fn import_killed_at_first_checkpoint(args: &[&str], db: &Path) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "the import failed: {status}");
            return false;
        }
        if checkpoint_in(db).is_some() || start.elapsed() > Duration::from_secs(300) {
            child.kill().unwrap();
            child.wait().unwrap();
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn scan(db: &str) -> Vec<u8> {
    common::scan(db, &[])
}

#[test]
fn kill_9_then_resume_equals_an_uninterrupted_import() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("t.sql");
    std::fs::write(&schema, SCHEMA).unwrap();
    let input = dir.path().join("t.csv");
    let mut csv = String::new();
    let n = 120_000u64;
    for i in 0..n {
        let id = (i * 7919) % (n / 2);
        csv += &format!(
            "{id},{},row {i} {}\n",
            id % 17,
            "x".repeat((i % 9) as usize)
        );
    }
    std::fs::write(&input, csv).unwrap();
    let (schema, input) = (schema.to_str().unwrap(), input.to_str().unwrap());

    let want_db = dir.path().join("want");
    let want = want_db.to_str().unwrap();
    let out = run(&import_args(want, schema, input), b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let db_path = dir.path().join("db");
    let db = db_path.to_str().unwrap();
    // Killed, then imported again without --resume: the checkpoint is discarded, said so.
    if import_killed_at_first_checkpoint(&import_args(db, schema, input), &db_path) {
        let mut args = import_args(db, schema, input);
        args.retain(|a| *a != "--quiet");
        let out = run(&args, b"");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("discarded the checkpoint"), "{err}");
        assert_eq!(scan(db), scan(want));
        std::fs::remove_dir_all(&db_path).unwrap();
    }

    // Killed, then resumed.
    let killed = import_killed_at_first_checkpoint(&import_args(db, schema, input), &db_path);
    eprintln!("killed at the first checkpoint: {killed}");
    let mut args = import_args(db, schema, input);
    args.retain(|a| *a != "--quiet");
    args.push("--resume");
    let out = run(&args, b"");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    if killed {
        assert!(stderr.contains("resuming from the checkpoint"), "{stderr}");
        assert!(stdout.contains("resumed from a checkpoint"), "{stdout}");
    }
    assert!(
        checkpoint_in(&db_path).is_none(),
        "the checkpoint outlived the import"
    );
    assert!(scan(db) == scan(want), "the resumed import's Db differs");

    // A checkpoint for another input is refused with the reason.
    if import_killed_at_first_checkpoint(&import_args(db, schema, input), &db_path) {
        std::fs::write(dir.path().join("t.csv"), "1,1,changed\n").unwrap();
        let mut args = import_args(db, schema, input);
        args.push("--resume");
        let out = run(&args, b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains("cannot resume") && err.contains("t.csv changed"),
            "{err}"
        );
        assert!(err.contains("without --resume"), "{err}");
    }
}
