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

/// `sluice import` of examples/penguins.csv (with its schema, header, `NA` as NULL) into `db`.
pub fn import_penguins(db: &str) {
    let ex = root().join("examples");
    let out = run(
        &[
            "import",
            "--db",
            db,
            "--schema",
            ex.join("penguins.sql").to_str().unwrap(),
            "--header",
            "--null",
            "NA",
            "--quiet",
            ex.join("penguins.csv").to_str().unwrap(),
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "sluice import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
