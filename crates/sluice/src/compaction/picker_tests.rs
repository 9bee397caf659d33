//! Tests of the compaction picker (`picker.rs`).

use super::*;
use crate::base::key::{self, ValueKind};
use crate::version::l0_sublevels_tests::disjoint_spans;
use crate::version::VersionEdit;

fn f(number: u64, lo: &str, hi: &str, size: u64) -> FileMeta {
    FileMeta::for_test(number, lo.as_bytes(), hi.as_bytes(), size, number)
}

fn opts() -> PickerOptions {
    PickerOptions {
        l0_compaction_trigger: 4,
        l0_sublevels: true,
        max_bytes_for_level_base: 1000,
        level_multiplier: 10,
        // Depth alone: these tests' files are a few hundred bytes.
        l0_round_bytes: 0,
        // Policy 7 has tests of its own.
        small_file_bytes: 0,
        small_file_prefix: 0,
        ..PickerOptions::default()
    }
}

fn version(files: Vec<(usize, FileMeta)>) -> Version {
    Version::default()
        .apply(&VersionEdit {
            added: files,
            ..Default::default()
        })
        .unwrap()
}

#[test]
fn small_db_compacts_l0_straight_to_the_last_level() {
    let v = version((1..=4).map(|i| (0, f(i, "a", "z", 10))).collect());
    let (_, base) = level_targets(&v, &opts());
    assert_eq!(base, 6);
    let c = pick_compaction(&v, &opts(), &HashSet::new()).unwrap();
    assert_eq!((c.level(), c.output_level(), c.inputs().len()), (0, 6, 4));
    assert!(pick_compaction(&v, &opts(), &[1].into_iter().collect()).is_none());
}

#[test]
fn dynamic_base_level_moves_up_as_data_grows() {
    let v = version(vec![(6, f(1, "a", "z", 1_000_000))]);
    let (targets, base) = level_targets(&v, &opts());
    assert_eq!(base, 3);
    assert_eq!(targets[6], 1_000_000);
    assert_eq!(targets[3], 1_000);
}

#[test]
fn base_level_moves_up_once_the_last_level_outgrows_the_base_size() {
    // The last level at 4.5× max_bytes_for_level_base (below multiplier × base): L0 must not
    // compact straight into it (each such compaction would rewrite all of it), but into the
    // level above, whose target lies in (base / multiplier, base].
    let base_bytes = opts().max_bytes_for_level_base;
    let v = version(vec![(6, f(1, "a", "z", base_bytes * 9 / 2))]);
    let (targets, base) = level_targets(&v, &opts());
    assert_eq!(base, 5);
    // Its target is the base size, never a tenth of the last level (RocksDB's rule).
    assert_eq!(targets[5], base_bytes, "{targets:?}");
    // At exactly the base size it stays the base level.
    let v = version(vec![(6, f(1, "a", "z", base_bytes))]);
    assert_eq!(level_targets(&v, &opts()).1, 6);
}

#[test]
fn base_level_is_never_below_a_non_empty_level() {
    // A small DB (base would be L6) with a file ingested into L5: L0 must compact into L5.
    let mut files: Vec<(usize, FileMeta)> = (1..=4).map(|i| (0, f(i, "a", "z", 10))).collect();
    files.push((5, f(10, "a", "m", 10)));
    files.push((6, f(11, "a", "z", 10)));
    let v = version(files);
    let (_, base) = level_targets(&v, &opts());
    assert_eq!(base, 5);
    let c = pick_compaction(&v, &opts(), &HashSet::new()).unwrap();
    assert_eq!((c.level(), c.output_level()), (0, 5));
}

