//! The LevelDB record log, used by the WAL and the MANIFEST.
//!
//! The file is a sequence of 32 KiB blocks. A record is split into fragments that never cross
//! a block; each fragment has a 7-byte header: masked CRC32c of `type ‖ payload` (4), payload
//! length (2, LE) and type (FULL=1, FIRST=2, MIDDLE=3, LAST=4). A block tail shorter than a
//! header is zero-filled.
//!
//! Recovery policy of [`LogReader`]:
//! 1. Damage followed by a chain of complete, valid records that runs to the clean end of the
//!    file is corruption in the middle: [`Error::Corruption`] naming the file and the damaged
//!    record's offset. Records written after the damaged one form such a chain.
//! 2. Any other damage is a *torn tail* — the unsynced end of a crashed write — and reading
//!    stops cleanly before it. Log-framed bytes inside the torn record's own payload (a value
//!    that is itself a log) do not reach the end of the file as a chain: they run into the
//!    rest of that payload or into the tear. A lone MIDDLE/LAST fragment at a block boundary
//!    (the rest of a record begun before the damage) is stepped over, not counted.
//!
//! Limit: corruption in the middle *and* a torn tail at the end at once is read as a torn tail
//! at the first damage (as RocksDB's default point-in-time recovery would).
//!
//! Preallocated tails ([`LogReader::wal`], for WALs only): a WAL written through a mapping of
//! preallocated space (`Options::wal_mmap_writes`) is longer than its records until it is
//! closed (a multiple of [`MAPPED_LOG_ALIGN`](crate::fs::MAPPED_LOG_ALIGN) long), and its pages
//! may reach the disk in any order before a sync. For a WAL of such a length:
//! 3. A fragment header from which the rest of the file is zeros is the clean end of the log.
//! 4. Damage whose stretch up to the next valid chain holds a whole 4 KiB page of zeros is a
//!    torn tail, not corruption: a page written after the last sync that never reached the
//!    disk reads as zeros, while later pages did. Other damage follows rules 1 and 2.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::base::crc::{mask_crc, unmask_crc};
use crate::base::error::{Error, Result};
use crate::fs::WritableFile;

/// Size of a log block.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Size of a fragment header.
pub const HEADER_SIZE: usize = 7;
/// The unit in which a preallocated WAL's unsynced pages reach the disk (rule 4).
const PAGE: usize = 4096;

const FULL: u8 = 1;
const FIRST: u8 = 2;
const MIDDLE: u8 = 3;
const LAST: u8 = 4;

/// Appends records to a log file.
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    block_offset: usize,
    size: u64,
    /// `size` at the last successful sync.
    synced: u64,
    buf: Vec<u8>,
    /// An append or sync failed: the file may end in a torn record, so nothing is appended
    /// after it (a valid record behind damage would read as corruption) and nothing is
    /// reported durable.
    failed: bool,
}

