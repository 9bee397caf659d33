//! RocksDB's MANIFEST, read-only, as [`Edit`]s of its default column family.
//!
//! The framing is the LevelDB record log Sluice shares (`sluice::wal::log`); each record is a
//! RocksDB `VersionEdit`: a sequence of varint32 tags, each followed by its fields (RocksDB
//! `db/version_edit.{h,cc}`). Read here:
//! * 1 comparator, 2 log number, 3 next file, 4 last sequence, 5 compact cursor,
//!   6 deleted file, 7/100/102/103 new file (103: custom fields — a field whose tag has bit 6
//!   set and that this reader does not know is refused, as RocksDB refuses it; others are
//!   skipped), 9 prev log number, 10 min log number to keep;
//! * 200 column family, 201 add, 202 drop, 203 max column family, 300 in atomic group;
//! * 400/401 blob file addition/garbage (and their deprecated forward-compatible numbers),
//!   WAL addition/deletion (both encodings), db id, full history ts low, persist user-defined
//!   timestamps, subcompaction progress, last compacted MANIFEST size;
//! * any other tag with `kTagSafeIgnoreMask` (1 << 13) set is length-prefixed and skipped;
//!   any other tag is refused.
//!
//! Refusals and damage are `sluice::Error::Corruption` naming the MANIFEST, the record's
//! offset and the byte within the record. Slices borrow the record; the only allocations are
//! the boundary keys and names, each bounded by the record's length.
//!
//! RocksDB writes a new MANIFEST at every open, starting with a dump of the state (per column
//! family: an edit with its comparator, then one with its files): those edits are marked
//! `snapshot`, so history starts at the last open.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use sluice::coding::Reader;
use sluice::version::{FileMeta, NUM_LEVELS};
use sluice::wal::log::{LogEnd, LogReader};

use super::{Edit, TornTail};

const K_COMPARATOR: u32 = 1;
const K_LOG_NUMBER: u32 = 2;
const K_NEXT_FILE_NUMBER: u32 = 3;
const K_LAST_SEQUENCE: u32 = 4;
const K_COMPACT_CURSOR: u32 = 5;
const K_DELETED_FILE: u32 = 6;
const K_NEW_FILE: u32 = 7;
const K_PREV_LOG_NUMBER: u32 = 9;
const K_MIN_LOG_NUMBER_TO_KEEP: u32 = 10;
const K_NEW_FILE2: u32 = 100;
const K_NEW_FILE3: u32 = 102;
const K_NEW_FILE4: u32 = 103;
const K_COLUMN_FAMILY: u32 = 200;
const K_COLUMN_FAMILY_ADD: u32 = 201;
const K_COLUMN_FAMILY_DROP: u32 = 202;
const K_MAX_COLUMN_FAMILY: u32 = 203;
const K_IN_ATOMIC_GROUP: u32 = 300;
const K_BLOB_FILE_ADDITION: u32 = 400;
const K_BLOB_FILE_GARBAGE: u32 = 401;
const K_TAG_SAFE_IGNORE_MASK: u32 = 1 << 13;
const K_DB_ID: u32 = K_TAG_SAFE_IGNORE_MASK + 1;
const K_BLOB_FILE_ADDITION_DEPRECATED: u32 = K_TAG_SAFE_IGNORE_MASK + 2;
const K_BLOB_FILE_GARBAGE_DEPRECATED: u32 = K_TAG_SAFE_IGNORE_MASK + 3;
const K_WAL_ADDITION: u32 = K_TAG_SAFE_IGNORE_MASK + 4;
const K_WAL_DELETION: u32 = K_TAG_SAFE_IGNORE_MASK + 5;
const K_FULL_HISTORY_TS_LOW: u32 = K_TAG_SAFE_IGNORE_MASK + 6;
const K_WAL_ADDITION2: u32 = K_TAG_SAFE_IGNORE_MASK + 7;
const K_WAL_DELETION2: u32 = K_TAG_SAFE_IGNORE_MASK + 8;
const K_PERSIST_UDT: u32 = K_TAG_SAFE_IGNORE_MASK + 9;
const K_SUBCOMPACTION_PROGRESS: u32 = K_TAG_SAFE_IGNORE_MASK + 10;
const K_LAST_COMPACTED_MANIFEST_SIZE: u32 = K_TAG_SAFE_IGNORE_MASK + 11;