#[test]
fn l0_candidate_never_grows_into_a_base_file_ending_at_an_exclusive_key() {
    // An L5 file whose largest key is a range deletion's exclusive end "d" does not overlap
    // the stack at ["d", "e"], so it is not an input; growing the candidate below "d" would
    // take the L0 file at ["b", "c"] inside its span, and the output would overlap it
    // (sluice-stress: "files N and M overlap in L5").
    let mut wide = f(10, "a", "d", 100);
    wide.largest = key::make_internal_key(b"d", key::MAX_SEQNO, ValueKind::RangeDeletion);
    assert!(wide.largest_is_exclusive());
    let mut files: Vec<(usize, FileMeta)> = (1..=4).map(|i| (0, f(i, "d", "e", 10))).collect();
    files.push((0, f(5, "b", "c", 10)));
    files.push((5, wide));
    let v = version(files);
    let c = pick_compaction(&v, &opts(), &HashSet::new()).unwrap();
    assert_eq!((c.level(), c.output_level()), (0, 5));
    let lo = c.all_inputs().map(|f| f.smallest_user()).min().unwrap();
    let hi = c.all_inputs().map(|f| f.largest_user()).max().unwrap();
    let overlapped: Vec<u64> = v
        .overlapping(5, Some(lo), Some(hi))
        .iter()
        .map(|f| f.number)
        .collect();
    let taken: Vec<u64> = c.output_inputs().iter().map(|f| f.number).collect();
    assert_eq!(
        overlapped,
        taken,
        "inputs {:?}",
        c.inputs().iter().map(|f| f.number).collect::<Vec<_>>()
    );
}

/// A file of `size` bytes over keys `lo..=hi` of "a".."p" (`hi` exclusive when `excl`).
fn kf(number: u64, lo: u8, hi: u8, excl: bool, seq: u64, size: u64) -> FileMeta {
    let k = |c: u8| [b'a' + c];
    let mut m = FileMeta::for_test(number, &k(lo), &k(hi), size, seq);
    if excl {
        m.largest = key::make_internal_key(&k(hi), key::MAX_SEQNO, ValueKind::RangeDeletion);
    }
    m
}

/// A user-key span: (lo, hi, hi exclusive).
type Span = (Vec<u8>, Vec<u8>, bool);

