//! Opening a Db for reading only, beside a writer that goes on (see [`Db::open_read_only`]).
//!
//! The reader takes no lock, so the writer may flush a memtable, delete the WAL it came from,
//! compact tables away, ingest or switch WALs at any moment while the reader reads. What keeps
//! its view whole is in [`Db::read_only_view`]: the WALs are held open before the MANIFEST is
//! read (a deleted WAL stays readable through its handle), and their replay stops at the
//! install marker of an ingest the MANIFEST read did not see, so such an ingest cannot be
//! missing below a write acknowledged after it. The view's table files are held open too, so
//! a compaction beside it that deletes them takes nothing from the view.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::base::error::{Error, Result};
use crate::base::filenames::{classify, table_file_name, wal_name, FileKind};
use crate::fs::staged;
use crate::fs::{FileSystem, RandomAccessFile};
use crate::memtable::MemTable;
use crate::version::FileMeta;
use crate::wal::log::LogWriter;

use super::create::DirContents;
use super::flushable::{Flushable, IngestedTables};
use super::open::{Recovered, Recovery};
use super::table_cache::PinnedTables;
use super::version_set::ManifestState;
use super::{Db, Inner, Options};

/// How many times a read-only open reads the Db while its files vanish under it (a writer
/// opening anew) before it gives up.
const READ_ONLY_TRIES: usize = 32;

impl Db {
    /// Opens an existing Db for reading only (RocksDB's `OpenForReadOnly`): it replays the
    /// MANIFEST and the WALs into memory and writes nothing at all — no flush, no new WAL,
    /// MANIFEST or OPTIONS file, no file deleted, no lock taken, no background work — so any
    /// number of readers may open a Db, also one a writer holds. Such a reader sees the Db as
    /// of its open — every write acknowledged before the open began, also those still in the
    /// writer's WAL stage (steps in [`Db::read_only_view`]). The view's table files are held
    /// open from its open on (as with RocksDB's `max_open_files = -1`), up to three quarters of
    /// `max_open_files` and half the process's descriptor limit: a table the writer compacts
    /// away and deletes meanwhile stays readable, so the view stays whole for as long as it is
    /// open (reopen to see the new state), and the disk space of such tables is freed only when
    /// the view is dropped. A Db with more tables than that has the rest opened by name when
    /// first read; a read of one deleted by then fails with an I/O error. A table lost before
    /// the open (missing, not compacted) does not stop it; reads of its keys fail. Writes,
    /// flush, compaction and ingest fail.
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
        let (rec, recovered, pinned) = Self::read_only_view(&*fs, &dir, &opts)?;
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
            Some(pinned),
        ));
        Ok(Db {
            inner,
            workers: Mutex::new(Vec::new()),
        })
    }

    /// The steps of a read-only open, beside a writer that goes on meanwhile:
    /// 1. every WAL in the directory, opened (held: one the writer deletes from now on stays
    ///    readable through its handle);
    /// 2. the MANIFEST: the version, the oldest WAL it still needs (its log number), and how
    ///    far it was read; then the version's table files, opened and held (step 5);
    /// 3. what the writer's WAL stage had not written yet (`fs::staged::read_undrained`);
    /// 4. the held WALs the MANIFEST still needs, read whole now, replayed in order with the
    ///    stage's bytes laid over theirs, up to the first *install marker* of an ingest whose
    ///    MANIFEST edit step 2 did not read.
    ///
    /// Why nothing acknowledged before the open is missed: a WAL deleted before step 1 was
    /// flushed by an edit made before step 1, so step 2's version has its writes; every other
    /// WAL the version needs existed at step 1 and is held. WALs are made in number order and
    /// deleted only once the log number passed them, so the held WALs from the log number on
    /// run without a gap, each but the newest closed whole at its switch; one made after step
    /// 1 is newer than all of them and holds only writes from after the open began. The WALs'
    /// contents are read after the stage's bytes. An ingest installed after step 2 is a
    /// MANIFEST edit this view lacks; before it is acknowledged it appends an install marker
    /// to the WAL, after its edit is durable, so every write acknowledged after it lies past
    /// the marker, where the replay stops (the marker names the edit's MANIFEST and end, which
    /// step 2's read either reached or not). A marker for an ingest installed before step 2 is
    /// passed over. An ingest installed during the open that the view lacks was not
    /// acknowledged when the open began.
    ///
    /// 5. the table files of the view (the version's, held right after step 2, and those of
    ///    flushable ingests replayed in step 4), up to [`pin_budget`] of them, newest first:
    ///    a table the writer deletes from now on stays readable through its handle.
    ///
    /// The MANIFEST or a WAL gone under it (`NotFound`: a writer opening anew, which starts a
    /// new MANIFEST) sends it round again, at most [`READ_ONLY_TRIES`] times; so does a table
    /// of the view gone before it is held — a compaction that ended after step 2. The writer
    /// deletes a table only once a MANIFEST edit without it is written, so the next round's
    /// MANIFEST read no longer names it; a table that round still names and still misses was
    /// lost, not compacted, and the view opens without holding it (as a writable open does:
    /// reads of it fail naming it).
    pub(super) fn read_only_view(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
    ) -> Result<(Recovery, Vec<Recovered>, PinnedTables)> {
        let mut tries = 0;
        let mut missing = BTreeSet::new();
        let budget = pin_budget(opts.max_open_files);
        loop {
            match Self::read_only_attempt(fs, dir, opts, budget, &mut missing) {
                Err(Error::Io { source, .. })
                    if source.kind() == io::ErrorKind::NotFound && tries + 1 < READ_ONLY_TRIES =>
                {
                    tries += 1;
                }
                r => return r,
            }
        }
    }

    /// One round of [`Db::read_only_view`], holding up to `budget` tables; `missing`: tables
    /// found missing in earlier rounds.
    fn read_only_attempt(
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &Options,
        budget: usize,
        missing: &mut BTreeSet<u64>,
    ) -> Result<(Recovery, Vec<Recovered>, PinnedTables)> {
        let held = Self::hold_wals(fs, dir)?;
        let mut rec = Self::recover_manifest(fs, dir, opts)?;
        let mut pinned = PinnedTables::new();
        let levels = rec.version.levels.iter().flatten().map(|f| f.number);
        pin_tables(fs, dir, levels, budget, missing, &mut pinned)?;
        let cut = (rec.manifest_number, rec.manifest_valid_len);
        let overlay = Self::read_wal_stage(fs, dir)?;
        let mut out = Vec::new();
        for (&w, file) in held.range(rec.log_number..) {
            let path = wal_name(dir, w);
            let data = read_whole(&**file).map_err(|e| Error::io(&path, e))?;
            if Self::replay_wal(
                &mut rec,
                w,
                &path,
                data,
                overlay.as_ref(),
                Some(cut),
                &mut out,
            )? {
                break;
            }
        }
        let ingested = out.iter().flat_map(|r| match r {
            Recovered::Ingested(files) => files.iter().map(|f| f.number).collect(),
            Recovered::Mem(_) => Vec::new(),
        });
        pin_tables(fs, dir, ingested, budget, missing, &mut pinned)?;
        Ok((rec, out, pinned))
    }

    /// Opens every WAL in `dir` and holds it. One deleted between the listing and
    /// its open is skipped: its flush was before (see [`Db::read_only_view`]).
    fn hold_wals(
        fs: &dyn FileSystem,
        dir: &Path,
    ) -> Result<BTreeMap<u64, Arc<dyn RandomAccessFile>>> {
        let mut held = BTreeMap::new();
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
        Ok(held)
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

/// How many table files a read-only view holds: three quarters of `max_open_files` (the rest
/// are for tables opened by name past them, so that the view's descriptors stay within
/// `max_open_files`: `TableCache`), and at most half the process's descriptor limit.
fn pin_budget(max_open_files: usize) -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    (max_open_files / 4 * 3).min(soft / 2)
}

