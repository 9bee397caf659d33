//! Coverage-guided fuzzing of Parquet input: any bytes imported as a Parquet file — footer,
//! schema, row groups, pages, every codec — give rows, rejected rows or an error naming the
//! file, never a panic (parquet-rs's own panics are turned into errors by `guarded`), and no
//! allocation sized by a length in the file. Run (in crates/sluice-import):
//! `scripts/fuzz.sh parquet`, or
//! `cargo +nightly fuzz run parquet fuzz/corpus/parquet testdata/fuzz/parquet`.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// The file each input is written to (one per fuzzing process).
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("sluice-fuzz-{}.parquet", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = sluice_import::fuzz::exercise_parquet(scratch(), data);
});
