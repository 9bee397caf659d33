//! Table round trips against a model, bounds, and corruption handling.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};

use crate::base::bounds::IterBounds;
use crate::base::error::Error;
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, make_internal_key, ValueKind, MAX_SEQNO};
use crate::fs::RandomAccessFile;
use crate::sst::cache::BlockCache;
use crate::sst::format::{ChecksumType, CompressionType};
use crate::sst::table::{Table, TableReadOptions};
use crate::sst::table_builder::{TableBuilder, TableIdentity, TableOptions};

type Model = BTreeMap<(Vec<u8>, std::cmp::Reverse<u64>), (ValueKind, Vec<u8>)>;

fn build(model: &Model, opts: TableOptions) -> Vec<u8> {
    build_fv(model, opts, 5)
}

fn build_fv(model: &Model, opts: TableOptions, format_version: u32) -> Vec<u8> {
    let mut b = TableBuilder::new(Vec::new(), opts, TableIdentity::default())
        .unwrap()
        .with_format_version(format_version)
        .unwrap();
    for ((k, s), (kind, v)) in model {
        b.add(&make_internal_key(k, s.0, *kind), v).unwrap();
    }
    b.finish().unwrap().0
}

fn open(bytes: Vec<u8>, cache: Option<Arc<BlockCache>>) -> crate::base::error::Result<Arc<Table>> {
    let file: Arc<dyn RandomAccessFile> = Arc::new(bytes);
    Table::open(
        file,
        "test.sst".into(),
        &TableReadOptions {
            verify_checksums: true,
            cache,
        },
    )
}

