//! Tables written by RocksDB 10.4.2 (`testdata/rocksdb`, made by `generate.py` there):
//! format_version 6 and 7, every layout Sluice reads (Ribbon, partitioned index and filter,
//! an index with first keys),
//! read exactly, with filters that reject absent keys and corruption located by offset.

use std::sync::Arc;

use rand::{Rng, SeedableRng};

use crate::base::bounds::IterBounds;
use crate::base::error::Error;
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, ValueKind};
use crate::fs::RandomAccessFile;
use crate::sst::table::{Table, TableReadOptions};

/// (file, entries, has a filter)
const FIXTURES: [(&str, usize, bool); 6] = [
    ("fv6_default.sst", 300, false),
    ("fv6_crc32c.sst", 300, true),
    ("fv7_zstd.sst", 300, true),
    ("ribbon.sst", 3000, true),
    ("partitioned.sst", 3000, true),
    ("first_key.sst", 1000, false),
];

/// The bytes of a fixture file.
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/rocksdb")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn open_bytes(bytes: Vec<u8>) -> crate::base::error::Result<Arc<Table>> {
    let file: Arc<dyn RandomAccessFile> = Arc::new(bytes);
    Table::open(file, "rocks.sst".into(), &TableReadOptions::new())
}

/// What generate.py writes: key i, a deletion for every 7th key, else `value-i`.
fn expected(n: usize) -> Vec<(Vec<u8>, ValueKind, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let k = format!("key{i:06}").into_bytes();
            if i % 7 == 0 {
                (k, ValueKind::Deletion, Vec::new())
            } else {
                (k, ValueKind::Value, format!("value-{i}").into_bytes())
            }
        })
        .collect()
}

#[test]
fn every_fixture_reads_exactly() {
    for (name, n, has_filter) in FIXTURES {
        let t = open_bytes(fixture(name)).unwrap();
        assert!(t.footer().format_version >= 6, "{name}");
        assert_eq!(t.verify().unwrap(), n as u64, "{name}");
        assert_eq!(t.has_filter(), has_filter, "{name}");
        let want = expected(n);
        let mut it = t.iter(IterBounds::default());
        it.seek_to_first();
        for (k, kind, v) in &want {
            assert!(it.valid(), "{name}");
            let p = it.parsed().unwrap();
            assert_eq!((p.user_key, p.kind, p.seqno), (&k[..], *kind, 0), "{name}");
            assert_eq!(it.value(), &v[..], "{name}");
            it.next();
        }
        assert!(!it.valid(), "{name}");
        it.status().unwrap();
        for (k, kind, v) in &want {
            assert_eq!(
                t.get(k, key::MAX_SEQNO).unwrap(),
                Some((*kind, v.clone())),
                "{name}"
            );
        }
    }
}

#[test]
fn filters_reject_absent_keys() {
    for (name, n, has_filter) in FIXTURES {
        if !has_filter {
            continue;
        }
        let t = open_bytes(fixture(name)).unwrap();
        for (k, _, _) in expected(n) {
            assert!(t.may_contain(&k), "{name}: false negative");
        }
        // Absent keys inside the key range (every partition) and past it.
        let absent: Vec<Vec<u8>> = (0..n)
            .map(|i| format!("key{i:06}x").into_bytes())
            .chain((n..n + 10_000).map(|i| format!("key{i:06}").into_bytes()))
            .collect();
        let fp = absent.iter().filter(|k| t.may_contain(k)).count();
        // 10 bits per key: about 1% for either filter; 3% is a generous bound.
        assert!(
            fp * 100 < absent.len() * 3,
            "{name}: {fp} of {}",
            absent.len()
        );
        assert_eq!(t.get(b"key000001x", key::MAX_SEQNO).unwrap(), None);
    }
}

#[test]
fn partitioned_index_seeks_and_bounds_agree_with_the_model() {
    seeks_and_bounds_agree_with_the_model("partitioned.sst", 3000);
    seeks_and_bounds_agree_with_the_model("first_key.sst", 1000);
}

