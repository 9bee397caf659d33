//! Model-based randomized test: random operations against the Db and a BTreeMap model must
//! agree at every read. Any failure prints the seed; replay with
//! `SLUICE_MODEL_SEED=<seed> cargo test --test model`. Longer runs: `SLUICE_MODEL_OPS=100000`.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use sluice::fs::MemFs;
use sluice::key::{make_internal_key, ValueKind};
use sluice::sst::table_builder::TableIdentity;
use sluice::{
    Db, IngestOptions, Options, ReadOptions, Snapshot, TableBuilder, TableOptions, WriteBatch,
    WriteOptions,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// What an ingested file does to one key: a new value, or a deletion.
type Effect = (Vec<u8>, Option<Vec<u8>>);

fn small_options(fs: &MemFs) -> Options {
    Options {
        write_buffer_size: 8 << 10,
        l0_compaction_trigger: 2,
        l0_slowdown_writes_trigger: 8,
        l0_stop_writes_trigger: 12,
        max_bytes_for_level_base: 16 << 10,
        target_file_size: 8 << 10,
        block_size: 256,
        max_open_files: 16,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn rand_key(rng: &mut impl Rng) -> Vec<u8> {
    format!("k{:04}", rng.gen_range(0..400)).into_bytes()
}

fn check_iter(
    db: &Db,
    model: &Model,
    snap: Option<&Snapshot>,
    rng: &mut impl Rng,
    seed: u64,
    op: usize,
) {
    let lo = rng.gen_bool(0.5).then(|| rand_key(rng));
    let hi = rng.gen_bool(0.5).then(|| rand_key(rng));
    let want: Vec<(&Vec<u8>, &Vec<u8>)> = model
        .iter()
        .filter(|(k, _)| lo.as_ref().is_none_or(|l| *k >= l) && hi.as_ref().is_none_or(|h| *k < h))
        .collect();
    let mut it = db
        .iter(ReadOptions {
            snapshot: snap,
            lower_bound: lo.clone(),
            upper_bound: hi.clone(),
            ..Default::default()
        })
        .unwrap();
    if rng.gen_bool(0.5) {
        it.seek_to_first();
        for (k, v) in &want {
            assert!(
                it.valid(),
                "seed {seed} op {op}: iterator ended early, want {k:?}"
            );
            assert_eq!(
                (it.key(), it.value()),
                (k.as_slice(), v.as_slice()),
                "seed {seed} op {op}"
            );
            it.next();
        }
    } else {
        it.seek_to_last();
        for (k, v) in want.iter().rev() {
            assert!(
                it.valid(),
                "seed {seed} op {op}: reverse iterator ended early, want {k:?}"
            );
            assert_eq!(
                (it.key(), it.value()),
                (k.as_slice(), v.as_slice()),
                "seed {seed} op {op}"
            );
            it.prev();
        }
    }
    assert!(
        !it.valid(),
        "seed {seed} op {op}: iterator returned extra key {:?}",
        it.valid().then(|| it.key().to_vec())
    );
    it.status().unwrap();
    // A seek followed by a direction change.
    let t = rand_key(rng);
    it.seek(&t);
    let first = want.iter().position(|(k, _)| k.as_slice() >= t.as_slice());
    match first {
        Some(i) => {
            assert_eq!(it.key(), want[i].0.as_slice(), "seed {seed} op {op}: seek");
            it.prev();
            if i > 0 {
                assert_eq!(
                    it.key(),
                    want[i - 1].0.as_slice(),
                    "seed {seed} op {op}: seek+prev"
                );
                it.next();
                assert_eq!(
                    it.key(),
                    want[i].0.as_slice(),
                    "seed {seed} op {op}: seek+prev+next"
                );
            } else {
                assert!(!it.valid(), "seed {seed} op {op}: prev before first");
            }
        }
        None => assert!(!it.valid(), "seed {seed} op {op}: seek past end"),
    }
    it.seek_for_prev(&t);
    match want.iter().rposition(|(k, _)| k.as_slice() <= t.as_slice()) {
        Some(i) => assert_eq!(
            it.key(),
            want[i].0.as_slice(),
            "seed {seed} op {op}: seek_for_prev"
        ),
        None => assert!(
            !it.valid(),
            "seed {seed} op {op}: seek_for_prev before start"
        ),
    }
}

fn ingest_file(fs: &MemFs, rng: &mut impl Rng, op: usize) -> (std::path::PathBuf, Vec<Effect>) {
    let n = rng.gen_range(1..30);
    let mut keys: Vec<Vec<u8>> = (0..n).map(|_| rand_key(rng)).collect();
    keys.sort();
    keys.dedup();
    let identity = TableIdentity {
        external_sst: true,
        ..Default::default()
    };
    let mut b = TableBuilder::new(Vec::new(), TableOptions::default(), identity).unwrap();
    let mut effects = Vec::new();
    for k in &keys {
        if rng.gen_bool(0.8) {
            let v = format!("ingest{op}").into_bytes();
            b.add(&make_internal_key(k, 0, ValueKind::Value), &v)
                .unwrap();
            effects.push((k.clone(), Some(v)));
        } else {
            b.add(&make_internal_key(k, 0, ValueKind::Deletion), b"")
                .unwrap();
            effects.push((k.clone(), None));
        }
    }
    let bytes = b.finish().unwrap().0;
    let src = Path::new("/src").join(format!("ext{op}.sst"));
    fs.write_raw(&src, bytes);
    (src, effects)
}

fn run(seed: u64, ops: usize) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut fs = MemFs::new();
    let dir = Path::new("/db");
    let mut db = Some(Db::open(dir, small_options(&fs)).unwrap());
    let mut model = Model::new();
    // Every value ever written, to check that a crash never resurrects an unknown value.
    let mut written: HashSet<(Vec<u8>, Vec<u8>)> = HashSet::new();
    let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
    for op in 0..ops {
        let d = db.as_ref().unwrap();
        match rng.gen_range(0..100) {
            0..=39 => {
                let k = rand_key(&mut rng);
                let v: Vec<u8> = format!("v{op}-{}", "x".repeat(rng.gen_range(0..60))).into_bytes();
                d.put(&k, &v).unwrap();
                written.insert((k.clone(), v.clone()));
                model.insert(k, v);
            }
            40..=49 => {
                let k = rand_key(&mut rng);
                d.delete(&k).unwrap();
                model.remove(&k);
            }
            50..=52 => {
                let (a, b) = (rand_key(&mut rng), rand_key(&mut rng));
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                if a < b {
                    d.delete_range(&a, &b).unwrap();
                    let doomed: Vec<_> = model
                        .range(a.clone()..b.clone())
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in doomed {
                        model.remove(&k);
                    }
                }
            }
            53..=57 => {
                let mut b = WriteBatch::new();
                for i in 0..rng.gen_range(1..10) {
                    let k = rand_key(&mut rng);
                    if rng.gen_bool(0.7) {
                        let v = format!("b{op}-{i}").into_bytes();
                        b.put(&k, &v);
                        written.insert((k.clone(), v.clone()));
                        model.insert(k, v);
                    } else {
                        b.delete(&k);
                        model.remove(&k);
                    }
                }
                d.write(
                    b,
                    WriteOptions {
                        sync: rng.gen_bool(0.2),
                        disable_wal: false,
                        ..Default::default()
                    },
                )
                .unwrap();
            }
            58..=72 => {
                let k = rand_key(&mut rng);
                assert_eq!(
                    d.get(&k).unwrap(),
                    model.get(&k).cloned(),
                    "seed {seed} op {op}: get {k:?}"
                );
            }
            73..=76 => check_iter(d, &model, None, &mut rng, seed, op),
            77..=79 => {
                if snaps.len() < 4 {
                    snaps.push((d.snapshot(), model.clone()));
                }
            }
            80..=84 => {
                if !snaps.is_empty() {
                    let i = rng.gen_range(0..snaps.len());
                    let (s, m) = &snaps[i];
                    let k = rand_key(&mut rng);
                    let got = d
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
                        "seed {seed} op {op}: snapshot get {k:?}"
                    );
                    if rng.gen_bool(0.3) {
                        check_iter(d, m, Some(s), &mut rng, seed, op);
                    }
                }
            }
            85..=86 => {
                if !snaps.is_empty() {
                    let i = rng.gen_range(0..snaps.len());
                    snaps.remove(i);
                }
            }
            87..=89 => d.flush().unwrap(),
            90..=91 => {
                let a = rng.gen_bool(0.5).then(|| rand_key(&mut rng));
                let b = rng.gen_bool(0.5).then(|| rand_key(&mut rng));
                d.compact_range(a.as_deref(), b.as_deref()).unwrap();
            }
            92..=93 => {
                // Reopen: snapshots die with the handle.
                snaps.clear();
                db.take().unwrap().close().unwrap();
                db = Some(Db::open(dir, small_options(&fs)).unwrap());
            }
            94 => d.wait_for_background_work().unwrap(),
            95..=97 => {
                let (src, effects) = ingest_file(&fs, &mut rng, op);
                let threshold = if rng.gen_bool(0.2) { 1 << 20 } else { 0 };
                let opts = IngestOptions {
                    small_file_threshold: threshold,
                    ..Default::default()
                };
                d.ingest(&[&src], &opts)
                    .unwrap_or_else(|e| panic!("seed {seed} op {op}: ingest failed: {e}"));
                for (k, v) in effects {
                    match v {
                        Some(v) => {
                            written.insert((k.clone(), v.clone()));
                            model.insert(k, v)
                        }
                        None => model.remove(&k),
                    };
                }
            }
            _ => {
                // Simulated power loss. Unsynced writes may be lost, so the model becomes what
                // was recovered; every recovered value must be one that was once written, and
                // later reads are checked against it.
                snaps.clear();
                let crashed = fs.crashed_copy(Some(seed ^ op as u64));
                db.take().unwrap().close().unwrap();
                let reopened = Db::open(dir, small_options(&crashed))
                    .unwrap_or_else(|e| panic!("seed {seed} op {op}: reopen after crash: {e}"));
                let mut recovered = Model::new();
                {
                    let mut it = reopened.iter(ReadOptions::default()).unwrap();
                    it.seek_to_first();
                    while it.valid() {
                        recovered.insert(it.key().to_vec(), it.value().to_vec());
                        it.next();
                    }
                    it.status().unwrap();
                }
                for (k, v) in &recovered {
                    assert!(
                        written.contains(&(k.clone(), v.clone())),
                        "seed {seed} op {op}: {k:?} recovered a value never written"
                    );
                }
                model = recovered;
                fs = crashed;
                db = Some(reopened);
            }
        }
    }
    let d = db.as_ref().unwrap();
    d.wait_for_background_work().unwrap();
    check_iter(d, &model, None, &mut rng, seed, ops);
    for (k, v) in &model {
        assert_eq!(
            d.get(k).unwrap().as_ref(),
            Some(v),
            "seed {seed}: final get"
        );
    }
    let m = d.metrics();
    assert!(m.background_error.is_none());
}

#[test]
fn model_randomized() {
    let ops: usize = std::env::var("SLUICE_MODEL_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    if let Some(seed) = std::env::var("SLUICE_MODEL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        run(seed, ops);
        return;
    }
    for seed in 0..4u64 {
        let r = std::panic::catch_unwind(|| run(seed, ops));
        if r.is_err() {
            panic!("model test failed; replay with SLUICE_MODEL_SEED={seed}");
        }
    }
}
