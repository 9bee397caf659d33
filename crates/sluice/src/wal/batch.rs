//! [`WriteBatch`]: an atomic group of updates, and its encoding (the WAL record payload).
//!
//! ```text
//! rep    := seqno:fixed64 count:fixed32 record*
//! record := kind:u8 key:varstring [value:varstring]   (value for puts and range deletions)
//! ```
//! The batch's entries get consecutive seqnos starting at `seqno`.
//!
//! An *ingest record* (a flushable ingest, see `db/ingest`) shares the header with
//! `count = u32::MAX`, followed by an opaque payload (the ingested tables' metadata): its
//! tables are read at `seqno` onwards. Readers that predate it reject the count.
//!
//! An *install marker* (`count = u32::MAX - 1`, seqno 0, payload `manifest:fixed64
//! end:fixed64`) follows an ingest installed by a MANIFEST edit alone: it says that the edit
//! ending at byte `end` of MANIFEST `manifest` was durable before any record after the marker
//! was written. Recovery skips it; a read-only open, which reads the MANIFEST before the WALs,
//! stops its replay at a marker its MANIFEST read did not reach (`db/read_only.rs`), so it
//! never shows a write acknowledged after an ingest without that ingest.

use crate::base::coding::{decode_fixed32, decode_fixed64, put_varint32, Reader};
use crate::base::key::{ValueKind, MAX_SEQNO};

const HEADER: usize = 12;
const INGEST_MARKER: u32 = u32::MAX;

/// Encodes an ingest record: tables read at seqnos from `seqno`, described by `payload`.
pub fn encode_ingest_record(seqno: u64, payload: &[u8]) -> Vec<u8> {
    let mut rep = Vec::with_capacity(HEADER + payload.len());
    rep.extend_from_slice(&seqno.to_le_bytes());
    rep.extend_from_slice(&INGEST_MARKER.to_le_bytes());
    rep.extend_from_slice(payload);
    rep
}

/// The (seqno, payload) of an ingest record, or `None` for an ordinary batch.
pub fn decode_ingest_record(rep: &[u8]) -> Option<(u64, &[u8])> {
    if rep.len() < HEADER || decode_fixed32(&rep[8..12]) != Some(INGEST_MARKER) {
        return None;
    }
    Some((decode_fixed64(&rep[..8])?, &rep[HEADER..]))
}

const INSTALL_MARKER: u32 = u32::MAX - 1;

/// Encodes an install marker: the ingest edit ending at byte `end` of MANIFEST `manifest` is
/// durable.
pub fn encode_install_marker(manifest: u64, end: u64) -> Vec<u8> {
    let mut rep = Vec::with_capacity(HEADER + 16);
    rep.extend_from_slice(&0u64.to_le_bytes());
    rep.extend_from_slice(&INSTALL_MARKER.to_le_bytes());
    rep.extend_from_slice(&manifest.to_le_bytes());
    rep.extend_from_slice(&end.to_le_bytes());
    rep
}

/// The (MANIFEST number, end offset) of an install marker, or `None` for any other record.
/// A record with the marker's count but not its length is `None` too (and then fails as a
/// batch).
pub fn decode_install_marker(rep: &[u8]) -> Option<(u64, u64)> {
    if rep.len() != HEADER + 16 || decode_fixed32(&rep[8..12]) != Some(INSTALL_MARKER) {
        return None;
    }
    Some((
        decode_fixed64(&rep[HEADER..HEADER + 8])?,
        decode_fixed64(&rep[HEADER + 8..])?,
    ))
}

/// An atomic group of puts, deletes and range deletes.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("count", &self.count())
            .field("bytes", &self.rep.len())
            .finish()
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