impl LogWriter {
    /// A writer appending to a new, empty file.
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        LogWriter {
            file,
            block_offset: 0,
            size: 0,
            synced: 0,
            buf: Vec::with_capacity(BLOCK_SIZE),
            failed: false,
        }
    }

    /// A writer continuing a log file that already holds `size` bytes of complete records (the
    /// history `carry_manifest` copies into a new MANIFEST): the next record starts at the
    /// right place in its 32 KiB block, and the next `sync` — a file-wide fdatasync — makes
    /// those bytes durable with it.
    pub fn appending(file: Box<dyn WritableFile>, size: u64) -> Self {
        LogWriter {
            file,
            block_offset: (size % BLOCK_SIZE as u64) as usize,
            size,
            synced: size,
            buf: Vec::with_capacity(BLOCK_SIZE),
            failed: false,
        }
    }

    /// Appends one record and hands it to the OS (not synced).
    pub fn add_record(&mut self, data: &[u8]) -> io::Result<()> {
        self.check()?;
        let r = self.append(data);
        self.failed = r.is_err();
        r
    }

    fn check(&self) -> io::Result<()> {
        if self.failed {
            return Err(io::Error::other(
                "an earlier write or sync of this log failed",
            ));
        }
        Ok(())
    }

    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.buf.clear();
        let mut left = data;
        let mut begin = true;
        loop {
            let leftover = BLOCK_SIZE - self.block_offset;
            if leftover < HEADER_SIZE {
                self.buf.extend(std::iter::repeat_n(0u8, leftover));
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let n = left.len().min(avail);
            let end = n == left.len();
            let ty = match (begin, end) {
                (true, true) => FULL,
                (true, false) => FIRST,
                (false, true) => LAST,
                (false, false) => MIDDLE,
            };
            let frag = &left[..n];
            let crc = mask_crc(crc32c::crc32c_append(crc32c::crc32c(&[ty]), frag));
            self.buf.extend_from_slice(&crc.to_le_bytes());
            self.buf.extend_from_slice(&(n as u16).to_le_bytes());
            self.buf.push(ty);
            self.buf.extend_from_slice(frag);
            self.block_offset += HEADER_SIZE + n;
            left = &left[n..];
            begin = false;
            if end {
                break;
            }
        }
        self.file.write_all(&self.buf)?;
        self.file.flush()?;
        self.size += self.buf.len() as u64;
        Ok(())
    }

    /// Makes every record appended so far durable (a no-op when nothing new was appended).
    pub fn sync(&mut self) -> io::Result<()> {
        self.check()?;
        if self.synced == self.size && self.size > 0 {
            return Ok(());
        }
        if let Err(e) = self.file.sync() {
            self.failed = true;
            return Err(e);
        }
        self.synced = self.size;
        Ok(())
    }

    /// A handle syncing every record appended so far without access to this writer (see
    /// [`WritableFile::sync_handle`]); `None` when the file does not support it.
    /// After a failure: `None` (the caller's `sync` then reports it).
    pub fn sync_handle(&mut self) -> Option<crate::fs::SyncHandle> {
        if self.failed {
            return None;
        }
        self.file.sync_handle()
    }

    /// The file, for a writer that wrote nothing (a new WAL handed to another writer, e.g.
    /// through the WAL stage); once anything was written, `Err` gives the writer back.
    pub fn into_file(self) -> Result<Box<dyn WritableFile>, Self> {
        if self.size > 0 {
            return Err(self);
        }
        Ok(self.file)
    }

    /// Bytes written.
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// What stopped a reader: the clean end, or a torn tail at an offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEnd {
    /// Every byte was a valid record.
    Clean,
    /// The file ends with an incomplete or damaged record at this offset, with the reason.
    TornTail(u64, String),
}

/// Reads records from a whole log file held in memory.
pub struct LogReader<'a> {
    buf: &'a [u8],
    pos: usize,
    path: PathBuf,
    end: Option<LogEnd>,
    /// A fragment header at or past this offset ends the log cleanly: `buf.len()`, or for a
    /// WAL where the zeros of a preallocated tail begin (rule 3).
    clean_end: usize,
    /// Rules 3 and 4 apply.
    preallocated: bool,
}

enum Frag<'a> {
    Ok(u8, &'a [u8]),
    /// A bad fragment, with the reason.
    Bad(BadFrag),
    Eof,
}

/// Why a fragment is bad. Formatted only when the damage is reported: the search for valid
/// records after damage ([`LogReader::valid_record_after`]) probes every offset of a block,
/// nearly all of them bad, and allocating a message at each made a damaged log's recovery
/// allocation-bound (most of the WAL fuzz target's time under AddressSanitizer).
enum BadFrag {
    TruncatedHeader,
    ZeroFilled,
    UnknownType(u8),
    CrossesBlock(usize),
    Truncated,
    Checksum,
}

impl std::fmt::Display for BadFrag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadFrag::TruncatedHeader => f.write_str("truncated fragment header"),
            BadFrag::ZeroFilled => f.write_str("zero-filled region"),
            BadFrag::UnknownType(ty) => write!(f, "unknown fragment type {ty}"),
            BadFrag::CrossesBlock(len) => write!(f, "fragment length {len} crosses the block end"),
            BadFrag::Truncated => f.write_str("truncated fragment"),
            BadFrag::Checksum => f.write_str("fragment checksum mismatch"),
        }
    }
}

