//! Coverage-guided fuzzing of Arrow input against a table's schema: the bytes build record
//! batches (any column names, every Arrow type, NULLs: `sluice_import::fuzz::arrow_gen`) that
//! are matched to the table's columns and converted value by value, as `Import::from_arrow`
//! does; a type that does not fit is refused, a value that does not fit is a rejected row
//! naming its batch and row, never a panic. Run (in crates/sluice-import):
//! `scripts/fuzz.sh arrow`, or `cargo +nightly fuzz run arrow fuzz/corpus/arrow testdata/fuzz/arrow`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_import::fuzz::exercise_arrow(data);
});
