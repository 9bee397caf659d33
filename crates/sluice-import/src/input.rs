//! Reading input files: transparent `.gz`/`.zst` decompression, and the chunker that cuts a
//! byte stream into record-aligned chunks for the parse workers.
//!
//! Invariants:
//! 1. A chunk starts at a record start and ends after a record terminator (or at end of file):
//!    the CSV scanner tracks quoting (RFC 4180: a quote opens only at a field start, `""`
//!    inside quotes is a literal quote, a closing quote must be followed by a delimiter, CR or
//!    LF), so a newline inside quotes never splits a chunk.
//! 2. `first_line` of a chunk is the 1-based physical line of its first byte in its file;
//!    `offset` is its first byte's position in the concatenation of all decompressed inputs.
//! 3. Malformed quoting inside a record (a quote in an unquoted field, characters after a
//!    closing quote) does not stop the scan: the record goes on as csv-core reads it (the
//!    quote or the characters taken literally, up to the next delimiter or line end outside
//!    quotes), and the chunk carries the malformation ([`RawChunk::malformed`]) so that the
//!    parse worker makes that one record a rejected row, under `--max-errors` like any other.
//!    Where the bad quote may have taken other records with it, it is an error naming the file
//!    and line: a quote never closed (the rest of the file), and characters after a quoted
//!    field that spans lines (the records between). The scanner never panics on any bytes.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// RFC 4180 CSV.
    Csv,
    /// Tab-separated with backslash escapes (`\t \n \r \\ \0`), `\N` for NULL.
    Tsv,
    /// One JSON object per line, keys are column names.
    Jsonl,
    /// Apache Parquet: columns matched by name, row groups read as record batches.
    Parquet,
    /// Arrow record batches handed over in memory (never a file's format).
    Arrow,
}

impl Format {
    /// The format a file name implies: `.parquet`/`.pq` Parquet; after stripping `.gz`/`.zst`,
    /// `.tsv`/`.tab` TSV, `.jsonl`/`.ndjson`/`.json` JSON lines, anything else CSV.
    pub fn from_path(p: &Path) -> Format {
        let name = p.to_string_lossy().to_ascii_lowercase();
        if name.ends_with(".parquet") || name.ends_with(".pq") {
            return Format::Parquet;
        }
        let name = name
            .strip_suffix(".gz")
            .or_else(|| name.strip_suffix(".zst"))
            .unwrap_or(&name);
        if name.ends_with(".tsv") || name.ends_with(".tab") {
            Format::Tsv
        } else if name.ends_with(".jsonl") || name.ends_with(".ndjson") || name.ends_with(".json") {
            Format::Jsonl
        } else {
            Format::Csv
        }
    }
}

/// Counts bytes read from the underlying (possibly compressed) file, for progress.
struct Counting<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The gzip member header's first bytes (RFC 1952) and the zstd frame magic (RFC 8878).
const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

/// How an input file is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    Gzip,
    Zstd,
}

/// `.gz` and `.zst` by name; a file of another name by its first bytes, `head` (a `data.csv`
/// that is really gzip: text never starts with those magic bytes).
fn compression(
    path: &Path,
    head: impl FnOnce() -> io::Result<Vec<u8>>,
) -> io::Result<Option<Compression>> {
    let name = path.to_string_lossy().to_ascii_lowercase();
    Ok(if name.ends_with(".gz") {
        Some(Compression::Gzip)
    } else if name.ends_with(".zst") {
        Some(Compression::Zstd)
    } else {
        let head = head()?;
        if head.starts_with(GZIP_MAGIC) {
            Some(Compression::Gzip)
        } else if head.starts_with(ZSTD_MAGIC) {
            Some(Compression::Zstd)
        } else {
            None
        }
    })
}

/// True if `path` is read decompressed ([`open_input`]); false for a file it cannot read. Only
/// a regular file's first bytes are looked at: reading them from a pipe would consume them
/// (and an open of a FIFO waits for its writer).
pub(crate) fn is_compressed(path: &Path) -> bool {
    let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let head = || {
        if !regular {
            return Ok(Vec::new());
        }
        let mut b = Vec::with_capacity(4);
        File::open(path)?.take(4).read_to_end(&mut b)?;
        Ok(b)
    };
    matches!(compression(path, head), Ok(Some(_)))
}

