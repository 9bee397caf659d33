//! Inspection commands: they read a Db (or a WAL file) and print what is in it, writing
//! nothing and taking no lock. One file per thing inspected, as Pebble's `tool/` has
//! `lsm.go`, `manifest.go` and `wal.go`:
//!
//! * [`stats`]: `sluice stats`, per-level numbers and the MANIFEST's history of work;
//! * [`lsm`]: `sluice lsm`, the levels and L0 sublevels drawn as key-span bars;
//! * [`manifest`]: `sluice manifest dump`, every version edit and the resulting LSM;
//! * [`wal`]: `sluice wal dump`, every batch of a WAL file.
//!
//! This file holds what they share: reading a whole file and the MANIFEST that `CURRENT`
//! names. SST files have their own room (`sst_cmd`), and so does `verify` (`ops_cmd`, with
//! the other commands on the Db's tables as a whole).

pub mod lsm;
pub mod manifest;
pub mod stats;
pub mod timeline;
pub mod wal;

use std::path::{Path, PathBuf};

/// A whole file; the error names it.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, sluice::Error> {
    std::fs::read(path).map_err(|e| sluice::Error::io(path, e))
}

/// The path and bytes of the MANIFEST that `CURRENT` names.
pub(crate) fn read_manifest(dir: &Path) -> Result<(PathBuf, Vec<u8>), sluice::Error> {
    let current = dir.join("CURRENT");
    let name = String::from_utf8(read_file(&current)?)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| s.starts_with("MANIFEST-") && !s.contains('/'))
        .ok_or_else(|| {
            sluice::Error::corruption(&current, 0, "CURRENT does not name a MANIFEST")
        })?;
    let path = dir.join(name);
    let data = read_file(&path)?;
    Ok((path, data))
}