/// The fragment at `*pos` of `buf` (stepping over a block tail too short for a header), and
/// `*pos` past it when it is valid; a header at or past `clean_end` is the end.
fn fragment_at<'a>(buf: &'a [u8], pos: &mut usize, clean_end: usize) -> Frag<'a> {
    loop {
        let in_block = *pos % BLOCK_SIZE;
        if BLOCK_SIZE - in_block < HEADER_SIZE {
            *pos += BLOCK_SIZE - in_block;
            continue;
        }
        if *pos >= buf.len() || *pos >= clean_end {
            return Frag::Eof;
        }
        let rest = &buf[*pos..];
        if rest.len() < HEADER_SIZE {
            return Frag::Bad(BadFrag::TruncatedHeader);
        }
        let crc = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let len = u16::from_le_bytes([rest[4], rest[5]]) as usize;
        let ty = rest[6];
        if ty == 0 && len == 0 && crc == 0 {
            return Frag::Bad(BadFrag::ZeroFilled);
        }
        if !(FULL..=LAST).contains(&ty) {
            return Frag::Bad(BadFrag::UnknownType(ty));
        }
        if in_block + HEADER_SIZE + len > BLOCK_SIZE {
            return Frag::Bad(BadFrag::CrossesBlock(len));
        }
        if rest.len() < HEADER_SIZE + len {
            // The file ends inside this fragment: nothing can follow it.
            return Frag::Bad(BadFrag::Truncated);
        }
        let payload = &rest[HEADER_SIZE..HEADER_SIZE + len];
        let actual = crc32c::crc32c_append(crc32c::crc32c(&[ty]), payload);
        if unmask_crc(crc) != actual {
            return Frag::Bad(BadFrag::Checksum);
        }
        *pos += HEADER_SIZE + len;
        return Frag::Ok(ty, payload);
    }
}

impl<'a> LogReader<'a> {
    /// A reader over `buf`, the contents of `path`.
    pub fn new(buf: &'a [u8], path: &Path) -> Self {
        LogReader {
            buf,
            pos: 0,
            path: path.to_path_buf(),
            end: None,
            clean_end: buf.len(),
            preallocated: false,
        }
    }

    /// A reader over a WAL, which may have been written into preallocated space: a zero tail
    /// ends it cleanly, and damage spanning a zeroed page is a torn tail (rules 3 and 4).
    /// Only a file of a preallocated length is read so: a WAL written through `write(2)` is
    /// exactly its records, and a tear inside a record whose payload ends in zeros must stay a
    /// tear (the zeros are no end of the log).
    pub fn wal(buf: &'a [u8], path: &Path) -> Self {
        if !crate::fs::may_be_mapped_log(buf.len() as u64) {
            return Self::new(buf, path);
        }
        let zeros_from = buf.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        LogReader {
            clean_end: zeros_from,
            preallocated: true,
            ..Self::new(buf, path)
        }
    }

    /// How reading ended (after `next_record` returned `Ok(None)`).
    pub fn end(&self) -> Option<&LogEnd> {
        self.end.as_ref()
    }

