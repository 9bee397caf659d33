//! A short, seeded mutation run of the recovery fuzz harnesses (`sluice::fuzz`, the functions
//! the cargo-fuzz targets in `fuzz/` call): a WAL, a MANIFEST and an OPTIONS file written by
//! the engine itself (puts, deletes, range deletes, a flushable ingest, flushes, a
//! compaction) are mutated thousands of times — bit flips, truncation, byte insertion and
//! deletion, length fields set huge, duplicated fragments, and damage inside record payloads
//! re-framed with valid checksums so that it reaches the decoders. Recovery must never panic,
//! every error about file contents must be a `Corruption` naming the file and an offset inside
//! it, and a torn WAL tail must recover the records before it.
//!
//! The mutations start from copies of those files committed as the cargo-fuzz seed corpora
//! (`testdata/fuzz/`), so that a seed replays the same run; the files the engine writes today
//! are checked to recover too.
//!
//! The run happens in a child process under `ulimit -v` (no allocation sized by a length read
//! from the bytes can succeed there). The seed is fixed so CI is reproducible;
//! `SLUICE_FUZZ_SEED` and `SLUICE_FUZZ_ITERS` explore further, and `SLUICE_FUZZ_REWRITE=1`
//! rewrites the committed seeds from what the engine writes today (after a format change).

use std::path::Path;

use sluice::fs::{FileSystem, MemFs};
use sluice::fuzz::{
    check_corruption, exercise_manifest, exercise_options, exercise_wal, log_of, manifest_path,
    options_path, records_of, run_capped, seed_and_iters, wal_path, Mutator,
};
use sluice::version::VersionEdit;
use sluice::wal::batch::decode_ingest_record;
use sluice::wal::log::{LogEnd, LogReader};
use sluice::{Db, Error, IngestOptions, Options, WriteBatch};

mod common;
use common::{external, tiny_opts};

/// The engine's own files: the live WAL (holding batches and a flushable ingest's record), the
/// MANIFEST and the OPTIONS file.
struct EngineFiles {
    wal: Vec<u8>,
    /// The WAL with a 40 KiB batch added before the ingest's record: FIRST, MIDDLE and LAST
    /// fragments across 32 KiB blocks.
    wal_blocks: Vec<u8>,
    manifest: Vec<u8>,
    options: Vec<u8>,
}

