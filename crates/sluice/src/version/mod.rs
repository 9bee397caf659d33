//! Versions and version edits: which table files make up the LSM, level by level.
//!
//! The MANIFEST is a record log of [`VersionEdit`]s; replaying them from an empty version gives
//! the current [`Version`]. A `Version` is immutable and shared (`Arc`): readers hold the one
//! they started with, so the files it names stay alive until they let go.
//!
//! Invariants:
//! 1. Files in L1..L6 are sorted by smallest key and their key ranges do not overlap.
//! 2. L0 files are ordered newest first (by largest seqno, then file number): a get consults
//!    them in that order.
//! 3. A file is added to the DB only by a durable edit; an edit is the unit of atomicity.
//! 4. Edits carry a format version tag in the first record of each MANIFEST.

pub mod l0_pick;
pub mod l0_sublevels;
#[cfg(test)]
pub(crate) mod l0_sublevels_tests;
pub mod render;

use std::sync::Arc;

use crate::base::coding::{put_varint32, put_varint64, Reader};
use crate::base::key::{self, ValueKind, MAX_SEQNO};

/// Number of levels, L0..L6.
pub const NUM_LEVELS: usize = 7;

/// Format version of the MANIFEST records Sluice writes. 2 added `flushed_seqno` (WAL records
/// at or below it are already in tables: flushable ingests share a WAL between memtables).
pub const MANIFEST_FORMAT_VERSION: u64 = 2;

/// Metadata of one table file in a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// File number (`NNNNNN.sst`).
    pub number: u64,
    /// Size in bytes.
    pub size: u64,
    /// Smallest internal key (point or range-deletion start).
    pub smallest: Vec<u8>,
    /// Largest internal key; `(end, MAX_SEQNO, RangeDeletion)` when a range deletion's
    /// exclusive end bounds the file.
    pub largest: Vec<u8>,
    /// Smallest seqno in the file.
    pub smallest_seqno: u64,
    /// Largest seqno in the file.
    pub largest_seqno: u64,
    /// Seqno every entry of the file is read at (ingested files); 0 when entries carry their own.
    pub global_seqno: u64,
    /// Number of range deletions in the file (readers open only such files for tombstones).
    pub range_dels: u64,
}

impl FileMeta {
    /// A table of `size` bytes spanning user keys `lo..=hi`, every entry a value at `seq` (for
    /// tests).
    #[cfg(test)]
    pub(crate) fn for_test(number: u64, lo: &[u8], hi: &[u8], size: u64, seq: u64) -> FileMeta {
        FileMeta {
            number,
            size,
            smallest: key::make_internal_key(lo, seq, ValueKind::Value),
            largest: key::make_internal_key(hi, seq, ValueKind::Value),
            smallest_seqno: seq,
            largest_seqno: seq,
            global_seqno: 0,
            range_dels: 0,
        }
    }

    /// Smallest user key.
    pub fn smallest_user(&self) -> &[u8] {
        key::user_key(&self.smallest)
    }
    /// Largest user key (possibly exclusive, see [`FileMeta::largest_is_exclusive`]).
    pub fn largest_user(&self) -> &[u8] {
        key::user_key(&self.largest)
    }
    /// The seqno an entry of this file written at `own` is read at: the file's global seqno
    /// (ingested files), else its own.
    pub fn entry_seqno(&self, own: u64) -> u64 {
        if self.global_seqno > 0 {
            self.global_seqno
        } else {
            own
        }
    }
    /// True if the largest key is a range-deletion end sentinel (not itself contained).
    pub fn largest_is_exclusive(&self) -> bool {
        key::trailer(&self.largest) == key::pack_trailer(MAX_SEQNO, ValueKind::RangeDeletion as u8)
    }
    /// True if the file may hold user keys in `[lo, hi]` (inclusive bounds; `None` = unbounded).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        let below = match lo {
            Some(lo) => {
                let l = self.largest_user();
                l < lo || (l == lo && self.largest_is_exclusive())
            }
            None => false,
        };
        let above = hi.is_some_and(|hi| self.smallest_user() > hi);
        !(below || above)
    }
}

