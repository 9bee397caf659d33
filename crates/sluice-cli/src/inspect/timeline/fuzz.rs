//! Fuzz harness for the MANIFEST replay behind `sluice lsm --json/--html`, shared by the
//! cargo-fuzz target (`fuzz/`) and the seeded mutation test (`tests/fuzz_seeded.rs`).
//!
//! The bytes are read as a MANIFEST by both readers — Sluice's (the engine's `VersionEdit`
//! decoder) and RocksDB's (tag by tag: every file, blob, WAL and column-family tag) — and
//! each history that reads is replayed ([`replay`]), its keys decoded through an import
//! catalog ([`keys::names`]) and written as the JSON `lsm --json` prints. Invariants it
//! checks by running:
//! 1. No panic, whatever the bytes (invariant 3 of the module).
//! 2. Memory bounded by the input: no allocation sized by a length read from the bytes.
//! 3. Every error is a `Corruption` naming the MANIFEST and an offset inside it.

use std::path::{Path, PathBuf};

use super::{keys, manifest_is_sluice, read_history, replay, write_json, Context, Source};

/// The path errors name.
pub fn manifest_path() -> PathBuf {
    PathBuf::from("/fuzz-db/MANIFEST-000001")
}

/// What one reader made of the bytes: edits replayed and keys seen, or the error.
pub type Replayed = Result<(usize, usize), sluice::Error>;

/// What the replay made of a MANIFEST, read as each engine's.
#[derive(Debug)]
pub struct LsmReplay {
    /// True if the first record says Sluice wrote it (what `sluice lsm` goes by).
    pub sluice_first_record: Option<bool>,
    /// Read as Sluice's MANIFEST.
    pub sluice: Replayed,
    /// Read as RocksDB's MANIFEST.
    pub rocksdb: Replayed,
}

/// Reads `bytes` as a MANIFEST both ways and replays each history that reads; `tables` is
/// the import catalog the keys are decoded with (`sluice_import::parse_schema` of a schema,
/// ids set).
pub fn exercise_lsm(bytes: &[u8], tables: &[sluice_import::TableDef]) -> LsmReplay {
    let path = manifest_path();
    LsmReplay {
        sluice_first_record: manifest_is_sluice(&path, bytes).ok(),
        sluice: replay_as(Source::Sluice, &path, bytes, tables),
        rocksdb: replay_as(Source::RocksDb, &path, bytes, tables),
    }
}

fn replay_as(
    source: Source,
    path: &Path,
    bytes: &[u8],
    tables: &[sluice_import::TableDef],
) -> Replayed {
    let mut context = Context::default();
    let edits = read_history(source, path, bytes, &mut context)?;
    let timeline = replay(source, context, edits, path)?;
    let (names, decoding) = keys::names(&timeline.keys, Ok(tables.to_vec()));
    // The JSON is written to nowhere: what matters is that writing it reaches every field.
    let _ = write_json(&timeline, &names, &decoding, &mut std::io::sink());
    Ok((timeline.steps.len(), timeline.keys.len()))
}