fn seeks_and_bounds_agree_with_the_model(name: &str, n: usize) {
    let t = open_bytes(fixture(name)).unwrap();
    let keys: Vec<Vec<u8>> = expected(n).into_iter().map(|e| e.0).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(6);
    // Backwards over everything, across every partition boundary.
    let mut it = t.iter(IterBounds::default());
    it.seek_to_last();
    for k in keys.iter().rev() {
        assert_eq!(key::user_key(it.key()), &k[..]);
        it.prev();
    }
    assert!(!it.valid());
    it.status().unwrap();
    for _ in 0..200 {
        let (a, b) = (rng.gen_range(0..n), rng.gen_range(0..n));
        let (lo, hi) = (a.min(b), a.max(b));
        let bounds = IterBounds {
            lower: Some(keys[lo].clone()),
            upper: Some(keys[hi].clone()),
        };
        let mut it = t.iter(bounds);
        let mut got = Vec::new();
        it.seek_to_first();
        while it.valid() {
            got.push(key::user_key(it.key()).to_vec());
            it.next();
        }
        assert_eq!(got, keys[lo..hi], "[{lo}, {hi})");
        let mut back = Vec::new();
        it.seek_to_last();
        while it.valid() {
            back.push(key::user_key(it.key()).to_vec());
            it.prev();
        }
        back.reverse();
        assert_eq!(back, keys[lo..hi], "[{lo}, {hi}) backwards");
        // A seek between two keys lands on the next one.
        let mut target = keys[lo].clone();
        target.push(0);
        let mut it = t.iter(IterBounds::default());
        it.seek(&key::seek_key(&target, key::MAX_SEQNO));
        match keys.get(lo + 1) {
            Some(k) => assert_eq!(key::user_key(it.key()), &k[..]),
            None => assert!(!it.valid()),
        }
        it.seek_for_prev(&key::seek_key(&target, 0));
        assert_eq!(key::user_key(it.key()), &keys[lo][..]);
    }
}

#[test]
fn rocksdb_range_deletions_are_read() {
    let t = open_bytes(fixture("range_del.sst")).unwrap();
    assert_eq!(t.verify().unwrap(), 200);
    assert_eq!(t.properties().num_range_deletions, 1);
    let rd = t.range_deletions();
    assert_eq!(rd.len(), 1);
    assert_eq!(
        (rd[0].start.as_slice(), rd[0].end.as_slice(), rd[0].seqno),
        (&b"key000100"[..], &b"key000200"[..], 301)
    );
    let mut it = t.iter(IterBounds::default());
    it.seek_to_first();
    for i in (0..100).chain(200..300) {
        let p = it.parsed().unwrap();
        assert_eq!(p.user_key, format!("key{i:06}").as_bytes());
        assert_eq!((p.kind, p.seqno), (ValueKind::Value, i + 1));
        assert_eq!(it.value(), format!("value-{i}").as_bytes());
        it.next();
    }
    assert!(!it.valid());
    it.status().unwrap();
}

/// `testdata/rocksdb/sluice_fv6.sst`: an external file Sluice writes in format_version 6, with
/// the fixtures' contents (300 keys); tests/interop has RocksDB ingest it. Rewrite it with
/// `SLUICE_REWRITE_FIXTURES=1 cargo test -p sluice --lib sluice_fv6_fixture`.
#[test]
fn sluice_fv6_fixture_reads_back() {
    use crate::sst::table_builder::{TableBuilder, TableIdentity, TableOptions};
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/rocksdb/sluice_fv6.sst");
    if std::env::var_os("SLUICE_REWRITE_FIXTURES").is_some() {
        let identity = TableIdentity {
            external_sst: true,
            ..Default::default()
        };
        let opts = TableOptions {
            compression: crate::sst::format::CompressionType::Snappy,
            checksum: crate::sst::format::ChecksumType::Xxh3,
            ..Default::default()
        };
        let mut b = TableBuilder::new(Vec::new(), opts, identity)
            .unwrap()
            .with_format_version(6)
            .unwrap();
        for (k, kind, v) in expected(300) {
            b.add(&key::make_internal_key(&k, 0, kind), &v).unwrap();
        }
        std::fs::write(&path, b.finish().unwrap().0).unwrap();
    }
    let t = open_bytes(fixture("sluice_fv6.sst")).unwrap();
    assert_eq!(t.footer().format_version, 6);
    assert_eq!(t.verify().unwrap(), 300);
    assert_eq!(t.properties().external_sst_version, Some(2));
    for (k, kind, v) in expected(300) {
        assert_eq!(t.get(&k, key::MAX_SEQNO).unwrap(), Some((kind, v)));
    }
}

