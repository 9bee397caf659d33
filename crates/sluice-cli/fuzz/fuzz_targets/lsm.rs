//! Coverage-guided fuzzing of `sluice lsm`'s MANIFEST replay: any bytes read as a Sluice
//! MANIFEST and as a RocksDB MANIFEST (every tag: files, blob files, WALs, column families)
//! give a replayed history or a `Corruption` naming the MANIFEST and an offset, never a
//! panic. Keys are decoded through an import catalog. Run (in crates/sluice-cli):
//! `scripts/fuzz.sh lsm`, or `cargo +nightly fuzz run lsm fuzz/corpus/lsm testdata/fuzz/lsm`.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sluice_import::TableDef;

/// The catalog keys are decoded with: the import harnesses' table, as table 1.
fn tables() -> &'static [TableDef] {
    static TABLES: OnceLock<Vec<TableDef>> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut t = sluice_import::parse_schema(sluice_import::fuzz::FUZZ_SCHEMA).unwrap();
        for (i, t) in t.iter_mut().enumerate() {
            t.id = 1 + i as u32;
        }
        t
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = sluice_cli::fuzz::exercise_lsm(data, tables());
});
