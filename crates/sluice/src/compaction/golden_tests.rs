//! Golden-file tests (`testdata/compaction_picker`, `testdata/compaction_drop`) for the two
//! pure decisions of compaction: what to compact, and what a merge drops. Rewrite the expected
//! output with `REWRITE=1 cargo test -p sluice golden`.
//!
//! `version`: one file per line, `L<level> <number>:<lo>-<hi> [size=<bytes>]`.
//! `pick [l0_trigger=N] [base=BYTES] [mult=N] [busy=(1,2)] [sublevels=off]`: the picked
//! compaction (`sublevels=off`: RocksDB's L0, `PickerOptions::l0_sublevels` false).
//! `scores [sublevels=off]`: per-level targets and scores as the picker sees them.
//! `drop [snapshots=(5,9)] [bottommost=a-c|all|none]` with input lines `<key>.<seq>.<SET|DEL>` and
//! `rangedel <start>-<end>.<seq>`, in internal-key order: each entry's decision, then the kept
//! range deletions.

use std::collections::HashSet;

use crate::base::key::{make_internal_key, parse_internal_key, ValueKind, MAX_SEQNO};
use crate::base::range_tombstone::RangeTombstone;
use crate::compaction::job::{DropPolicy, DropRules};
use crate::compaction::picker::{
    level_scores, level_targets, pick_compaction, CompactionChoice, PickerOptions,
};
use crate::version::l0_sublevels::L0Sublevels;
use crate::version::l0_sublevels_tests::parse_version;
use crate::version::{FileMeta, Version, NUM_LEVELS};

fn arg<'a>(tc: &'a datadriven::TestCase, name: &str) -> Option<&'a str> {
    tc.args
        .get(name)
        .and_then(|v| v.first())
        .map(String::as_str)
}

fn picker_options(tc: &datadriven::TestCase) -> PickerOptions {
    PickerOptions {
        l0_compaction_trigger: arg(tc, "l0_trigger").map_or(4, |v| v.parse().unwrap()),
        l0_sublevels: arg(tc, "sublevels") != Some("off"),
        max_bytes_for_level_base: arg(tc, "base").map_or(1000, |v| v.parse().unwrap()),
        level_multiplier: arg(tc, "mult").map_or(10, |v| v.parse().unwrap()),
        max_l0_move_bytes: arg(tc, "max_l0_move").map_or(u64::MAX, |v| v.parse().unwrap()),
        l0_tiering_ratio_pct: arg(tc, "tiering").map_or(200, |v| v.parse().unwrap()),
        l0_round_bytes: arg(tc, "round_bytes").map_or(0, |v| v.parse().unwrap()),
        ..PickerOptions::default()
    }
}

fn numbers(files: &[std::sync::Arc<FileMeta>]) -> String {
    let v: Vec<String> = files.iter().map(|f| f.number.to_string()).collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(",")
    }
}

#[test]
fn compaction_picker_golden() {
    datadriven::walk("testdata/compaction_picker", |f| {
        let mut version = Version::default();
        f.run(|tc| -> String {
            match tc.directive.as_str() {
                "version" => {
                    version = parse_version(&tc.input);
                    version.describe()
                }
                "pick" => {
                    let busy: HashSet<u64> = tc
                        .args
                        .get("busy")
                        .map(|v| v.iter().map(|n| n.parse().unwrap()).collect())
                        .unwrap_or_default();
                    let o = picker_options(tc);
                    let scores = level_scores(&version, &L0Sublevels::from_version(&version), &o);
                    match pick_compaction(&version, &o, &busy) {
                        None => "no compaction\n".into(),
                        Some(c) => format!(
                            "L{} -> L{}: inputs {} outputs {}{} score {}\n",
                            c.level(),
                            c.output_level(),
                            numbers(c.inputs()),
                            numbers(c.output_inputs()),
                            if matches!(c, CompactionChoice::Move { .. }) {
                                " (trivial move)"
                            } else {
                                ""
                            },
                            scores[c.level()]
                        ),
                    }
                }
                "scores" => {
                    let o = picker_options(tc);
                    let (targets, base) = level_targets(&version, &o);
                    let scores = level_scores(&version, &L0Sublevels::from_version(&version), &o);
                    let mut s = format!("base L{base}\n");
                    for l in 0..NUM_LEVELS {
                        s.push_str(&format!(
                            "L{l}: bytes {} target {} score {}\n",
                            version.level_bytes(l),
                            targets[l],
                            scores[l]
                        ));
                    }
                    s
                }
                d => panic!("unknown directive {d}"),
            }
        })
    });
}

fn parse_kind(k: &str) -> ValueKind {
    match k {
        "SET" => ValueKind::Value,
        "DEL" => ValueKind::Deletion,
        other => panic!("unknown kind {other}"),
    }
}

#[test]
fn compaction_drop_golden() {
    datadriven::walk("testdata/compaction_drop", |f| {
        f.run(|tc| -> String {
            assert_eq!(tc.directive, "drop", "unknown directive");
            let snapshots: Vec<u64> = tc
                .args
                .get("snapshots")
                .map(|v| v.iter().map(|n| n.parse().unwrap()).collect())
                .unwrap_or_default();
            let bottom = arg(tc, "bottommost").unwrap_or("none").to_string();
            let bottommost = move |lo: &[u8], hi: &[u8]| match bottom.as_str() {
                "all" => true,
                "none" => false,
                range => {
                    let (a, b) = range.split_once('-').expect("bottommost=a-c");
                    a.as_bytes() <= lo && hi <= b.as_bytes()
                }
            };
            let policy = DropPolicy {
                snapshots,
                bottommost: &bottommost,
            };
            let mut tombs = Vec::new();
            let mut entries = Vec::new();
            for line in tc.input.lines().filter(|l| !l.trim().is_empty()) {
                if let Some(rd) = line.strip_prefix("rangedel ") {
                    let (range, seq) = rd.rsplit_once('.').expect("range.seq");
                    let (start, end) = range.split_once('-').expect("start-end");
                    tombs.push(RangeTombstone {
                        start: start.as_bytes().to_vec(),
                        end: end.as_bytes().to_vec(),
                        seqno: seq.parse().unwrap(),
                    });
                } else {
                    let parts: Vec<&str> = line.trim().split('.').collect();
                    let seq: u64 = parts[1].parse().unwrap();
                    assert!(seq < MAX_SEQNO);
                    entries.push(make_internal_key(
                        parts[0].as_bytes(),
                        seq,
                        parse_kind(parts[2]),
                    ));
                }
            }
            let mut rules = DropRules::new(&policy, tombs);
            let mut out = String::new();
            for e in &entries {
                let p = parse_internal_key(e).unwrap();
                let kind = if p.kind == ValueKind::Value {
                    "SET"
                } else {
                    "DEL"
                };
                out.push_str(&format!(
                    "{}.{}.{kind}: {:?}\n",
                    String::from_utf8_lossy(p.user_key),
                    p.seqno,
                    rules.decide(&p)
                ));
            }
            for t in rules.kept_tombstones() {
                out.push_str(&format!(
                    "rangedel {}-{}.{}: kept\n",
                    String::from_utf8_lossy(&t.start),
                    String::from_utf8_lossy(&t.end),
                    t.seqno
                ));
            }
            out
        })
    });
}
