//! An index's merge in progress in a checkpoint: per key range its final files so far (each
//! with its size and CRC32C), the last key emitted and, for a parallel merge, its worker's
//! counts; the workers' policy states go to one file beside the manifest (named with its
//! CRC32C, like the policy file).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sluice::coding::{put_varint64, Reader};
use sluice::IterBounds;

use super::FileCk;
use crate::pipeline::merge::progress::{MergeProgress, PartProgress};
use crate::ImportError;

/// One key range of an index's merge in progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PartCk {
    pub(crate) lower: Option<Vec<u8>>,
    pub(crate) upper: Option<Vec<u8>>,
    pub(crate) finals: Vec<FileCk>,
    /// A columnar writer's cell files, with their columns.
    pub(crate) cells: Vec<(usize, FileCk)>,
    pub(crate) after: Option<Vec<u8>>,
    pub(crate) done: bool,
    pub(crate) rows_dropped: u64,
    pub(crate) dropped: u64,
}

/// An index's merge in progress (see [`MergeProgress`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MergingCk {
    pub(crate) parallel: bool,
    pub(crate) parts: Vec<PartCk>,
}

/// CRC32C of a file's contents.
pub(crate) fn file_crc(path: &Path) -> std::io::Result<u32> {
    use std::io::Read as _;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut crc = 0u32;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(crc);
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
    }
}

/// CRC32Cs of the files checkpoints named, computed once per file (just written: read back
/// from the page cache).
#[derive(Default)]
pub(crate) struct Crcs(std::sync::Mutex<HashMap<PathBuf, u32>>);

impl Crcs {
    /// `f` as a checkpoint names it, with its CRC32C.
    pub(crate) fn file(&self, f: &sluice::SstFileInfo) -> Result<FileCk, ImportError> {
        let mut ck = FileCk::of(f);
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let crc = match m.get(&f.path) {
            Some(c) => *c,
            None => {
                let c = file_crc(&f.path).map_err(|e| ImportError::io(&f.path, e))?;
                m.insert(f.path.clone(), c);
                c
            }
        };
        ck.crc = Some(crc);
        Ok(ck)
    }

    /// Computes the CRC32Cs of the `files` not known yet on up to `threads` threads, so the
    /// checkpoint after a merge does not read back every final file on one (0.1 s of a 4.8 s
    /// `hits` import, its 106 column files read one after another).
    pub(crate) fn warm<'a>(
        &self,
        files: impl Iterator<Item = &'a sluice::SstFileInfo>,
        threads: usize,
    ) -> Result<(), ImportError> {
        let todo: Vec<&Path> = {
            let m = self.0.lock().unwrap_or_else(|e| e.into_inner());
            files
                .filter(|f| !m.contains_key(&f.path))
                .map(|f| f.path.as_path())
                .collect()
        };
        if todo.len() < 2 || threads < 2 {
            return Ok(());
        }
        let done = crate::workers::map_on_threads(threads, todo.clone(), file_crc);
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for (p, r) in todo.into_iter().zip(done) {
            let c = r.map_err(|e| ImportError::io(p, e))?;
            m.insert(p.to_path_buf(), c);
        }
        Ok(())
    }
}

impl MergingCk {
    /// The checkpoint of `p` (files with their CRC32Cs).
    pub(crate) fn of(p: &MergeProgress, crcs: &Crcs) -> Result<MergingCk, ImportError> {
        let mut parts = Vec::with_capacity(p.parts.len());
        for part in &p.parts {
            parts.push(PartCk {
                lower: part.range.lower.clone(),
                upper: part.range.upper.clone(),
                finals: part
                    .finals
                    .iter()
                    .map(|f| crcs.file(f))
                    .collect::<Result<_, _>>()?,
                cells: part
                    .cells
                    .iter()
                    .map(|(c, f)| Ok((*c, crcs.file(f)?)))
                    .collect::<Result<_, ImportError>>()?,
                after: part.after.clone(),
                done: part.done,
                rows_dropped: part.rows_dropped,
                dropped: part.dropped,
            });
        }
        Ok(MergingCk {
            parallel: p.parallel,
            parts,
        })
    }

    /// The merge in progress again, its files checked (there, with their size and CRC32C)
    /// and its workers' states from `states` (the state file's parts).
    pub(crate) fn restore(
        &self,
        dir: &Path,
        states: Option<Vec<Vec<u8>>>,
    ) -> Result<MergeProgress, ImportError> {
        let mut states = states.unwrap_or_default().into_iter();
        let mut parts = Vec::with_capacity(self.parts.len());
        for p in &self.parts {
            let state = if self.parallel {
                states.next().ok_or_else(|| ImportError::CannotResume {
                    dir: dir.to_path_buf(),
                    reason: "the merge state file names fewer key ranges than the checkpoint"
                        .into(),
                })?
            } else {
                Vec::new()
            };
            parts.push(PartProgress {
                range: IterBounds {
                    lower: p.lower.clone(),
                    upper: p.upper.clone(),
                },
                finals: p
                    .finals
                    .iter()
                    .map(|f| f.restore(dir))
                    .collect::<Result<_, _>>()?,
                cells: p
                    .cells
                    .iter()
                    .map(|(c, f)| Ok((*c, f.restore(dir)?)))
                    .collect::<Result<_, ImportError>>()?,
                after: p.after.clone(),
                done: p.done,
                rows_dropped: p.rows_dropped,
                dropped: p.dropped,
                state,
            });
        }
        Ok(MergeProgress {
            parallel: self.parallel,
            parts,
        })
    }

    /// Names of the files it holds.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().flat_map(|p| {
            p.finals
                .iter()
                .chain(p.cells.iter().map(|c| &c.1))
                .map(|f| f.name.as_str())
        })
    }
}

/// Writes the workers' states of a parallel merge in progress into a new file of `dir`
/// (fsynced): its name and CRC32C for the manifest. `seq` makes the name fresh.
pub(crate) fn store_merge_state(
    dir: &Path,
    p: &MergeProgress,
    seq: u64,
) -> Result<Option<(String, u32)>, ImportError> {
    if !p.parallel {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    put_varint64(&mut bytes, p.parts.len() as u64);
    for part in &p.parts {
        put_varint64(&mut bytes, part.state.len() as u64);
        bytes.extend_from_slice(&part.state);
    }
    super::policy_file::write_side_file(dir, format!("merge-{seq:06}.bin"), &bytes).map(Some)
}

/// Reads the workers' states a checkpoint names (see [`store_merge_state`]).
pub(crate) fn load_merge_state(
    dir: &Path,
    file: &(String, u32),
) -> Result<Vec<Vec<u8>>, ImportError> {
    let path = dir.join(&file.0);
    let bytes = std::fs::read(&path).map_err(|e| ImportError::CannotResume {
        dir: dir.to_path_buf(),
        reason: format!("{}: {e}", path.display()),
    })?;
    let corrupt = |why: &str| ImportError::CannotResume {
        dir: dir.to_path_buf(),
        reason: format!("{} is corrupt: {why}", file.0),
    };
    if crc32c::crc32c(&bytes) != file.1 {
        return Err(corrupt("checksum mismatch"));
    }
    let mut d = Reader::new(&bytes);
    let n = d.varint64().ok_or_else(|| corrupt("truncated"))?;
    let mut out = Vec::new();
    for _ in 0..n {
        let len = d.varint64().ok_or_else(|| corrupt("truncated"))?;
        let b = usize::try_from(len)
            .ok()
            .and_then(|l| d.bytes(l))
            .ok_or_else(|| corrupt("truncated"))?;
        out.push(b.to_vec());
    }
    Ok(out)
}
