//! The public `SstWriter` lifecycle: metadata, key order, partial files.

use sluice::key::{ValueKind, MAX_SEQNO};
use sluice::{
    ChecksumType, CompressionType, Error, InternalIterator, IterBounds, SstWriter, Table,
    TableOptions, TableReadOptions,
};

#[test]
fn finish_reports_metadata_and_file_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sst");
    let mut w = SstWriter::create(&path, TableOptions::default()).unwrap();
    for i in 0..10_000u32 {
        if i % 10 == 3 {
            w.delete(format!("k{i:06}").as_bytes()).unwrap();
        } else {
            w.put(format!("k{i:06}").as_bytes(), &i.to_le_bytes())
                .unwrap();
        }
    }
    let info = w.finish().unwrap();
    assert_eq!(info.entries, 10_000);
    assert_eq!(info.smallest_key, b"k000000");
    assert_eq!(info.largest_key, b"k009999");
    assert_eq!(info.file_size, std::fs::metadata(&path).unwrap().len());
    assert_eq!(info.properties.num_deletions, 1000);

    let t = Table::open_path(&path, &TableReadOptions::new()).unwrap();
    assert_eq!(t.verify().unwrap(), 10_000);
    assert_eq!(t.properties().external_sst_version, Some(2));
    assert_eq!(t.properties().global_seqno, Some(0));
    assert_eq!(
        t.get(b"k000013", MAX_SEQNO).unwrap(),
        Some((ValueKind::Deletion, vec![]))
    );
    assert_eq!(
        t.get(b"k000014", MAX_SEQNO).unwrap(),
        Some((ValueKind::Value, 14u32.to_le_bytes().to_vec()))
    );
    assert_eq!(t.get(b"k0000140", MAX_SEQNO).unwrap(), None);
    let mut it = t.iter(IterBounds {
        lower: Some(b"k000100".to_vec()),
        upper: Some(b"k000200".to_vec()),
    });
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    assert_eq!(n, 100);
}

#[test]
fn out_of_order_and_duplicate_keys_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SstWriter::create(dir.path().join("b.sst"), TableOptions::default()).unwrap();
    w.put(b"b", b"1").unwrap();
    assert!(matches!(w.put(b"a", b"2"), Err(Error::KeyOrder { .. })));
    assert!(matches!(w.put(b"b", b"2"), Err(Error::KeyOrder { .. })));
    assert!(matches!(w.delete(b"b"), Err(Error::KeyOrder { .. })));
    // The writer stays usable after a rejected key.
    w.put(b"c", b"3").unwrap();
    assert_eq!(w.finish().unwrap().entries, 2);
}

#[test]
fn dropped_or_empty_writer_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("partial.sst");
    let entries = || std::fs::read_dir(dir.path()).unwrap().count();
    {
        let mut w = SstWriter::create(&path, TableOptions::default()).unwrap();
        for i in 0..100_000u32 {
            w.put(&i.to_be_bytes(), b"value").unwrap();
        }
        assert!(!path.exists(), "the target appears only at finish");
        assert_eq!(entries(), 1, "one temporary file while writing");
    }
    assert_eq!(entries(), 0, "dropped writer must delete its partial file");
    let w = SstWriter::create(&path, TableOptions::default()).unwrap();
    assert!(matches!(w.finish(), Err(Error::InvalidArgument(_))));
    assert_eq!(entries(), 0);
}

/// A file already at the target is left alone by a writer that fails or is dropped, and
/// replaced only by a successful finish (issue 12: a failed `sst build` deleted `--out`).
#[test]
fn an_existing_target_survives_a_failed_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keep.sst");
    std::fs::write(&path, b"the user's file").unwrap();
    {
        let mut w = SstWriter::create(&path, TableOptions::default()).unwrap();
        w.put(b"b", b"1").unwrap();
        assert!(w.put(b"a", b"2").is_err(), "out of order");
    }
    assert_eq!(std::fs::read(&path).unwrap(), b"the user's file");
    let w = SstWriter::create(&path, TableOptions::default()).unwrap();
    assert!(w.finish().is_err(), "no entries");
    assert_eq!(std::fs::read(&path).unwrap(), b"the user's file");
    let mut w = SstWriter::create(&path, TableOptions::default()).unwrap();
    w.put(b"a", b"1").unwrap();
    let info = w.finish().unwrap();
    assert_eq!(info.path, path);
    assert_ne!(std::fs::read(&path).unwrap(), b"the user's file");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn invalid_options_are_rejected_before_creating_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.sst");
    for opts in [
        TableOptions {
            block_size: 0,
            ..Default::default()
        },
        TableOptions {
            restart_interval: 0,
            ..Default::default()
        },
        TableOptions {
            compression: CompressionType::Zlib,
            ..Default::default()
        },
        TableOptions {
            checksum: ChecksumType::XxHash,
            ..Default::default()
        },
        TableOptions {
            bloom_bits_per_key: Some(-1.0),
            ..Default::default()
        },
    ] {
        assert!(matches!(
            SstWriter::create(&path, opts),
            Err(Error::InvalidArgument(_))
        ));
        assert!(!path.exists());
    }
}

