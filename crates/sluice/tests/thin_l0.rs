//! `Options::l0_thin_sublevels_wait` counts L0 in full flushes' worth of bytes while it is
//! shallow. A full flush's bytes are measured (its tables over its memtable), not taken to be a
//! memtable's: with compression in L0 a flush writes a fraction of its memtable, and counted
//! against whole memtables four flushes would make one round, so L0 would wait for twice the
//! trigger. Deterministic: each flush is a manual one of a memtable filled to a set share of
//! `write_buffer_size` (98%: a full flush, without a memtable switch of its own), and the test
//! waits for background work after each. No timing.

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
/// and 160 repeated bytes, which zstd writes in a fraction of their memtable bytes. The
/// memtable is filled to `fill_permille` of `write_buffer_size`, then flushed.
fn fill_and_flush(db: &Db, f: u64, seed: &mut u64, fill_permille: u64) {
    let mut i = 0;
    while db.metrics().memtable_bytes < WRITE_BUFFER as u64 * fill_permille / 1000 {
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

/// `flushes` flushes of memtables filled to `fill_permille`; the metrics after each.
fn flushes(compression: CompressionType, fill_permille: u64, flushes: u64) -> (Db, Vec<Metrics>) {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs, compression)).unwrap();
    let mut seed = 7;
    let after = (0..flushes)
        .map(|f| {
            fill_and_flush(&db, f, &mut seed, fill_permille);
            db.metrics()
        })
        .collect();
    (db, after)
}

/// Full flushes (98% of a memtable): three are three rounds of a trigger of four (L0 waits),
/// the fourth is due.
#[test]
fn compressed_flushes_count_one_round_each() {
    let (db, after) = flushes(CompressionType::Zstd, 980, 4);
    let (m, four) = (&after[2], &after[3]);
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
    let (_db, after) = flushes(CompressionType::None, 980, 4);
    let (m, four) = (&after[2], &after[3]);
    assert!(m.flush_bytes > WRITE_BUFFER as u64 * 2, "{m:?}");
    assert_eq!(m.l0_sublevels, 3, "{m:?}");
    assert_eq!(m.compactions, 0, "{m:?}");
    assert!(four.compactions >= 1, "{four:?}");
    assert_eq!(four.levels[0].files, 0, "{four:?}");
}

/// Past the trigger's depth, thin sublevels still wait for the rounds' bytes: flushes of 60%
/// of a memtable are 0.6 rounds each, so five (depth 5, 3.0 rounds) wait, where depth alone
/// would have compacted at the fourth, and the sixth (3.6 rounds, to the nearest 4) is due.
#[test]
fn part_flushes_wait_past_the_trigger_for_the_rounds_bytes() {
    let (_db, after) = flushes(CompressionType::Zstd, 600, 6);
    let five = &after[4];
    assert_eq!(five.flushes, 5);
    assert_eq!(five.l0_sublevels, 5, "{five:?}");
    assert_eq!(five.compactions, 0, "{five:?}");
    let six = &after[5];
    assert!(six.compactions >= 1, "{six:?}");
    assert_eq!(six.levels[0].files, 0, "{six:?}");
}