/// NewFile4 custom fields: the end marker, the path id, and the bit that makes an unknown
/// field fatal. Known fields 2..=17 are skipped (their values are not drawn).
const NF4_TERMINATE: u32 = 1;
const NF4_LAST_KNOWN: u32 = 17;
const NF4_NON_SAFE_IGNORE_MASK: u32 = 1 << 6;
const NF4_PATH_ID: u32 = NF4_NON_SAFE_IGNORE_MASK + 1;
/// Blob addition/garbage custom fields: end marker and the forward-incompatible bit.
const BLOB_END: u32 = 0;
const BLOB_FORWARD_INCOMPATIBLE: u32 = 1 << 6;
/// WAL addition fields.
const WAL_TERMINATE: u32 = 1;
const WAL_SYNCED_SIZE: u32 = 2;

/// One decoded RocksDB edit: the neutral edit and its column family bookkeeping.
#[derive(Debug, Default)]
struct RocksEdit {
    edit: Edit,
    cf: u32,
    cf_add: Option<String>,
    cf_drop: bool,
    comparator: bool,
}

/// The default column family's edits, every column family as (id, name, edits), and where a
/// torn tail cuts the MANIFEST.
pub struct RocksHistory {
    /// Edits of column family 0, in order.
    pub edits: Vec<Edit>,
    /// (id, name, edits) of every column family seen.
    pub column_families: Vec<(u32, String, u64)>,
    /// (offset, reason) of a torn tail.
    pub torn_tail: Option<TornTail>,
}

/// Reads every edit of the RocksDB MANIFEST at `path` (bytes `data`).
pub fn read_edits(path: &Path, data: &[u8]) -> Result<RocksHistory, sluice::Error> {
    let mut r = LogReader::new(data, path);
    let mut cfs: BTreeMap<u32, (String, u64)> = BTreeMap::new();
    cfs.insert(0, ("default".into(), 0));
    let mut edits = Vec::new();
    // The state dump a MANIFEST starts with: a column family's comparator edit is followed by
    // its files edit; the dump ends at the first edit with files that is not such an edit.
    let mut in_dump = true;
    let mut dump_pending: HashSet<u32> = HashSet::new();
    while let Some((off, rec)) = r.next_record()? {
        let mut e = decode(&rec).map_err(|(at, why)| {
            sluice::Error::corruption(path, off, format!("RocksDB version edit, byte {at}: {why}"))
        })?;
        e.edit.offset = off;
        if let Some(name) = &e.cf_add {
            cfs.insert(e.cf, (name.clone(), 0));
        }
        if let Some(c) = cfs.get_mut(&e.cf) {
            c.1 += 1;
            if e.cf_drop {
                c.0.push_str(" (dropped)");
            }
        }
        let has_files = !e.edit.added.is_empty() || !e.edit.deleted.is_empty();
        if in_dump {
            if e.comparator {
                dump_pending.insert(e.cf);
                e.edit.snapshot = true;
            } else if dump_pending.remove(&e.cf) {
                e.edit.snapshot = true;
            } else if has_files {
                in_dump = false;
            }
        }
        if e.cf != 0 {
            continue;
        }
        if let Some((level, f)) = e.edit.added.iter().find(|(l, _)| *l >= NUM_LEVELS) {
            return Err(sluice::Error::corruption(
                path,
                off,
                format!(
                    "file {} at level {level}: only levels 0-{} are drawn (num_levels > {NUM_LEVELS})",
                    f.number,
                    NUM_LEVELS - 1
                ),
            ));
        }
        if let Some((level, n)) = e.edit.deleted.iter().find(|(l, _)| *l >= NUM_LEVELS) {
            return Err(sluice::Error::corruption(
                path,
                off,
                format!("deleted file {n} at level {level}: only levels 0-6 are drawn"),
            ));
        }
        edits.push(e.edit);
    }
    let torn_tail = match r.end() {
        Some(LogEnd::TornTail(off, why)) => Some((*off, why.to_string())),
        _ => None,
    };
    Ok(RocksHistory {
        edits,
        column_families: cfs.into_iter().map(|(id, (n, c))| (id, n, c)).collect(),
        torn_tail,
    })
}

