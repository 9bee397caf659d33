//! Coverage-guided fuzzing of the table reader: any bytes opened as a table must give either
//! clean reads or errors, never a panic. Run: `cargo +nightly fuzz run table_reader`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice::sst::fuzz::exercise_table_bytes(data);
});
