//! Opening a Db for reading only, beside a writer that goes on (see [`Db::open_read_only`]).
//!
//! The reader takes no lock, so the writer may flush a memtable, delete the WAL it came from,
//! compact tables away, ingest or switch WALs at any moment while the reader reads. What keeps
//! its view whole is in [`Db::read_only_view`]: the WALs are held open before the MANIFEST is
//! read (a deleted WAL stays readable through its handle), and the MANIFEST is read again at
//! the end, so an ingest installed under the read cannot be missing below a write it has.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::base::error::{Error, Result};
use crate::base::filenames::{classify, wal_name, FileKind};
use crate::fs::staged;
use crate::fs::{FileSystem, RandomAccessFile};
use crate::memtable::MemTable;
use crate::version::FileMeta;
use crate::wal::log::LogWriter;

use super::create::DirContents;
use super::flushable::{Flushable, IngestedTables};
use super::open::{Recovered, Recovery};
use super::version_set::ManifestState;
use super::{Db, Inner, Options};

/// How many times a read-only open reads the Db before it gives up on a consistent view.
const READ_ONLY_TRIES: usize = 32;

impl Db {
    /// Opens an existing Db for reading only (RocksDB's `OpenForReadOnly`): it replays the
    /// MANIFEST and the WALs into memory and writes nothing at all — no flush, no new WAL,
    /// MANIFEST or OPTIONS file, no file deleted, no lock taken, no background work — so any
    /// number of readers may open a Db, also one a writer holds. Such a reader sees the Db as
    /// of its open — every write acknowledged before the open began, also those still in the
    /// writer's WAL stage (steps in [`Db::read_only_view`]); if the writer deletes a table the
    /// reader still needs, that read fails with an I/O error (reopen to see the new state).
    /// Writes, flush, compaction and ingest fail.
    pub fn open_read_only(dir: impl AsRef<Path>, opts: Options) -> Result<Db> {
        opts.validate()?;
        let dir = dir.as_ref().to_path_buf();
        let fs = Arc::clone(&opts.fs);
        if !fs.exists(&dir.join("CURRENT")) {
            let contents = DirContents::inspect(&*fs, &dir)?;
            if let Some(why) = contents.why_not_a_db(&dir) {
                return Err(Error::InvalidArgument(why));
            }
        }
        let (rec, recovered) = Self::read_only_view(&*fs, &dir, &opts)?;
        let imm = recovered
            .into_iter()
            .map(|r| match r {
                Recovered::Mem(m) => Flushable::Mem(m),
                Recovered::Ingested(files) => {
                    let mut files: Vec<Arc<FileMeta>> = files.into_iter().map(Arc::new).collect();
                    files.sort_by_key(|f| std::cmp::Reverse(f.largest_seqno));
                    let largest_seqno = files.first().map_or(0, |f| f.largest_seqno);
                    Flushable::Ingested(Arc::new(IngestedTables {
                        files,
                        wal_number: 0,
                        largest_seqno,
                    }))
                }
            })
            .collect();
        let manifest = ManifestState {
            writer: LogWriter::new(Box::new(NoWrites)),
            number: rec.manifest_number,
        };
        let inner = Arc::new(Inner::new(
            rec,
            Arc::new(MemTable::new(0)),
            imm,
            (LogWriter::new(Box::new(NoWrites)), manifest, None),
            None,
            (dir, fs, opts),
            true,
        ));
        Ok(Db {
            inner,
            workers: Mutex::new(Vec::new()),
        })
    }

    /// Steps 2 and 3 of a read-only open, beside a writer that goes on meanwhile:
    /// 1. every WAL in the directory, opened (held: one the writer deletes from now on stays
    ///    readable through its handle);
    /// 2. the MANIFEST: the version, and the oldest WAL it still needs (its log number);
    /// 3. what the writer's WAL stage had not written yet (`fs::staged::read_undrained`);
    /// 4. the held WALs the MANIFEST still needs, read whole now, replayed in order with the
    ///    stage's bytes laid over theirs;
    /// 5. the MANIFEST again: an ingest installed since step 2 whose global seqno is below a
    ///    write replayed in step 4 would leave the view with a later write and without the
    ///    earlier ingest, so then it goes round again.
    ///
    /// Why nothing acknowledged before the open is missed: a WAL deleted before step 1 was
    /// flushed by an edit made before step 1, so step 2's version has its writes; every other
    /// WAL the version needs existed at step 1 and is held. WALs are made in number order and
    /// deleted only once the log number passed them, so the held WALs from the log number on
    /// run without a gap, each but the newest closed whole at its switch; one made after step
    /// 1 is newer than all of them and holds only writes from after the open began. The WALs'
    /// contents are read after the stage's bytes. The MANIFEST (or a WAL) gone under it
    /// (`NotFound`: a writer opening anew, which starts a new MANIFEST) sends it round again;
    /// so does step 5. It fails if every one of [`READ_ONLY_TRIES`] rounds had to go again.
    /// Tables are not opened here: one compacted away before a read reaches it fails that
    /// read (`NotFound`; reopen).
    pub(super) fn read_only_view(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
    ) -> Result<(Recovery, Vec<Recovered>)> {
        let mut last = None;
        for _ in 0..READ_ONLY_TRIES {
            match Self::read_only_attempt(fs, dir, opts) {
                Ok(Some(view)) => return Ok(view),
                Ok(None) => last = None,
                Err(Error::Io { path, source }) if source.kind() == io::ErrorKind::NotFound => {
                    last = Some(Error::Io { path, source });
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            Error::io(
                dir,
                io::Error::other(format!(
                    "an ingest was installed during each of {READ_ONLY_TRIES} reads of the \
                     Db's WALs: no consistent read-only view; retry"
                )),
            )
        }))
    }