/// The user-key span of a compaction's inputs.
fn span(c: &CompactionChoice) -> Span {
    let lo = c.all_inputs().map(|f| f.smallest_user()).min().unwrap();
    let hi = c.all_inputs().map(|f| f.largest_user()).max().unwrap();
    let excl = c
        .all_inputs()
        .filter(|f| f.largest_user() == hi)
        .all(|f| f.largest_is_exclusive());
    (lo.to_vec(), hi.to_vec(), excl)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

    /// Compactions picked one after another (each marked running) never write overlapping
    /// ranges into the same level, and each takes every output-level file its inputs'
    /// span touches — else its outputs would overlap a file left in place. File sizes
    /// (up to 160 MiB) reach `L0PickOptions::default()`'s size bounds, so L0 candidates
    /// stop growing where the bound weighs the base files they would take.
    #[test]
    fn concurrent_picks_write_disjoint_ranges(
        l0 in proptest::collection::vec((0u8..15, 0u8..5, proptest::bool::ANY, 1u64..900, 1u64..160), 4..30),
        base in proptest::collection::vec((1u8..3, 0u8..3, proptest::bool::ANY, 1u64..160), 0..6),
    ) {
        const MIB: u64 = 1 << 20;
        let mut files = Vec::new();
        for (i, (lo, w, excl, seq, mib)) in l0.into_iter().enumerate() {
            let hi = (lo + w).min(15);
            files.push((0, kf(i as u64 + 1, lo, hi, excl && hi > lo, 1000 + seq, mib * MIB)));
        }
        // Disjoint L5 files; an exclusive end may equal the next file's start.
        let spans = disjoint_spans(base.iter().map(|&(gap, w, excl, _)| (gap, w, excl)));
        for (j, ((lo, hi, excl), &(_, _, _, mib))) in spans.into_iter().zip(&base).enumerate() {
            files.push((5, kf(100 + j as u64, lo, hi, excl, 1 + j as u64, mib * MIB)));
        }
        let v = version(files);
        let o = PickerOptions { l0_compaction_trigger: 2, ..opts() };
        let mut busy = HashSet::new();
        let mut running = Vec::new();
        let mut spans: Vec<(usize, Span)> = Vec::new();
        for _ in 0..4 {
            let l0s = L0Sublevels::from_version(&v);
            let outputs: Vec<RunningOutput> = spans
                .iter()
                .map(|(level, sp)| RunningOutput { level: *level, lo: sp.0.clone(), hi: sp.1.clone() })
                .collect();
            let ctx = L0Context {
                sublevels: &l0s,
                running: &running,
                earliest_unflushed_seqno: u64::MAX,
                running_outputs: &outputs,
                unflushed_in: None,
            };
            let Some(c) = pick_compaction_with(&v, &ctx, &o, &busy) else { break };
            let sp = span(&c);
            if c.output_level() > 0 {
                let touched: Vec<u64> = v.levels[c.output_level()]
                    .iter()
                    .filter(|f| f.overlaps(Some(&sp.0), Some(&sp.1)))
                    .filter(|f| !(sp.2 && f.smallest_user() == sp.1.as_slice()))
                    .map(|f| f.number)
                    .collect();
                let taken: Vec<u64> = c.output_inputs().iter().map(|f| f.number).collect();
                proptest::prop_assert_eq!(touched, taken);
                for (level, other) in &spans {
                    if *level != c.output_level() {
                        continue;
                    }
                    let apart = |a: &Span, b: &Span| {
                        a.1 < b.0 || (a.1 == b.0 && a.2)
                    };
                    proptest::prop_assert!(apart(other, &sp) || apart(&sp, other), "{other:?} and {sp:?}");
                }
            }
            for f in c.all_inputs() {
                proptest::prop_assert!(busy.insert(f.number), "file {} picked twice", f.number);
            }
            if c.level() == 0 {
                running.push(RunningL0Compaction {
                    smallest: c.inputs().iter().map(|f| f.smallest_user()).min().unwrap().to_vec(),
                    largest: c.inputs().iter().map(|f| f.largest_user()).max().unwrap().to_vec(),
                    intra_l0: c.output_level() == 0,
                    files: c.inputs().iter().map(|f| f.number).collect(),
                });
            }
            spans.push((c.output_level(), sp));
        }
    }
}

#[test]
fn levels_above_the_size_derived_base_drain_down() {
    // Ingests that each overlap the one before land in L6, L5, … L1 (one file per level):
    // the base level is then L1, but every level above the one the sizes call for must
    // score ≥ 1 so that the data moves down instead of each L0 compaction cascading
    // through five levels.
    let v = version(
        (1..NUM_LEVELS)
            .map(|l| (l, f(l as u64, "a", "z", 600)))
            .collect(),
    );
    let (targets, base) = level_targets(&v, &opts());
    assert_eq!(base, 1);
    assert_eq!(targets[6], 1000);
    let l0 = L0Sublevels::from_version(&v);
    let scores = level_scores(&v, &l0, &opts());
    for (l, score) in scores.iter().enumerate().take(6).skip(1) {
        assert!(*score >= 100, "L{l} score {score} (targets {targets:?})");
    }
    let c = pick_compaction(&v, &opts(), &HashSet::new()).unwrap();
    assert_eq!(c.level(), 1);
}

/// The pick of `v` while a compaction writes `(level, lo, hi)`.
fn pick_beside(
    v: &Version,
    o: &PickerOptions,
    (level, lo, hi): (usize, &str, &str),
) -> Option<CompactionChoice> {
    let l0 = L0Sublevels::from_version(v);
    let running = [RunningOutput {
        level,
        lo: lo.as_bytes().to_vec(),
        hi: hi.as_bytes().to_vec(),
    }];
    let ctx = L0Context {
        sublevels: &l0,
        running: &[],
        earliest_unflushed_seqno: u64::MAX,
        running_outputs: &running,
        unflushed_in: None,
    };
    pick_compaction_with(v, &ctx, o, &HashSet::new())
}

