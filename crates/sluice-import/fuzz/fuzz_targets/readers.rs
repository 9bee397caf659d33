//! Coverage-guided fuzzing of the CSV/TSV/JSON-lines readers (chunker, quote scanner, field
//! parsing, encoding): any bytes give rows or rejects, never a panic.
//! Run: `cargo +nightly fuzz run readers` (in crates/sluice-import).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_import::fuzz::exercise_readers(data);
});
