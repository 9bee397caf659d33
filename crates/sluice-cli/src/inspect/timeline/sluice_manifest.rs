//! Sluice's MANIFEST as [`Edit`]s, decoded by the engine's own `VersionEdit::decode`.
//!
//! A Sluice MANIFEST's first record is a snapshot carrying Sluice's format version tag (the
//! engine's invariant 4 of `version/`): that is how [`is_sluice_manifest`] tells it from a
//! RocksDB one. Each open that writes carries the old MANIFEST's records forward, so the
//! history goes back to the Db's creation (or to the last snapshot: see
//! `Options::max_manifest_file_size`).

use std::path::Path;
use std::sync::Arc;

use sluice::version::VersionEdit;
use sluice::wal::log::{LogEnd, LogReader};

use super::{Edit, TornTail};

/// Sluice's format-version tag, the first varint of a Sluice MANIFEST's first record.
const SLUICE_FORMAT_TAG: u8 = 100;

/// True if `first_record` (the MANIFEST's first record) starts with Sluice's format tag: no
/// RocksDB MANIFEST does (its tag 100, kNewFile2, never opens a MANIFEST).
pub fn is_sluice_manifest(first_record: &[u8]) -> bool {
    first_record.first() == Some(&SLUICE_FORMAT_TAG)
        && VersionEdit::decode(first_record).is_ok_and(|e| e.format_version.is_some())
}

/// The neutral form of one Sluice edit at `offset`.
pub fn edit_of(offset: u64, e: VersionEdit) -> Edit {
    Edit {
        offset,
        snapshot: e.format_version.is_some(),
        log_number: e.log_number,
        flushed: e.flushed_seqno.is_some(),
        last_sequence: e.last_sequence,
        deleted: e.deleted,
        added: e.added.into_iter().map(|(l, f)| (l, Arc::new(f))).collect(),
        notes: Vec::new(),
    }
}

/// Every edit of the MANIFEST at `path` (bytes `data`), and where a torn tail cuts it.
pub fn read_edits(
    path: &Path,
    data: &[u8],
) -> Result<(Vec<Edit>, Option<TornTail>), sluice::Error> {
    let mut r = LogReader::new(data, path);
    let mut out = Vec::new();
    while let Some((off, rec)) = r.next_record()? {
        let e = VersionEdit::decode(&rec).map_err(|e| sluice::Error::corruption(path, off, e))?;
        out.push(edit_of(off, e));
    }
    let torn = match r.end() {
        Some(LogEnd::TornTail(off, why)) => Some((*off, why.to_string())),
        _ => None,
    };
    Ok((out, torn))
}
