//! `sluice lsm --json` and `--html` on a Db built step by step with the `sluice` binary itself
//! (import, flushes of overlapping key ranges, one small key-wide ingested file, a manual
//! compaction): the JSON is compared with `testdata/lsm_timeline_sluice.json`
//! (`SLUICE_REWRITE_GOLDEN=1` rewrites it). Every step is a command that waits for its own
//! work and the trigger for automatic compactions is never reached, so the MANIFEST, and the
//! file sizes in it, are the same on every run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn sluice(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "sluice {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `n` TSV lines `PREFIXkkkk<TAB>value` for k in `range`, values 200 bytes.
fn tsv(prefix: &str, range: std::ops::Range<u32>) -> Vec<u8> {
    let mut s = String::new();
    for k in range {
        s.push_str(&format!("{prefix}{k:04}\t{}\n", "v".repeat(200)));
    }
    s.into_bytes()
}

/// The Db of the golden test (see the file's doc).
fn build_db(dir: &Path) {
    let d = dir.to_str().unwrap();
    let ex = root().join("examples");
    sluice(
        &[
            "import",
            "--db",
            d,
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
    for (lo, hi) in [(0, 400), (100, 300), (200, 260), (500, 900)] {
        sluice(&["load", "--db", d], &tsv("k", lo..hi));
        sluice(&["flush", "--db", d], b"");
    }
    // One tiny file spanning the whole raw key space: the wide one.
    let wide = dir.with_extension("wide.sst");
    sluice(
        &["sst", "build", "--out", wide.to_str().unwrap()],
        b"6130\t78\n7a7a\t78\n",
    );
    sluice(
        &[
            "ingest",
            "--db",
            d,
            "--allow-overlap",
            wide.to_str().unwrap(),
        ],
        b"",
    );
    sluice(
        &["compact", "--db", d, "--start", "k0100", "--end", "k0300"],
        b"",
    );
}

#[test]
fn json_of_a_deterministic_db_matches_the_golden_file() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    build_db(&db);
    let got = sluice(&["lsm", "--db", db.to_str().unwrap(), "--json"], b"");
    let got = String::from_utf8(got).unwrap();
    let v: serde_json::Value = serde_json::from_str(&got).expect("valid JSON");
    assert_eq!(v["format"], "sluice-lsm-timeline/1");
    assert_eq!(v["key_decoding"]["mode"], "catalog");
    let wide: Vec<_> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["wide"] == true)
        .collect();
    assert_eq!(wide.len(), 1, "the tiny ingested file is the one wide file");
    assert_eq!(wide[0]["kind"], "ingest");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lsm_timeline_sluice.json");
    if std::env::var_os("SLUICE_REWRITE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).expect("golden file (SLUICE_REWRITE_GOLDEN=1)");
    assert!(
        got == want,
        "sluice lsm --json differs from {} (SLUICE_REWRITE_GOLDEN=1 rewrites it):\n{}",
        golden.display(),
        first_difference(&want, &got)
    );
}

#[test]
fn html_page_is_self_contained() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    build_db(&db);
    let page = tmp.path().join("lsm.html");
    sluice(
        &[
            "lsm",
            "--db",
            db.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ],
        b"",
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for remote in ["http://", "https://", "src=\"//"] {
        assert!(!html.contains(remote), "the page loads nothing: {remote}");
    }
    assert!(html.contains("sluice-lsm-timeline/1"));
}

#[test]
fn a_directory_without_current_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["lsm", "--db", tmp.path().to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn first_difference(want: &str, got: &str) -> String {
    for (n, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        if w != g {
            return format!("line {}:\n- {w}\n+ {g}", n + 1);
        }
    }
    format!(
        "lengths differ: {} vs {} lines",
        want.lines().count(),
        got.lines().count()
    )
}
