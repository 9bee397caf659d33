//! Source positions of streamed entries. Sorted input goes straight to final SSTs, which store
//! keys and values only; when the input later turns out unsorted, those files are merged again
//! as runs without positions. A duplicate key or unique value found then must still name the
//! file and line of the streamed row, so the streaming writer records each entry's position
//! here: a temporary file of zigzag-delta varints (about one byte per entry), plus every
//! [`SAMPLE_EVERY`]th key in memory with its ordinal and file offset. A lookup reads at most
//! that many entries of the streamed files and positions.
//!
//! A checkpoint records the file's length and the CRC32C of its bytes; a resumed import
//! checks both before it appends to the file or looks positions up in it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sluice::coding::{decode_varsigned64, put_varsigned64};
use sluice::{InternalIterator, IterBounds, Table, TableReadOptions};

/// One key in memory per this many entries.
pub const SAMPLE_EVERY: u64 = 1024;

/// A sampled entry: its key, where its position starts in the positions file and the
/// position before it (the delta base).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    key: Vec<u8>,
    offset: u64,
    base: u64,
}

/// Bytes of encoded positions buffered before they are written (and added to the CRC).
const WRITE_BUFFER: usize = 64 << 10;

/// Records the positions of the entries a streaming writer writes, in write order.
pub struct PositionRecorder {
    path: PathBuf,
    out: File,
    /// Encoded positions not yet written.
    pending: Vec<u8>,
    /// CRC32C of the bytes written.
    crc: u32,
    samples: Vec<Sample>,
    count: u64,
    bytes: u64,
    last: u64,
}

impl PositionRecorder {
    /// Creates the positions file at `path` (a new file in the import's temporary directory).
    pub fn create(path: PathBuf) -> std::io::Result<Self> {
        let out = File::create_new(&path)?;
        Ok(PositionRecorder {
            path,
            out,
            pending: Vec::with_capacity(WRITE_BUFFER),
            crc: 0,
            samples: Vec::new(),
            count: 0,
            bytes: 0,
            last: 0,
        })
    }

    /// The entry `key` was written; it came from source position `src`.
    pub fn record(&mut self, key: &[u8], src: u64) -> std::io::Result<()> {
        if self.count.is_multiple_of(SAMPLE_EVERY) {
            self.samples.push(Sample {
                key: key.to_vec(),
                offset: self.bytes,
                base: self.last,
            });
        }
        let before = self.pending.len();
        put_varsigned64(&mut self.pending, src.wrapping_sub(self.last) as i64);
        self.bytes += (self.pending.len() - before) as u64;
        self.last = src;
        self.count += 1;
        if self.pending.len() >= WRITE_BUFFER {
            self.write_pending()?;
        }
        Ok(())
    }

    fn write_pending(&mut self) -> std::io::Result<()> {
        self.crc = crc32c::crc32c_append(self.crc, &self.pending);
        self.out.write_all(&self.pending)?;
        self.pending.clear();
        Ok(())
    }

    /// Makes what was recorded durable (a checkpoint of the import): the state
    /// [`PositionRecorder::reopen`] goes on from.
    pub fn checkpoint(&mut self) -> std::io::Result<RecorderState> {
        self.write_pending()?;
        self.out.sync_data()?;
        Ok(RecorderState {
            samples: self.samples.clone(),
            count: self.count,
            bytes: self.bytes,
            last: self.last,
            crc: Some(self.crc),
        })
    }

    /// A recorder going on from `state` in the positions file at `path` (cut back to what
    /// the checkpoint covered). An `InvalidData` error when the file no longer holds the
    /// bytes the checkpoint covered, or they changed.
    pub fn reopen(path: PathBuf, state: RecorderState) -> std::io::Result<Self> {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)?;
        let crc = verify_prefix(&mut f, state.bytes, state.crc)?;
        f.set_len(state.bytes)?;
        f.seek(SeekFrom::End(0))?;
        Ok(PositionRecorder {
            path,
            out: f,
            pending: Vec::with_capacity(WRITE_BUFFER),
            crc,
            samples: state.samples,
            count: state.count,
            bytes: state.bytes,
            last: state.last,
        })
    }

    /// Done writing: the lookup over the writer's finished `files` (in key order).
    pub fn finish(mut self, files: Vec<PathBuf>) -> std::io::Result<StreamedPositions> {
        self.write_pending()?;
        Ok(StreamedPositions {
            path: self.path,
            samples: self.samples,
            files,
            file: PositionsFile {
                bytes: self.bytes,
                crc: self.crc,
            },
        })
    }
}

/// Reads the first `bytes` bytes of `f` and returns their CRC32C, checked against `want`
/// (when a checkpoint recorded one): an `InvalidData` error when the file is shorter or the
/// CRC differs.
fn verify_prefix(f: &mut File, bytes: u64, want: Option<u32>) -> std::io::Result<u32> {
    let len = f.metadata()?.len();
    if len < bytes {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("holds {len} bytes, {bytes} bytes at the checkpoint"),
        ));
    }
    f.seek(SeekFrom::Start(0))?;
    let (mut crc, mut left, mut buf) = (0u32, bytes, vec![0u8; WRITE_BUFFER]);
    while left > 0 {
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        f.read_exact(&mut buf[..n])?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        left -= n as u64;
    }
    if want.is_some_and(|w| w != crc) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "changed since the checkpoint (CRC32C {crc:08x}, {:08x} then)",
                want.unwrap_or(0)
            ),
        ));
    }
    Ok(crc)
}

