//! Imports of one table running at once, checked against what any serial order allows.
//!
//! Threads import random key sets into one table under `--on-duplicate error`, all at once,
//! round after round (a seed per round, printed on failure). Whatever the interleaving, the
//! imports that succeed must be ones a serial order would let succeed:
//! 1. no two of them hold a common key, and none holds a key stored before the round (the
//!    later of two would have found the earlier's row and failed);
//! 2. the table holds exactly the rows stored before the round and those of the imports that
//!    succeeded, each with its own import's value; a failed import left nothing;
//! 3. the secondary index holds exactly the entries the rows make;
//! 4. no import left a temporary directory behind.
//!
//! And imports under `--on-duplicate last` at once with a thread deleting rows: whatever
//! commits or is refused, the secondary index holds exactly the entries the rows make (a
//! delete between an import's read of a row and its commit, or a commit between a delete's
//! read and write, would leave an entry of a row that is gone), every row holds the value of
//! the seed or of an import that succeeded and had its key, and the rows only imports hold
//! (which no delete touches) are all there.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{opts, rows, write};
use sluice_import::{Import, Layout, OnDuplicate};

const SCHEMA: &str = "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);\n\
                      CREATE INDEX by_v ON t (v);";

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn round(layout: Layout, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let db = sluice_import::open_db(dir.path().join("db"), true).unwrap();
    let mut rng = seed;
    let o = || sluice_import::ImportOptions {
        layout: Some(layout),
        on_duplicate: OnDuplicate::Error,
        ..opts()
    };
    // The rows stored before the round.
    let seeded: BTreeSet<u64> = (0..40).map(|_| splitmix(&mut rng) % 400).collect();
    let body: String = seeded.iter().map(|k| format!("{k},seed\n")).collect();
    Import::new(
        SCHEMA,
        vec![write(dir.path(), "seed.csv", body.as_bytes())],
        o(),
    )
    .unwrap()
    .run(&db)
    .unwrap();
    // Four imports, each of 10–40 keys out of 400 (a third of them also stored before the
    // round; most rounds have overlaps, some not) and
    // 30,000 keys of its own after them, so that their merges overlap in time.
    let sets: Vec<BTreeSet<u64>> = (0..4u64)
        .map(|i| {
            let n = 10 + splitmix(&mut rng) % 30;
            let own = (0..30_000).map(|j| 10_000 + i * 100_000 + j);
            (0..n)
                .map(|_| 267 + splitmix(&mut rng) % 400)
                .chain(own)
                .collect()
        })
        .collect();
    let files: Vec<_> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| {
            // Out of order, so each import sorts and spills.
            let mut keys: Vec<u64> = s.iter().copied().collect();
            keys.reverse();
            let body: String = keys.iter().map(|k| format!("{k},imp{i}\n")).collect();
            write(dir.path(), &format!("i{i}.csv"), body.as_bytes())
        })
        .collect();
    let start = std::sync::Barrier::new(files.len());
    let results: Vec<bool> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .map(|f| {
                let (db, f, start) = (&db, f.clone(), &start);
                s.spawn(move || {
                    let import = Import::new(SCHEMA, vec![f], o()).unwrap();
                    start.wait();
                    match import.run(db) {
                        Ok(_) => true,
                        Err(e) => {
                            let m = e.to_string();
                            // Refused at the commit, or a duplicate found in the merge.
                            assert!(
                                m.contains("nothing was changed") || m.contains("duplicate"),
                                "seed {seed}: {m}"
                            );
                            false
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ok: Vec<usize> = (0..4).filter(|&i| results[i]).collect();
    // 1.
    for (x, &i) in ok.iter().enumerate() {
        assert!(
            sets[i].is_disjoint(&seeded),
            "{layout:?} seed {seed}: import {i} succeeded over stored rows"
        );
        for &j in &ok[x + 1..] {
            assert!(
                sets[i].is_disjoint(&sets[j]),
                "{layout:?} seed {seed}: imports {i} and {j} both succeeded with common keys \
                 (results {results:?})"
            );
        }
    }
    // 2. and 3. (`rows` compares the index's rows with the table's).
    let mut want: BTreeMap<u64, String> = seeded.iter().map(|&k| (k, "seed".into())).collect();
    for &i in &ok {
        for &k in &sets[i] {
            want.insert(k, format!("imp{i}"));
        }
    }
    let want: Vec<String> = want.iter().map(|(k, v)| format!("{k},{v}")).collect();
    assert_eq!(rows(&db, "t", None), want, "{layout:?} seed {seed}");
    let mut by_v = rows(&db, "t", Some("by_v"));
    by_v.sort_by_key(|r| r.split(',').next().unwrap().parse::<u64>().unwrap());
    assert_eq!(by_v, want, "{layout:?} seed {seed}: the index");
    let left = common::leftovers(&dir.path().join("db"));
    assert!(left.is_empty(), "{layout:?} seed {seed}: {left:?}");
}

#[test]
fn imports_of_one_table_at_once_commit_as_some_serial_order_would() {
    for seed in 0..8u64 {
        round(Layout::Row, 1000 + seed);
        round(Layout::Columnar, 2000 + seed);
    }
}

/// Three `last` imports of one table and a thread deleting random rows, at once (see the
/// module documentation).
fn round_with_deletes(layout: Layout, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let db = sluice_import::open_db(dir.path().join("db"), true).unwrap();
    let mut rng = seed;
    let o = |on_duplicate| sluice_import::ImportOptions {
        layout: Some(layout),
        on_duplicate,
        ..opts()
    };
    let seeded: BTreeSet<u64> = (0..200).map(|_| splitmix(&mut rng) % 400).collect();
    let body: String = seeded.iter().map(|k| format!("{k},seed\n")).collect();
    let seed_file = write(dir.path(), "seed.csv", body.as_bytes());
    Import::new(SCHEMA, vec![seed_file], o(OnDuplicate::Error))
        .unwrap()
        .run(&db)
        .unwrap();
    // Each: 20–80 keys of 0..400 (many stored, some in other imports) and 20,000 of its own.
    let sets: Vec<(BTreeSet<u64>, Vec<u64>)> = (0..3u64)
        .map(|i| {
            let n = 20 + splitmix(&mut rng) % 60;
            let shared: BTreeSet<u64> = (0..n).map(|_| splitmix(&mut rng) % 400).collect();
            let own: Vec<u64> = (0..20_000).map(|j| 10_000 + i * 100_000 + j).collect();
            (shared, own)
        })
        .collect();
    let files: Vec<_> = sets
        .iter()
        .enumerate()
        .map(|(i, (shared, own))| {
            let mut keys: Vec<u64> = shared.iter().chain(own).copied().collect();
            keys.reverse();
            let body: String = keys.iter().map(|k| format!("{k},imp{i}\n")).collect();
            write(dir.path(), &format!("i{i}.csv"), body.as_bytes())
        })
        .collect();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let deletes = std::sync::atomic::AtomicU64::new(0);
    let results: Vec<bool> = std::thread::scope(|s| {
        let (db, done, deletes) = (&db, &done, &deletes);
        let mut drng = splitmix(&mut rng);
        s.spawn(move || {
            let reader = sluice_import::TableReader::open(db, Some("t")).unwrap();
            while done.load(std::sync::atomic::Ordering::SeqCst) < 3 {
                let k = splitmix(&mut drng) % 400;
                if reader.delete(&[k.to_string()], false).unwrap() {
                    deletes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        });
        let handles: Vec<_> = files
            .iter()
            .map(|f| {
                let f = f.clone();
                s.spawn(move || {
                    let r = Import::new(SCHEMA, vec![f], o(OnDuplicate::Last))
                        .unwrap()
                        .run(db);
                    done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    match r {
                        Ok(_) => true,
                        Err(e) => {
                            let m = e.to_string();
                            assert!(m.contains("nothing was changed"), "seed {seed}: {m}");
                            false
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(deletes.into_inner() > 0, "seed {seed}: no row was deleted");
    let table = rows(&db, "t", None);
    let mut by_v = rows(&db, "t", Some("by_v"));
    by_v.sort_by_key(|r| r.split(',').next().unwrap().parse::<u64>().unwrap());
    assert_eq!(
        by_v, table,
        "{layout:?} seed {seed}: the index and the rows differ"
    );
    let got: BTreeMap<u64, String> = table
        .iter()
        .map(|r| {
            let (k, v) = r.split_once(',').unwrap();
            (k.parse().unwrap(), v.to_string())
        })
        .collect();
    for (k, v) in &got {
        let fine = match v.strip_prefix("imp") {
            Some(i) => {
                let i: usize = i.parse().unwrap();
                results[i] && (sets[i].0.contains(k) || sets[i].1.contains(k))
            }
            None => v == "seed" && seeded.contains(k),
        };
        assert!(
            fine,
            "{layout:?} seed {seed}: row {k},{v} (results {results:?})"
        );
    }
    for (i, (_, own)) in sets.iter().enumerate() {
        let held = own.iter().filter(|k| got.contains_key(k)).count();
        let want = if results[i] { own.len() } else { 0 };
        assert_eq!(held, want, "{layout:?} seed {seed}: import {i}'s own rows");
    }
    let left = common::leftovers(&dir.path().join("db"));
    assert!(left.is_empty(), "{layout:?} seed {seed}: {left:?}");
}

#[test]
fn replacing_imports_and_row_deletes_at_once_keep_the_index_equal_to_the_rows() {
    for seed in 0..4u64 {
        round_with_deletes(Layout::Row, 3000 + seed);
        round_with_deletes(Layout::Columnar, 4000 + seed);
    }
}