/// A decoding failure: (byte within the record, what).
type Fail = (usize, String);

/// A cursor over one record that reports where it failed.
struct Rec<'a> {
    r: Reader<'a>,
    len: usize,
}

impl<'a> Rec<'a> {
    fn at(&self) -> usize {
        self.len - self.r.remaining().len()
    }
    fn fail<T>(&self, what: impl Into<String>) -> Result<T, Fail> {
        Err((self.at(), what.into()))
    }
    fn v32(&mut self, what: &str) -> Result<u32, Fail> {
        match self.r.varint32() {
            Some(v) => Ok(v),
            None => self.fail(format!("truncated {what}")),
        }
    }
    fn v64(&mut self, what: &str) -> Result<u64, Fail> {
        match self.r.varint64() {
            Some(v) => Ok(v),
            None => self.fail(format!("truncated {what}")),
        }
    }
    fn slice(&mut self, what: &str) -> Result<&'a [u8], Fail> {
        match self.r.length_prefixed() {
            Some(v) => Ok(v),
            None => self.fail(format!("truncated {what}")),
        }
    }
    fn ikey(&mut self, what: &str) -> Result<Vec<u8>, Fail> {
        let k = self.slice(what)?;
        if k.len() < 8 {
            return self.fail(format!(
                "{what} is shorter than an internal key's 8-byte trailer"
            ));
        }
        Ok(k.to_vec())
    }
    fn level(&mut self) -> Result<usize, Fail> {
        Ok(self.v32("level")? as usize)
    }
}