/// A change to the set of files, plus counters that must survive restarts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// WALs with numbers below this are fully flushed.
    pub log_number: Option<u64>,
    /// Next file number to allocate.
    pub next_file_number: Option<u64>,
    /// Largest seqno used.
    pub last_sequence: Option<u64>,
    /// Files removed: (level, number).
    pub deleted: Vec<(usize, u64)>,
    /// Files added: (level, meta).
    pub added: Vec<(usize, FileMeta)>,
    /// MANIFEST format version (first record of a MANIFEST).
    pub format_version: Option<u64>,
    /// Every WAL record with a seqno at or below this is in a table: recovery skips it.
    pub flushed_seqno: Option<u64>,
}

const TAG_LOG_NUMBER: u32 = 2;
const TAG_NEXT_FILE: u32 = 3;
const TAG_LAST_SEQ: u32 = 4;
const TAG_DELETED: u32 = 5;
const TAG_ADDED: u32 = 6;
const TAG_FLUSHED_SEQ: u32 = 7;
const TAG_FORMAT: u32 = 100;

impl VersionEdit {
    /// Encodes the edit as one MANIFEST record.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        if let Some(v) = self.format_version {
            put_varint32(&mut b, TAG_FORMAT);
            put_varint64(&mut b, v);
        }
        for (tag, v) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE, self.next_file_number),
            (TAG_LAST_SEQ, self.last_sequence),
            (TAG_FLUSHED_SEQ, self.flushed_seqno),
        ] {
            if let Some(v) = v {
                put_varint32(&mut b, tag);
                put_varint64(&mut b, v);
            }
        }
        for &(level, number) in &self.deleted {
            put_varint32(&mut b, TAG_DELETED);
            put_varint32(&mut b, level as u32);
            put_varint64(&mut b, number);
        }
        for (level, f) in &self.added {
            put_varint32(&mut b, TAG_ADDED);
            put_varint32(&mut b, *level as u32);
            put_varint64(&mut b, f.number);
            put_varint64(&mut b, f.size);
            put_varint32(&mut b, f.smallest.len() as u32);
            b.extend_from_slice(&f.smallest);
            put_varint32(&mut b, f.largest.len() as u32);
            b.extend_from_slice(&f.largest);
            put_varint64(&mut b, f.smallest_seqno);
            put_varint64(&mut b, f.largest_seqno);
            put_varint64(&mut b, f.global_seqno);
            put_varint64(&mut b, f.range_dels);
        }
        b
    }

    /// Decodes one record. Errors are reasons.
    pub fn decode(src: &[u8]) -> Result<VersionEdit, String> {
        let mut r = Reader::new(src);
        let mut e = VersionEdit::default();
        while !r.remaining().is_empty() {
            let tag = r.varint32().ok_or("truncated tag")?;
            match tag {
                TAG_FORMAT => {
                    let v = r.varint64().ok_or("truncated format version")?;
                    if v > MANIFEST_FORMAT_VERSION {
                        return Err(format!("MANIFEST format version {v} is newer than this build ({MANIFEST_FORMAT_VERSION})"));
                    }
                    e.format_version = Some(v);
                }
                TAG_LOG_NUMBER => e.log_number = Some(r.varint64().ok_or("truncated log number")?),
                TAG_NEXT_FILE => {
                    e.next_file_number = Some(r.varint64().ok_or("truncated next file number")?)
                }
                TAG_LAST_SEQ => e.last_sequence = Some(seqno(&mut r, "last sequence")?),
                TAG_FLUSHED_SEQ => e.flushed_seqno = Some(seqno(&mut r, "flushed seqno")?),
                TAG_DELETED => {
                    let level = r.varint32().ok_or("truncated deleted-file level")? as usize;
                    let number = r.varint64().ok_or("truncated deleted-file number")?;
                    if level >= NUM_LEVELS {
                        return Err(format!("deleted file at level {level}"));
                    }
                    e.deleted.push((level, number));
                }
                TAG_ADDED => {
                    let level = r.varint32().ok_or("truncated new-file level")? as usize;
                    if level >= NUM_LEVELS {
                        return Err(format!("new file at level {level}"));
                    }
                    let number = r.varint64().ok_or("truncated new-file number")?;
                    let size = r.varint64().ok_or("truncated new-file size")?;
                    let smallest = r
                        .length_prefixed()
                        .ok_or("truncated smallest key")?
                        .to_vec();
                    let largest = r.length_prefixed().ok_or("truncated largest key")?.to_vec();
                    if smallest.len() < key::TRAILER_LEN || largest.len() < key::TRAILER_LEN {
                        return Err("new file with a malformed boundary key".into());
                    }
                    if number > MAX_FILE_NUMBER {
                        return Err(format!("new file number {number} is out of range"));
                    }
                    let smallest_seqno = seqno(&mut r, "smallest seqno")?;
                    let largest_seqno = seqno(&mut r, "largest seqno")?;
                    let global_seqno = seqno(&mut r, "global seqno")?;
                    let range_dels = r.varint64().ok_or("truncated range deletion count")?;
                    e.added.push((
                        level,
                        FileMeta {
                            number,
                            size,
                            smallest,
                            largest,
                            smallest_seqno,
                            largest_seqno,
                            global_seqno,
                            range_dels,
                        },
                    ));
                }
                t => return Err(format!("unknown MANIFEST tag {t}")),
            }
        }
        Ok(e)
    }
}