/// The length and CRC32C of a finished positions file, as a checkpoint records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PositionsFile {
    bytes: u64,
    crc: u32,
}

/// What a [`PositionRecorder`] recorded up to a checkpoint.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RecorderState {
    samples: Vec<Sample>,
    count: u64,
    bytes: u64,
    last: u64,
    /// CRC32C of the file's first `bytes` bytes (none in a checkpoint before this was kept).
    #[serde(default)]
    crc: Option<u32>,
}

/// Finds the source position of a streamed entry by its key.
pub struct StreamedPositions {
    path: PathBuf,
    samples: Vec<Sample>,
    files: Vec<PathBuf>,
    file: PositionsFile,
}

impl StreamedPositions {
    /// The source position of the streamed entry `key`; `None` when it is not one (or the
    /// streamed files were merged into other runs meanwhile).
    pub fn lookup(&self, key: &[u8]) -> Option<u64> {
        let i = self
            .samples
            .partition_point(|s| s.key.as_slice() <= key)
            .checked_sub(1)?;
        let s = &self.samples[i];
        let steps = self.steps_from(&s.key, key)?;
        self.read_position(s, steps)
    }

    /// Entries from `from` to `key` (0: `key` is `from`) in the streamed files.
    fn steps_from(&self, from: &[u8], key: &[u8]) -> Option<u64> {
        let mut steps = 0u64;
        for f in &self.files {
            let t = Table::open_path(f, &TableReadOptions::new()).ok()?;
            let mut it = t.iter(IterBounds {
                lower: Some(from.to_vec()),
                upper: None,
            });
            it.seek_to_first();
            while it.valid() {
                let k = sluice::key::user_key(it.key());
                if k == key {
                    return Some(steps);
                }
                if k > key || steps > SAMPLE_EVERY {
                    return None;
                }
                steps += 1;
                it.next();
            }
            it.status().ok()?;
        }
        None
    }

    fn read_position(&self, s: &Sample, steps: u64) -> Option<u64> {
        let mut f = File::open(&self.path).ok()?;
        f.seek(SeekFrom::Start(s.offset)).ok()?;
        // A position takes at most 10 bytes.
        let mut bytes = Vec::new();
        f.take((steps + 1) * 10).read_to_end(&mut bytes).ok()?;
        let (mut pos, mut at) = (s.base, 0);
        for _ in 0..=steps {
            let (delta, n) = decode_varsigned64(bytes.get(at..)?)?;
            pos = pos.wrapping_add(delta as u64);
            at += n;
        }
        Some(pos)
    }

    /// The positions file (removed with the import's temporary directory).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its samples, streamed files and file length and CRC (a checkpoint of the import),
    /// its positions file synced.
    pub fn checkpoint(&self) -> std::io::Result<(Vec<Sample>, Vec<PathBuf>, PositionsFile)> {
        File::open(&self.path)?.sync_all()?;
        Ok((self.samples.clone(), self.files.clone(), self.file))
    }

    /// The lookup a checkpoint recorded, its positions file checked against the length and
    /// CRC32C recorded with it (`None`: a checkpoint written before they were recorded; the
    /// file is then taken as it is).
    pub fn restore(
        path: PathBuf,
        samples: Vec<Sample>,
        files: Vec<PathBuf>,
        file: Option<PositionsFile>,
    ) -> std::io::Result<Self> {
        let mut f = File::open(&path)?;
        let file = match file {
            Some(want) => {
                verify_prefix(&mut f, want.bytes, Some(want.crc))?;
                want
            }
            None => {
                let bytes = f.metadata()?.len();
                let crc = verify_prefix(&mut f, bytes, None)?;
                PositionsFile { bytes, crc }
            }
        };
        Ok(StreamedPositions {
            path,
            samples,
            files,
            file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice::{SstWriter, TableOptions};

    #[test]
    fn finds_the_position_of_every_streamed_entry_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut rec = PositionRecorder::create(dir.path().join("pos")).unwrap();
        let mut files = Vec::new();
        let mut w: Option<SstWriter> = None;
        let n = 5000u64;
        let src = |i: u64| (i * 7919) % 10007 + (i % 3) * (1 << 44);
        for i in 0..n {
            if i % 1700 == 0 {
                if let Some(w) = w.take() {
                    files.push(w.finish().unwrap().path);
                }
                let p = dir.path().join(format!("f{i}.sst"));
                w = Some(SstWriter::create(&p, TableOptions::default()).unwrap());
            }
            let key = format!("k{i:06}");
            w.as_mut().unwrap().put(key.as_bytes(), b"v").unwrap();
            rec.record(key.as_bytes(), src(i)).unwrap();
        }
        files.push(w.unwrap().finish().unwrap().path);
        let pos = rec.finish(files).unwrap();
        for i in (0..n).step_by(13).chain([0, 1023, 1024, 1025, n - 1]) {
            let key = format!("k{i:06}");
            assert_eq!(pos.lookup(key.as_bytes()), Some(src(i)), "{key}");
        }
        assert_eq!(pos.lookup(b"k000000x"), None);
        assert_eq!(pos.lookup(b"a"), None);
    }
}
