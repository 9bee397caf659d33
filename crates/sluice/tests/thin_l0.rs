//! `Options::l0_thin_sublevels_wait` counts L0 in full flushes' worth of bytes while it is
//! shallow. A full flush's bytes are measured (its tables over its memtable), not taken to be a
//! memtable's: with compression in L0 a flush writes a fraction of its memtable, and counted
//! against whole memtables four flushes would make one round, so L0 would wait for twice the
//! trigger. Deterministic: each flush is a manual one of a memtable filled to 90% of
//! `write_buffer_size` (a full flush, without a memtable switch of its own), and the test waits
//! for background work after each. No timing.

mod common;

use sluice::fs::MemFs;
use sluice::{CompressionType, Db, Metrics, Options};

const WRITE_BUFFER: usize = 1 << 20;

fn opts(fs: &MemFs, compression: CompressionType) -> Options {
    Options {
        write_buffer_size: WRITE_BUFFER,
        l0_compaction_trigger: 4,
        compression_per_level: [compression; 7],
        ..common::mem_opts(fs)
    }
}

/// Flush `f`'s keys interleave with every other flush's, so each flush's table spans the same
/// range and stacks on the last as a sublevel of its own. Values: 48 pseudo-random hex digits
/// and 160 repeated bytes, which zstd writes in a fraction of their memtable bytes.
fn fill_and_flush(db: &Db, f: u64, seed: &mut u64) {
    let mut i = 0;
    while db.metrics().memtable_bytes < (WRITE_BUFFER as u64) * 9 / 10 {
        let key = format!("k{:08}", i * 8 + f);
        let mut value = String::with_capacity(208);
        for _ in 0..6 {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            value.push_str(&format!("{:08x}", *seed >> 32));
        }
        value.push_str(&"v".repeat(160));
        db.put(key.as_bytes(), value.as_bytes()).unwrap();
        i += 1;
    }
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
}

/// Three full flushes (three rounds of a trigger of four: L0 waits), then a fourth (due).
/// Returns the metrics after the third and after the fourth.
fn three_then_four(compression: CompressionType) -> (Db, Metrics, Metrics) {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs, compression)).unwrap();
    let mut seed = 7;
    for f in 0..3 {
        fill_and_flush(&db, f, &mut seed);
    }
    let three = db.metrics();
    fill_and_flush(&db, 3, &mut seed);
    let four = db.metrics();
    (db, three, four)
}

#[test]
fn compressed_flushes_count_one_round_each() {
    let (db, m, four) = three_then_four(CompressionType::Zstd);
    // No memtable switched on its own; zstd wrote a fraction of each.
    assert_eq!(m.flushes, 3);
    assert!(m.flush_bytes < WRITE_BUFFER as u64, "{m:?}");
    assert_eq!(m.l0_sublevels, 3, "{m:?}");
    assert_eq!(m.compactions, 0, "{m:?}");
    // The fourth makes four rounds, though L0 held under one memtable's bytes.
    assert_eq!(four.flushes, 4);
    assert!(four.compactions >= 1, "{four:?}");
    assert_eq!(four.levels[0].files, 0, "{four:?}");
    // Keys of every flush read back.
    for f in 0..4u64 {
        for i in (0..2_000).step_by(97) {
            let key = format!("k{:08}", i * 8 + f);
            assert!(db.get(key.as_bytes()).unwrap().is_some(), "{key}");
        }
    }
}

/// Uncompressed, a flush's tables are most of its memtable: four flushes are due at the trigger
/// too, and three wait, as RocksDB's four-file trigger would.
#[test]
fn uncompressed_flushes_are_due_at_the_trigger() {
    let (_db, m, four) = three_then_four(CompressionType::None);
    assert!(m.flush_bytes > WRITE_BUFFER as u64 * 2, "{m:?}");
    assert_eq!(m.l0_sublevels, 3, "{m:?}");
    assert_eq!(m.compactions, 0, "{m:?}");
    assert!(four.compactions >= 1, "{four:?}");
    assert_eq!(four.levels[0].files, 0, "{four:?}");
}