/// The largest file number an edit may name: numbers above it are corruption (the next file
/// number after it must still fit, and no Db allocates that many).
pub const MAX_FILE_NUMBER: u64 = u64::MAX >> 8;

/// Reads a seqno, which must fit an internal key's trailer.
fn seqno(r: &mut Reader<'_>, what: &str) -> Result<u64, String> {
    let s = r.varint64().ok_or_else(|| format!("truncated {what}"))?;
    if s > MAX_SEQNO {
        return Err(format!("{what} {s} is past the largest seqno {MAX_SEQNO}"));
    }
    Ok(s)
}

/// An immutable set of files per level.
#[derive(Debug, Clone, Default)]
pub struct Version {
    /// Files of each level (L0 newest first; other levels by smallest key).
    pub levels: [Vec<Arc<FileMeta>>; NUM_LEVELS],
}

impl Version {
    /// Applies `edit`, returning the next version. Errors are reasons (inconsistent edits).
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version, String> {
        let mut v = self.clone();
        for &(level, number) in &edit.deleted {
            let before = v.levels[level].len();
            v.levels[level].retain(|f| f.number != number);
            if v.levels[level].len() == before {
                return Err(format!(
                    "edit deletes file {number} which is not in L{level}"
                ));
            }
        }
        // A number names one file: adding one the version still holds (a replayed or
        // duplicated record) would list it twice. Deletions come first, so a move is fine.
        let mut numbers: std::collections::HashSet<u64> = v.file_numbers().collect();
        for (level, f) in &edit.added {
            if !numbers.insert(f.number) {
                return Err(format!(
                    "edit adds file {} to L{level}, which the version already holds",
                    f.number
                ));
            }
            v.levels[*level].push(Arc::new(f.clone()));
        }
        v.levels[0].sort_by(|a, b| {
            b.largest_seqno
                .cmp(&a.largest_seqno)
                .then(b.number.cmp(&a.number))
        });
        for level in 1..NUM_LEVELS {
            let files = &mut v.levels[level];
            files.sort_by(|a, b| key::compare_internal(&a.smallest, &b.smallest));
            for w in files.windows(2) {
                let (a, b) = (&w[0], &w[1]);
                let overlap = a.largest_user() > b.smallest_user()
                    || (a.largest_user() == b.smallest_user() && !a.largest_is_exclusive());
                if overlap {
                    return Err(format!(
                        "files {} and {} overlap in L{level}",
                        a.number, b.number
                    ));
                }
            }
        }
        Ok(v)
    }

