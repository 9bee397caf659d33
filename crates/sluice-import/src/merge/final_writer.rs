//! Final SSTs of one index, cut at a target size and an entry bound; optionally recording the
//! source position of each entry (streaming) or splitting rows into cells (columnar).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice::{FileWrites, SstFileInfo, SstWriter, TableOptions};

use super::columnar::{CellFiles, ColumnSplit};
use super::DELETION_SRC;
use crate::positions::{PositionRecorder, RecorderState, StreamedPositions};

/// Writes final SSTs of one index, cut at a target size.
pub struct FinalWriter {
    pub(super) dir: PathBuf,
    pub(super) name: String,
    pub(super) target: u64,
    pub(super) opts: TableOptions,
    pub(super) cur: Option<SstWriter>,
    /// Finished files.
    pub files: Vec<SstFileInfo>,
    pub(super) counter: Arc<std::sync::atomic::AtomicU64>,
    /// Entries per file at most: the filter builder holds 8 bytes per key until the file is
    /// finished, so this bounds the writer's memory.
    pub max_entries: u64,
    /// Write buffer of each file (default 1 MiB; cell writers use [`super::CELL_WRITE_BUFFER`]).
    pub write_buffer: usize,
    /// Columnar primary index: rows are split into cells (see [`FinalWriter::split_columns`]).
    pub(super) split: Option<Box<ColumnSplit>>,
    /// How its files get to disk while written (cell writers inherit it).
    pub writes: FileWrites,
    /// The source position of each entry written, when asked for (streaming writers).
    pub(super) positions: Option<PositionRecorder>,
}

impl FinalWriter {
    /// Files go to `dir` as `{name}-{n}.sst`.
    pub fn new(
        dir: &Path,
        name: String,
        target: u64,
        opts: TableOptions,
        counter: Arc<std::sync::atomic::AtomicU64>,
    ) -> Self {
        FinalWriter {
            dir: dir.to_path_buf(),
            name,
            target,
            opts,
            cur: None,
            files: Vec::new(),
            counter,
            max_entries: u64::MAX,
            write_buffer: 1 << 20,
            split: None,
            writes: FileWrites::default(),
            positions: None,
        }
    }

    /// Records the source position of every entry from now on in a file at `path` (see
    /// [`crate::positions`]); [`FinalWriter::finish_streamed`] returns the lookup.
    pub fn record_positions(&mut self, path: PathBuf) -> sluice::Result<()> {
        let r = PositionRecorder::create(path.clone()).map_err(|source| sluice::Error::Io {
            path: Some(path),
            source,
        })?;
        self.positions = Some(r);
        Ok(())
    }

    /// The positions recorded so far, made durable (a checkpoint of the import), if they
    /// are recorded.
    pub fn checkpoint_positions(&mut self) -> sluice::Result<Option<RecorderState>> {
        self.positions
            .as_mut()
            .map(|r| r.checkpoint())
            .transpose()
            .map_err(|source| sluice::Error::Io { path: None, source })
    }

    /// Goes on recording positions in `path` from a checkpoint's `state`.
    pub fn resume_positions(&mut self, path: PathBuf, state: RecorderState) -> sluice::Result<()> {
        let r =
            PositionRecorder::reopen(path.clone(), state).map_err(|source| sluice::Error::Io {
                path: Some(path),
                source,
            })?;
        self.positions = Some(r);
        Ok(())
    }

    /// [`FinalWriter::put`] of an entry from source position `src`.
    pub fn put_from(&mut self, key: &[u8], value: &[u8], src: u64) -> sluice::Result<()> {
        self.record(key, src)?;
        self.put(key, value)
    }

    fn record(&mut self, key: &[u8], src: u64) -> sluice::Result<()> {
        if let Some(r) = self.positions.as_mut() {
            r.record(key, src)
                .map_err(|source| sluice::Error::Io { path: None, source })?;
        }
        Ok(())
    }

    /// [`FinalWriter::finish`], with the positions of its entries when they were recorded.
    pub fn finish_streamed(
        mut self,
    ) -> sluice::Result<(Vec<SstFileInfo>, Option<StreamedPositions>)> {
        let rec = self.positions.take();
        let files = self.finish()?;
        let positions = match rec {
            Some(r) => Some(
                r.finish(files.iter().map(|f| f.path.clone()).collect())
                    .map_err(|source| sluice::Error::Io { path: None, source })?,
            ),
            None => None,
        };
        Ok((files, positions))
    }

    fn writer(&mut self) -> sluice::Result<&mut SstWriter> {
        if self.cur.is_none() {
            let n = self
                .counter
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p = self.dir.join(format!("{}-{n:06}.sst", self.name));
            self.cur = Some(SstWriter::create_with(
                p,
                self.opts.clone(),
                self.write_buffer,
                self.writes.clone(),
            )?);
        }
        Ok(self.cur.as_mut().expect("just created"))
    }

    /// Adds `key → value` (keys strictly increasing).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> sluice::Result<()> {
        if let Some(split) = self.split.as_mut() {
            split.push(key, value)?;
            let v = std::mem::take(&mut split.pk_value);
            let r = self.writer().and_then(|w| w.put(key, &v));
            if let Some(split) = self.split.as_mut() {
                split.pk_value = v;
            }
            r?;
            return self.maybe_cut();
        }
        self.writer()?.put(key, value)?;
        self.maybe_cut()
    }

    /// Adds a deletion of `key`.
    pub fn delete(&mut self, key: &[u8]) -> sluice::Result<()> {
        self.record(key, DELETION_SRC)?;
        self.writer()?.delete(key)?;
        self.maybe_cut()
    }

    fn maybe_cut(&mut self) -> sluice::Result<()> {
        if self.cur.as_ref().is_some_and(|w| {
            w.estimated_file_size() >= self.target || w.entries() >= self.max_entries
        }) {
            self.finish_current()?;
        }
        Ok(())
    }

    /// Finishes the open file, if any.
    pub fn finish_current(&mut self) -> sluice::Result<()> {
        if let Some(w) = self.cur.take() {
            if w.entries() > 0 {
                crate::failpoints::inject_at("import::final_file", &self.dir)?;
                self.files.push(w.finish()?);
            }
        }
        Ok(())
    }

    /// For a checkpoint at a row boundary: finishes the open file and, for a columnar
    /// writer, hands its cell writers every row so far and finishes their open files. Returns
    /// the cell files finished so far, by column (none for a row-layout writer).
    pub fn cut(&mut self) -> sluice::Result<CellFiles> {
        self.finish_current()?;
        match self.split.as_mut() {
            Some(split) => split.cut(),
            None => Ok(Vec::new()),
        }
    }

    /// Finishes and returns every file (a columnar writer's cell files after its own).
    pub fn finish(mut self) -> sluice::Result<Vec<SstFileInfo>> {
        self.finish_current()?;
        let mut files = std::mem::take(&mut self.files);
        if let Some(mut split) = self.split.take() {
            files.extend(split.finish()?);
        }
        Ok(files)
    }
}
