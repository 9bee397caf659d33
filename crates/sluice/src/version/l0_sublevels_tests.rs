//! Tests of L0 sublevels: golden files (`testdata/l0_sublevels`) and properties over random L0s.
//! Rewrite the expected output with `REWRITE=1 cargo test -p sluice --lib l0_sublevels`.
//!
//! `define [width=N]`: one file per line, `L<level> <number>:<lo>-<hi> [size=B] [seq=S]
//! [excl]` (`seq` defaults to the number; `excl`: the largest key is an exclusive range-deletion
//! end): the picture, the sublevels and the intervals.
//! `files-for-key`: one user key per line: the files a point read consults, newest first.
//! `flush-split-keys bytes=B`. `read-amp`.
//! `pick-base` / `pick-intra [earliest_unflushed=S]`, both with `[min_depth=N] [soft=B]
//! [hard=B] [growth=PCT] [busy=(..)] [intra=(..)]`: `busy` files are inputs of one running
//! L0→Lbase compaction (L0 or Lbase numbers), `intra` of one running intra-L0 compaction.
//! `running=lo-hi` adds a running L0→Lbase compaction over that range whose inputs are gone
//! from L0. `intervals` (same `busy`/`intra`/`running` arguments): L0 alone, and the intervals
//! with their compacting state.
//! `extend-base [lo=k] [hi=k]`: grows the last base candidate between those Lbase neighbours.
//! `compact`: applies the last candidate (inputs leave L0; an intra-L0 output comes back as
//! one file) and shows the new L0.

use std::collections::HashSet;
use std::sync::Arc;

use proptest::prelude::*;

use super::l0_pick::{candidate_keeps_age_order, L0CompactionCandidate, L0PickOptions};
use super::l0_sublevels::{L0Sublevels, RunningL0Compaction};
use super::render::render_with;
use super::{FileMeta, Version, VersionEdit};
use crate::base::key::{make_internal_key, ValueKind, MAX_SEQNO};

fn file(number: u64, lo: &str, hi: &str, size: u64, seq: u64, excl: bool) -> FileMeta {
    let mut f = FileMeta::for_test(number, lo.as_bytes(), hi.as_bytes(), size, seq);
    if excl {
        f.largest = make_internal_key(hi.as_bytes(), MAX_SEQNO, ValueKind::RangeDeletion);
        f.range_dels = 1;
    }
    f
}

/// A version from golden-file lines `L<level> <number>:<lo>-<hi> [size=B] [seq=S] [excl]`
/// (the `version` directive of every golden file, `compaction/golden_tests.rs` too).
pub(crate) fn parse_version(input: &str) -> Version {
    let mut edit = VersionEdit::default();
    for line in input.lines().filter(|l| !l.trim().is_empty()) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let level: usize = parts[0][1..].parse().expect("level");
        let (num, range) = parts[1].split_once(':').expect("number:range");
        let (lo, hi) = range.split_once('-').expect("lo-hi");
        let number: u64 = num.parse().expect("number");
        let opt = |name: &str| parts.iter().find_map(|p| p.strip_prefix(name));
        let size = opt("size=").map_or(100, |s| s.parse().expect("size"));
        let seq = opt("seq=").map_or(number, |s| s.parse().expect("seq"));
        let excl = parts.contains(&"excl");
        edit.added
            .push((level, file(number, lo, hi, size, seq, excl)));
    }
    Version::default().apply(&edit).expect("valid version")
}

fn arg<'a>(tc: &'a datadriven::TestCase, name: &str) -> Option<&'a str> {
    tc.args
        .get(name)
        .and_then(|v| v.first())
        .map(String::as_str)
}

fn numbers_arg(tc: &datadriven::TestCase, name: &str) -> Vec<u64> {
    tc.args
        .get(name)
        .map(|v| v.iter().map(|n| n.parse().expect("file number")).collect())
        .unwrap_or_default()
}