/// Decodes one record.
fn decode(rec: &[u8]) -> Result<RocksEdit, Fail> {
    let mut c = Rec {
        r: Reader::new(rec),
        len: rec.len(),
    };
    let mut e = RocksEdit::default();
    let notes = |e: &mut RocksEdit, s: String| e.edit.notes.push(s);
    while !c.r.remaining().is_empty() {
        let tag_at = c.at();
        let tag = c.v32("tag")?;
        match tag {
            K_COMPARATOR => {
                let name = c.slice("comparator name")?;
                e.comparator = true;
                notes(
                    &mut e,
                    format!("comparator {}", String::from_utf8_lossy(name)),
                );
            }
            K_LOG_NUMBER => e.edit.log_number = Some(c.v64("log number")?),
            K_PREV_LOG_NUMBER => {
                c.v64("prev log number")?;
            }
            K_NEXT_FILE_NUMBER => {
                c.v64("next file number")?;
            }
            K_LAST_SEQUENCE => e.edit.last_sequence = Some(c.v64("last sequence")?),
            K_MIN_LOG_NUMBER_TO_KEEP => {
                c.v64("min log number to keep")?;
            }
            K_MAX_COLUMN_FAMILY => {
                c.v32("max column family")?;
            }
            K_COMPACT_CURSOR => {
                let level = c.level()?;
                c.ikey("compact cursor")?;
                notes(&mut e, format!("compact cursor L{level}"));
            }
            K_DELETED_FILE => {
                let level = c.level()?;
                let number = c.v64("deleted file number")?;
                e.edit.deleted.push((level, number));
            }
            K_NEW_FILE | K_NEW_FILE2 | K_NEW_FILE3 | K_NEW_FILE4 => {
                let f = new_file(&mut c, tag)?;
                e.edit.added.push(f);
            }
            K_COLUMN_FAMILY => e.cf = c.v32("column family id")?,
            K_COLUMN_FAMILY_ADD => {
                let name = String::from_utf8_lossy(c.slice("column family name")?).into_owned();
                notes(&mut e, format!("column family {name} added"));
                e.cf_add = Some(name);
            }
            K_COLUMN_FAMILY_DROP => {
                e.cf_drop = true;
                notes(&mut e, "column family dropped".into());
            }
            K_IN_ATOMIC_GROUP => {
                let n = c.v32("atomic group remaining entries")?;
                notes(&mut e, format!("atomic group, {n} more edits"));
            }
            K_BLOB_FILE_ADDITION | K_BLOB_FILE_ADDITION_DEPRECATED => {
                let n = blob_file(&mut c, true)?;
                notes(&mut e, format!("blob file {n} added"));
            }
            K_BLOB_FILE_GARBAGE | K_BLOB_FILE_GARBAGE_DEPRECATED => {
                let n = blob_file(&mut c, false)?;
                notes(&mut e, format!("blob file {n} garbage"));
            }
            K_WAL_ADDITION => {
                let n = wal_addition(&mut c)?;
                notes(&mut e, format!("WAL {n} added"));
            }
            K_WAL_ADDITION2 => {
                let body = c.slice("WAL addition")?;
                let mut inner = Rec {
                    r: Reader::new(body),
                    len: body.len(),
                };
                let n = wal_addition(&mut inner).map_err(|(_, w)| (tag_at, w))?;
                notes(&mut e, format!("WAL {n} added"));
            }
            K_WAL_DELETION => {
                let n = c.v64("WAL deletion number")?;
                notes(&mut e, format!("WALs before {n} deleted"));
            }
            K_WAL_DELETION2 => {
                let body = c.slice("WAL deletion")?;
                let n = Reader::new(body)
                    .varint64()
                    .ok_or((tag_at, "truncated WAL deletion number".to_string()))?;
                notes(&mut e, format!("WALs before {n} deleted"));
            }
            K_DB_ID => {
                c.slice("db id")?;
                notes(&mut e, "db id".into());
            }
            K_FULL_HISTORY_TS_LOW
            | K_PERSIST_UDT
            | K_SUBCOMPACTION_PROGRESS
            | K_LAST_COMPACTED_MANIFEST_SIZE => {
                c.slice("field")?;
            }
            t if t & K_TAG_SAFE_IGNORE_MASK != 0 => {
                c.slice("forward-compatible field")?;
                notes(&mut e, format!("unknown ignorable tag {t} skipped"));
            }
            t => {
                return Err((
                    tag_at,
                    format!("unknown tag {t} (not marked safe to ignore)"),
                ))
            }
        }
    }
    Ok(e)
}

/// A kNewFile/2/3/4 entry: (level, file).
fn new_file(c: &mut Rec<'_>, tag: u32) -> Result<(usize, Arc<FileMeta>), Fail> {
    let level = c.level()?;
    let number = c.v64("new file number")?;
    if tag == K_NEW_FILE3 {
        c.v32("path id")?;
    }
    let size = c.v64("new file size")?;
    let smallest = c.ikey("smallest key")?;
    let largest = c.ikey("largest key")?;
    let (mut smallest_seqno, mut largest_seqno) = (0, sluice::key::MAX_SEQNO);
    if tag != K_NEW_FILE {
        smallest_seqno = c.v64("smallest seqno")?;
        largest_seqno = c.v64("largest seqno")?;
    }
    if tag == K_NEW_FILE4 {
        loop {
            let at = c.at();
            let custom = c.v32("new-file4 custom tag")?;
            if custom == NF4_TERMINATE {
                break;
            }
            let field = c.slice("new-file4 custom field")?;
            let known = (2..=NF4_LAST_KNOWN).contains(&custom) || custom == NF4_PATH_ID;
            if custom == NF4_PATH_ID && (field.len() != 1 || field[0] > 3) {
                return Err((at, "new-file4 path id field is not one byte 0-3".into()));
            }
            if !known && custom & NF4_NON_SAFE_IGNORE_MASK != 0 {
                return Err((
                    at,
                    format!("new-file4 custom field {custom} is not supported (marked not safe to ignore)"),
                ));
            }
        }
    }
    Ok((
        level,
        Arc::new(FileMeta {
            number,
            size,
            smallest,
            largest,
            smallest_seqno,
            largest_seqno,
            global_seqno: 0,
            range_dels: 0,
        }),
    ))
}