fn random_model(seed: u64, n: usize) -> Model {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut m = Model::new();
    for _ in 0..n {
        let klen = rng.gen_range(1..24);
        let k: Vec<u8> = (0..klen).map(|_| rng.gen_range(b'a'..=b'f')).collect();
        let versions = rng.gen_range(1..3);
        for _ in 0..versions {
            let seq = rng.gen_range(0..1000);
            let kind = if rng.gen_bool(0.1) {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let v: Vec<u8> = if kind == ValueKind::Value {
                (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect()
            } else {
                Vec::new()
            };
            m.insert((k.clone(), std::cmp::Reverse(seq)), (kind, v));
        }
    }
    m
}

fn model_entries(m: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter()
        .map(|((k, s), (kind, v))| (make_internal_key(k, s.0, *kind), v.clone()))
        .collect()
}

fn all_option_sets() -> Vec<TableOptions> {
    let mut v = Vec::new();
    for compression in [
        CompressionType::None,
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ] {
        for checksum in [ChecksumType::Crc32c, ChecksumType::Xxh3] {
            for bloom in [None, Some(10.0)] {
                v.push(TableOptions {
                    block_size: 256,
                    restart_interval: 4,
                    compression,
                    checksum,
                    bloom_bits_per_key: bloom,
                });
            }
        }
    }
    v
}

#[test]
fn every_option_combination_roundtrips() {
    let model = random_model(7, 800);
    let entries = model_entries(&model);
    for (opts, fv) in all_option_sets()
        .into_iter()
        .flat_map(|o| [(o.clone(), 5), (o, 6)])
    {
        let bytes = build_fv(&model, opts.clone(), fv);
        let t = open(bytes, Some(BlockCache::new(1 << 20))).unwrap();
        assert_eq!(t.footer().format_version, fv);
        assert_eq!(t.verify().unwrap(), entries.len() as u64, "{opts:?}");
        let mut it = t.iter(IterBounds::default());
        it.seek_to_first();
        for (k, v) in &entries {
            assert!(it.valid());
            assert_eq!(it.key(), &k[..]);
            assert_eq!(it.value(), &v[..]);
            it.next();
        }
        assert!(!it.valid());
        it.status().unwrap();
        // Point lookups: newest version at or below a snapshot.
        for ((k, s), (kind, v)) in model.iter().take(300) {
            let got = t.get(k, s.0).unwrap().unwrap();
            assert_eq!(got, (*kind, v.clone()));
        }
        assert_eq!(t.get(b"zzz-absent", MAX_SEQNO).unwrap(), None);
        assert_eq!(t.properties().num_entries, entries.len() as u64);
        assert_eq!(t.has_filter(), opts.bloom_bits_per_key.is_some());
    }
}

#[test]
fn compressible_blocks_are_compressed_and_incompressible_are_not() {
    let mut m = Model::new();
    for i in 0..2000u32 {
        m.insert(
            (format!("key{i:08}").into_bytes(), std::cmp::Reverse(1)),
            (ValueKind::Value, vec![b'x'; 100]),
        );
    }
    let plain = build(&m, TableOptions::default()).len();
    let zstd = build(
        &m,
        TableOptions {
            compression: CompressionType::Zstd,
            ..Default::default()
        },
    )
    .len();
    assert!(zstd * 4 < plain, "zstd {zstd} vs plain {plain}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let mut r = Model::new();
    for i in 0..2000u32 {
        r.insert(
            (format!("key{i:08}").into_bytes(), std::cmp::Reverse(1)),
            (ValueKind::Value, (0..100).map(|_| rng.gen()).collect()),
        );
    }
    let t = open(
        build(
            &r,
            TableOptions {
                compression: CompressionType::Lz4,
                ..Default::default()
            },
        ),
        None,
    )
    .unwrap();
    assert_eq!(t.verify().unwrap(), 2000);
}

#[test]
fn key_order_violation_is_a_typed_error() {
    let mut b = TableBuilder::new(
        Vec::new(),
        TableOptions::default(),
        TableIdentity::default(),
    )
    .unwrap();
    b.add(&make_internal_key(b"b", 5, ValueKind::Value), b"1")
        .unwrap();
    let e = b
        .add(&make_internal_key(b"a", 5, ValueKind::Value), b"2")
        .unwrap_err();
    assert!(matches!(e, Error::KeyOrder { .. }), "{e}");
    let e = b
        .add(&make_internal_key(b"b", 5, ValueKind::Value), b"2")
        .unwrap_err();
    assert!(matches!(e, Error::KeyOrder { .. }), "{e}");
    // Same user key, older seqno: allowed.
    b.add(&make_internal_key(b"b", 4, ValueKind::Value), b"3")
        .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn bounded_iteration_matches_model(
        seed in 0u64..10_000,
        lo in proptest::option::of(proptest::collection::vec(b'a'..=b'g', 0..4)),
        hi in proptest::option::of(proptest::collection::vec(b'a'..=b'g', 0..4)),
        probes in proptest::collection::vec((proptest::collection::vec(b'a'..=b'g', 0..5), 0u64..1100), 1..8),
    ) {
        let model = random_model(seed, 150);
        let bytes = build(&model, TableOptions { block_size: 128, restart_interval: 3, ..Default::default() });
        let t = open(bytes, None).unwrap();
        let entries: Vec<_> = model_entries(&model)
            .into_iter()
            .filter(|(k, _)| {
                let u = key::user_key(k);
                lo.as_ref().is_none_or(|l| u >= l.as_slice()) && hi.as_ref().is_none_or(|h| u < h.as_slice())
            })
            .collect();
        let mut it = t.iter(IterBounds { lower: lo.clone(), upper: hi.clone() });
        it.seek_to_first();
        for (k, _) in &entries {
            prop_assert!(it.valid());
            prop_assert_eq!(it.key(), &k[..]);
            it.next();
        }
        prop_assert!(!it.valid());
        it.seek_to_last();
        for (k, _) in entries.iter().rev() {
            prop_assert!(it.valid());
            prop_assert_eq!(it.key(), &k[..]);
            it.prev();
        }
        prop_assert!(!it.valid());
        for (pk, ps) in &probes {
            let target = key::seek_key(pk, *ps);
            it.seek(&target);
            let want = entries.iter().find(|(k, _)| key::compare_internal(k, &target).is_ge());
            prop_assert_eq!(it.valid().then(|| it.key().to_vec()), want.map(|e| e.0.clone()));
            it.seek_for_prev(&target);
            let want = entries.iter().rev().find(|(k, _)| key::compare_internal(k, &target).is_le());
            prop_assert_eq!(it.valid().then(|| it.key().to_vec()), want.map(|e| e.0.clone()));
        }
        it.status().unwrap();
    }
}

#[test]
fn upper_bound_stops_before_reading_blocks_beyond_it() {
    // 100,000 deletions past the upper bound: a bounded seek must not walk them.
    let mut b = TableBuilder::new(
        Vec::new(),
        TableOptions::default(),
        TableIdentity::default(),
    )
    .unwrap();
    b.add(&make_internal_key(b"a-live", 1, ValueKind::Value), b"v")
        .unwrap();
    for i in 0..100_000u32 {
        b.add(
            &make_internal_key(format!("b-tomb{i:08}").as_bytes(), 2, ValueKind::Deletion),
            b"",
        )
        .unwrap();
    }
    let t = open(b.finish().unwrap().0, None).unwrap();
    let mut it = t.iter(IterBounds {
        lower: None,
        upper: Some(b"b".to_vec()),
    });
    it.seek_to_first();
    assert!(it.valid());
    it.next();
    assert!(!it.valid());
    assert!(it.blocks_read() <= 2, "read {} blocks", it.blocks_read());
    let mut it = t.iter(IterBounds {
        lower: Some(b"c".to_vec()),
        upper: None,
    });
    it.seek_to_last();
    assert!(!it.valid());
    it.seek_to_first();
    assert!(!it.valid());
    assert!(it.blocks_read() <= 2, "read {} blocks", it.blocks_read());
}

fn sample_table() -> Vec<u8> {
    let model = random_model(3, 2000);
    build(
        &model,
        TableOptions {
            block_size: 1024,
            ..Default::default()
        },
    )
}

fn expect_corruption(bytes: Vec<u8>) -> (u64, String) {
    let r = open(bytes, None).and_then(|t| t.verify().map(|_| t));
    match r {
        Err(Error::Corruption {
            file,
            offset,
            reason,
        }) => {
            assert_eq!(file, std::path::PathBuf::from("test.sst"));
            (offset, reason)
        }
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("expected corruption, table read cleanly"),
    }
}

#[test]
fn corruption_is_detected_and_located() {
    let good = sample_table();
    let t = open(good.clone(), None).unwrap();
    let index = t.footer().index.unwrap();
    let filter = t
        .metaindex()
        .iter()
        .find(|(n, _)| n.starts_with("fullfilter"))
        .unwrap()
        .1;
    drop(t);

    // A flipped byte in the first data block.
    let mut b = good.clone();
    b[10] ^= 0x40;
    let (off, why) = expect_corruption(b);
    assert_eq!(off, 0, "{why}");
    assert!(why.contains("checksum"), "{why}");

    // In the index block.
    let mut b = good.clone();
    b[index.offset as usize + 3] ^= 1;
    let (off, why) = expect_corruption(b);
    assert_eq!(off, index.offset, "{why}");

    // In the filter block.
    let mut b = good.clone();
    b[filter.offset as usize + 7] ^= 1;
    let (off, _) = expect_corruption(b);
    assert_eq!(off, filter.offset);

    // Truncated.
    let (_, why) = expect_corruption(good[..good.len() - 20].to_vec());
    assert!(why.contains("magic"), "{why}");
    let (off, _) = expect_corruption(good[..30].to_vec());
    assert_eq!(off, 0);

    // Wrong magic.
    let mut b = good.clone();
    let n = b.len();
    b[n - 1] ^= 0xff;
    let (off, why) = expect_corruption(b);
    assert_eq!(off, n as u64 - 8);
    assert!(why.contains("magic"));
}

#[test]
fn seeded_mutations_never_panic() {
    // The fuzz harness over random mutations of valid tables (cargo-fuzz runs the same
    // harness coverage-guided; see crates/sluice/fuzz): one of Sluice's (format_version 5),
    // and RocksDB's format_version 6 files: defaults, partitioned index and filter, an index
    // with first keys, a Ribbon filter.
    let good = {
        let model = random_model(11, 300);
        build(
            &model,
            TableOptions {
                block_size: 256,
                compression: CompressionType::Snappy,
                ..Default::default()
            },
        )
    };
    mutate_and_exercise("sluice", &good);
    let fv6 = build_fv(
        &random_model(12, 300),
        TableOptions {
            block_size: 256,
            checksum: ChecksumType::Xxh3,
            ..Default::default()
        },
        6,
    );
    mutate_and_exercise("sluice fv6", &fv6);
    for name in [
        "fv6_default.sst",
        "partitioned.sst",
        "first_key.sst",
        "ribbon.sst",
    ] {
        mutate_and_exercise(name, &super::rocksdb_tests::fixture(name));
    }
}

fn mutate_and_exercise(what: &str, good: &[u8]) {
    assert!(super::fuzz::exercise_table_bytes(good).is_some(), "{what}");
    let seed: u64 = std::env::var("SLUICE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED);
    let iters: usize = std::env::var("SLUICE_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut clean = 0;
    for i in 0..iters {
        let mut b = good.to_vec();
        match rng.gen_range(0..4) {
            0 => {
                for _ in 0..rng.gen_range(1..4) {
                    let p = rng.gen_range(0..b.len());
                    b[p] ^= 1 << rng.gen_range(0..8);
                }
            }
            1 => {
                let p = rng.gen_range(0..b.len());
                b[p] = rng.gen();
            }
            2 => b.truncate(rng.gen_range(0..b.len())),
            _ => {
                let p = rng.gen_range(0..b.len());
                let n = rng.gen_range(1..64).min(b.len() - p);
                for x in &mut b[p..p + n] {
                    *x = rng.gen();
                }
            }
        }
        let r = std::panic::catch_unwind(|| super::fuzz::exercise_table_bytes(&b));
        match r {
            Ok(Some(_)) => clean += 1,
            Ok(None) => {}
            Err(_) => panic!("{what}: panic on mutation {i} (seed {seed})"),
        }
    }
    // Checksums catch nearly every mutation; a handful may land in padding or unused bytes.
    assert!(
        clean < iters / 10,
        "{what}: {clean} of {iters} mutations read cleanly"
    );
}

/// In format_version 6 a block's checksum depends on the file's base context and the block's
/// offset: a block copied from another table (the same bytes at the same offset) is refused.
#[test]
fn format_version_6_refuses_a_block_from_another_table() {
    let model = random_model(4, 500);
    let opts = TableOptions {
        block_size: 512,
        ..Default::default()
    };
    let a = build_fv(&model, opts.clone(), 6);
    let b = build_fv(&model, opts, 6);
    assert_eq!(a.len(), b.len());
    let ta = open(a.clone(), None).unwrap();
    let tb = open(b.clone(), None).unwrap();
    assert_ne!(
        ta.footer().base_context_checksum,
        tb.footer().base_context_checksum
    );
    assert_eq!(ta.footer().index, None);
    assert_eq!(tb.verify().unwrap(), model.len() as u64);
    // The first data block with its trailer (it ends where the second block starts), from `a`
    // into `b`: identical bytes at an identical offset, but another file's context.
    let mut it = ta.iter(IterBounds::default());
    it.seek_to_first();
    while it.valid() && it.current_block_offset() == 0 {
        it.next();
    }
    let end = it.current_block_offset() as usize;
    assert!(end > 0 && a[..end - 4] == b[..end - 4]);
    let mut spliced = b.clone();
    spliced[..end].copy_from_slice(&a[..end]);
    let (off, why) = expect_corruption(spliced);
    assert_eq!(off, 0, "{why}");
    assert!(why.contains("checksum mismatch"), "{why}");
}

#[test]
fn range_deletions_roundtrip_in_their_own_block() {
    let mut b = TableBuilder::new(
        Vec::new(),
        TableOptions::default(),
        TableIdentity::default(),
    )
    .unwrap();
    b.add_range_deletion(b"m", b"p", 9).unwrap();
    b.add(&make_internal_key(b"a", 1, ValueKind::Value), b"x")
        .unwrap();
    b.add_range_deletion(b"c", b"f", 7).unwrap();
    assert!(b.add_range_deletion(b"z", b"a", 1).is_err());
    let t = open(b.finish().unwrap().0, None).unwrap();
    let rd = t.range_deletions();
    assert_eq!(rd.len(), 2);
    assert_eq!(
        (rd[0].start.as_slice(), rd[0].end.as_slice(), rd[0].seqno),
        (&b"c"[..], &b"f"[..], 7)
    );
    assert_eq!(
        (rd[1].start.as_slice(), rd[1].end.as_slice(), rd[1].seqno),
        (&b"m"[..], &b"p"[..], 9)
    );
    assert_eq!(t.properties().num_range_deletions, 2);
    assert_eq!(t.verify().unwrap(), 1);
    // A table holding only range deletions is valid too.
    let mut b = TableBuilder::new(
        Vec::new(),
        TableOptions::default(),
        TableIdentity::default(),
    )
    .unwrap();
    b.add_range_deletion(b"a", b"b", 3).unwrap();
    let t = open(b.finish().unwrap().0, None).unwrap();
    assert_eq!(t.range_deletions().len(), 1);
    let mut it = t.iter(IterBounds::default());
    it.seek_to_first();
    assert!(!it.valid());
    it.status().unwrap();
}

/// A corrupt decompressed-size prefix is refused before allocating: a data block can never
/// claim more than every key and value of the table (here, with checksums off, 500 MB).
#[test]
fn corrupt_size_prefix_is_bounded_by_the_table_properties() {
    let mut model = Model::new();
    for i in 0..200u64 {
        model.insert(
            (format!("key{i:05}").into_bytes(), std::cmp::Reverse(i + 1)),
            (ValueKind::Value, vec![b'a'; 100]),
        );
    }
    let mut bytes = build(
        &model,
        TableOptions {
            compression: CompressionType::Lz4,
            ..Default::default()
        },
    );
    // The first data block starts at 0 with its varint32 decompressed size: claim 500 MB.
    let mut prefix = Vec::new();
    crate::base::coding::put_varint32(&mut prefix, 500_000_000);
    bytes[..prefix.len()].copy_from_slice(&prefix);
    let file: Arc<dyn RandomAccessFile> = Arc::new(bytes);
    let t = Table::open(
        file,
        "test.sst".into(),
        &TableReadOptions {
            verify_checksums: false,
            cache: None,
        },
    )
    .unwrap();
    let mut it = t.iter(IterBounds::default());
    it.seek_to_first();
    match it.status() {
        Err(Error::Corruption { reason, .. }) => {
            assert!(reason.contains("larger than the table allows"), "{reason}")
        }
        other => panic!("expected a bounded corruption error, got {other:?}"),
    }
}

/// Index separators sample a table's keys for a parallel merge's cut points: each lies at or
/// above its block's keys and below the next block's, with the block's size, and the last is
/// the table's last key (not the short successor the index holds, which can lie above the keys
/// of every table: `key0…` has the successor `l`).
#[test]
fn index_separators_end_at_the_tables_last_key() {
    let model = random_model(11, 2000);
    for opts in all_option_sets() {
        let t = open(build(&model, opts.clone()), None).unwrap();
        let seps = t.index_separators().unwrap();
        let handles = t.data_block_handles().unwrap();
        assert_eq!(seps.len(), handles.len(), "{opts:?}");
        let last_user_key = &model.keys().last().unwrap().0;
        assert_eq!(&seps.last().unwrap().0, last_user_key, "{opts:?}");
        let mut it = t.iter(IterBounds::default());
        it.seek_to_first();
        for (i, ((sep, size), h)) in seps.iter().zip(&handles).enumerate() {
            assert_eq!(*size, h.size);
            assert!(i == 0 || seps[i - 1].0 <= *sep, "separators out of order");
            while it.valid() && key::user_key(it.key()) <= &sep[..] {
                it.next();
            }
        }
        assert!(!it.valid(), "a key lies above the last separator: {opts:?}");
    }
}

/// Reads every entry of `t` back against `model`: a full scan, a seek to each key and a get of
/// each version at its own seqno.
fn assert_reads_model(t: &Arc<Table>, model: &Model) {
    let entries = model_entries(model);
    let mut it = t.iter(IterBounds::default());
    it.seek_to_first();
    for (k, v) in &entries {
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
        it.next();
    }
    assert!(!it.valid());
    for (k, v) in entries.iter().rev() {
        it.seek(k);
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
    }
    for ((k, s), (kind, v)) in model {
        assert_eq!(t.get(k, s.0).unwrap().unwrap(), (*kind, v.clone()));
    }
    it.status().unwrap();
}

/// Dense keys (big-endian integers, as the benchmarks' and an import's) get an index of short
/// user-key separators with delta-encoded handles, as RocksDB writes by default: under 22
/// bytes a block (it was 37: the whole internal key, a length, the handle, the restart).
/// Where a user key's versions run over a block's edge, the index keeps internal keys.
#[test]
fn the_index_holds_user_keys_unless_a_user_key_spans_blocks() {
    let mut dense = Model::new();
    for i in 0..5000u64 {
        let k = [
            i.to_be_bytes(),
            i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes(),
        ]
        .concat();
        dense.insert(
            (k, std::cmp::Reverse(i + 1)),
            (ValueKind::Value, vec![i as u8; 100]),
        );
    }
    let mut versions = Model::new();
    versions.insert(
        (b"a".to_vec(), std::cmp::Reverse(1)),
        (ValueKind::Value, b"first".to_vec()),
    );
    for s in 0..2000u64 {
        let kind = if s % 7 == 0 {
            ValueKind::Deletion
        } else {
            ValueKind::Value
        };
        let v = if kind == ValueKind::Value {
            vec![s as u8; 50]
        } else {
            Vec::new()
        };
        versions.insert((b"hot".to_vec(), std::cmp::Reverse(s + 2)), (kind, v));
    }
    versions.insert(
        (b"z".to_vec(), std::cmp::Reverse(9000)),
        (ValueKind::Value, b"last".to_vec()),
    );
    for opts in all_option_sets() {
        for fv in [5, 6] {
            let t = open(build_fv(&dense, opts.clone(), fv), None).unwrap();
            let p = t.properties();
            assert!(
                p.index_key_is_user_key && p.index_value_is_delta_encoded,
                "{opts:?}"
            );
            if opts.compression == CompressionType::None {
                let per_block = (p.index_size - 5) as f64 / p.num_data_blocks as f64;
                assert!(
                    per_block < 22.0,
                    "{per_block} index bytes a block: {opts:?}"
                );
            }
            assert_reads_model(&t, &dense);

            let t = open(build_fv(&versions, opts.clone(), fv), None).unwrap();
            let p = t.properties();
            assert!(p.num_data_blocks > 3, "{opts:?}");
            assert!(
                !p.index_key_is_user_key && p.index_value_is_delta_encoded,
                "{opts:?}"
            );
            assert_reads_model(&t, &versions);
            // Between the versions: the newest at or below each snapshot.
            assert_eq!(t.get(b"hot", 1).unwrap(), None);
            assert_eq!(
                t.get(b"hot", MAX_SEQNO).unwrap().unwrap().1,
                vec![1999u64 as u8; 50]
            );
        }
    }
}

/// On a user-key index (unique user keys, as every import run and most flushes write) and on
/// an internal-key one: separators are whole user keys — at or above their block's keys, below
/// the next block's — and `approximate_offset_of` a block's first key is that block's offset.
#[test]
fn separators_and_offsets_read_either_index() {
    // One user key per 256-byte block, dense and of one length: every separator equals its
    // block's last key (the case a trailer cut or an internal-key seek gets wrong).
    let mut unique = Model::new();
    for i in 0..400u64 {
        let k = [b"t1".as_slice(), &i.to_be_bytes()].concat();
        unique.insert(
            (k, std::cmp::Reverse(i + 1)),
            (ValueKind::Value, vec![1; 240]),
        );
    }
    let mut spanning = unique.clone();
    for s in 0..20u64 {
        let k = [b"t1".as_slice(), &200u64.to_be_bytes()].concat();
        spanning.insert(
            (k, std::cmp::Reverse(1000 + s)),
            (ValueKind::Value, vec![2; 240]),
        );
    }
    for (model, user_keys) in [(&unique, true), (&spanning, false)] {
        let opts = TableOptions {
            block_size: 256,
            ..TableOptions::default()
        };
        let t = open(build(model, opts), None).unwrap();
        assert_eq!(t.properties().index_key_is_user_key, user_keys);
        let seps = t.index_separators().unwrap();
        let handles = t.data_block_handles().unwrap();
        assert_eq!(seps.len(), handles.len());
        // Entries of 240-byte values: one a block, so block i holds entry i alone.
        assert_eq!(handles.len(), model.len());
        let firsts: Vec<&Vec<u8>> = model.keys().map(|(k, _)| k).collect();
        for (i, ((sep, size), h)) in seps.iter().zip(&handles).enumerate() {
            assert_eq!(*size, h.size);
            if let Some(next) = firsts.get(i + 1) {
                assert!(sep <= *next, "block {i}: separator above the next block");
            }
            assert!(
                sep >= firsts[i],
                "block {i}: separator below the block's key"
            );
        }
    }
    // Offsets on the unique table: each key's block exactly.
    let t = open(
        build(
            &unique,
            TableOptions {
                block_size: 256,
                ..TableOptions::default()
            },
        ),
        None,
    )
    .unwrap();
    let handles = t.data_block_handles().unwrap();
    let mut it = t.iter(IterBounds::default());
    it.seek_to_first();
    let mut block_of_first = Vec::new();
    for h in &handles {
        // Entries are 240-byte values: one entry a block.
        assert!(it.valid());
        block_of_first.push((key::user_key(it.key()).to_vec(), h.offset));
        it.next();
    }
    assert!(!it.valid(), "expected one entry a block");
    for (uk, offset) in &block_of_first {
        assert_eq!(t.approximate_offset_of(uk), *offset, "{uk:?}");
    }
    // Past the last separator (`u`, the short successor of the last key): the file's size.
    assert_eq!(t.approximate_offset_of(b"v"), t.file_size());
}