    /// One round of [`Db::read_only_view`]; `None`: go round again.
    fn read_only_attempt(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
    ) -> Result<Option<(Recovery, Vec<Recovered>)>> {
        let mut held = BTreeMap::new();
        Self::hold_wals(fs, dir, &mut held)?;
        let mut rec = Self::recover_manifest(fs, dir, opts)?;
        let overlay = Self::read_wal_stage(fs, dir)?;
        let mut out = Vec::new();
        for (&w, file) in held.range(rec.log_number..) {
            let path = wal_name(dir, w);
            let data = read_whole(&**file).map_err(|e| Error::io(&path, e))?;
            Self::replay_wal(&mut rec, w, &path, data, overlay.as_ref(), &mut out)?;
        }
        // Step 5. Ingested files carry their global seqno; one at 0 is unordered by design.
        let after = Self::recover_manifest(fs, dir, opts)?;
        // Known: the version's files, and a flushable ingest's, replayed from its WAL record.
        let replayed = out.iter().flat_map(|r| match r {
            Recovered::Ingested(files) => files.as_slice(),
            Recovered::Mem(_) => &[],
        });
        let known: std::collections::HashSet<u64> = rec
            .version
            .levels
            .iter()
            .flatten()
            .map(|f| f.number)
            .chain(replayed.map(|f| f.number))
            .collect();
        let later_write_without_ingest = after.version.levels.iter().flatten().any(|f| {
            f.global_seqno > 0 && f.global_seqno < rec.last_sequence && !known.contains(&f.number)
        });
        Ok((!later_write_without_ingest).then_some((rec, out)))
    }

    /// Opens every WAL in `dir` and holds it in `held`. One deleted between the listing and
    /// its open is skipped: its flush was before (see [`Db::read_only_view`]).
    fn hold_wals(
        fs: &dyn FileSystem,
        dir: &Path,
        held: &mut BTreeMap<u64, Arc<dyn RandomAccessFile>>,
    ) -> Result<()> {
        for name in fs.list(dir).map_err(|e| Error::io(dir, e))? {
            let FileKind::Wal(w) = classify(&name) else {
                continue;
            };
            let path = wal_name(dir, w);
            match fs.open(&path) {
                Ok(f) => {
                    held.insert(w, f);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
        Ok(())
    }

    /// Step 2b of a read-only open: the bytes a writer (live, or killed) acknowledged that its
    /// WAL stage had not written to the WAL yet, read without writing anything or holding a
    /// lock anyone waits for; [`Db::replay_wal`] lays them over their WAL.
    fn read_wal_stage(fs: &dyn FileSystem, dir: &Path) -> Result<Option<staged::Overlay>> {
        let Some(stage_dir) = fs.wal_stage_dir() else {
            return Ok(None);
        };
        staged::read_undrained(dir, &stage_dir).map_err(|e| Self::stage_error(dir, e))
    }
}

/// A held file's contents, as long as it is now. A file cut shorter meanwhile (a mapped
/// WAL trimmed to what was written, after its switch) is read again at its new length.
fn read_whole(f: &dyn RandomAccessFile) -> io::Result<Vec<u8>> {
    let mut tries = 0;
    loop {
        let len = usize::try_from(f.size()?).map_err(|_| io::ErrorKind::InvalidData)?;
        let mut data = vec![0u8; len];
        match f.read_exact_at(0, &mut data) {
            Ok(()) => return Ok(data),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && tries < 8 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// The writer of a read-only Db's WAL and MANIFEST: nothing may be written.
struct NoWrites;

impl std::io::Write for NoWrites {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("the database is open read-only"))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl crate::fs::WritableFile for NoWrites {
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