/// A blob file addition (`addition`) or garbage record; returns the blob file number.
fn blob_file(c: &mut Rec<'_>, addition: bool) -> Result<u64, Fail> {
    let n = c.v64("blob file number")?;
    c.v64("blob count")?;
    c.v64("blob bytes")?;
    if addition {
        c.slice("blob checksum method")?;
        c.slice("blob checksum value")?;
    }
    loop {
        let at = c.at();
        let t = c.v32("blob custom field tag")?;
        if t == BLOB_END {
            return Ok(n);
        }
        if t & BLOB_FORWARD_INCOMPATIBLE != 0 {
            return Err((
                at,
                format!("blob file custom field {t} is forward incompatible"),
            ));
        }
        c.slice("blob custom field")?;
    }
}

/// A WAL addition; returns the WAL number.
fn wal_addition(c: &mut Rec<'_>) -> Result<u64, Fail> {
    let n = c.v64("WAL number")?;
    loop {
        let at = c.at();
        match c.v32("WAL addition tag")? {
            WAL_TERMINATE => return Ok(n),
            WAL_SYNCED_SIZE => {
                c.v64("WAL synced size")?;
            }
            t => return Err((at, format!("unknown WAL addition tag {t}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice::coding::{put_varint32, put_varint64};

    fn lp(b: &mut Vec<u8>, s: &[u8]) {
        put_varint32(b, s.len() as u32);
        b.extend_from_slice(s);
    }

    fn ikey(k: &[u8], seq: u64) -> Vec<u8> {
        let mut v = k.to_vec();
        v.extend_from_slice(&((seq << 8) | 1).to_le_bytes());
        v
    }

    fn new_file4(custom: &[(u32, &[u8])]) -> Vec<u8> {
        let mut b = Vec::new();
        put_varint32(&mut b, K_NEW_FILE4);
        put_varint32(&mut b, 0);
        put_varint64(&mut b, 12);
        put_varint64(&mut b, 4096);
        lp(&mut b, &ikey(b"a", 5));
        lp(&mut b, &ikey(b"z", 9));
        put_varint64(&mut b, 5);
        put_varint64(&mut b, 9);
        for (t, v) in custom {
            put_varint32(&mut b, *t);
            lp(&mut b, v);
        }
        put_varint32(&mut b, NF4_TERMINATE);
        b
    }

    #[test]
    fn new_file4_skips_known_and_safe_fields_and_refuses_unsafe_ones() {
        let e = decode(&new_file4(&[(6, &[0x80, 0x01]), (13, &[3]), (30, b"x")])).unwrap();
        let (l, f) = &e.edit.added[0];
        assert_eq!((*l, f.number, f.size, f.largest_seqno), (0, 12, 4096, 9));
        assert_eq!(f.largest_user(), b"z");
        let err = decode(&new_file4(&[(NF4_NON_SAFE_IGNORE_MASK + 9, b"?")])).unwrap_err();
        assert!(err.1.contains("not supported"), "{err:?}");
        assert!(decode(&new_file4(&[(NF4_PATH_ID, &[1])])).is_ok());
    }

    #[test]
    fn unknown_tags_ignorable_or_refused_and_truncation_never_panics() {
        let mut b = Vec::new();
        put_varint32(&mut b, K_TAG_SAFE_IGNORE_MASK + 77);
        lp(&mut b, b"future");
        put_varint32(&mut b, K_COLUMN_FAMILY);
        put_varint32(&mut b, 3);
        let e = decode(&b).unwrap();
        assert_eq!(e.cf, 3);
        let mut bad = Vec::new();
        put_varint32(&mut bad, 77);
        assert!(decode(&bad).unwrap_err().1.contains("unknown tag 77"));
        let full = new_file4(&[(5, &[1])]);
        for cut in 0..full.len() {
            let _ = decode(&full[..cut]);
        }
        // A key length claiming 4 GiB allocates nothing.
        let mut huge = Vec::new();
        put_varint32(&mut huge, K_COMPARATOR);
        put_varint32(&mut huge, u32::MAX);
        assert!(decode(&huge).is_err());
    }
}