#[test]
fn no_file_moves_into_a_running_compactions_output_range() {
    // Review finding: an L0→L5 compaction of P=[a,b] and Q=[y,z] writes one output over
    // [a, z]; a file ingested into L4 at [m, n] overlaps no L5 file, so it looked like a
    // trivial move into L5 — where it would overlap that output when it lands.
    let v = version(vec![(4, f(1, "m", "n", 5000)), (6, f(2, "a", "z", 50_000))]);
    assert!(pick_beside(&v, &opts(), (5, "a", "z")).is_none());
    // With nothing running it is a trivial move.
    let c = pick_compaction(&v, &opts(), &HashSet::new()).unwrap();
    assert!(matches!(c, CompactionChoice::Move { level: 4, .. }));
}

#[test]
fn no_l0_file_moves_into_a_running_compactions_output_range() {
    // The L0 move's twin of the test above: one L0 file over no base file, but a running
    // compaction writes an output over its span into the base level.
    let v = version(vec![(0, f(1, "m", "n", 500)), (6, f(2, "a", "b", 500))]);
    let o = PickerOptions {
        l0_compaction_trigger: 1,
        ..opts()
    };
    let picked = pick_beside(&v, &o, (6, "c", "z"));
    assert!(picked.is_none(), "{picked:?}");
    let c = pick_compaction(&v, &o, &HashSet::new()).unwrap();
    assert!(matches!(
        c,
        CompactionChoice::Move {
            level: 0,
            output_level: 6,
            ..
        }
    ));
}

#[test]
fn no_move_between_levels_that_write_tables_otherwise() {
    // L5 -> L6 and L0 -> L6 would be trivial moves; with L6 compressed differently (its
    // own table class) both are rewritten, so the file takes L6's settings.
    let l5 = version(vec![(5, f(1, "m", "n", 9000)), (6, f(2, "a", "b", 50_000))]);
    let l0 = version(vec![(0, f(1, "m", "n", 500)), (6, f(2, "a", "b", 500))]);
    let mut o = PickerOptions {
        l0_compaction_trigger: 1,
        ..opts()
    };
    for v in [&l5, &l0] {
        let c = pick_compaction(v, &o, &HashSet::new()).unwrap();
        assert!(
            matches!(
                c,
                CompactionChoice::Move {
                    output_level: 6,
                    ..
                }
            ),
            "{c:?}"
        );
    }
    o.table_class[6] = 6;
    for v in [&l5, &l0] {
        let c = pick_compaction(v, &o, &HashSet::new()).unwrap();
        assert!(
            matches!(&c, CompactionChoice::Merge { output_level: 6, output_inputs, .. }
                if output_inputs.is_empty()),
            "{c:?}"
        );
    }
}

#[test]
fn level_pick_prefers_least_overlap_and_trivial_moves() {
    let v = version(vec![
        (5, f(1, "a", "c", 4000)),
        (5, f(2, "m", "p", 4000)),
        (6, f(3, "a", "b", 50_000)),
    ]);
    let c = pick_compaction(&v, &opts(), &HashSet::new()).unwrap();
    assert_eq!(c.level(), 5);
    assert_eq!(c.inputs()[0].number, 2);
    assert!(matches!(c, CompactionChoice::Move { .. }));
}

/// Policy 6 with files newer than a memtable's oldest entry: the pick of `v` when the
/// memtables hold seqnos from 1 up and `held` says whether they hold keys in a span.
fn pick_with_memtables(v: &Version, held: &dyn Fn(&[u8], &[u8]) -> bool) -> CompactionChoice {
    let l0 = L0Sublevels::from_version(v);
    let ctx = L0Context {
        sublevels: &l0,
        running: &[],
        earliest_unflushed_seqno: 1,
        running_outputs: &[],
        unflushed_in: Some(held),
    };
    pick_compaction_with(v, &ctx, &opts(), &HashSet::new()).expect("a compaction")
}

