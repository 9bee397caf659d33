//! A compaction split into key ranges merged on several threads returns exactly what one merge
//! would: range deletions spanning the cut points, snapshots, overwrites — by scans and by
//! point reads.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use sluice::fs::MemFs;
use sluice::{Db, Options, ReadOptions};

mod common;
use common::mem_opts;

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

fn run(max_subcompactions: usize, seed: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let fs = MemFs::new();
    let db = Db::open("/db", split_opts(&fs, max_subcompactions)).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut snap_model = None;
    let mut snap = None;
    for op in 0..6000u32 {
        let k = format!("k{:05}", rng.gen_range(0..3000u32)).into_bytes();
        match rng.gen_range(0..100) {
            0..=79 => {
                let v = format!("v{op}-{}", "x".repeat(rng.gen_range(10..80))).into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            80..=94 => {
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            95..=96 => {
                let start: u32 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
                let end = format!("k{:05}", start + rng.gen_range(0..60u32)).into_bytes();
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
            }
            _ => {
                if snap.is_none() {
                    snap = Some(db.snapshot());
                    snap_model = Some(model.clone());
                }
            }
        }
    }
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
    if let (Some(s), Some(m)) = (&snap, snap_model) {
        let at_snap = scan(ReadOptions {
            snapshot: Some(s),
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
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    for seed in 0..3u64 {
        let fs = MemFs::new();
        let db = Db::open("/db", split_opts(&fs, 4)).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut snap = None;
        let mut snap_model = None;
        for op in 0..6000u32 {
            let k = format!("k{:05}", rng.gen_range(0..3000u32)).into_bytes();
            match rng.gen_range(0..100) {
                0..=79 => {
                    let v = format!("v{op}-{}", "x".repeat(rng.gen_range(10..80))).into_bytes();
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
                80..=92 => {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                93..=97 => {
                    let start: u32 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
                    let end = format!("k{:05}", start + rng.gen_range(1..200u32)).into_bytes();
                    db.delete_range(&k, &end).unwrap();
                    let doomed: Vec<Vec<u8>> = model
                        .range(k.clone()..end)
                        .map(|(k, _)| k.clone())
                        .collect();
                    for d in doomed {
                        model.remove(&d);
                    }
                }
                _ => {
                    if snap.is_none() && op > 3000 {
                        snap = Some(db.snapshot());
                        snap_model = Some(model.clone());
                    }
                }
            }
        }
        db.compact_range(None, None).unwrap();
        for i in 0..3300u32 {
            let k = format!("k{i:05}").into_bytes();
            assert_eq!(
                db.get(&k).unwrap(),
                model.get(&k).cloned(),
                "seed {seed} key {i}"
            );
            if let (Some(s), Some(m)) = (&snap, &snap_model) {
                let got = db
                    .get_opt(
                        &k,
                        &ReadOptions {
                            snapshot: Some(s),
                            ..Default::default()
                        },
                    )
                    .unwrap();
                assert_eq!(
                    got,
                    m.get(&k).cloned(),
                    "seed {seed} key {i} at the snapshot"
                );
            }
        }
    }
}