/// Opens `path`, decompressing gzip and zstd (by name, or by their magic bytes for a file of
/// another name); `counter` receives the raw bytes read.
pub fn open_input(path: &Path, counter: Arc<AtomicU64>) -> io::Result<Box<dyn Read + Send>> {
    let f = Counting {
        inner: File::open(path)?,
        counter,
    };
    let mut f = BufReader::new(f);
    let head = || loop {
        match io::BufRead::fill_buf(&mut f) {
            Ok(b) => return Ok(b.to_vec()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    };
    Ok(match compression(path, head)? {
        Some(Compression::Gzip) => Box::new(flate2::read::MultiGzDecoder::new(f)),
        Some(Compression::Zstd) => Box::new(zstd::stream::read::Decoder::with_buffer(f)?),
        None => Box::new(f),
    })
}

/// Malformed quoting: the 1-based line and field, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    /// Line of the problem.
    pub line: u64,
    /// 1-based field number on that record.
    pub field: u64,
    /// What is wrong.
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    FieldStart,
    Unquoted,
    Quoted,
    QuoteInQuoted,
}

/// Finds record ends in CSV bytes, fed incrementally. CR, LF and CRLF all end a line (as in
/// Python's `csv` and DuckDB); a CR at the end of the bytes scanned so far waits for the next
/// byte, so a CRLF split between two reads is still one line end.
#[derive(Debug)]
pub struct CsvScanner {
    delimiter: u8,
    quote: Option<u8>,
    state: State,
    /// Line ends seen so far (the current line is `lines + 1`).
    pub lines: u64,
    field: u64,
    quote_line: u64,
    /// A CR ended the bytes scanned so far: `Some(true)` when it ends a record.
    cr: Option<bool>,
    /// The current record's quoting is already known to be malformed (one report a record).
    record_malformed: bool,
    /// Malformations found by `scan` since the last [`CsvScanner::take_malformed`]: each with
    /// the position of its byte in the bytes of the `scan` call that found it.
    malformed: Vec<(usize, ScanError)>,
}

impl CsvScanner {
    /// A scanner at the start of a record. `quote: None` disables quoting.
    pub fn new(delimiter: u8, quote: Option<u8>) -> Self {
        CsvScanner {
            delimiter,
            quote,
            state: State::FieldStart,
            lines: 0,
            field: 1,
            quote_line: 0,
            cr: None,
            record_malformed: false,
            malformed: Vec::new(),
        }
    }

    /// The malformations found since the last call, each at its byte's position in the bytes
    /// of the `scan` call that found it.
    pub fn take_malformed(&mut self) -> Vec<(usize, ScanError)> {
        std::mem::take(&mut self.malformed)
    }

    /// Scans `b`; calls `on_end(pos_after_line_end, lines_so_far)` at each record end. Malformed
    /// quoting is noted ([`CsvScanner::take_malformed`]) and read on as csv-core reads it,
    /// except characters after a quoted field that spans lines: an error (module invariant 3).
    pub fn scan(&mut self, b: &[u8], mut on_end: impl FnMut(usize, u64)) -> Result<(), ScanError> {
        let q = self.quote.unwrap_or(0);
        let has_q = self.quote.is_some();
        let d = self.delimiter;
        let mut i = 0;
        if let Some(ends_record) = self.cr.take() {
            if b.is_empty() {
                self.cr = Some(ends_record);
                return Ok(());
            }
            // The byte after a CR that ended the previous bytes: CRLF is one line end.
            self.lines += 1;
            if b[0] == b'\n' {
                i = 1;
            }
            if ends_record {
                on_end(i, self.lines);
            }
        }
        while i < b.len() {
            let c = b[i];
            match self.state {
                State::FieldStart | State::Unquoted => {
                    if self.state == State::Unquoted {
                        // Fast path: skip ordinary bytes (CR is rare: looked for only in what
                        // the first search skipped).
                        let rest = &b[i..];
                        let p = memchr::memchr3(d, b'\n', if has_q { q } else { b'\n' }, rest)
                            .unwrap_or(rest.len());
                        let p = memchr::memchr(b'\r', &rest[..p]).unwrap_or(p);
                        if p == rest.len() {
                            return Ok(());
                        }
                        i += p;
                    }
                    let c = b[i];
                    if c == b'\n' || c == b'\r' {
                        self.end_record(b, &mut i, &mut on_end);
                    } else if c == d {
                        self.state = State::FieldStart;
                        self.field += 1;
                    } else if has_q && c == q && self.state == State::FieldStart {
                        self.state = State::Quoted;
                        self.quote_line = self.lines + 1;
                    } else if has_q && c == q {
                        // Taken literally, as csv-core does in an unquoted field.
                        self.note_malformed(i, "a quote inside an unquoted field");
                    } else if self.state == State::FieldStart {
                        self.state = State::Unquoted;
                    }
                }
                State::Quoted => match memchr::memchr3(q, b'\n', b'\r', &b[i..]) {
                    Some(p) => {
                        i += p;
                        if b[i] == q {
                            self.state = State::QuoteInQuoted;
                        } else if self.line_end(b, &mut i).is_none() {
                            self.cr = Some(false);
                        }
                    }
                    None => return Ok(()),
                },
                State::QuoteInQuoted => {
                    if c == q {
                        self.state = State::Quoted;
                    } else if c == d {
                        self.state = State::FieldStart;
                        self.field += 1;
                    } else if c == b'\n' || c == b'\r' {
                        self.end_record(b, &mut i, &mut on_end);
                    } else if self.quote_line <= self.lines {
                        // The quote opened on an earlier line: most likely a stray quote that
                        // took the line ends after it, and the records between with them.
                        // Where records end is not known: an error, as for a quote never
                        // closed, rather than one rejected row that swallows several.
                        return Err(ScanError {
                            line: self.quote_line,
                            field: self.field,
                            reason: format!(
                                "the quoted field opened here runs to line {}, where characters \
                                 follow its closing quote (a stray quote?)",
                                self.lines + 1
                            ),
                        });
                    } else {
                        // The field reads on unquoted, as csv-core reads it.
                        self.note_malformed(i, "characters after a closing quote");
                        self.state = State::Unquoted;
                    }
                }
            }
            i += 1;
        }
        Ok(())
    }

    /// At a line end outside quotes, `b[*i]`: the record ends.
    fn end_record(&mut self, b: &[u8], i: &mut usize, on_end: &mut impl FnMut(usize, u64)) {
        self.state = State::FieldStart;
        self.field = 1;
        self.record_malformed = false;
        match self.line_end(b, i) {
            Some(end) => on_end(end, self.lines),
            None => self.cr = Some(true),
        }
    }

    /// Notes the record's first malformation, at `b[i]` of the bytes being scanned.
    fn note_malformed(&mut self, i: usize, reason: &str) {
        if !self.record_malformed {
            self.record_malformed = true;
            self.malformed.push((
                i,
                ScanError {
                    line: self.lines + 1,
                    field: self.field,
                    reason: reason.into(),
                },
            ));
        }
    }

    /// At a CR or LF at `b[*i]`: counts the line end and returns the position after it, with
    /// `*i` on its last byte. `None` for a CR that is the last byte scanned (the next byte
    /// decides whether it is a CRLF; not counted yet).
    fn line_end(&mut self, b: &[u8], i: &mut usize) -> Option<usize> {
        if b[*i] == b'\r' {
            match b.get(*i + 1) {
                None => return None,
                Some(b'\n') => *i += 1,
                Some(_) => {}
            }
        }
        self.lines += 1;
        Some(*i + 1)
    }

    /// Checks the state at end of input.
    pub fn finish(&self) -> Result<(), ScanError> {
        if self.state == State::Quoted {
            return Err(ScanError {
                line: self.quote_line,
                field: self.field,
                reason: "a quoted field is never closed".into(),
            });
        }
        Ok(())
    }
}

/// Finds line ends (CR, LF or CRLF) in bytes fed incrementally: TSV and JSON lines records.
#[derive(Debug, Default)]
pub struct LineScanner {
    /// Line ends seen so far.
    pub lines: u64,
    /// The bytes scanned so far ended in a CR.
    cr: bool,
}

impl LineScanner {
    /// A scanner that has seen `lines` line ends.
    pub fn new(lines: u64) -> Self {
        LineScanner { lines, cr: false }
    }

    /// Scans `b`; calls `on_end(pos_after_line_end, lines_so_far)` at each line end.
    pub fn scan(&mut self, b: &[u8], mut on_end: impl FnMut(usize, u64)) {
        let mut i = 0;
        if self.cr && !b.is_empty() {
            self.cr = false;
            self.lines += 1;
            i = usize::from(b[0] == b'\n');
            on_end(i, self.lines);
        }
        while let Some(p) = memchr::memchr2(b'\n', b'\r', &b[i..]) {
            let at = i + p;
            let end = match (b[at], b.get(at + 1)) {
                (b'\r', None) => {
                    self.cr = true;
                    return;
                }
                (b'\r', Some(b'\n')) => at + 2,
                _ => at + 1,
            };
            self.lines += 1;
            on_end(end, self.lines);
            i = end;
        }
    }
}

/// The end of the record starting at `pos` in whole records `data` (CR, LF or CRLF
/// terminated, the last one possibly not): `(content_end, next_record_start)`.
pub fn next_line(data: &[u8], pos: usize) -> (usize, usize) {
    match memchr::memchr2(b'\n', b'\r', &data[pos..]) {
        None => (data.len(), data.len()),
        Some(p) => {
            let at = pos + p;
            let next = if data[at] == b'\r' && data.get(at + 1) == Some(&b'\n') {
                at + 2
            } else {
                at + 1
            };
            (at, next)
        }
    }
}

/// Line ends in `data[from..to]`: every CR and every LF not right after a CR (a CRLF counts
/// once, at its CR, so ranges that split a CRLF add up right).
pub fn count_line_ends(data: &[u8], from: usize, to: usize) -> u64 {
    let b = &data[from..to];
    let cr = memchr::memchr_iter(b'\r', b).count() as u64;
    let lf = memchr::memchr_iter(b'\n', b)
        .filter(|&p| from + p == 0 || data[from + p - 1] != b'\r')
        .count() as u64;
    cr + lf
}

/// Record boundaries for a format: CSV scans quotes, TSV and JSON lines end at every line end.
pub enum Boundaries {
    /// CSV.
    Csv(CsvScanner),
    /// One record per line.
    Lines(LineScanner),
}

impl Boundaries {
    /// Scans `b`, reporting record ends as `(pos_after_line_end, lines_so_far)`.
    pub fn scan(&mut self, b: &[u8], on_end: impl FnMut(usize, u64)) -> Result<(), ScanError> {
        match self {
            Boundaries::Csv(s) => s.scan(b, on_end),
            Boundaries::Lines(s) => {
                s.scan(b, on_end);
                Ok(())
            }
        }
    }

    /// CSV's malformations since the last call ([`CsvScanner::take_malformed`]).
    pub fn take_malformed(&mut self) -> Vec<(usize, ScanError)> {
        match self {
            Boundaries::Csv(s) => s.take_malformed(),
            Boundaries::Lines(_) => Vec::new(),
        }
    }

    /// Line ends seen so far.
    pub fn lines(&self) -> u64 {
        match self {
            Boundaries::Csv(s) => s.lines,
            Boundaries::Lines(s) => s.lines,
        }
    }

    /// Checks the state at end of input.
    pub fn finish(&self) -> Result<(), ScanError> {
        match self {
            Boundaries::Csv(s) => s.finish(),
            Boundaries::Lines(_) => Ok(()),
        }
    }
}

/// A record-aligned piece of one input file.
#[derive(Debug)]
pub struct RawChunk {
    /// The bytes: whole records.
    pub data: Vec<u8>,
    /// Line of `data[0]` in its file (1-based).
    pub first_line: u64,
    /// Offset of `data[0]` within the decompressed file.
    pub file_offset: u64,
    /// CSV records whose quoting is malformed (invariant 3): the offset in `data` of the
    /// first bad byte of each, in order.
    pub malformed: Vec<(usize, ScanError)>,
}

/// Cuts one file's byte stream into chunks of about `target` bytes at record boundaries.
pub struct Chunker<R> {
    reader: R,
    bounds: Boundaries,
    target: usize,
    buf: Vec<u8>,
    scanned: usize,
    last_end: usize,
    lines_at_last_end: u64,
    next_line: u64,
    offset: u64,
    eof: bool,
    started: bool,
    /// Malformations scanned but not yet cut off in a chunk: offsets within the file.
    malformed: std::collections::VecDeque<(u64, ScanError)>,
}

impl<R: Read> Chunker<R> {
    /// A chunker over `reader`.
    pub fn new(reader: R, bounds: Boundaries, target: usize) -> Self {
        Chunker {
            reader,
            bounds,
            target: target.max(1),
            buf: Vec::new(),
            scanned: 0,
            last_end: 0,
            lines_at_last_end: 0,
            next_line: 1,
            offset: 0,
            eof: false,
            started: false,
            malformed: Default::default(),
        }
    }

    /// The next chunk; `Ok(None)` at end of input. `one_record` returns exactly the first
    /// record (for a header).
    pub fn next_chunk(&mut self, one_record: bool) -> Result<Option<RawChunk>, ChunkError> {
        loop {
            if one_record && self.last_end > 0 {
                let (at, lines) = self.first_record_end();
                return Ok(Some(self.cut(at, lines)));
            }
            if self.last_end > 0 && (self.last_end >= self.target || self.eof) {
                let (at, lines) = (self.last_end, self.lines_at_last_end);
                return Ok(Some(self.cut(at, lines)));
            }
            if self.eof {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                // The last record has no terminator.
                let (at, lines) = (self.buf.len(), self.bounds.lines());
                return Ok(Some(self.cut(at, lines)));
            }
            self.fill()?;
        }
    }

    fn fresh_bounds(&self, lines: u64) -> Boundaries {
        match &self.bounds {
            Boundaries::Csv(s) => {
                let mut f = CsvScanner::new(s.delimiter, s.quote);
                f.lines = lines;
                Boundaries::Csv(f)
            }
            Boundaries::Lines(_) => Boundaries::Lines(LineScanner::new(lines)),
        }
    }

    /// End of the first record in the buffer (one is known to be complete).
    fn first_record_end(&self) -> (usize, u64) {
        let mut b = self.fresh_bounds(self.next_line - 1);
        let mut first = None;
        // Malformations and errors were reported when these bytes were first scanned.
        let _ = b.scan(&self.buf[..self.last_end], |p, l| {
            if first.is_none() {
                first = Some((p, l));
            }
        });
        first.unwrap_or((self.last_end, self.lines_at_last_end))
    }

    fn fill(&mut self) -> Result<(), ChunkError> {
        let old = self.buf.len();
        // Read about a quarter chunk at a time: a chunk ends at the last record end once it
        // reaches the target, so it is at most a read (plus one record) over it.
        let grow = (self.target / 4).clamp(16, 1 << 20);
        self.buf.resize(old + grow, 0);
        let n = loop {
            match self.reader.read(&mut self.buf[old..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(ChunkError::Io(e));
                }
            }
        };
        self.buf.truncate(old + n);
        if !self.started && (self.buf.len() >= 3 || n == 0) {
            self.started = true;
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.buf.drain(..3);
                self.offset += 3;
            }
        }
        if n == 0 {
            self.eof = true;
            self.started = true;
        }
        if self.started {
            let (mut last, mut lines) = (self.last_end, self.lines_at_last_end);
            let from = self.scanned;
            self.bounds
                .scan(&self.buf[from..], |p, l| {
                    last = from + p;
                    lines = l;
                })
                .map_err(ChunkError::Scan)?;
            let at = self.offset + from as u64;
            for (p, e) in self.bounds.take_malformed() {
                self.malformed.push_back((at + p as u64, e));
            }
            self.scanned = self.buf.len();
            self.last_end = last;
            self.lines_at_last_end = lines;
        }
        if self.eof {
            self.bounds.finish().map_err(ChunkError::Scan)?;
        }
        Ok(())
    }

    /// Cuts the first `at` bytes (ending after line `lines`) off as a chunk; rescans what is
    /// carried over with a fresh scanner (a cut is always a record start).
    fn cut(&mut self, at: usize, lines: u64) -> RawChunk {
        let rest = self.buf.split_off(at);
        let data = std::mem::replace(&mut self.buf, rest);
        let end = self.offset + at as u64;
        let mut malformed = Vec::new();
        while let Some((p, _)) = self.malformed.front() {
            if *p >= end {
                break;
            }
            let (p, e) = self.malformed.pop_front().expect("front exists");
            malformed.push(((p - self.offset) as usize, e));
        }
        let chunk = RawChunk {
            data,
            first_line: self.next_line,
            file_offset: self.offset,
            malformed,
        };
        self.next_line = lines + 1;
        self.offset += at as u64;
        self.scanned = self.scanned.saturating_sub(at);
        let mut fresh = self.fresh_bounds(lines);
        let (mut last, mut l_at) = (0, lines);
        // Malformations and errors were reported when these bytes were first scanned.
        let _ = fresh.scan(&self.buf[..self.scanned], |p, l| {
            last = p;
            l_at = l;
        });
        fresh.take_malformed();
        self.bounds = fresh;
        self.last_end = last;
        self.lines_at_last_end = l_at;
        chunk
    }
}

/// Why the chunker stopped.
#[derive(Debug)]
pub enum ChunkError {
    /// Reading (or decompressing) failed.
    Io(io::Error),
    /// A quoted field is never closed, or one that spans lines is followed by characters.
    Scan(ScanError),
}

impl ChunkError {
    /// The import's error for file `path` (named `name` in messages).
    pub fn into_import(self, path: &Path, name: &str) -> crate::ImportError {
        match self {
            ChunkError::Io(e) => crate::ImportError::io(path, e),
            ChunkError::Scan(s) => crate::ImportError::BadRow(crate::error::BadRow {
                place: crate::error::RowPlace {
                    file: name.to_string(),
                    line: s.line,
                },
                column: None,
                value: None,
                reason: format!("field {}: {}", s.field, s.reason),
            }),
        }
    }
}

#[cfg(test)]
#[path = "input_tests.rs"]
mod tests;