#[test]
fn tiered_l0_merges_files_newer_than_the_memtables_only_where_they_hold_no_key() {
    // Four L0 files over [m, p] (seqnos 1..=4, all at or above the memtables' oldest entry,
    // as version-path ingests beside online writes are) over a base level five times their
    // size: the intra-L0 compaction policy 6 wants.
    let mut files: Vec<(usize, FileMeta)> = (1..=4).map(|i| (0, f(i, "m", "p", 10))).collect();
    files.push((6, f(5, "a", "z", 200)));
    let v = version(files);
    // Memory holds keys only outside [m, p] (the writers' own range): the files merge.
    let asked = std::cell::RefCell::new(Vec::new());
    let outside = |lo: &[u8], hi: &[u8]| {
        asked.borrow_mut().push((lo.to_vec(), hi.to_vec()));
        lo <= b"x".as_slice() && b"x".as_slice() <= hi
    };
    let c = pick_with_memtables(&v, &outside);
    assert!(matches!(c, CompactionChoice::IntraL0 { .. }), "{c:?}");
    assert_eq!(c.inputs().len(), 4);
    assert_eq!(asked.borrow().as_slice(), &[(b"m".to_vec(), b"p".to_vec())]);
    // Memory holds a key inside: a later flush of it could put an older version of that key
    // above the output, so no file at or above the oldest unflushed seqno is taken, and L0
    // goes down into the base level as without the policy.
    let inside = |lo: &[u8], hi: &[u8]| lo <= b"n".as_slice() && b"n".as_slice() <= hi;
    let c = pick_with_memtables(&v, &inside);
    assert!(
        matches!(
            c,
            CompactionChoice::Merge {
                level: 0,
                output_level: 6,
                ..
            }
        ),
        "{c:?}"
    );
}

/// Thin L0 sublevels wait for a round's worth of bytes (`l0_round_bytes` per flush, as many
/// as the trigger), until L0 is twice the trigger deep; with sublevels off, files count alone.
#[test]
fn thin_l0_sublevels_wait_for_a_rounds_bytes_until_twice_the_trigger() {
    let o = PickerOptions {
        l0_round_bytes: 100,
        ..opts()
    };
    let stack = |n: u64, size: u64| version((1..=n).map(|i| (0, f(i, "a", "z", size))).collect());
    let score = |v: &Version, o: &PickerOptions| l0_score(v, &L0Sublevels::from_version(v), o);
    let none = HashSet::new();
    // Four sublevels of 10 bytes: one round's bytes at most, so a quarter of the trigger.
    let thin = stack(4, 10);
    assert_eq!(score(&thin, &o), 25);
    assert!(pick_compaction(&thin, &o, &none).is_none());
    // By depth alone, or by file count with sublevels off, the same files are due.
    assert_eq!(score(&thin, &opts()), 100);
    assert!(pick_compaction(&thin, &opts(), &none).is_some());
    let files = PickerOptions {
        l0_sublevels: false,
        ..o.clone()
    };
    assert_eq!(score(&thin, &files), 100);
    // Four rounds' bytes in four sublevels: due at the trigger.
    let full = stack(4, 100);
    assert_eq!(score(&full, &o), 100);
    assert!(pick_compaction(&full, &o, &none).is_some());
    // Rounds count to the nearest: 3.1 rounds' bytes wait, 3.5 are due.
    assert_eq!(score(&stack(4, 78), &o), 75);
    assert_eq!(score(&stack(4, 88), &o), 100);
    // Seven thin sublevels still wait; at twice the trigger the depth scores alone.
    assert_eq!(score(&stack(7, 10), &o), 25);
    let eight = stack(8, 10);
    assert_eq!(score(&eight, &o), 200);
    assert!(pick_compaction(&eight, &o, &none).is_some());
    // One short of the slowdown trigger the depth scores alone too (ingests wait for L0 room
    // there): with slowdown at 5, four thin sublevels are due, three still wait.
    let low_slowdown = PickerOptions {
        l0_slowdown_writes_trigger: 5,
        ..o.clone()
    };
    assert_eq!(score(&thin, &low_slowdown), 100);
    assert_eq!(score(&stack(3, 10), &low_slowdown), 25);
    // Triggers near the integer limits neither overflow nor panic.
    let huge = PickerOptions {
        l0_compaction_trigger: usize::MAX,
        l0_slowdown_writes_trigger: usize::MAX,
        ..o.clone()
    };
    assert_eq!(score(&thin, &huge), 0);
}