fn corruption(bytes: Vec<u8>) -> (u64, String) {
    match open_bytes(bytes).and_then(|t| t.verify().map(|_| ())) {
        Err(Error::Corruption { offset, reason, .. }) => (offset, reason),
        other => panic!("expected a corruption, got {other:?}"),
    }
}

#[test]
fn corrupt_format_version_6_tables_are_located() {
    let good = fixture("fv6_default.sst");
    let footer = good.len() as u64 - 53;
    // A data block.
    let mut b = good.clone();
    b[10] ^= 1;
    let (off, why) = corruption(b);
    assert_eq!(off, 0, "{why}");
    assert!(why.contains("checksum mismatch"), "{why}");
    // The footer's checksummed fields, its extended magic, its format_version.
    let mut b = good.clone();
    b[footer as usize + 10] ^= 1;
    let (off, why) = corruption(b);
    assert_eq!(off, footer + 5, "{why}");
    assert!(why.contains("footer checksum mismatch"), "{why}");
    let mut b = good.clone();
    b[footer as usize + 2] ^= 1;
    assert_eq!(corruption(b).0, footer + 1);
    let mut b = good.clone();
    b[footer as usize + 41] = 9;
    let (off, why) = corruption(b);
    assert_eq!(off, footer + 41, "{why}");
    assert!(why.contains("unsupported format_version 9"), "{why}");
    // The metaindex (right before the footer).
    let t = open_bytes(good.clone()).unwrap();
    let meta = t.footer().metaindex;
    let mut b = good.clone();
    b[meta.offset as usize + 3] ^= 1;
    assert_eq!(corruption(b).0, meta.offset);
    // A file with a byte prepended: every block (and the footer) is now at another offset;
    // the footer fails its context-aware checksum.
    let mut b = vec![0u8];
    b.extend_from_slice(&good);
    assert_eq!(corruption(b).0, footer + 1 + 5);
    // An index or filter partition (they lie between the data blocks and the top-level index).
    let good = fixture("partitioned.sst");
    let t = open_bytes(good.clone()).unwrap();
    let data_end = t.properties().data_size as usize;
    let mut b = good.clone();
    b[data_end + 20] ^= 1;
    let (off, why) = corruption(b);
    assert!(
        off >= data_end as u64 && off < data_end as u64 + 20,
        "{off}: {why}"
    );
    assert!(why.contains("checksum mismatch"), "{why}");
}

/// A top-level index whose entries overlap (here, crafted with checksums off) is refused at
/// open instead of reading any byte twice.
#[test]
fn overlapping_partitions_are_refused() {
    let good = fixture("partitioned.sst");
    let t = open_bytes(good.clone()).unwrap();
    let top = t.index_handle;
    let parts = t.read_top_level(&t.index, top, "index").unwrap();
    assert!(parts.len() > 3);
    // Every top-level entry is a restart point holding a full handle: grow the second one's
    // size so that it overlaps the third partition (same varint length).
    let h = parts[1].1;
    let mut enc = Vec::new();
    h.encode_to(&mut enc);
    let mut grown = Vec::new();
    crate::sst::format::BlockHandle {
        offset: h.offset,
        size: h.size + 7,
    }
    .encode_to(&mut grown);
    assert_eq!(enc.len(), grown.len());
    let area = &good[top.offset as usize..(top.offset + top.size) as usize];
    let at = area
        .windows(enc.len())
        .position(|w| w == enc.as_slice())
        .expect("handle bytes in the top-level index")
        + top.offset as usize;
    let mut bad = good.clone();
    bad[at..at + enc.len()].copy_from_slice(&grown);
    let file: Arc<dyn RandomAccessFile> = Arc::new(bad);
    let opts = TableReadOptions {
        verify_checksums: false,
        cache: None,
    };
    match Table::open(file, "rocks.sst".into(), &opts) {
        Err(Error::Corruption { offset, reason, .. }) => {
            assert_eq!(offset, top.offset);
            assert!(reason.contains("outside the partitions' area"), "{reason}");
        }
        other => panic!("expected a corruption, got {other:?}"),
    }
}
