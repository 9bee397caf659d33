//! A compaction split into key ranges merged on several threads returns exactly what one merge
//! would: range deletions spanning the cut points, snapshots, overwrites — by scans and by
//! point reads.

use std::collections::BTreeMap;
use std::ops::Range;

use rand::{Rng, SeedableRng};
use sluice::fs::MemFs;
use sluice::{Db, Options, ReadOptions, Snapshot};

mod common;
use common::{get_at, mem_opts};

/// Small tables and no automatic compaction: everything stays in L0 until `compact_range`,
/// which then splits into up to `max_subcompactions` ranges.
fn split_opts(fs: &MemFs, max_subcompactions: usize) -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size: 8 << 10,
        max_bytes_for_level_base: 64 << 10,
        l0_compaction_trigger: 100,
        l0_slowdown_writes_trigger: 200,
        l0_stop_writes_trigger: 300,
        max_subcompactions,
        block_size: 512,
        ..mem_opts(fs)
    }
}

/// A user-key to value model of the Db.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The operation mix of [`random_load`]: a draw in `0..100` below `deletes.start` puts, in
/// `deletes` deletes, in `range_deletes` deletes a range of `range_len` keys; any other takes
/// the one snapshot, from operation `snapshot_after` on.
struct Mix {
    deletes: Range<u32>,
    range_deletes: Range<u32>,
    range_len: Range<u32>,
    snapshot_after: u32,
}

/// 6,000 random operations of `mix` over keys `k00000`..`k02999`, applied to `db` and to a
/// model: the model, and the snapshot with the model as of it.
fn random_load(db: &Db, seed: u64, mix: &Mix) -> (Model, Option<(Snapshot, Model)>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut model = Model::new();
    let mut at_snapshot = None;
    for op in 0..6000u32 {
        let k = format!("k{:05}", rng.gen_range(0..3000u32)).into_bytes();
        let draw = rng.gen_range(0..100);
        if draw < mix.deletes.start {
            let v = format!("v{op}-{}", "x".repeat(rng.gen_range(10..80))).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        } else if mix.deletes.contains(&draw) {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else if mix.range_deletes.contains(&draw) {
            let start: u32 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            let end = format!("k{:05}", start + rng.gen_range(mix.range_len.clone())).into_bytes();
            if k < end {
                db.delete_range(&k, &end).unwrap();
                let doomed: Vec<Vec<u8>> = model
                    .range(k.clone()..end.clone())
                    .map(|(k, _)| k.clone())
                    .collect();
                for d in doomed {
                    model.remove(&d);
                }
            }
        } else if at_snapshot.is_none() && op >= mix.snapshot_after {
            at_snapshot = Some((db.snapshot(), model.clone()));
        }
    }
    (model, at_snapshot)
}

fn run(max_subcompactions: usize, seed: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let fs = MemFs::new();
    let db = Db::open("/db", split_opts(&fs, max_subcompactions)).unwrap();
    let (model, at_snapshot) = random_load(
        &db,
        seed,
        &Mix {
            deletes: 80..95,
            range_deletes: 95..97,
            range_len: 0..60,
            snapshot_after: 0,
        },
    );
    db.compact_range(None, None).unwrap();
    // Everything went through one big compaction into L6 (L0 never triggered on its own).
    assert!(
        db.current_version().levels[6].len() > 2,
        "{}",
        db.current_version().describe()
    );
    let scan = |opts: ReadOptions<'_>| {
        let mut it = db.iter(opts).unwrap();
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    };
    let m = db.metrics();
    if max_subcompactions > 1 {
        assert!(
            m.subcompactions > m.compactions,
            "the big compaction was split: {} ranges in {} compactions",
            m.subcompactions,
            m.compactions
        );
    }
    let got = scan(ReadOptions::default());
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    assert_eq!(
        got, want,
        "latest state, max_subcompactions {max_subcompactions}"
    );
    if let Some((s, m)) = at_snapshot {
        let at_snap = scan(ReadOptions {
            snapshot: Some(&s),
            ..Default::default()
        });
        assert_eq!(
            at_snap,
            m.into_iter().collect::<Vec<_>>(),
            "at the snapshot"
        );
    }
    got
}

#[test]
fn split_compaction_matches_a_single_merge() {
    for seed in 0..3 {
        assert_eq!(run(1, seed), run(4, seed), "seed {seed}");
    }
}

/// Split compactions checked by point reads, not only scans: every key of the key space by
/// `get`, latest and at a snapshot, after one split compaction into L6.
#[test]
fn split_compaction_point_reads_match_the_model() {
    for seed in 0..3u64 {
        let fs = MemFs::new();
        let db = Db::open("/db", split_opts(&fs, 4)).unwrap();
        let (model, at_snapshot) = random_load(
            &db,
            seed,
            &Mix {
                deletes: 80..93,
                range_deletes: 93..98,
                range_len: 1..200,
                snapshot_after: 3001,
            },
        );
        db.compact_range(None, None).unwrap();
        for i in 0..3300u32 {
            let k = format!("k{i:05}").into_bytes();
            assert_eq!(
                db.get(&k).unwrap(),
                model.get(&k).cloned(),
                "seed {seed} key {i}"
            );
            if let Some((s, m)) = &at_snapshot {
                let got = get_at(&db, s, &k);
                assert_eq!(
                    got,
                    m.get(&k).cloned(),
                    "seed {seed} key {i} at the snapshot"
                );
            }
        }
    }
}
