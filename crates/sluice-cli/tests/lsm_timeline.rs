//! `sluice lsm --json` and `--html` on a Db built step by step with the `sluice` binary itself
//! (import, flushes of overlapping key ranges, one small key-wide ingested file, a manual
//! compaction): the JSON is compared with `testdata/lsm_timeline_sluice.json`
//! (`SLUICE_REWRITE_GOLDEN=1` rewrites it). Every step is a command that waits for its own
//! work and the trigger for automatic compactions is never reached, so the MANIFEST, and the
//! file sizes in it, are the same on every run.

mod common;

use std::path::Path;
use std::process::Command;

fn sluice(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let out = common::run(args, stdin);
    assert!(
        out.status.success(),
        "sluice {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
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
    common::import_penguins(d);
    // At most three L0 sublevels with the wide file below: the automatic compaction trigger
    // (four) is never reached, so no background compaction races the manual one below (which
    // of the two ran first, and so the edits' order, hung on thread timing).
    for (lo, hi) in [(0, 400), (100, 300), (500, 900)] {
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
    // The MANIFEST's own file number depends on whether a compaction the last flush triggered
    // had taken a file number before the close cancelled it (timing); every file the replay
    // shows is the same either way.
    let (got, want) = (
        without_manifest_number(&got),
        without_manifest_number(&want),
    );
    assert!(
        got == want,
        "sluice lsm --json differs from {} (SLUICE_REWRITE_GOLDEN=1 rewrites it):\n{}",
        golden.display(),
        first_difference(&want, &got)
    );
}

/// `text` with the number of the `"manifest"` line's MANIFEST file blanked out.
fn without_manifest_number(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with("\"manifest\": \"MANIFEST-") {
                "\"manifest\": \"MANIFEST-…\",".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
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

/// A synthetic Db directory (`CURRENT` and a MANIFEST, no tables) whose MANIFEST holds
/// `SLUICE_LSM_SYNTH_EDITS` (default 3,000) edits of a simulated leveled LSM — flushes, ingests,
/// a tiny key-wide flush now and then, L0→L1 and Ln→Ln+1 compactions, trivial moves — encoded
/// by the engine's own `VersionEdit` and log writer, replays edit for edit. With
/// `SLUICE_LSM_SYNTH_DIR` set the directory is kept there: `tests/interop/test_lsm_html.py`
/// measures the page on it (`SLUICE_LSM_SYNTH_EDITS=100000` for the figure).
#[test]
fn a_long_synthetic_manifest_replays() {
    let n: usize = std::env::var("SLUICE_LSM_SYNTH_EDITS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3_000);
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::env::var_os("SLUICE_LSM_SYNTH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().join("synth"));
    synth::write(&dir, n);
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["lsm", "--db"])
        .arg(&dir)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let edits = doc["column_families"][0]["edits"].as_u64().unwrap();
    // The edits asked for, plus the first edit that opens the MANIFEST.
    assert!(edits as usize >= n, "{edits} edits replayed of {n}");
}

mod synth {
    use std::path::Path;

    use sluice::fs::{FileSystem, RealFs};
    use sluice::key::{make_internal_key, ValueKind};
    use sluice::version::{FileMeta, VersionEdit, MANIFEST_FORMAT_VERSION};
    use sluice::wal::log::LogWriter;

    /// Keys are `k` + 10 digits over [0, SPACE); level n's outputs are cut at multiples of
    /// SPACE / 4^n... (slots), so a level's files never overlap.
    const SPACE: u64 = 10_000_000_000;
    const L0_TRIGGER: usize = 6;

    struct Sim {
        levels: Vec<Vec<FileMeta>>,
        next: u64,
        seq: u64,
        rng: u64,
    }

    fn key(k: u64) -> Vec<u8> {
        format!("k{k:010}").into_bytes()
    }

    impl Sim {
        fn rand(&mut self, n: u64) -> u64 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            self.rng % n.max(1)
        }
        fn file(&mut self, lo: u64, hi: u64, size: u64, global: bool) -> FileMeta {
            self.seq += 1000;
            self.next += 1;
            let s = self.seq;
            FileMeta {
                number: self.next,
                size,
                smallest: make_internal_key(&key(lo), s, ValueKind::Value),
                largest: make_internal_key(&key(hi), s, ValueKind::Value),
                smallest_seqno: s - 999,
                largest_seqno: s,
                global_seqno: if global { s } else { 0 },
                range_dels: 0,
            }
        }
        fn range(f: &FileMeta) -> (u64, u64) {
            let n = |k: &[u8]| {
                std::str::from_utf8(&k[1..])
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            };
            (n(f.smallest_user()), n(f.largest_user()))
        }
        fn apply(&mut self, e: &VersionEdit) {
            for (l, n) in &e.deleted {
                self.levels[*l].retain(|f| f.number != *n);
            }
            for (l, f) in &e.added {
                self.levels[*l].push(f.clone());
            }
        }
        /// Moves `inputs` (level `from`) and every overlapping file of `to` into `to`,
        /// cut at `to`'s slots, or moves a lone input when nothing overlaps it.
        fn compact(&mut self, from: usize, inputs: Vec<FileMeta>, to: usize) -> VersionEdit {
            let lo = inputs.iter().map(|f| Self::range(f).0).min().unwrap();
            let hi = inputs.iter().map(|f| Self::range(f).1).max().unwrap();
            let below: Vec<FileMeta> = self.levels[to]
                .iter()
                .filter(|f| !(Self::range(f).1 < lo || Self::range(f).0 > hi))
                .cloned()
                .collect();
            let mut e = VersionEdit {
                deleted: inputs.iter().map(|f| (from, f.number)).collect(),
                ..VersionEdit::default()
            };
            if below.is_empty() && inputs.len() == 1 && from > 0 {
                e.added.push((to, inputs[0].clone()));
                return e;
            }
            e.deleted.extend(below.iter().map(|f| (to, f.number)));
            let bytes: u64 = inputs.iter().chain(&below).map(|f| f.size).sum();
            let (lo, hi) = below
                .iter()
                .map(Self::range)
                .fold((lo, hi), |(a, b), (c, d)| (a.min(c), b.max(d)));
            let slot = SPACE >> (2 * to as u32);
            let mut cuts = Vec::new();
            let mut s = lo;
            while s <= hi {
                let end = ((s / slot) + 1) * slot - 1;
                cuts.push((s, end.min(hi)));
                s = end + 1;
            }
            let each = bytes / cuts.len() as u64;
            for (a, b) in cuts {
                let f = self.file(a, b, each.max(1), false);
                e.added.push((to, f));
            }
            e
        }
        fn step(&mut self, i: usize) -> VersionEdit {
            if self.levels[0].len() >= L0_TRIGGER {
                let inputs = self.levels[0].clone();
                return self.compact(0, inputs, 1);
            }
            for l in 1..6 {
                let target = (256u64 << 20) * 10u64.pow(l as u32 - 1);
                let bytes: u64 = self.levels[l].iter().map(|f| f.size).sum();
                if bytes > target {
                    let pick = self.rand(self.levels[l].len() as u64) as usize;
                    let f = self.levels[l][pick].clone();
                    return self.compact(l, vec![f], l + 1);
                }
            }
            let r = self.rand(1000);
            let (span, size, global) = if r < 2 {
                (SPACE * 9 / 10, 24 << 10, false) // the tiny key-wide flush
            } else if r < 150 {
                (SPACE / 200, 2 << 20, true) // an ingest
            } else {
                (SPACE / 20, 8 << 20, false)
            };
            let lo = self.rand(SPACE - span);
            let f = self.file(lo, lo + span, size, global);
            let mut e = VersionEdit {
                added: vec![(0, f)],
                ..VersionEdit::default()
            };
            if !global {
                e.log_number = Some(i as u64);
                e.flushed_seqno = Some(self.seq);
            }
            e
        }
    }

    pub fn write(dir: &Path, n: usize) {
        let fs = RealFs;
        fs.create_dir_all(dir).unwrap();
        let mut w = LogWriter::new(fs.create(&dir.join("MANIFEST-000001")).unwrap());
        let first = VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION),
            log_number: Some(0),
            next_file_number: Some(2),
            last_sequence: Some(0),
            ..VersionEdit::default()
        };
        w.add_record(&first.encode()).unwrap();
        let mut sim = Sim {
            levels: vec![Vec::new(); 7],
            next: 1,
            seq: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
        };
        for i in 1..n {
            let e = sim.step(i);
            sim.apply(&e);
            w.add_record(&e.encode()).unwrap();
        }
        w.sync().unwrap();
        std::fs::write(dir.join("CURRENT"), "MANIFEST-000001\n").unwrap();
    }
}
