//! Source positions of streamed entries. Sorted input goes straight to final SSTs, which store
//! keys and values only; when the input later turns out unsorted, those files are merged again
//! as runs without positions. A duplicate key or unique value found then must still name the
//! file and line of the streamed row, so the streaming writer records each entry's position
//! here: a temporary file of zigzag-delta varints (about one byte per entry), plus every
//! [`SAMPLE_EVERY`]th key in memory with its ordinal and file offset. A lookup reads at most
//! that many entries of the streamed files and positions.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
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

/// Records the positions of the entries a streaming writer writes, in write order.
pub struct PositionRecorder {
    path: PathBuf,
    out: BufWriter<File>,
    samples: Vec<Sample>,
    count: u64,
    bytes: u64,
    last: u64,
    /// One encoded position.
    buf: Vec<u8>,
}

impl PositionRecorder {
    /// Creates the positions file at `path` (a new file in the import's temporary directory).
    pub fn create(path: PathBuf) -> std::io::Result<Self> {
        let out = BufWriter::new(File::create_new(&path)?);
        Ok(PositionRecorder {
            path,
            out,
            samples: Vec::new(),
            count: 0,
            bytes: 0,
            last: 0,
            buf: Vec::with_capacity(10),
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
        self.buf.clear();
        put_varsigned64(&mut self.buf, src.wrapping_sub(self.last) as i64);
        self.out.write_all(&self.buf)?;
        self.bytes += self.buf.len() as u64;
        self.last = src;
        self.count += 1;
        Ok(())
    }

    /// Makes what was recorded durable (a checkpoint of the import): the state
    /// [`PositionRecorder::reopen`] goes on from.
    pub fn checkpoint(&mut self) -> std::io::Result<RecorderState> {
        self.out.flush()?;
        self.out.get_ref().sync_data()?;
        Ok(RecorderState {
            samples: self.samples.clone(),
            count: self.count,
            bytes: self.bytes,
            last: self.last,
        })
    }

    /// A recorder going on from `state` in the positions file at `path` (cut back to what
    /// the checkpoint covered).
    pub fn reopen(path: PathBuf, state: RecorderState) -> std::io::Result<Self> {
        let mut f = std::fs::OpenOptions::new().write(true).open(&path)?;
        f.set_len(state.bytes)?;
        f.seek(SeekFrom::End(0))?;
        Ok(PositionRecorder {
            path,
            out: BufWriter::new(f),
            samples: state.samples,
            count: state.count,
            bytes: state.bytes,
            last: state.last,
            buf: Vec::with_capacity(10),
        })
    }

    /// Done writing: the lookup over the writer's finished `files` (in key order).
    pub fn finish(mut self, files: Vec<PathBuf>) -> std::io::Result<StreamedPositions> {
        self.out.flush()?;
        Ok(StreamedPositions {
            path: self.path,
            samples: self.samples,
            files,
        })
    }
}

/// What a [`PositionRecorder`] recorded up to a checkpoint.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RecorderState {
    samples: Vec<Sample>,
    count: u64,
    bytes: u64,
    last: u64,
}

/// Finds the source position of a streamed entry by its key.
pub struct StreamedPositions {
    path: PathBuf,
    samples: Vec<Sample>,
    files: Vec<PathBuf>,
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

    /// Its samples and streamed files (a checkpoint of the import), its positions file
    /// synced.
    pub fn checkpoint(&self) -> std::io::Result<(Vec<Sample>, Vec<PathBuf>)> {
        File::open(&self.path)?.sync_all()?;
        Ok((self.samples.clone(), self.files.clone()))
    }

    /// The lookup a checkpoint recorded.
    pub fn restore(path: PathBuf, samples: Vec<Sample>, files: Vec<PathBuf>) -> Self {
        StreamedPositions {
            path,
            samples,
            files,
        }
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