#[test]
fn unwritable_path_is_an_io_error_naming_it() {
    let e = SstWriter::create("/nonexistent-dir/x.sst", TableOptions::default()).unwrap_err();
    assert!(matches!(e, Error::Io { .. }));
    assert!(e.to_string().contains("/nonexistent-dir/x.sst"), "{e}");
}

/// Both writeback modes write the same readable table, also past the 8 MiB steps where they
/// start writeback (a helper thread's `fdatasync`, or the writer's own `posix_fadvise`), and so
/// does a paced file whose 4 MiB buffer writes are split into the limiter's 1 MiB pieces.
#[test]
fn both_writeback_modes_write_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut digests = Vec::new();
    let paced = sluice::FileWrites {
        writeback: sluice::Writeback::Initiate,
        rate_limiter: Some(std::sync::Arc::new(sluice::RateLimiter::new(1 << 30))),
    };
    let modes = [
        (sluice::Writeback::SyncThread.into(), 64 << 10),
        (sluice::Writeback::Initiate.into(), 64 << 10),
        (paced, 4 << 20),
    ];
    for (i, (writes, buffer)) in modes.into_iter().enumerate() {
        let path = dir.path().join(format!("t{i}.sst"));
        let mut w =
            sluice::SstWriter::create_with(&path, sluice::TableOptions::default(), buffer, writes)
                .unwrap();
        let value = vec![7u8; 1000];
        for k in 0..30_000u32 {
            w.put(&k.to_be_bytes(), &value).unwrap();
        }
        let info = w.finish().unwrap();
        assert!(info.file_size > 24 << 20, "{}", info.file_size);
        let t = sluice::Table::open_path(&path, &sluice::TableReadOptions::new()).unwrap();
        assert_eq!(t.verify().unwrap(), 30_000);
        let mut it = t.iter(sluice::IterBounds::default());
        it.seek_to_first();
        let mut n = 0u32;
        while it.valid() {
            assert_eq!(sluice::key::user_key(it.key()), n.to_be_bytes());
            assert_eq!(it.value(), &value[..]);
            n += 1;
            it.next();
        }
        assert_eq!(n, 30_000);
        digests.push(std::fs::metadata(&path).unwrap().len());
    }
    assert!(digests.iter().all(|d| *d == digests[0]), "{digests:?}");
}

#[test]
fn range_deletions_are_written_and_hide_older_keys_once_ingested() {
    use sluice::{Db, IngestOptions, Options};
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    for k in [&b"a"[..], b"b", b"c", b"d", b"e"] {
        db.put(k, b"old").unwrap();
    }
    db.flush().unwrap();

    // Points and a range deletion, in any order.
    let path = dir.path().join("mixed.sst");
    let mut w = SstWriter::create(&path, TableOptions::default()).unwrap();
    w.delete_range(b"b", b"d").unwrap();
    w.put(b"e", b"new").unwrap();
    assert!(matches!(
        w.delete_range(b"z", b"a"),
        Err(Error::InvalidArgument(_))
    ));
    let info = w.finish().unwrap();
    assert_eq!(info.entries, 1);
    assert_eq!(info.properties.num_range_deletions, 1);
    let t = Table::open_path(&path, &TableReadOptions::new()).unwrap();
    assert_eq!(t.range_deletions().len(), 1);

    // A file of range deletions only.
    let only = dir.path().join("only.sst");
    let mut w = SstWriter::create(&only, TableOptions::default()).unwrap();
    w.delete_range(b"a", b"b").unwrap();
    let info = w.finish().unwrap();
    assert_eq!(info.entries, 0);

    db.ingest(&[&path, &only], &IngestOptions::default())
        .unwrap();
    let got: Vec<_> = [&b"a"[..], b"b", b"c", b"d", b"e"]
        .iter()
        .map(|k| db.get(k).unwrap())
        .collect();
    assert_eq!(
        got,
        [
            None,
            None,
            None,
            Some(b"old".to_vec()),
            Some(b"new".to_vec())
        ]
    );
}