/// The bound the benchmark prints (`Options::l0_thin_sublevels_until`) is the picker's.
#[test]
fn options_name_the_pickers_thin_sublevel_bound() {
    let d = crate::Options::default();
    assert_eq!(d.l0_thin_sublevels_until(), Some(8));
    let low = crate::Options {
        l0_slowdown_writes_trigger: 5,
        ..crate::Options::default()
    };
    assert_eq!(low.l0_thin_sublevels_until(), Some(4));
    for off in [
        crate::Options {
            l0_thin_sublevels_wait: false,
            ..crate::Options::default()
        },
        crate::Options {
            l0_sublevels: false,
            ..crate::Options::default()
        },
    ] {
        assert_eq!(off.l0_thin_sublevels_until(), None);
    }
    assert_eq!(thin_sublevels_until(0, 20), 2);
    assert_eq!(thin_sublevels_until(usize::MAX, usize::MAX), usize::MAX - 1);
}

/// Policy 7's options: small files are those under 100 bytes.
fn small_opts() -> PickerOptions {
    PickerOptions {
        small_file_bytes: 100,
        small_file_prefix: 1,
        ..opts()
    }
}

/// `n` neighbouring files of `size` bytes at L6, numbered from `first`, keys `k{first}`...
fn small_run(first: u64, n: u64, size: u64) -> Vec<(usize, FileMeta)> {
    (first..first + n)
        .map(|i| {
            let k = format!("k{i:04}");
            (6, f(i, &k, &format!("{k}z"), size))
        })
        .collect()
}

#[test]
fn a_run_of_small_files_merges_into_one_file_of_its_level() {
    let v = version(small_run(1, 10, 10));
    let c = pick_compaction(&v, &small_opts(), &HashSet::new()).unwrap();
    let CompactionChoice::Merge {
        level: 6,
        output_level: 6,
        inputs,
        output_inputs,
    } = &c
    else {
        panic!("expected an L6 -> L6 merge, got {c:?}");
    };
    assert_eq!(inputs.len(), 10);
    assert!(output_inputs.is_empty());
    // Off: nothing to do.
    assert!(pick_compaction(&v, &opts(), &HashSet::new()).is_none());
    let no_prefix = PickerOptions {
        small_file_prefix: 0,
        ..small_opts()
    };
    assert!(pick_compaction(&v, &no_prefix, &HashSet::new()).is_none());
}

