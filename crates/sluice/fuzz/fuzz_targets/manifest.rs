//! Coverage-guided fuzzing of MANIFEST recovery: any bytes replayed as a MANIFEST — the log
//! framing, every version-edit tag, the replay into a version and the decisions taken on it —
//! give a version or a `Corruption` naming the file and offset, never a panic. The bytes are
//! replayed as they are, and once more split into records framed with valid checksums
//! (`sluice::fuzz::frame_records`) so that damage reaches the edit decoder. Run:
//! `cargo +nightly fuzz run manifest fuzz/corpus/manifest testdata/fuzz/manifest`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice::fuzz::exercise_manifest(data);
    let _ = sluice::fuzz::exercise_manifest(&sluice::fuzz::frame_records(data));
});
