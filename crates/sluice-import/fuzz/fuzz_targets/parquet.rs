//! Coverage-guided fuzzing of Parquet input: any bytes imported as a Parquet file — footer,
//! schema, row groups, pages, every codec — give rows, rejected rows or an error naming the
//! file, never a panic, and no allocation sized by a length in the file.
//!
//! parquet-rs (and arrow-ipc, which decodes the Arrow schema a file embeds) is a dependency
//! that panics on some malformed files; the import turns such a panic into an error naming
//! the file (`arrow_io::parquet::guarded`, a `catch_unwind` around every call into it).
//! libfuzzer-sys's panic hook aborts at the panic, before `catch_unwind` is reached, so this
//! target puts the default hook back: a panic inside the decoder is then caught as in a real
//! import, and any other panic still reaches libfuzzer-sys's wrapper, which aborts (a crash).
//! Run (in crates/sluice-import):
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
    static HOOK: OnceLock<()> = OnceLock::new();
    HOOK.get_or_init(|| drop(std::panic::take_hook()));
    let _ = sluice_import::fuzz::exercise_parquet(scratch(), data);
});
