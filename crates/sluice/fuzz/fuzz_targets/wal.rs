//! Coverage-guided fuzzing of WAL recovery: any bytes replayed as a WAL — records, fragments,
//! write batches, ingest records, torn tails — give recovered data or a `Corruption` naming
//! the file and offset, never a panic. The bytes are replayed as they are, and once more
//! split into records framed with valid checksums (`sluice::fuzz::frame_records`) so that
//! damage reaches the batch decoders. Run, from the engine's seed files in `testdata/fuzz/`:
//! `cargo +nightly fuzz run wal fuzz/corpus/wal testdata/fuzz/wal`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice::fuzz::exercise_wal(data);
    let _ = sluice::fuzz::exercise_wal(&sluice::fuzz::frame_records(data));
});
