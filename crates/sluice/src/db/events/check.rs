//! Checking a session's events against the MANIFEST it wrote (for tests, the stress harness and
//! tools reading an event log): [`check_against_manifest`].

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use crate::base::error::{Error, Result};
use crate::fs::FileSystem;
use crate::version::{Version, VersionEdit};
use crate::wal::log::LogReader;

use super::{CompactionKind, Event, FlushInput, TableFileDeletion, TableFileInfo};

/// (level, file number) pairs.
pub type LevelFiles = BTreeSet<(usize, u64)>;

/// What [`check_against_manifest`] matched.
#[non_exhaustive]
#[derive(Debug, Clone, Default)]
pub struct ManifestMatch {
    /// Events that installed a version, each matched to its edit.
    pub installs: usize,
    /// Tables created.
    pub created: usize,
    /// Tables deleted.
    pub deleted: usize,
    /// Write stalls (begin/end pairs).
    pub stalls: usize,
}

/// Every version edit of the MANIFEST `CURRENT` names in `dir`, in order.
pub fn manifest_edits(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<VersionEdit>> {
    let current = dir.join("CURRENT");
    let name = fs.read_all(&current).map_err(|e| Error::io(&current, e))?;
    let path = dir.join(String::from_utf8_lossy(&name).trim());
    let data = fs.read_all(&path).map_err(|e| Error::io(&path, e))?;
    let mut reader = LogReader::new(&data, &path);
    let mut edits = Vec::new();
    while let Some((offset, rec)) = reader.next_record()? {
        edits.push(VersionEdit::decode(&rec).map_err(|e| Error::corruption(&path, offset, e))?);
    }
    Ok(edits)
}

/// The (added, removed) files of `edit`.
pub fn edit_files(edit: &VersionEdit) -> (LevelFiles, LevelFiles) {
    let added = edit.added.iter().map(|(l, f)| (*l, f.number)).collect();
    (added, edit.deleted.iter().copied().collect())
}

fn level_files(ts: &[TableFileInfo]) -> LevelFiles {
    ts.iter().map(|t| (t.level, t.number)).collect()
}

/// The (added, removed) files of an event that installs a version; whether it is recovery's.
fn install_of(e: &Event) -> Option<(LevelFiles, LevelFiles, bool)> {
    match e {
        Event::FlushEnd(i) if i.error.is_none() => {
            let recovery = matches!(i.input, FlushInput::Recovery { .. });
            Some((level_files(&i.outputs), LevelFiles::new(), recovery))
        }
        Event::CompactionEnd(i) if i.error.is_none() => {
            Some((level_files(&i.outputs), level_files(&i.inputs), false))
        }
        Event::Ingest(i) if !i.flushable && !i.write_batch => {
            let tables: Vec<TableFileInfo> =
                i.files.iter().filter_map(|f| f.table.clone()).collect();
            Some((level_files(&tables), LevelFiles::new(), false))
        }
        _ => None,
    }
}

/// Checks the events one Db delivered from its open to its close (`events`, in delivery order)
/// against the MANIFEST in `dir` after the close:
/// 1. the events that install a version are the MANIFEST's last edits, one each, in order,
///    adding and removing the same tables (recovery's flush: its tables among the open's
///    edit's, which may be a snapshot of the whole version);
/// 2. every flush and compaction that began ended, once, after its begin;
/// 3. every table is created at most once, before the end of the job that wrote it (or the
///    ingest that linked it); a table is deleted at most once, never one the final version
///    holds, an obsolete one only after the end of the compaction that removed it, and every
///    table a compaction removed is deleted by the close (unless the Db hit a background
///    error, after which nothing is deleted);
/// 4. write stalls alternate begin, end, with the same cause, and none is on at the close.
///
/// The first rule broken is the error.
pub fn check_against_manifest(
    events: &[Event],
    fs: &dyn FileSystem,
    dir: &Path,
) -> std::result::Result<ManifestMatch, String> {
    let edits = manifest_edits(fs, dir).map_err(|e| e.to_string())?;
    let mut m = ManifestMatch::default();
    check_installs(events, &edits, &mut m)?;
    check_jobs(events)?;
    let mut version = Version::default();
    for e in &edits {
        version = version
            .apply(e)
            .map_err(|e| format!("MANIFEST replay: {e}"))?;
    }
    check_tables(events, &version, &mut m)?;
    check_stalls(events, &mut m)?;
    Ok(m)
}

fn check_installs(
    events: &[Event],
    edits: &[VersionEdit],
    m: &mut ManifestMatch,
) -> std::result::Result<(), String> {
    let installs: Vec<_> = events.iter().filter_map(install_of).collect();
    if installs.len() > edits.len() {
        return Err(format!(
            "{} installs, {} edits",
            installs.len(),
            edits.len()
        ));
    }
    let session = &edits[edits.len() - installs.len()..];
    for (i, (edit, (added, removed, recovery))) in session.iter().zip(&installs).enumerate() {
        let (edit_added, edit_removed) = edit_files(edit);
        let matches = if *recovery {
            added.is_subset(&edit_added) && edit_removed.is_empty()
        } else {
            (&edit_added, &edit_removed) == (added, removed)
        };
        if !matches {
            return Err(format!(
                "install {i}: events add {added:?}, remove {removed:?}; its edit adds \
                 {edit_added:?}, removes {edit_removed:?}"
            ));
        }
    }
    m.installs = installs.len();
    Ok(())
}

fn job_of(e: &Event) -> Option<(u64, bool)> {
    match e {
        Event::FlushBegin(i) => Some((i.job_id, true)),
        Event::CompactionBegin(i) => Some((i.job_id, true)),
        Event::FlushEnd(i) => Some((i.job_id, false)),
        Event::CompactionEnd(i) => Some((i.job_id, false)),
        _ => None,
    }
}

fn check_jobs(events: &[Event]) -> std::result::Result<(), String> {
    // job id -> began, ended
    let mut jobs: HashMap<u64, (bool, bool)> = HashMap::new();
    for (id, begin) in events.iter().filter_map(job_of) {
        let j = jobs.entry(id).or_default();
        match (begin, *j) {
            (true, (false, _)) => j.0 = true,
            (false, (true, false)) => j.1 = true,
            _ => return Err(format!("job {id}: begin/end out of order or repeated")),
        }
    }
    match jobs.iter().find(|(_, (_, ended))| !ended) {
        Some((id, _)) => Err(format!("job {id} began and never ended")),
        None => Ok(()),
    }
}

fn check_tables(
    events: &[Event],
    version: &Version,
    m: &mut ManifestMatch,
) -> std::result::Result<(), String> {
    let live: BTreeSet<u64> = version.file_numbers().collect();
    let mut created: HashMap<u64, usize> = HashMap::new();
    let mut deleted = BTreeSet::new();
    let mut removed_by_compactions = BTreeSet::new();
    let mut background_error = false;
    for (i, e) in events.iter().enumerate() {
        let written: Vec<u64> = match e {
            Event::TableFileCreated(c) => {
                if created.insert(c.number, i).is_some() {
                    return Err(format!("table {} created twice", c.number));
                }
                continue;
            }
            Event::TableFileDeleted(d) => {
                if live.contains(&d.number) || !deleted.insert(d.number) {
                    return Err(format!("table {} deleted twice or while live", d.number));
                }
                // Obsolete: retired by an edit of this session, a compaction's, reported first.
                let retired = removed_by_compactions.contains(&d.number);
                if d.reason == TableFileDeletion::Obsolete && !retired {
                    return Err(format!(
                        "table {} deleted before its compaction ended",
                        d.number
                    ));
                }
                continue;
            }
            Event::BackgroundError(_) => {
                background_error = true;
                continue;
            }
            Event::FlushEnd(f) if matches!(f.input, FlushInput::Memtable { .. }) => {
                f.outputs.iter().map(|t| t.number).collect()
            }
            Event::CompactionEnd(c) if c.kind != CompactionKind::Move => {
                if c.error.is_none() {
                    removed_by_compactions.extend(c.inputs.iter().map(|t| t.number));
                }
                c.outputs.iter().map(|t| t.number).collect()
            }
            Event::Ingest(g) => g
                .files
                .iter()
                .filter_map(|f| Some(f.table.as_ref()?.number))
                .collect(),
            _ => continue,
        };
        if let Some(n) = written
            .iter()
            .find(|n| created.get(n).is_none_or(|&c| c > i))
        {
            return Err(format!(
                "table {n} not created before event {i} ({})",
                e.name()
            ));
        }
    }
    let left = removed_by_compactions
        .iter()
        .find(|n| !live.contains(n) && !deleted.contains(n));
    if let (Some(n), false) = (left, background_error) {
        return Err(format!(
            "table {n}, removed by a compaction, is not deleted by the close"
        ));
    }
    m.created = created.len();
    m.deleted = deleted.len();
    Ok(())
}

fn check_stalls(events: &[Event], m: &mut ManifestMatch) -> std::result::Result<(), String> {
    let mut on: Option<(bool, &'static str)> = None;
    for e in events {
        match e {
            Event::WriteStallBegin(s) if on.is_none() => on = Some((s.stopped, s.cause.name())),
            Event::WriteStallEnd(s) if on == Some((s.stopped, s.cause.name())) => {
                on = None;
                m.stalls += 1;
            }
            Event::WriteStallBegin(_) | Event::WriteStallEnd(_) => {
                return Err(format!("stall events out of pairs at {e:?}"))
            }
            _ => {}
        }
    }
    match on {
        Some(s) => Err(format!("stall {s:?} still on at the close")),
        None => Ok(()),
    }
}