/// One decoded batch entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    /// The kind of update.
    pub kind: ValueKind,
    /// The key (the start key for range deletions).
    pub key: &'a [u8],
    /// The value (the exclusive end key for range deletions; empty for deletions).
    pub value: &'a [u8],
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER],
        }
    }

    /// An empty batch with room for `bytes` bytes of entries before it grows (an entry takes
    /// its key and value plus at most [`WriteBatch::ENTRY_OVERHEAD`] bytes).
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER.saturating_add(bytes));
        rep.resize(HEADER, 0);
        WriteBatch { rep }
    }

    /// Most bytes an entry adds beside its key and value: its kind and two varint lengths.
    pub const ENTRY_OVERHEAD: usize = 11;

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.push(ValueKind::Value, key, Some(value));
    }

    /// Deletes `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.push(ValueKind::Deletion, key, None);
    }

    /// Deletes every key in `[start, end)`.
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) {
        self.push(ValueKind::RangeDeletion, start, Some(end));
    }

    fn push(&mut self, kind: ValueKind, key: &[u8], value: Option<&[u8]>) {
        self.rep.push(kind as u8);
        put_varint32(&mut self.rep, key.len() as u32);
        self.rep.extend_from_slice(key);
        if let Some(v) = value {
            put_varint32(&mut self.rep, v.len() as u32);
            self.rep.extend_from_slice(v);
        }
        let c = self.count() + 1;
        self.rep[8..12].copy_from_slice(&c.to_le_bytes());
    }

    /// Number of entries.
    pub fn count(&self) -> u32 {
        decode_fixed32(&self.rep[8..]).unwrap_or(0)
    }

    /// True if the batch holds no entries.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER, 0);
    }

    /// The first seqno (set by the write path).
    pub fn seqno(&self) -> u64 {
        decode_fixed64(&self.rep).unwrap_or(0)
    }

    pub(crate) fn set_seqno(&mut self, seqno: u64) {
        self.rep[..8].copy_from_slice(&seqno.to_le_bytes());
    }

    /// Encoded size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.rep.len()
    }

    /// The encoding (the WAL payload).
    pub fn rep(&self) -> &[u8] {
        &self.rep
    }

    /// Appends all entries of `other`.
    pub fn append(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(&other.rep[HEADER..]);
        let c = self.count() + other.count();
        self.rep[8..12].copy_from_slice(&c.to_le_bytes());
    }

    /// Decodes a batch, validating every entry. Errors are reasons.
    pub fn from_rep(rep: Vec<u8>) -> Result<WriteBatch, String> {
        if rep.len() < HEADER {
            return Err(format!(
                "write batch of {} bytes is shorter than its header",
                rep.len()
            ));
        }
        let b = WriteBatch { rep };
        let mut n = 0u32;
        for e in b.iter() {
            e?;
            n += 1;
        }
        if n != b.count() {
            return Err(format!(
                "write batch header says {} entries, found {n}",
                b.count()
            ));
        }
        // Entries take seqnos `seqno..seqno + n`; each must fit an internal key's trailer.
        if n > 0 && b.seqno() > MAX_SEQNO - u64::from(n - 1) {
            return Err(format!(
                "write batch seqnos {}+{n} run past the largest seqno {MAX_SEQNO}",
                b.seqno()
            ));
        }
        Ok(b)
    }

    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = Result<BatchEntry<'_>, String>> {
        let mut r = Reader::new(&self.rep[HEADER..]);
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed || r.remaining().is_empty() {
                return None;
            }
            let res = (|| {
                let kind_byte = r.bytes(1).ok_or("truncated entry")?[0];
                let kind = ValueKind::from_u8(kind_byte)
                    .ok_or_else(|| format!("unknown entry kind {kind_byte}"))?;
                let key = r.length_prefixed().ok_or("truncated key")?;
                let value = match kind {
                    ValueKind::Deletion => &[][..],
                    _ => r.length_prefixed().ok_or("truncated value")?,
                };
                Ok(BatchEntry { kind, key, value })
            })();
            failed = res.is_err();
            Some(res)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An install marker reads back as itself and as nothing else: not an ingest record, and
    /// not a batch (so a reader that predates it fails on it instead of misreading it); a
    /// batch, an ingest record, or a marker cut short is not a marker.
    #[test]
    fn install_markers_are_told_from_other_records() {
        let m = encode_install_marker(7, 1 << 40);
        assert_eq!(decode_install_marker(&m), Some((7, 1 << 40)));
        assert_eq!(decode_ingest_record(&m), None);
        assert!(WriteBatch::from_rep(m.clone()).is_err());
        assert_eq!(decode_install_marker(&m[..m.len() - 1]), None);
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        assert_eq!(decode_install_marker(b.rep()), None);
        assert_eq!(
            decode_install_marker(&encode_ingest_record(3, &[0; 16])),
            None
        );
    }

    /// A batch sized by `with_capacity` for one entry encodes as `new` does and never grows,
    /// for lengths whose varints take 1 to 3 bytes.
    #[test]
    fn one_entry_fits_its_capacity() {
        for (k, v) in [(0, 0), (16, 100), (200, 300_000), (70_000, 5)] {
            let (key, value) = (vec![1u8; k], vec![2u8; v]);
            let mut sized = WriteBatch::with_capacity(k + v + WriteBatch::ENTRY_OVERHEAD);
            let cap = sized.rep.capacity();
            sized.put(&key, &value);
            assert_eq!(
                sized.rep.capacity(),
                cap,
                "put of {k}/{v} bytes grew the batch"
            );
            let mut plain = WriteBatch::new();
            plain.put(&key, &value);
            assert_eq!(sized.rep(), plain.rep());
            let mut del = WriteBatch::with_capacity(k + WriteBatch::ENTRY_OVERHEAD);
            let cap = del.rep.capacity();
            del.delete(&key);
            assert_eq!(del.rep.capacity(), cap);
        }
    }

    #[test]
    fn encode_decode_roundtrip() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.delete(b"b");
        b.delete_range(b"c", b"f");
        b.set_seqno(77);
        let d = WriteBatch::from_rep(b.rep().to_vec()).unwrap();
        assert_eq!(d.seqno(), 77);
        let e: Vec<_> = d.iter().map(|e| e.unwrap()).collect();
        assert_eq!(e.len(), 3);
        assert_eq!(
            (e[0].kind, e[0].key, e[0].value),
            (ValueKind::Value, &b"a"[..], &b"1"[..])
        );
        assert_eq!((e[1].kind, e[1].key), (ValueKind::Deletion, &b"b"[..]));
        assert_eq!(
            (e[2].kind, e[2].key, e[2].value),
            (ValueKind::RangeDeletion, &b"c"[..], &b"f"[..])
        );
    }

    #[test]
    fn truncated_or_miscounted_batches_are_rejected() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        let rep = b.rep().to_vec();
        for cut in 0..rep.len() {
            assert!(
                WriteBatch::from_rep(rep[..cut].to_vec()).is_err(),
                "cut {cut}"
            );
        }
        let mut bad = rep.clone();
        bad[8] = 2;
        assert!(WriteBatch::from_rep(bad).is_err());
    }

    /// Found by the seeded mutation test (`tests/fuzz_seeded.rs`): a WAL record whose seqno
    /// field had its top byte flipped reached the memtable and tripped the trailer's
    /// `seqno <= MAX_SEQNO` assertion during recovery.
    #[test]
    fn seqnos_past_the_largest_are_rejected() {
        let mut b = WriteBatch::new();
        b.put(b"k1", b"v");
        b.put(b"k2", b"v");
        b.set_seqno(MAX_SEQNO - 1);
        assert!(WriteBatch::from_rep(b.rep().to_vec()).is_ok());
        b.set_seqno(MAX_SEQNO);
        let e = WriteBatch::from_rep(b.rep().to_vec()).unwrap_err();
        assert!(e.contains("largest seqno"), "{e}");
        b.set_seqno(u64::MAX);
        assert!(WriteBatch::from_rep(b.rep().to_vec()).is_err());
    }

    /// A count or key length claiming gigabytes allocates nothing: the decoder walks the
    /// bytes that are there and reports what is missing.
    #[test]
    fn huge_lengths_and_counts_are_errors_not_allocations() {
        let mut rep = vec![0u8; HEADER];
        rep[8..12].copy_from_slice(&u32::MAX.wrapping_sub(1).to_le_bytes());
        rep.push(ValueKind::Value as u8);
        rep.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]); // key length 4 GiB - 1
        rep.extend_from_slice(b"short");
        let e = WriteBatch::from_rep(rep).unwrap_err();
        assert_eq!(e, "truncated key");
    }
}