/// Step 5 of [`Db::read_only_view`]: opens the tables `numbers` into `pinned` while it holds
/// fewer than `budget`. One gone fails the round with `NotFound` the first time (a compaction
/// deleted it after the MANIFEST read: the next round's version no longer names it) and is
/// noted in `missing`; gone again in a later round, it is lost and left out. Out of
/// descriptors, it lets a few go and stops: the rest are opened by name when read.
fn pin_tables(
    fs: &dyn FileSystem,
    dir: &Path,
    numbers: impl Iterator<Item = u64>,
    budget: usize,
    missing: &mut BTreeSet<u64>,
    pinned: &mut PinnedTables,
) -> Result<()> {
    for number in numbers {
        if pinned.len() >= budget {
            break;
        }
        let path = table_file_name(dir, number);
        match fs.open(&path) {
            Ok(file) => {
                pinned.insert(number, file);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && !missing.insert(number) => {}
            Err(e)
                if [rustix::io::Errno::MFILE, rustix::io::Errno::NFILE]
                    .iter()
                    .any(|n| e.raw_os_error() == Some(n.raw_os_error())) =>
            {
                // Leave the process descriptors for the rest of its work.
                let keep = pinned.len().saturating_sub(64);
                while pinned.len() > keep {
                    pinned.pop_last();
                }
                break;
            }
            Err(e) => return Err(Error::io(&path, e)),
        }
    }
    Ok(())
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