fn pick_options(tc: &datadriven::TestCase) -> L0PickOptions {
    let mut o = L0PickOptions::default();
    let num = |name: &str| arg(tc, name).map(|v| v.parse::<u64>().expect(name));
    if let Some(d) = num("min_depth") {
        o.min_base_depth = d as usize;
        o.min_intra_depth = d as usize;
    }
    o.soft_max_bytes = num("soft").unwrap_or(o.soft_max_bytes);
    o.hard_max_bytes = num("hard").unwrap_or(o.hard_max_bytes);
    o.max_growth_pct = num("growth").unwrap_or(o.max_growth_pct);
    o.max_absorb_pct = num("absorb").unwrap_or(o.max_absorb_pct);
    o
}

/// The sublevels of `v` with the `busy=`/`intra=` running compactions of `tc`.
fn sublevels_with_busy(v: &Version, tc: &datadriven::TestCase) -> L0Sublevels {
    let mut busy = HashSet::new();
    let mut running = Vec::new();
    for (name, intra_l0) in [("busy", false), ("intra", true)] {
        let files = numbers_arg(tc, name);
        busy.extend(files.iter().copied());
        let l0: Vec<&Arc<FileMeta>> = v.levels[0]
            .iter()
            .filter(|f| files.contains(&f.number))
            .collect();
        if let (Some(lo), Some(hi)) = (
            l0.iter().map(|f| f.smallest_user()).min(),
            l0.iter().map(|f| f.largest_user()).max(),
        ) {
            running.push(RunningL0Compaction {
                smallest: lo.to_vec(),
                largest: hi.to_vec(),
                intra_l0,
                files,
            });
        }
    }
    if let Some((lo, hi)) = arg(tc, "running").and_then(|r| r.split_once('-')) {
        running.push(RunningL0Compaction {
            smallest: lo.as_bytes().to_vec(),
            largest: hi.as_bytes().to_vec(),
            intra_l0: false,
            files: Vec::new(),
        });
    }
    L0Sublevels::from_version(v).with_compacting(&busy, &running)
}

fn describe_candidate(c: &L0CompactionCandidate, s: &L0Sublevels) -> String {
    let nums: Vec<String> = c.numbers().iter().map(u64::to_string).collect();
    let seed = &s.intervals()[c.seed_interval];
    format!(
        "{}: files {}\n  span [{}, {}{} bytes {} seed interval {} (starts {}) depth reduction {}\n",
        if c.intra_l0 { "intra-L0" } else { "L0->Lbase" },
        nums.join(","),
        String::from_utf8_lossy(&c.smallest),
        String::from_utf8_lossy(&c.largest),
        if c.largest_exclusive { ")" } else { "]" },
        c.bytes,
        c.seed_interval,
        seed.start.describe(),
        c.depth_reduction,
    )
}

fn define_output(v: &Version, width: usize) -> String {
    let s = L0Sublevels::from_version(v);
    s.check_invariants().expect("invariants");
    format!("{}{}", render_with(v, &s, width), s.describe())
}

/// `compact`: the version after `c` runs (an intra-L0 output is one file numbered above all).
fn apply(v: &Version, c: &L0CompactionCandidate) -> Version {
    let mut edit = VersionEdit {
        deleted: c.files.iter().map(|f| (0, f.number)).collect(),
        ..VersionEdit::default()
    };
    if c.intra_l0 {
        let number = v.file_numbers().max().unwrap_or(0) + 1;
        let seq = c.files.iter().map(|f| f.largest_seqno).max().unwrap_or(0);
        let mut out = file(number, "", "", c.bytes, seq, c.largest_exclusive);
        out.smallest = make_internal_key(&c.smallest, seq, ValueKind::Value);
        if !c.largest_exclusive {
            out.largest = make_internal_key(&c.largest, seq, ValueKind::Value);
        } else {
            out.largest = make_internal_key(&c.largest, MAX_SEQNO, ValueKind::RangeDeletion);
        }
        out.smallest_seqno = c.files.iter().map(|f| f.smallest_seqno).min().unwrap_or(0);
        edit.added.push((0, out));
    }
    v.apply(&edit).expect("candidate applies")
}

