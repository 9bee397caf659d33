//! Step 5 for stores that own key ranges per node (one Db per range, TiKV/HBase style): the
//! chosen ranges' SSTs moved into `out/s<slot>-r<range>/`, and `out/ranges.json` describing
//! each range (its key bounds, files with their key spans and CRC-32C, entries, bytes). Each
//! set is disjoint from every other and can be ingested alone (`sluice ingest DB
//! out/s0-r3/*.sst`, plus `out/catalog/catalog.sst` for the table's catalog entry).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::build::{catalog_sst, choose_manifests};
use super::job::job_dir;
use super::{JobPlan, RangeManifest};
use crate::ImportError;

/// `ranges.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RangesManifest {
    /// The job.
    pub job_id: String,
    /// The table.
    pub table: String,
    /// The table's catalog entry (a table the job creates), relative to the directory.
    pub catalog: Option<String>,
    /// Every range of every index, by (slot, range).
    pub ranges: Vec<RangeSet>,
}

impl RangesManifest {
    /// The manifest as JSON (what `ranges.json` holds).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// One range's set of SSTs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RangeSet {
    /// The index slot (0: primary).
    pub slot: u32,
    /// `primary` or the index's name.
    pub index: String,
    /// The range within its slot.
    pub range: u32,
    /// The first key of the range (hex; inclusive), `None`: the start of the index.
    pub lower: Option<String>,
    /// The end of the range (hex; exclusive), `None`: the end of the index.
    pub upper: Option<String>,
    /// Its files in key order.
    pub files: Vec<ExportedFile>,
    /// Entries in all.
    pub entries: u64,
    /// Bytes in all.
    pub bytes: u64,
}

/// One SST of a range set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExportedFile {
    /// Path relative to the directory.
    pub path: String,
    /// Smallest key (hex).
    pub smallest: String,
    /// Largest key (hex).
    pub largest: String,
    /// Entries.
    pub entries: u64,
    /// Bytes.
    pub bytes: u64,
    /// CRC-32C of the whole file.
    pub crc32c: u32,
}

/// Step 5, `output="files"`: the ranges chosen and checked as [`super::commit`] does, their
/// files moved into `out` (created; must not hold a `ranges.json`), described in
/// `out/ranges.json`, all made durable (files, their directories, then the manifest written
/// whole) before the job's directory under `dir` is removed, whether this succeeded or not.
pub fn export_ranges(
    plan: &JobPlan,
    manifests: Vec<RangeManifest>,
    dir: &Path,
    out: &Path,
) -> Result<RangesManifest, ImportError> {
    let result = export_inner(plan, manifests, dir, out);
    let _ = std::fs::remove_dir_all(job_dir(dir, &plan.job_id));
    result
}

fn export_inner(
    plan: &JobPlan,
    manifests: Vec<RangeManifest>,
    dir: &Path,
    out: &Path,
) -> Result<RangesManifest, ImportError> {
    if plan.table.layout.by_column() {
        return Err(ImportError::InvalidArgument(format!(
            "table {}: a columnar table's ranges cannot be exported (its column chunks are \
             keyed by row group, not by primary key); commit the job into a Db instead",
            plan.table.name
        )));
    }
    let index_path = out.join("ranges.json");
    if index_path.exists() {
        return Err(ImportError::InvalidArgument(format!(
            "{} already holds a ranges manifest",
            out.display()
        )));
    }
    let chosen = choose_manifests(plan, manifests)?;
    crate::durable::create_dir_all(out)?;
    let mut ranges = Vec::new();
    // Every directory a file was moved into, fsynced before `ranges.json` names the files.
    let mut dirs = std::collections::BTreeSet::new();
    for ((slot, range), m) in chosen {
        let rel = format!("s{slot}-r{range}");
        let mut files = Vec::new();
        for (n, f) in m.files.iter().enumerate() {
            let name = format!("{rel}/{n:06}.sst");
            let crc = move_file(&f.path, &out.join(&name))?;
            dirs.insert(out.join(&rel));
            files.push(ExportedFile {
                path: name,
                smallest: hex(&f.smallest),
                largest: hex(&f.largest),
                entries: f.entries,
                bytes: f.bytes,
                crc32c: crc,
            });
        }
        let cuts = plan.cuts.get(slot as usize);
        let cut = |i: Option<u32>| {
            i.and_then(|i| cuts.and_then(|c| c.get(i as usize)))
                .map(|k| hex(k))
        };
        ranges.push(RangeSet {
            slot,
            index: match slot {
                0 => "primary".into(),
                s => plan.table.indexes[s as usize - 1].name.clone(),
            },
            range,
            lower: cut(range.checked_sub(1)),
            upper: cut(Some(range)),
            entries: m.entries,
            bytes: m.files.iter().map(|f| f.bytes).sum(),
            files,
        });
    }
    // The catalog entry of a table the job creates (the stores that take the sets hold the
    // entry of an existing one already).
    let catalog = match plan.created {
        true => {
            let p = catalog_sst(plan, dir)?;
            move_file(&p, &out.join("catalog/catalog.sst"))?;
            dirs.insert(out.join("catalog"));
            Some("catalog/catalog.sst".to_string())
        }
        false => None,
    };
    let manifest = RangesManifest {
        job_id: plan.job_id.clone(),
        table: plan.table.name.clone(),
        catalog,
        ranges,
    };
    for d in &dirs {
        crate::durable::sync_dir(d)?;
    }
    crate::durable::sync_dir(out)?;
    // Whole or absent after a power loss (the job's directory goes next).
    crate::durable::replace_file(&index_path, manifest.to_json().as_bytes())?;
    Ok(manifest)
}

/// Moves `from` to `to` (renames, or copies across file systems) and returns its CRC-32C.
fn move_file(from: &Path, to: &PathBuf) -> Result<u32, ImportError> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ImportError::io(parent, e))?;
    }
    if std::fs::rename(from, to).is_err() {
        std::fs::copy(from, to).map_err(|e| ImportError::io(from, e))?;
    }
    let mut f = std::fs::File::open(to).map_err(|e| ImportError::io(to, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut crc = 0u32;
    loop {
        let n = f.read(&mut buf).map_err(|e| ImportError::io(to, e))?;
        if n == 0 {
            break;
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
    }
    f.sync_all().map_err(|e| ImportError::io(to, e))?;
    Ok(crc)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
