//! Coverage-guided fuzzing of the table reader: any bytes opened as a table must give either
//! clean reads or errors, never a panic. Run: `cargo +nightly fuzz run table_reader`; to start
//! from RocksDB's format_version 6/7 layouts (partitioned index and filter, Ribbon) as well, add
//! the fixture tables as a seed directory:
//! `cargo +nightly fuzz run table_reader fuzz/corpus/table_reader testdata/rocksdb`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice::sst::fuzz::exercise_table_bytes(data);
});
