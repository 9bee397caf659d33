//! Helpers shared by the CLI's integration tests: running the `sluice` binary, the repository
//! root, and the bundled penguins imported into a Db.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs `sluice args…` with `stdin`, whatever its exit status.
pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `sluice import` of examples/penguins.csv (with its schema, header, `NA` as NULL) into
/// `db`, with `extra` options before the input file; the output whatever its exit status.
pub fn penguins_import(db: &str, extra: &[&str]) -> Output {
    let ex = root().join("examples");
    csv_import(
        db,
        &ex.join("penguins.sql"),
        &ex.join("penguins.csv"),
        extra,
    )
}

/// `sluice import` of `csv` (with a header line, `NA` as NULL) into `db` with `schema`, with
/// `extra` options before the input file; the output whatever its exit status.
pub fn csv_import(db: &str, schema: &Path, csv: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "import",
        "--db",
        db,
        "--schema",
        schema.to_str().unwrap(),
        "--header",
        "--null",
        "NA",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    args.push(csv.to_str().unwrap());
    run(&args, b"")
}

/// `sluice import` of examples/penguins.csv into `db`, which must succeed.
pub fn import_penguins(db: &str) {
    let out = penguins_import(db, &[]);
    assert!(
        out.status.success(),
        "sluice import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `sluice scan --db db extra…`, which must succeed: its standard output.
pub fn scan(db: &str, extra: &[&str]) -> Vec<u8> {
    let mut args = vec!["scan", "--db", db];
    args.extend_from_slice(extra);
    let out = run(&args, b"");
    assert!(
        out.status.success(),
        "sluice scan: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
