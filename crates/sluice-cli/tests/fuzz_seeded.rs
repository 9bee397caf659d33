//! A short, seeded mutation run of `sluice lsm`'s MANIFEST replay (`sluice_cli::fuzz`, the
//! function the cargo-fuzz target in `fuzz/` calls): MANIFESTs written by RocksDB (rocksdict:
//! column families, flushes, ingests, a compaction, a reopen's state dump, blob files) and by
//! Sluice (the engine's own, and one an import wrote, whose keys decode through the catalog)
//! are damaged thousands of times — bit flips, truncation, fragments with huge lengths or
//! duplicated, records damaged and re-framed with valid checksums so that the damage reaches
//! both edit decoders. Each is read as both engines' MANIFEST and replayed: never a panic,
//! and every error a `Corruption` naming the MANIFEST and an offset inside it.
//!
//! The run happens in a child process under `ulimit -v`. The seeds are the cargo-fuzz seed
//! corpus (`testdata/fuzz/lsm/`; `generate_rocksdb_seeds.py` beside it writes the RocksDB
//! ones, `SLUICE_FUZZ_REWRITE=1` the Sluice import's); `SLUICE_FUZZ_SEED` and
//! `SLUICE_FUZZ_ITERS` explore further.

use std::path::Path;

use sluice::fuzz::{check_corruption, records_of, run_capped, seed_and_iters, seed_files, Mutator};
use sluice_cli::fuzz::{exercise_lsm, manifest_path, Replayed};
use sluice_import::{Import, ImportOptions, TableDef};

/// Address-space cap of the mutation run's process, KiB.
const MEMORY_CAP_KIB: u64 = 1 << 20;

fn seed_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz/lsm")
}

/// The catalog keys are decoded with (as the fuzz target's).
fn tables() -> Vec<TableDef> {
    let mut t = sluice_import::parse_schema(sluice_import::fuzz::FUZZ_SCHEMA).unwrap();
    for (i, t) in t.iter_mut().enumerate() {
        t.id = 1 + i as u32;
    }
    t
}

/// The MANIFEST of a Db that one import of the fuzz schema's table filled.
fn import_manifest() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("f.csv");
    let rows: String = (0..200)
        .map(|i| {
            format!(
                "{i},{i}.5,{i}.125,true,name{i},\\x00ff,2024-02-29,2024-02-29 23:59:59,ab,{}\n",
                i % 7
            )
        })
        .collect();
    std::fs::write(&csv, rows).unwrap();
    let db = sluice_import::open_db(dir.path().join("db"), true).unwrap();
    let import = Import::new(
        sluice_import::fuzz::FUZZ_SCHEMA,
        vec![csv],
        ImportOptions::default(),
    )
    .unwrap();
    import.run(&db).unwrap();
    drop(db);
    let db = dir.path().join("db");
    let current = std::fs::read_to_string(db.join("CURRENT")).unwrap();
    std::fs::read(db.join(current.trim())).unwrap()
}

/// Fails unless the replay's error, if any, names the MANIFEST and an offset inside it.
fn check(r: &Replayed, len: usize, what: &str) {
    if let Err(e) = r {
        if let Err(why) = check_corruption(e, &manifest_path(), len) {
            panic!("{what}: {why}");
        }
    }
}

#[test]
fn seeded_mutations_never_panic() {
    if run_capped("seeded_mutations_never_panic", MEMORY_CAP_KIB) {
        return;
    }
    if std::env::var_os("SLUICE_FUZZ_REWRITE").is_some() {
        std::fs::write(seed_dir().join("sluice-import"), import_manifest()).unwrap();
    }
    let tables = tables();
    let seeds = seed_files(&seed_dir());
    // The seeds written on purpose (the fuzzer's own, merged in, are named by their SHA-1).
    for (name, bytes) in seeds.iter().filter(|(name, _)| name.len() != 40) {
        let r = exercise_lsm(bytes, &tables);
        let sluice = name.starts_with("sluice");
        assert_eq!(r.sluice_first_record, Some(sluice), "{name}");
        let (steps, keys) = if sluice { &r.sluice } else { &r.rocksdb }
            .as_ref()
            .unwrap_or_else(|e| panic!("seed {name} does not replay: {e}"));
        assert!(
            *steps > 1 && *keys > 1,
            "{name}: {steps} steps, {keys} keys"
        );
    }
    let (seed, iters) = seed_and_iters(50_000);
    let mut rng = Mutator::new(seed);
    for i in 0..iters {
        let (name, bytes) = &seeds[i % seeds.len()];
        let damaged = rng.mutate_log(bytes, &records_of(bytes));
        let what = format!("seed {seed}, iteration {i} ({name})");
        let r = std::panic::catch_unwind(|| exercise_lsm(&damaged, &tables))
            .unwrap_or_else(|_| panic!("replay panicked ({what}): {damaged:?}"));
        check(&r.sluice, damaged.len(), &format!("{what}, as Sluice's"));
        check(&r.rocksdb, damaged.len(), &format!("{what}, as RocksDB's"));
    }
}

/// Found by this test's mutation run (seed 0x5eed, iteration 1068): a Sluice MANIFEST whose
/// re-framed record added a file with its smallest key above its largest made the replay
/// subtract key positions past zero (a panic in debug builds, a nonsense span in release).
/// Now the edit is corruption at its offset.
#[test]
fn lsm_regression_inverted_key_range_is_corruption() {
    let bytes = include_bytes!("../testdata/fuzz-regressions/lsm/inverted-key-range");
    let r = exercise_lsm(bytes, &tables());
    let e = r.sluice.expect_err("the inverted file is refused");
    check_corruption(&e, &manifest_path(), bytes.len()).unwrap();
    assert!(
        e.to_string().contains("smallest key is above its largest"),
        "{e}"
    );
}