fn engine_files() -> EngineFiles {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    // Flushes and compactions only when asked (so the files, and the run, are the same
    // every time); small blocks and tables so that each holds several.
    let opts = Options {
        write_buffer_size: 1 << 20,
        l0_compaction_trigger: 8,
        max_bytes_for_level_base: 1 << 20,
        max_subcompactions: 1,
        ..tiny_opts(&fs)
    };
    let db = Db::open(dir, opts).unwrap();
    for round in 0..3 {
        for i in 0..60 {
            db.put(format!("k{round}{i:03}").as_bytes(), &[b'v'; 40])
                .unwrap();
        }
        db.delete(format!("k{round}005").as_bytes()).unwrap();
        db.delete_range(
            format!("k{round}010").as_bytes(),
            format!("k{round}020").as_bytes(),
        )
        .unwrap();
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.put(b"k2100", b"before the ingest").unwrap();
    db.delete_range(b"k1", b"k11").unwrap();
    let sst = external(&fs, "/ext.sst", &["k2050", "k2200"], "ingested");
    db.ingest(&[&sst], &IngestOptions::default()).unwrap();
    db.put(b"k3000", b"after the ingest").unwrap();
    db.delete(b"k0001").unwrap();
    db.wait_for_background_work().unwrap();
    let names = fs.list(dir).unwrap();
    let newest = |suffix: &str, prefix: &str| {
        let name = names
            .iter()
            .filter(|n| n.ends_with(suffix) && n.starts_with(prefix))
            .max()
            .unwrap();
        fs.read_raw(&dir.join(name)).unwrap()
    };
    let wal = newest(".log", "");
    let mut records = records_of(&wal);
    let mut big = WriteBatch::new();
    big.put(b"k2150", &[b'b'; 40 << 10]);
    big.delete(b"k2151");
    let mut big = big.rep().to_vec();
    big[..8].copy_from_slice(&db.snapshot().seqno().to_le_bytes());
    let at = records.len().saturating_sub(2);
    records.insert(at, big);
    let files = EngineFiles {
        wal_blocks: log_of(&records),
        wal,
        manifest: newest("", "MANIFEST-"),
        options: newest("", "OPTIONS-"),
    };
    drop(db);
    files
}

/// The engine's files as committed in `testdata/fuzz/` (by `write_fuzz_corpus`): background
/// timing shifts a seqno or two between runs, and a fixed seed must replay the same run.
fn committed_seeds() -> EngineFiles {
    EngineFiles {
        wal: include_bytes!("../testdata/fuzz/wal/engine-seed").to_vec(),
        wal_blocks: include_bytes!("../testdata/fuzz/wal/engine-seed-blocks").to_vec(),
        manifest: include_bytes!("../testdata/fuzz/manifest/engine-seed").to_vec(),
        options: include_bytes!("../testdata/fuzz/options/engine-seed").to_vec(),
    }
}

/// Fails unless `e` is a `Corruption` naming `file` at an offset inside `len` bytes; `also`
/// allows other errors that are not about the file's contents.
fn check_error(e: &Error, file: &Path, len: usize, also: impl Fn(&Error) -> bool, what: &str) {
    if let Err(why) = check_corruption(e, file, len) {
        assert!(also(e), "{what}: {why}");
    }
}

/// The WAL names ingested tables the harness directory lacks: that is an I/O error on a table.
fn missing_table(e: &Error) -> bool {
    matches!(e, Error::Io { path: Some(p), .. } if p.extension().is_some_and(|x| x == "sst"))
}

/// Address-space cap of the mutation run's process, KiB.
const MEMORY_CAP_KIB: u64 = 1 << 20;

/// The mutation run, in a child process under a memory cap.
#[test]
fn seeded_mutations_never_panic() {
    if run_capped("seeded_mutations_never_panic", MEMORY_CAP_KIB) {
        return;
    }
    let (seed, iters) = seed_and_iters(4000);
    // What the engine writes today must still recover (the committed seeds are its output).
    let fresh = engine_files();
    if std::env::var_os("SLUICE_FUZZ_REWRITE").is_some() {
        write_fuzz_corpus(&fresh);
    }
    for (wal, what) in [(&fresh.wal, "wal"), (&fresh.wal_blocks, "wal_blocks")] {
        if let Err(e) = exercise_wal(wal) {
            assert!(missing_table(&e), "fresh {what}: {e}");
        }
    }
    assert!(exercise_manifest(&fresh.manifest).unwrap().files > 0);
    exercise_options(&fresh.options).unwrap();
    let files = committed_seeds();
    let wal_records = records_of(&files.wal);
    let manifest_records = records_of(&files.manifest);
    let wal_blocks_records = records_of(&files.wal_blocks);
    assert!(files.wal_blocks.len() > 40 << 10);
    assert!(
        wal_records
            .iter()
            .any(|r| decode_ingest_record(r).is_some()),
        "the seed WAL holds a flushable ingest's record"
    );
    assert!(exercise_manifest(&files.manifest).unwrap().files > 0);
    exercise_options(&files.options).unwrap();
    let mut rng = Mutator::new(seed);
    for i in 0..iters {
        let what = format!("seed {seed}, iteration {i}");
        let (seed_wal, seed_records) = if i % 4 == 3 {
            (&files.wal_blocks, &wal_blocks_records)
        } else {
            (&files.wal, &wal_records)
        };
        let wal = rng.mutate_log(seed_wal, seed_records);
        let r = std::panic::catch_unwind(|| exercise_wal(&wal));
        let r = r.unwrap_or_else(|_| panic!("WAL recovery panicked ({what}): {wal:?}"));
        if let Err(e) = r {
            check_error(&e, &wal_path(), wal.len(), missing_table, &what);
        }
        let manifest = rng.mutate_log(&files.manifest, &manifest_records);
        let r = std::panic::catch_unwind(|| exercise_manifest(&manifest));
        let r = r.unwrap_or_else(|_| panic!("MANIFEST recovery panicked ({what}): {manifest:?}"));
        if let Err(e) = r {
            check_error(&e, &manifest_path(), manifest.len(), |_| false, &what);
        }
        let mut options = files.options.clone();
        rng.mutate_bytes(&mut options);
        let r = std::panic::catch_unwind(|| exercise_options(&options));
        let r = r.unwrap_or_else(|_| panic!("OPTIONS load panicked ({what}): {options:?}"));
        if let Err(e) = r {
            check_error(&e, &options_path(), options.len(), |_| false, &what);
        }
    }
}

/// A torn tail — the WAL cut anywhere — recovers exactly the records before the cut: never an
/// error, never a record that was not whole.
#[test]
fn torn_wal_tail_recovers_the_records_before_it() {
    let files = engine_files();
    let full = records_of(&files.wal_blocks);
    for cut in (0..files.wal_blocks.len()).step_by(397) {
        let torn = &files.wal_blocks[..cut];
        let mut r = LogReader::new(torn, Path::new("/log"));
        let mut got = Vec::new();
        while let Some((_, rec)) = r.next_record().unwrap() {
            got.push(rec);
        }
        assert_eq!(&full[..got.len()], &got[..], "cut at {cut}");
        assert!(matches!(
            r.end(),
            Some(LogEnd::Clean | LogEnd::TornTail(..))
        ));
        match exercise_wal(torn) {
            Ok(rec) => assert_eq!(rec.records, got.len() as u64, "cut at {cut}"),
            Err(e) => assert!(missing_table(&e), "cut at {cut}: {e}"),
        }
    }
}

/// Found by the table_reader cargo-fuzz target in its first minutes (the input is the
/// fuzzer's, a 39 KB table): the index block's snappy size preamble said 1,017,639,004 bytes,
/// and the reader allocated that much before decoding its body. Now a size larger than snappy
/// can expand the body to is corruption at the block, and nothing is allocated for it.
#[test]
fn table_reader_regression_snappy_size_past_the_input() {
    if run_capped(
        "table_reader_regression_snappy_size_past_the_input",
        MEMORY_CAP_KIB,
    ) {
        return;
    }
    let table =
        include_bytes!("../testdata/fuzz-regressions/table_reader/snappy-size-past-the-input");
    assert_eq!(sluice::sst::fuzz::exercise_table_bytes(table), None);
}

/// Found by this test's mutation run (seed 0x5eed, iteration 343): a WAL batch whose seqno
/// field had its top byte flipped reached the memtable and tripped the key trailer's
/// `seqno <= MAX_SEQNO` assertion. Now the batch is corruption at its record's offset.
#[test]
fn wal_batch_seqno_past_the_largest_is_corruption() {
    let files = engine_files();
    assert_damage_is_corruption(
        &files.wal,
        |r| decode_ingest_record(r).is_none(),
        |records, i| records[i][7] = 0xff,
        |wal| exercise_wal(wal).err(),
        (&wal_path(), "largest seqno"),
    );
}

/// Found by this test's mutation run (seed 0x5eed, iteration 56): a MANIFEST whose record
/// adding an L0 file appeared twice listed the file twice in L0, and building the L0
/// sublevels tripped their invariant check. Now the second record is corruption.
#[test]
fn manifest_adding_a_file_twice_is_corruption() {
    let files = engine_files();
    assert_damage_is_corruption(
        &files.manifest,
        |r| {
            let e = VersionEdit::decode(r).unwrap();
            e.deleted.is_empty() && e.added.iter().any(|(level, _)| *level == 0)
        },
        |records, i| records.insert(i + 1, records[i].clone()),
        |manifest| exercise_manifest(manifest).err(),
        (&manifest_path(), "already holds"),
    );
}

/// Damages the first record of `log` that `pick` chooses, re-frames the log, and checks that
/// `recover` reports a `Corruption` naming `file` whose message contains `reason`.
fn assert_damage_is_corruption(
    log: &[u8],
    pick: impl Fn(&[u8]) -> bool,
    damage: impl FnOnce(&mut Vec<Vec<u8>>, usize),
    recover: impl Fn(&[u8]) -> Option<Error>,
    (file, reason): (&Path, &str),
) {
    let mut records = records_of(log);
    let i = records.iter().position(|r| pick(r)).unwrap();
    damage(&mut records, i);
    let damaged = log_of(&records);
    let e = recover(&damaged).expect("damage is reported");
    check_error(&e, file, damaged.len(), |_| false, reason);
    assert!(e.to_string().contains(reason), "{e}");
}

/// An OPTIONS value out of range is corruption in the file, at the start of the bad line
/// when the parser rejects it.
#[test]
fn options_errors_name_the_file_and_line_offset() {
    let text = "# Sluice options\nblock_size=4096\nwrite_buffer_size=lots\n";
    match exercise_options(text.as_bytes()).unwrap_err() {
        Error::Corruption { file, offset, .. } => {
            assert_eq!(file, options_path());
            assert_eq!(offset, text.find("write_buffer_size").unwrap() as u64);
        }
        e => panic!("{e}"),
    }
    let e = exercise_options(b"max_open_files=1\n").unwrap_err();
    check_error(&e, &options_path(), 17, |_| false, "value out of range");
}

/// Writes the engine's files as the cargo-fuzz targets' seed corpora (`testdata/fuzz/`).
fn write_fuzz_corpus(files: &EngineFiles) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz");
    for (target, name, bytes) in [
        ("wal", "engine-seed", &files.wal),
        ("wal", "engine-seed-blocks", &files.wal_blocks),
        ("manifest", "engine-seed", &files.manifest),
        ("options", "engine-seed", &files.options),
    ] {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}
