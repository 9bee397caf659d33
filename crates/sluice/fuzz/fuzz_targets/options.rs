//! Coverage-guided fuzzing of OPTIONS-file loading: any bytes give validated options or a
//! `Corruption` naming the file and the bad line's offset, never a panic. Run:
//! `cargo +nightly fuzz run options fuzz/corpus/options testdata/fuzz/options`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice::fuzz::exercise_options(data);
});
