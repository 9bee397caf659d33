//! Where an index's merge stands, for checkpoints inside it: per key range (one for a merge on
//! one thread, one per thread for a parallel merge), the final files finished so far and the
//! last key emitted. Checkpoints fall only after a final file was finished, between two keys'
//! groups (a group of equal keys is emitted whole), so a resumed merge seeks every source past
//! the last key and meets the policy's state as it was there.
//!
//! A merge on one thread applies the policy to the import's own [`EmitCtx`], which the
//! checkpoint records as always. A parallel merge's workers each have their own copy: its
//! state (counts, suppressions, deletions, the rejects logged for the replay in key-range
//! order) is recorded per range, encoded by [`EmitCtx::encode_worker`].

use std::collections::HashMap;

use sluice::coding::{put_varint64, Reader};
use sluice::{IterBounds, SstFileInfo};

use crate::error::{OtherRow, RowPlace};
use crate::merge::CellFiles;
use crate::pipeline::checkpoint::{decode_policy, encode_policy};
use crate::pipeline::merge::policy::EmitCtx;
use crate::ImportError;

/// Final bytes an index's merge writes (per key range) between two of its checkpoints at
/// least: a checkpoint follows the first final file finished past this much since the last
/// (the final file size when it is smaller, so each file is checkpointed). Counted in output,
/// so the checkpoints fall at the same files in every run.
pub(crate) const MERGE_CHECKPOINT_BYTES: u64 = 16 << 20;

/// One key range of an index's merge in progress.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartProgress {
    /// The keys it merges.
    pub(crate) range: IterBounds,
    /// Its final files finished so far (fsynced, in key order).
    pub(crate) finals: Vec<SstFileInfo>,
    /// A columnar writer's cell files finished so far, by column.
    pub(crate) cells: CellFiles,
    /// The last key emitted (every entry of it seen): the merge goes on after it.
    pub(crate) after: Option<Vec<u8>>,
    /// Every key of the range emitted and its last file finished.
    pub(crate) done: bool,
    /// Parallel merge: rows the range dropped (duplicates, rejects) and duplicates dropped.
    pub(crate) rows_dropped: u64,
    pub(crate) dropped: u64,
    /// Parallel merge: the worker's policy state, [`EmitCtx::encode_worker`].
    pub(crate) state: Vec<u8>,
}

/// An index's merge in progress.
#[derive(Debug, Clone, Default)]
pub(crate) struct MergeProgress {
    /// On several threads (each part with its worker's state) or on one (one part covering
    /// every key, the state in the import's own [`EmitCtx`]).
    pub(crate) parallel: bool,
    pub(crate) parts: Vec<PartProgress>,
}

/// The rate limit of an index's checkpoints (see [`MERGE_CHECKPOINT_BYTES`]).
pub(crate) struct CheckpointPace {
    every: u64,
    since: u64,
    seen: usize,
}

impl CheckpointPace {
    /// For a writer whose files are cut at `target` bytes, holding `files` finished files.
    pub(crate) fn new(target: u64, files: usize) -> Self {
        CheckpointPace {
            every: MERGE_CHECKPOINT_BYTES.min(target.max(1)),
            since: 0,
            seen: files,
        }
    }

