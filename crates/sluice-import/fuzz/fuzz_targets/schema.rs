//! Coverage-guided fuzzing of the schema parser: any text gives tables or an error, never a
//! panic. Run: `cargo +nightly fuzz run schema` (in crates/sluice-import).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_import::fuzz::exercise_schema(data);
});