    fn read_fragment(&mut self) -> Frag<'a> {
        fragment_at(self.buf, &mut self.pos, self.clean_end)
    }

    /// True if a chain of complete, valid records starts at `pos` and runs to the clean end of
    /// the file. With `skip_orphans` (at a block boundary, where the rest of a record begun
    /// before the damage may sit), leading MIDDLE and LAST fragments are stepped over first.
    ///
    /// Requiring the chain to reach the end tells the two kinds of damage apart: records
    /// written after a damaged one do reach it, while log-framed bytes inside a torn record's
    /// own payload (a value that is itself a log) run into the rest of that payload or into
    /// the tear.
    fn records_to_end_at(&self, pos: usize, skip_orphans: bool) -> bool {
        let mut pos = pos;
        let mut in_record = false;
        let mut records = 0usize;
        let mut orphans_allowed = skip_orphans;
        loop {
            match fragment_at(self.buf, &mut pos, self.clean_end) {
                Frag::Eof => return records > 0 && !in_record,
                Frag::Bad(..) => return false,
                Frag::Ok(ty, p) => match (ty, in_record) {
                    (FULL, false) if !p.is_empty() => records += 1,
                    (FIRST, false) => in_record = true,
                    (MIDDLE, true) => {}
                    (LAST, true) => {
                        in_record = false;
                        records += 1;
                    }
                    (MIDDLE | LAST, false) if orphans_allowed => continue,
                    _ => return false,
                },
            }
            orphans_allowed = false;
        }
    }

    /// Where a chain of valid records running to the end of the file starts after `from`, if
    /// one does: at any later byte of that block, or at any later block boundary (where a
    /// fragment must begin).
    fn valid_record_after(&self, from: usize) -> Option<usize> {
        let from = from + 1;
        if from >= self.buf.len() {
            return None;
        }
        let block_end = ((from / BLOCK_SIZE + 1) * BLOCK_SIZE).min(self.buf.len());
        let last_start = block_end.saturating_sub(HEADER_SIZE - 1);
        // A fragment starting there needs a known type in its header's last byte: test that
        // first (in this range the header fits the block and the file, so any other byte is
        // a bad fragment) and walk a chain only from the offsets that pass.
        if let Some(p) = (from..last_start)
            .filter(|&p| (FULL..=LAST).contains(&self.buf[p + HEADER_SIZE - 1]))
            .find(|&p| self.records_to_end_at(p, false))
        {
            return Some(p);
        }
        let mut b = block_end;
        while b + HEADER_SIZE <= self.buf.len() {
            if self.records_to_end_at(b, true) {
                return Some(b);
            }
            b += BLOCK_SIZE;
        }
        None
    }

    /// True if `[from, to)` holds a whole page of zeros (rule 4).
    fn zero_page_between(&self, from: usize, to: usize) -> bool {
        let mut p = from - from % PAGE;
        while p + PAGE <= to.min(self.buf.len()) {
            if self.buf[p..p + PAGE].iter().all(|&b| b == 0) {
                return true;
            }
            p += PAGE;
        }
        false
    }

    /// Damage found at `at`, in the record starting at `record_start` (the offset reported).
    fn damaged(
        &mut self,
        record_start: usize,
        at: usize,
        reason: String,
    ) -> Result<Option<(u64, Vec<u8>)>> {
        if let Some(chain) = self.valid_record_after(at) {
            if !(self.preallocated && self.zero_page_between(record_start, chain)) {
                return Err(Error::corruption(&self.path, record_start as u64, reason));
            }
        }
        self.end = Some(LogEnd::TornTail(record_start as u64, reason));
        self.pos = self.buf.len();
        Ok(None)
    }

    /// The next record and its offset; `Ok(None)` at the end (clean or torn, see [`Self::end`]).
    pub fn next_record(&mut self) -> Result<Option<(u64, Vec<u8>)>> {
        if self.end.is_some() {
            return Ok(None);
        }
        let mut record: Vec<u8> = Vec::new();
        let mut start: Option<usize> = None;
        loop {
            let at = self.pos;
            match self.read_fragment() {
                Frag::Eof => {
                    return match start {
                        None => {
                            self.end = Some(LogEnd::Clean);
                            Ok(None)
                        }
                        Some(s) => {
                            let eof = self.buf.len();
                            self.damaged(s, eof, "record missing its last fragment".into())
                        }
                    };
                }
                Frag::Bad(why) => {
                    return self.damaged(start.unwrap_or(at), at, why.to_string());
                }
                Frag::Ok(ty, payload) => match (ty, start) {
                    (FULL, None) => return Ok(Some((at as u64, payload.to_vec()))),
                    (FIRST, None) => {
                        start = Some(at);
                        record.extend_from_slice(payload);
                    }
                    (MIDDLE, Some(_)) => record.extend_from_slice(payload),
                    (LAST, Some(s)) => {
                        record.extend_from_slice(payload);
                        return Ok(Some((s as u64, record)));
                    }
                    _ => {
                        return Err(Error::corruption(
                            &self.path,
                            at as u64,
                            format!("unexpected fragment type {ty}"),
                        ))
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{FaultConfig, FileSystem, MemFs};

    /// After a failed append (which may have left a torn record) nothing more is appended and
    /// nothing is reported durable, though the file would take writes again: the log ends in
    /// at most a torn tail, never a valid record behind damage. Likewise after a failed sync.
    #[test]
    fn a_failed_append_or_sync_fails_every_later_one() {
        let fs = MemFs::new();
        let p = Path::new("/log");
        let mut w = LogWriter::new(fs.create(p).unwrap());
        w.add_record(b"first").unwrap();
        fs.set_faults(FaultConfig {
            fail_writes_after_bytes: Some(3),
            ..FaultConfig::default()
        });
        assert!(w.add_record(b"second, torn").is_err());
        fs.set_faults(FaultConfig::default());
        assert!(w.add_record(b"third").is_err());
        assert!(w.sync().is_err());
        assert!(w.sync_handle().is_none());
        let data = fs.read_all(p).unwrap();
        let (records, _) = read_all(&data).unwrap();
        assert_eq!(records, vec![b"first".to_vec()]);

        let q = Path::new("/log2");
        let mut w = LogWriter::new(fs.create(q).unwrap());
        w.add_record(b"one").unwrap();
        fs.set_faults(FaultConfig {
            fail_syncs: true,
            ..FaultConfig::default()
        });
        assert!(w.sync().is_err());
        fs.set_faults(FaultConfig::default());
        assert!(
            w.sync().is_err(),
            "a sync after a failed one reported success"
        );
        assert!(w.add_record(b"two").is_err());
    }

    fn write_log(records: &[Vec<u8>]) -> Vec<u8> {
        let fs = MemFs::new();
        let p = Path::new("/log");
        let mut w = LogWriter::new(fs.create(p).unwrap());
        for r in records {
            w.add_record(r).unwrap();
        }
        fs.read_all(p).unwrap()
    }

    fn read_all(buf: &[u8]) -> Result<(Vec<Vec<u8>>, LogEnd)> {
        read_with(LogReader::new(buf, Path::new("/log")))
    }

    fn read_with(mut r: LogReader<'_>) -> Result<(Vec<Vec<u8>>, LogEnd)> {
        let mut out = Vec::new();
        while let Some((_, rec)) = r.next_record()? {
            out.push(rec);
        }
        Ok((out, r.end().cloned().unwrap()))
    }

    fn sample() -> Vec<Vec<u8>> {
        (0..200usize)
            .map(|i| vec![(i % 251) as u8; (i * 997) % 70_000])
            .collect()
    }

    #[test]
    fn roundtrip_across_blocks() {
        let recs = sample();
        let (got, end) = read_all(&write_log(&recs)).unwrap();
        assert_eq!(got, recs);
        assert_eq!(end, LogEnd::Clean);
    }

    #[test]
    fn every_truncation_is_a_torn_tail_keeping_a_prefix() {
        let recs = sample()[..20].to_vec();
        let buf = write_log(&recs);
        for cut in (0..buf.len()).step_by(997) {
            let (got, _) = read_all(&buf[..cut]).unwrap();
            assert!(got.len() <= recs.len());
            assert_eq!(&recs[..got.len()], &got[..], "cut at {cut}");
        }
    }

    /// A fragment length claiming more than its block holds is damage found from the header
    /// alone: the reader slices the bytes that are there and never sizes a buffer by it.
    #[test]
    fn huge_fragment_length_is_damage_not_an_allocation() {
        let recs = vec![b"first".to_vec(), b"second".to_vec(), b"third".to_vec()];
        let mut buf = write_log(&recs);
        buf[4..6].copy_from_slice(&u16::MAX.to_le_bytes());
        match read_all(&buf) {
            Err(Error::Corruption { offset, reason, .. }) => {
                assert_eq!(offset, 0);
                assert!(reason.contains("crosses the block end"), "{reason}");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
        // In the last record it is a torn tail.
        let last = buf.len() - (HEADER_SIZE + 5);
        let mut buf = write_log(&recs);
        buf[last + 4..last + 6].copy_from_slice(&u16::MAX.to_le_bytes());
        let (got, end) = read_all(&buf).unwrap();
        assert_eq!(got, recs[..2]);
        assert!(matches!(end, LogEnd::TornTail(o, _) if o == last as u64));
    }

    #[test]
    fn damage_in_the_middle_is_corruption_with_offset() {
        let recs = sample()[..60].to_vec();
        let mut buf = write_log(&recs);
        buf[10] ^= 1;
        match read_all(&buf) {
            // Record 0 is empty (7 bytes); the damaged record starts at offset 7.
            Err(Error::Corruption { offset, .. }) => assert_eq!(offset, 7),
            other => panic!("expected corruption, got {other:?}"),
        }
        // The same damage in the last record is a torn tail.
        let mut buf = write_log(&recs);
        let n = buf.len();
        buf[n - 3] ^= 1;
        let (got, end) = read_all(&buf).unwrap();
        assert_eq!(got.len(), recs.len() - 1);
        assert!(matches!(end, LogEnd::TornTail(..)));
    }

    fn read_wal(buf: &[u8]) -> Result<(Vec<Vec<u8>>, LogEnd)> {
        read_with(LogReader::wal(buf, Path::new("/000004.log")))
    }

    /// Zeros up to the next multiple of the mapped-log alignment (and at least one page).
    fn pad_to_reservation(buf: &mut Vec<u8>) {
        let align = crate::fs::MAPPED_LOG_ALIGN as usize;
        let len = (buf.len() + PAGE).next_multiple_of(align);
        buf.resize(len, 0);
    }

    /// Small records (several per 4 KiB page), some ending in zero bytes.
    fn small_records() -> Vec<Vec<u8>> {
        (0..3000usize)
            .map(|i| {
                let mut v = vec![(i % 250 + 1) as u8; 20 + i % 90];
                if i % 7 == 0 {
                    v.extend_from_slice(&[0; 12]);
                }
                v
            })
            .collect()
    }

    #[test]
    fn a_preallocated_zero_tail_ends_a_wal_cleanly() {
        let recs = small_records();
        let mut buf = write_log(&recs);
        pad_to_reservation(&mut buf);
        let (got, end) = read_wal(&buf).unwrap();
        assert_eq!(got, recs, "records ending in zero bytes are read whole");
        assert_eq!(end, LogEnd::Clean);
        // Other logs (the MANIFEST) keep calling it a torn tail.
        let (got, end) = read_all(&buf).unwrap();
        assert_eq!(got, recs);
        assert!(matches!(end, LogEnd::TornTail(..)), "{end:?}");
        // Not of a preallocated length, the zero tail is a torn tail as in any log.
        let (got, end) = read_wal(&buf[..buf.len() - 1]).unwrap();
        assert_eq!(got, recs);
        assert!(matches!(end, LogEnd::TornTail(..)), "{end:?}");
        // A WAL's own truncations still keep a prefix.
        for cut in (0..buf.len()).step_by(4099) {
            let (got, _) = read_wal(&buf[..cut]).unwrap();
            assert_eq!(&recs[..got.len()], &got[..], "cut at {cut}");
        }
    }

    #[test]
    fn a_wal_page_that_never_reached_the_disk_is_a_torn_tail() {
        let recs = small_records();
        let clean = write_log(&recs);
        let mut buf = clean.clone();
        // Page 10 was not written back before the power loss; pages after it were.
        buf[10 * PAGE..11 * PAGE].fill(0);
        pad_to_reservation(&mut buf);
        let (got, end) = read_wal(&buf).unwrap();
        let LogEnd::TornTail(off, _) = end else {
            panic!("expected a torn tail, got {end:?}");
        };
        assert!(
            off <= (10 * PAGE) as u64 && off > (9 * PAGE) as u64,
            "tail at {off}"
        );
        assert!(got.len() > 100 && got.len() < recs.len());
        assert_eq!(&recs[..got.len()], &got[..]);
        // The same zeroed page in a MANIFEST is corruption in the middle.
        let mut manifest = clean.clone();
        manifest[10 * PAGE..11 * PAGE].fill(0);
        assert!(matches!(read_all(&manifest), Err(Error::Corruption { .. })));
        // Damage that is not a zeroed page is corruption in a WAL too.
        let mut garbage = clean.clone();
        for b in &mut garbage[10 * PAGE..10 * PAGE + 64] {
            *b ^= 0x5a;
        }
        pad_to_reservation(&mut garbage);
        assert!(matches!(read_wal(&garbage), Err(Error::Corruption { .. })));
        // So is a zeroed run shorter than a page.
        let mut short = clean;
        short[10 * PAGE + 100..11 * PAGE - 100].fill(0);
        pad_to_reservation(&mut short);
        assert!(matches!(read_wal(&short), Err(Error::Corruption { .. })));
    }
}