    /// Every file number in the version.
    pub fn file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().flatten().map(|f| f.number)
    }

    /// Files of `level` that may hold user keys in `[lo, hi]`.
    pub fn overlapping(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        self.levels[level]
            .iter()
            .filter(|f| f.overlaps(lo, hi))
            .cloned()
            .collect()
    }

    /// Total bytes of a level.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|f| f.size).sum()
    }

    /// Renders the version as text, one line per level (for tools and golden tests).
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for (level, files) in self.levels.iter().enumerate() {
            if files.is_empty() {
                continue;
            }
            s.push_str(&format!("L{level}:"));
            for f in files {
                s.push_str(&format!(
                    " {}:[{}-{}]",
                    f.number,
                    crate::base::error::escape_bytes(f.smallest_user()),
                    crate::base::error::escape_bytes(f.largest_user())
                ));
            }
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::key::make_internal_key;

    pub(crate) fn meta(number: u64, lo: &str, hi: &str, seq: u64) -> FileMeta {
        FileMeta::for_test(number, lo.as_bytes(), hi.as_bytes(), 100, seq)
    }

    #[test]
    fn edit_roundtrip() {
        let e = VersionEdit {
            log_number: Some(7),
            next_file_number: Some(12),
            last_sequence: Some(999),
            deleted: vec![(1, 4)],
            added: vec![(2, meta(9, "a", "m", 5))],
            format_version: Some(1),
            flushed_seqno: Some(990),
        };
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        let enc = e.encode();
        for cut in 1..enc.len() {
            let _ = VersionEdit::decode(&enc[..cut]);
        }
        assert!(VersionEdit::decode(&[99]).is_err());
    }

    #[test]
    fn apply_rejects_overlap_and_missing_deletes() {
        let v = Version::default();
        let mut e = VersionEdit::default();
        e.added.push((1, meta(1, "a", "f", 1)));
        e.added.push((1, meta(2, "f", "k", 1)));
        assert!(v.apply(&e).unwrap_err().contains("overlap"));
        let mut e = VersionEdit::default();
        e.deleted.push((3, 42));
        assert!(v.apply(&e).is_err());
        let mut e = VersionEdit::default();
        e.added.push((0, meta(1, "a", "f", 1)));
        e.added.push((0, meta(2, "a", "f", 5)));
        let v = v.apply(&e).unwrap();
        assert_eq!(v.levels[0][0].number, 2, "newest L0 file first");
    }

    /// Found by the seeded mutation test (`tests/fuzz_seeded.rs`): a MANIFEST whose record
    /// adding a file to L0 appeared twice replayed into an L0 listing the file twice, and
    /// building its sublevels tripped their invariant check ("files 29 and 29 out of age
    /// order").
    #[test]
    fn replaying_an_added_file_again_is_rejected() {
        let mut e = VersionEdit::default();
        e.added.push((0, meta(29, "a", "f", 1)));
        let v = Version::default().apply(&e).unwrap();
        let err = v.apply(&e).unwrap_err();
        assert!(err.contains("already holds"), "{err}");
        let mut both = e.clone();
        both.added.push((3, meta(29, "x", "z", 1)));
        assert!(Version::default().apply(&both).is_err());
        // A move deletes first, then adds the same number a level down.
        let mv = VersionEdit {
            deleted: vec![(0, 29)],
            added: vec![(1, meta(29, "a", "f", 1))],
            ..VersionEdit::default()
        };
        assert_eq!(v.apply(&mv).unwrap().levels[1][0].number, 29);
    }

    /// Seqnos past `MAX_SEQNO` do not fit a key trailer and file numbers near `u64::MAX`
    /// overflow the next number: both are corruption, not values to replay.
    #[test]
    fn out_of_range_seqnos_and_file_numbers_are_rejected() {
        let mut f = meta(9, "a", "m", 5);
        f.largest_seqno = MAX_SEQNO + 1;
        let e = VersionEdit {
            added: vec![(2, f)],
            ..VersionEdit::default()
        };
        assert!(VersionEdit::decode(&e.encode())
            .unwrap_err()
            .contains("largest seqno"));
        let e = VersionEdit {
            last_sequence: Some(u64::MAX),
            ..VersionEdit::default()
        };
        assert!(VersionEdit::decode(&e.encode()).is_err());
        let e = VersionEdit {
            added: vec![(2, meta(u64::MAX, "a", "m", 5))],
            ..VersionEdit::default()
        };
        assert!(VersionEdit::decode(&e.encode())
            .unwrap_err()
            .contains("out of range"));
    }

    /// A key length claiming 4 GiB allocates nothing: the decoder reports the missing bytes.
    #[test]
    fn huge_key_length_is_an_error_not_an_allocation() {
        let mut b = Vec::new();
        put_varint32(&mut b, TAG_ADDED);
        put_varint32(&mut b, 1);
        put_varint64(&mut b, 9);
        put_varint64(&mut b, 100);
        put_varint32(&mut b, u32::MAX);
        b.extend_from_slice(b"short");
        assert_eq!(
            VersionEdit::decode(&b).unwrap_err(),
            "truncated smallest key"
        );
    }

    #[test]
    fn exclusive_largest_does_not_overlap_its_end() {
        let mut f = meta(1, "a", "c", 1);
        f.largest = make_internal_key(b"c", MAX_SEQNO, ValueKind::RangeDeletion);
        assert!(f.largest_is_exclusive());
        assert!(!f.overlaps(Some(b"c"), Some(b"d")));
        assert!(f.overlaps(Some(b"b"), Some(b"d")));
    }
}