#[test]
fn l0_sublevels_golden() {
    datadriven::walk("testdata/l0_sublevels", |f| {
        let mut version = Version::default();
        let mut width = 40;
        let mut last: Option<(L0CompactionCandidate, L0Sublevels)> = None;
        f.run(|tc| -> String {
            match tc.directive.as_str() {
                "define" => {
                    version = parse_version(&tc.input);
                    width = arg(tc, "width").map_or(40, |w| w.parse().expect("width"));
                    last = None;
                    define_output(&version, width)
                }
                "intervals" => {
                    let s = sublevels_with_busy(&version, tc);
                    format!("{}{}", s.render(width), s.describe())
                }
                "read-amp" => {
                    let s = L0Sublevels::from_version(&version);
                    format!("read amp {}, max depth {}\n", s.read_amp(), s.max_depth())
                }
                "files-for-key" => {
                    let s = L0Sublevels::from_version(&version);
                    let mut out = String::new();
                    for key in tc.input.lines().map(str::trim).filter(|k| !k.is_empty()) {
                        let files: Vec<String> = s
                            .files_for_key(key.as_bytes())
                            .iter()
                            .map(|f| f.number.to_string())
                            .collect();
                        let files = if files.is_empty() {
                            "-".into()
                        } else {
                            files.join(",")
                        };
                        out.push_str(&format!("{key}: {files}\n"));
                    }
                    out
                }
                "flush-split-keys" => {
                    let bytes = arg(tc, "bytes").map_or(0, |b| b.parse().expect("bytes"));
                    let keys = L0Sublevels::from_version(&version).flush_split_keys(bytes);
                    let keys: Vec<String> = keys
                        .iter()
                        .map(|k| crate::base::error::escape_bytes(k))
                        .collect();
                    format!("[{}]\n", keys.join(", "))
                }
                "pick-base" | "pick-intra" => {
                    let s = sublevels_with_busy(&version, tc);
                    s.check_invariants().expect("invariants");
                    let o = pick_options(tc);
                    let c = if tc.directive == "pick-base" {
                        let lbase = version.levels[1..].iter().find(|l| !l.is_empty());
                        s.pick_base_compaction(lbase.map_or(&[][..], Vec::as_slice), &o)
                    } else {
                        let unflushed = arg(tc, "earliest_unflushed")
                            .map_or(u64::MAX, |v| v.parse().expect("seqno"));
                        s.pick_intra_l0_compaction(unflushed, &o)
                    };
                    match c {
                        None => {
                            last = None;
                            "no compaction\n".into()
                        }
                        Some(c) => {
                            assert!(candidate_keeps_age_order(&s, &c), "age order broken");
                            let out = describe_candidate(&c, &s);
                            last = Some((c, s));
                            out
                        }
                    }
                }
                "extend-base" => {
                    let (c, s) = last.as_mut().expect("a base candidate to extend");
                    let lo = arg(tc, "lo").map(str::as_bytes);
                    let hi = arg(tc, "hi").map(str::as_bytes);
                    let grew = s.extend_base_candidate(c, lo, hi);
                    assert!(candidate_keeps_age_order(s, c), "age order broken");
                    format!("grew: {grew}\n{}", describe_candidate(c, s))
                }
                "compact" => {
                    let (c, _) = last.take().expect("a candidate to apply");
                    version = apply(&version, &c);
                    define_output(&version, width)
                }
                d => panic!("unknown directive {d}"),
            }
        })
    });
}

/// Random L0 files over a small key space: keys "a".."p", some ends exclusive, seqnos shuffled.
fn arb_l0() -> impl Strategy<Value = Vec<FileMeta>> {
    prop::collection::vec(
        (0u8..16, 0u8..6, 1u64..500, any::<bool>(), 0u64..1000),
        0..40,
    )
    .prop_map(|specs| {
        specs
            .into_iter()
            .enumerate()
            .map(|(i, (lo, span, size, excl, seq))| {
                let hi = (lo + span).min(15);
                let excl = excl && hi > lo;
                let k = |c: u8| ((b'a' + c) as char).to_string();
                file(i as u64 + 1, &k(lo), &k(hi), size, seq, excl)
            })
            .collect()
    })
}