/// A run never mixes key prefixes (the gap after each prefix's files is where its next
/// append goes) and never has a deeper file beneath it (outputs cut along one could leave
/// as many files as it took).
#[test]
fn small_files_merge_within_a_prefix_and_with_nothing_beneath() {
    // Files "a0".."a5" then "b0".."b5": two runs of 6 with a 1-byte prefix, none long enough.
    let mut files: Vec<(usize, FileMeta)> = (0..6u64)
        .map(|i| (6, f(i + 1, &format!("a{i}"), &format!("a{i}z"), 10)))
        .collect();
    files.extend((0..6u64).map(|i| (6, f(i + 11, &format!("b{i}"), &format!("b{i}z"), 10))));
    assert!(pick_compaction(&version(files.clone()), &small_opts(), &HashSet::new()).is_none());
    // A file spanning two prefixes is in no run.
    let mut more = files.clone();
    more.push((6, f(20, "b9", "c1", 10)));
    more.extend((2..10u64).map(|i| (6, f(i + 20, &format!("c{i}"), &format!("c{i}z"), 10))));
    let c = pick_compaction(&version(more), &small_opts(), &HashSet::new()).unwrap();
    let nums: Vec<u64> = c.inputs().iter().map(|f| f.number).collect();
    assert_eq!(nums, (22..30).collect::<Vec<_>>());
    // Ten files of one prefix at L5 merge while nothing at L6 lies beneath their span (L6
    // holds a large file elsewhere, so L5 is far under its target).
    let mut ten: Vec<(usize, FileMeta)> = (0..10u64)
        .map(|i| (5, f(i + 50, &format!("d{i}"), &format!("d{i}z"), 10)))
        .collect();
    ten.push((6, f(60, "x", "y", 1_000_000)));
    let c = pick_compaction(&version(ten.clone()), &small_opts(), &HashSet::new()).unwrap();
    assert_eq!((c.level(), c.output_level(), c.inputs().len()), (5, 5, 10));
    let mut over = ten;
    over.push((6, f(70, "d4", "d4", 10)));
    assert!(pick_compaction(&version(over), &small_opts(), &HashSet::new()).is_none());
}

#[test]
fn small_files_wait_for_a_run_long_enough_and_for_bytes_to_double() {
    // Seven small files are too few.
    let v = version(small_run(1, SMALL_RUN_MIN as u64 - 1, 10));
    assert!(pick_compaction(&v, &small_opts(), &HashSet::new()).is_none());
    // A file that is not small splits a run: 5 + 5, neither long enough.
    let mut files = small_run(1, 5, 10);
    files.push((6, f(6, "k0006", "k0006z", 100)));
    files.extend(small_run(7, 5, 10));
    assert!(pick_compaction(&version(files), &small_opts(), &HashSet::new()).is_none());
    // A run whose largest file holds more than all the others together waits (90 > 8 × 1)...
    let mut files = vec![(6, f(1, "k0001", "k0001z", 90))];
    files.extend(small_run(2, 8, 1));
    let v = version(files);
    let c = pick_compaction(&v, &small_opts(), &HashSet::new()).unwrap();
    // ...and the eight files beside it go without it.
    let nums: Vec<u64> = c.inputs().iter().map(|f| f.number).collect();
    assert_eq!(nums, (2..=9).collect::<Vec<_>>());
    // The merged file stays within the target size: a run is cut at half the largest move.
    let o = PickerOptions {
        max_l0_move_bytes: 2 * 80,
        small_file_bytes: 20,
        ..small_opts()
    };
    let c = pick_compaction(&version(small_run(1, 12, 10)), &o, &HashSet::new()).unwrap();
    assert_eq!(c.inputs().len(), 8);
    // At most SMALL_RUN_MAX at once.
    let v = version(small_run(1, SMALL_RUN_MAX as u64 + 5, 1));
    let c = pick_compaction(&v, &small_opts(), &HashSet::new()).unwrap();
    assert_eq!(c.inputs().len(), SMALL_RUN_MAX);
}

#[test]
fn small_files_give_way_to_due_work_busy_files_and_running_outputs() {
    // L0 due: its compaction is picked, not the small files.
    let mut files = small_run(1, 10, 10);
    files.extend((20..24).map(|i| (0, f(i, "a", "z", 10))));
    let c = pick_compaction(&version(files), &small_opts(), &HashSet::new()).unwrap();
    assert_eq!(c.level(), 0);
    // A busy file splits the run (4 + 5).
    let v = version(small_run(1, 10, 10));
    assert!(pick_compaction(&v, &small_opts(), &[5].into_iter().collect()).is_none());
    // A running compaction writing into the run's span at L6, or elsewhere.
    assert!(pick_beside(&v, &small_opts(), (6, "k0003", "k0003")).is_none());
    assert!(pick_beside(&v, &small_opts(), (5, "k0003", "k0003")).is_some());
}