    /// Whether a checkpoint is due now that the writer holds `files`.
    pub(crate) fn due(&mut self, files: &[SstFileInfo]) -> bool {
        if files.len() == self.seen {
            return false;
        }
        self.since += files[self.seen..].iter().map(|f| f.file_size).sum::<u64>();
        self.seen = files.len();
        if self.since >= self.every {
            self.since = 0;
            return true;
        }
        false
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint64(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn get_bytes<'b>(d: &mut Reader<'b>) -> Option<&'b [u8]> {
    let n = usize::try_from(d.varint64()?).ok()?;
    d.bytes(n)
}

fn get_string(d: &mut Reader<'_>) -> Option<String> {
    String::from_utf8(get_bytes(d)?.to_vec()).ok()
}

fn put_place(out: &mut Vec<u8>, p: &RowPlace) {
    put_bytes(out, p.file.as_bytes());
    put_varint64(out, p.line);
}

fn get_place(d: &mut Reader<'_>) -> Option<RowPlace> {
    Some(RowPlace {
        file: get_string(d)?,
        line: d.varint64()?,
    })
}

/// A logged reject of a parallel merge worker: only duplicate keys are refused there (a
/// unique index merges on one thread). `None` for anything else.
fn encode_reject(out: &mut Vec<u8>, e: &ImportError, rec: &[u8]) -> Option<()> {
    let ImportError::DuplicateKey { place, key, other } = e else {
        return None;
    };
    put_place(out, place);
    put_bytes(out, key.as_bytes());
    match other {
        OtherRow::Input(None) => put_varint64(out, 0),
        OtherRow::Input(Some(p)) => {
            put_varint64(out, 1);
            put_place(out, p);
        }
        OtherRow::Stored(t) => {
            put_varint64(out, 2);
            put_bytes(out, t.as_bytes());
        }
    }
    put_bytes(out, rec);
    Some(())
}

fn decode_reject(d: &mut Reader<'_>) -> Option<(ImportError, Vec<u8>)> {
    let place = get_place(d)?;
    let key = get_string(d)?;
    let other = match d.varint64()? {
        0 => OtherRow::Input(None),
        1 => OtherRow::Input(Some(get_place(d)?)),
        2 => OtherRow::Stored(get_string(d)?),
        _ => return None,
    };
    let rec = get_bytes(d)?.to_vec();
    Some((ImportError::DuplicateKey { place, key, other }, rec))
}

impl EmitCtx<'_> {
    /// A parallel merge worker's policy state: its suppressions and deletions (per slot) and
    /// its rejects logged so far. `None` when a reject cannot be recorded (not a duplicate
    /// key): no checkpoint is taken then.
    pub(crate) fn encode_worker(&self) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        put_bytes(&mut out, &encode_policy(&self.suppress, &self.deletions));
        let log = self.reject_log.as_deref().unwrap_or_default();
        put_varint64(&mut out, log.len() as u64);
        for (e, rec) in log {
            encode_reject(&mut out, e, rec)?;
        }
        Some(out)
    }

    /// A parallel merge worker's copy as `part` (of a checkpoint) left it, from the import's
    /// state at the start of the index's merge (`self`).
    pub(crate) fn worker_at(&self, slot: usize, part: &PartProgress) -> Option<Self> {
        let mut w = self.worker(slot, HashMap::new());
        let mut d = Reader::new(&part.state);
        let (sup, mut del) = decode_policy(get_bytes(&mut d)?)?;
        if del.len() == sup.len() {
            del.push(Vec::new());
        }
        if sup.len() != w.suppress.len() || del.len() != w.deletions.len() {
            return None;
        }
        let mut log = Vec::new();
        for _ in 0..d.varint64()? {
            log.push(decode_reject(&mut d)?);
        }
        if !d.remaining().is_empty() {
            return None;
        }
        w.suppress = sup;
        w.deletions = del;
        w.rows = self.rows.checked_sub(part.rows_dropped)?;
        w.dropped = part.dropped;
        w.rejected = self.rejected + log.len() as u64;
        w.reject_log = Some(log);
        Some(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_round_trip() {
        let place = RowPlace {
            file: "a.csv".into(),
            line: 7,
        };
        for other in [
            OtherRow::Input(None),
            OtherRow::Input(Some(place.clone())),
            OtherRow::Stored("t".into()),
        ] {
            let e = ImportError::DuplicateKey {
                place: place.clone(),
                key: "(5)".into(),
                other,
            };
            let mut out = Vec::new();
            encode_reject(&mut out, &e, b"5,x").unwrap();
            let (got, rec) = decode_reject(&mut Reader::new(&out)).unwrap();
            assert_eq!(got.to_string(), e.to_string());
            assert_eq!(rec, b"5,x");
        }
        assert!(encode_reject(&mut Vec::new(), &ImportError::Internal("x".into()), b"").is_none());
    }

    #[test]
    fn the_pace_checkpoints_after_enough_output() {
        let f = |n| SstFileInfo {
            path: "x".into(),
            smallest_key: vec![],
            largest_key: vec![],
            entries: 1,
            file_size: n,
            properties: Default::default(),
        };
        let mut p = CheckpointPace::new(10 << 20, 0);
        let mut files = vec![f(10 << 20)];
        assert!(p.due(&files));
        assert!(!p.due(&files));
        files.push(f(1 << 20));
        assert!(!p.due(&files));
        files.push(f(9 << 20));
        assert!(p.due(&files));
    }
}