/// Disjoint key spans `(lo, hi, hi exclusive)` over "a".."p" (0..=15), one per spec `(gap,
/// width, exclusive)` while they fit: each starts `gap - 1` keys after the key following the
/// span before, and an exclusive end may equal the next span's start. Base levels for the
/// picking proptests here and in `compaction::picker`'s tests.
pub(crate) fn disjoint_spans(
    specs: impl IntoIterator<Item = (u8, u8, bool)>,
) -> Vec<(u8, u8, bool)> {
    let mut spans = Vec::new();
    let mut at = 0u8;
    for (gap, w, excl) in specs {
        let lo = at + gap - 1;
        let hi = lo + w;
        if hi > 15 {
            break;
        }
        let excl = excl && hi > lo;
        spans.push((lo, hi, excl));
        at = if excl { hi + 1 } else { hi + 2 };
    }
    spans
}

fn arcs(files: &[FileMeta]) -> Vec<Arc<FileMeta>> {
    files.iter().cloned().map(Arc::new).collect()
}

/// The proptests' size bounds: hard at three times soft, growth ≤ 150%.
fn prop_opts(min_depth: usize, soft: u64) -> L0PickOptions {
    L0PickOptions {
        min_base_depth: min_depth,
        min_intra_depth: min_depth,
        soft_max_bytes: soft,
        hard_max_bytes: soft * 3,
        max_growth_pct: 150,
        max_absorb_pct: 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Sublevel invariants hold, and a point read sees exactly the files holding its key.
    #[test]
    fn l0_sublevels_prop_invariants_and_reads(files in arb_l0(), key in 0u8..17) {
        let s = L0Sublevels::new(&arcs(&files));
        prop_assert_eq!(s.check_invariants(), Ok(()));
        prop_assert_eq!(s.read_amp(), s.sublevel_count());
        prop_assert!(s.max_depth() <= s.read_amp());
        let key = [b'a' + key];
        let got: Vec<u64> = s.files_for_key(&key).iter().map(|f| f.number).collect();
        let mut want: Vec<&FileMeta> = files
            .iter()
            .filter(|f| f.overlaps(Some(&key), Some(&key)))
            .collect();
        want.sort_by_key(|f| std::cmp::Reverse((f.largest_seqno, f.number)));
        let want: Vec<u64> = want.iter().map(|f| f.number).collect();
        prop_assert_eq!(got, want);
    }

    /// Picked compactions never move newer data below older data, never take a busy file, and
    /// successive L0→Lbase picks (each marked running) take disjoint files.
    #[test]
    fn l0_sublevels_prop_candidates_keep_age_order(
        files in arb_l0(),
        min_depth in 1usize..4,
        soft in 0u64..3000,
        unflushed in 0u64..1100,
    ) {
        let l0 = arcs(&files);
        let o = prop_opts(min_depth, soft);
        let mut busy = HashSet::new();
        let mut running = Vec::new();
        for _ in 0..4 {
            let s = L0Sublevels::new(&l0).with_compacting(&busy, &running);
            prop_assert_eq!(s.check_invariants(), Ok(()));
            let Some(c) = s.pick_base_compaction(&[], &o) else { break };
            prop_assert!(candidate_keeps_age_order(&s, &c));
            prop_assert!(c.depth_reduction >= min_depth);
            for f in &c.files {
                prop_assert!(busy.insert(f.number), "file {} picked twice", f.number);
            }
            running.push(RunningL0Compaction {
                smallest: c.smallest.clone(),
                largest: c.largest.clone(),
                intra_l0: false,
                files: c.numbers(),
            });
        }
        let s = L0Sublevels::new(&l0).with_compacting(&busy, &running);
        if let Some(c) = s.pick_intra_l0_compaction(unflushed, &o) {
            prop_assert!(candidate_keeps_age_order(&s, &c));
            prop_assert!(c.files.iter().all(|f| !busy.contains(&f.number)));
            prop_assert!(c.files.iter().all(|f| f.largest_seqno < unflushed));
            prop_assert!(c.depth_reduction >= min_depth);
        }
        // With nothing running, a base candidate grown to a rectangle stays valid.
        let s = L0Sublevels::new(&l0);
        if let Some(mut c) = s.pick_base_compaction(&[], &o) {
            s.extend_base_candidate(&mut c, None, None);
            prop_assert!(candidate_keeps_age_order(&s, &c));
        }
    }

    /// With a base level under L0 (some of its files busy): a candidate keeps age order,
    /// touches no busy base file, and is past `hard_max_bytes` only if it stopped at the
    /// minimum depth (the bound is not applied to the steps that reach it); with no base file
    /// busy, its files are the first ones a pick without a base level takes (the base level
    /// only ever stops growth sooner).
    #[test]
    fn l0_sublevels_prop_candidates_with_a_base_level(
        files in arb_l0(),
        base in prop::collection::vec((1u8..3, 0u8..3, any::<bool>(), 1u64..900, any::<bool>()), 0..8),
        min_depth in 1usize..4,
        soft in 0u64..3000,
    ) {
        let l0 = arcs(&files);
        let mut lbase = Vec::new();
        let mut busy = HashSet::new();
        let spans = disjoint_spans(base.iter().map(|&(gap, w, excl, _, _)| (gap, w, excl)));
        for (j, ((lo, hi, excl), &(_, _, _, size, is_busy))) in spans.into_iter().zip(&base).enumerate() {
            let k = |c: u8| ((b'a' + c) as char).to_string();
            let number = 1000 + j as u64;
            lbase.push(Arc::new(file(number, &k(lo), &k(hi), size, 1, excl)));
            if is_busy {
                busy.insert(number);
            }
        }
        let o = prop_opts(min_depth, soft);
        let s = L0Sublevels::new(&l0).with_compacting(&busy, &[]);
        prop_assert_eq!(s.check_invariants(), Ok(()));
        if let Some(c) = s.pick_base_compaction(&lbase, &o) {
            prop_assert!(candidate_keeps_age_order(&s, &c));
            prop_assert!(c.depth_reduction >= min_depth);
            prop_assert!(
                c.bytes <= o.hard_max_bytes || c.depth_reduction <= min_depth,
                "{} bytes at depth {}", c.bytes, c.depth_reduction
            );
            for f in &lbase {
                let apart = !f.overlaps(Some(&c.smallest), Some(&c.largest))
                    || (f.smallest_user() == c.largest.as_slice() && c.largest_exclusive);
                prop_assert!(apart || !busy.contains(&f.number), "busy base file {} taken", f.number);
            }
            if busy.is_empty() {
                let free = s.pick_base_compaction(&[], &o);
                prop_assert!(free.is_some(), "a base level made a candidate appear");
                let (free, taken) = (free.unwrap().numbers(), c.numbers());
                prop_assert!(free.starts_with(&taken), "{taken:?} not a prefix of {free:?}");
            }
        }
    }

    /// Flush split keys are strictly increasing interval starts.
    #[test]
    fn l0_sublevels_prop_split_keys(files in arb_l0(), bytes in 1u64..2000) {
        let s = L0Sublevels::new(&arcs(&files));
        let keys = s.flush_split_keys(bytes);
        prop_assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let starts: Vec<Vec<u8>> = s
            .intervals()
            .iter()
            .map(|iv| {
                let mut start = iv.start.key.clone();
                if iv.start.after {
                    start.push(0);
                }
                start
            })
            .collect();
        prop_assert!(keys.iter().all(|k| starts.contains(k)));
    }
}
