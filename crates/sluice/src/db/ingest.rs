//! Ingestion of external SST files (`Db::ingest`), as numbered steps (Pebble's `ingest.go`
//! shape): each step is one function; any failure before step 6 removes what was linked and
//! leaves the database exactly as it was.
//!
//! 1. [`validate`](Inner::ingest_validate): open and check every file (checksums, order,
//!    seqno 0, unique keys), and that the files are disjoint unless `allow_overlap`.
//! 2. [`link`](Inner::ingest_link): hard-link (or copy) into the DB directory under new numbers.
//! 3. Flush an overlapping memtable *before* latching (no writer waits on that flush).
//! 4. Latch only the ingested key ranges; wait for writes already queued; re-check the
//!    memtables (flush again, unlatched, if a write slipped in).
//! 5. Pick each file's target level ([`ingest_target_level`], pure) and the global seqno.
//! 6. Install all files in one durable version edit; publish the seqno; release the latches.
//!
//! Small files (`small_file_threshold`) skip 2–6 and are applied as a write batch.
//!
//! Why no global write stall: the global seqno is allocated inside step 6 from the same counter
//! writers use, and explicit snapshots pin the memtables and version they were taken on, so a
//! write to another range that becomes visible during the install cannot make a snapshot see
//! the ingested data appear later. Writers to other ranges never wait; writers into a latched
//! range wait for this ingest only.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::base::filenames::table_file_name;
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, ValueKind};
use crate::compaction::RunningOutput;
use crate::sst::table::{IterBounds, Table, TableReadOptions};
use crate::version::{FileMeta, Version, VersionEdit, NUM_LEVELS};
use crate::wal::batch::WriteBatch;

use super::{Inner, WriteOptions};

/// Options of [`Db::ingest`](super::Db::ingest).
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Verify every block checksum before ingesting. Default `true`.
    pub verify_checksums: bool,
    /// Allow the files to overlap each other; they are then layered in L0, later files newer.
    /// Default `false`.
    pub allow_overlap: bool,
    /// When *every* file is smaller than this many bytes, they are applied as one write batch
    /// through the WAL and memtable (atomic, later files newer) instead of becoming tiny
    /// tables; if any file is larger, all are ingested as tables. Default 0 (off).
    pub small_file_threshold: u64,
    /// Put the files at the bottom level with seqno 0: existing keys win. Default `false`.
    pub ingest_behind: bool,
    /// Fail unless every file can go to the bottom level. Default `false`.
    pub fail_if_not_bottommost: bool,
    /// Hard-link the files into the Db instead of copying them (RocksDB's `move_files`).
    /// Default `false`: with a link, a later rewrite of the source path in place would change
    /// the Db's table. Only set it when the caller hands the files over for good.
    pub link_files: bool,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            verify_checksums: true,
            allow_overlap: false,
            small_file_threshold: 0,
            ingest_behind: false,
            fail_if_not_bottommost: false,
            link_files: false,
        }
    }
}

/// Where one file went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestedFile {
    /// The source path.
    pub source: PathBuf,
    /// Level it was placed at (`None` when applied as a write batch).
    pub level: Option<usize>,
    /// Global seqno its entries are read at (0: their own seqno 0).
    pub seqno: u64,
    /// File number in the DB (0 when applied as a write batch).
    pub number: u64,
    /// Entries in the file.
    pub entries: u64,
}

/// A file range being ingested.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    source: PathBuf,
    table: Arc<Table>,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    largest_exclusive: bool,
    size: u64,
    entries: u64,
    range_dels: u64,
    number: u64,
}

/// The lowest level a file covering user keys `[lo, hi]` may go to: no file at or above it
/// overlaps the file's *data* (`data_overlaps` opens the file to check, bounds alone are not
/// enough), no file in the target level overlaps its *bounds* (levels ≥ 1 stay disjoint), and
/// no running compaction writes into the range at or above it. Returns the level and whether
/// any existing data overlaps (then the file needs a fresh global seqno).
pub fn ingest_target_level(
    v: &Version,
    lo: &[u8],
    hi: &[u8],
    running: &[RunningOutput],
    data_overlaps: &mut dyn FnMut(&FileMeta) -> Result<bool>,
) -> Result<(usize, bool)> {
    let mut target = 0;
    let mut overlap = false;
    for level in 0..NUM_LEVELS {
        let blocked = running
            .iter()
            .any(|r| r.level == level && r.lo.as_slice() <= hi && lo <= r.hi.as_slice());
        if blocked {
            overlap = true;
            break;
        }
        let candidates = v.overlapping(level, Some(lo), Some(hi));
        if level > 0 && candidates.is_empty() {
            target = level;
        }
        let mut data = false;
        for f in &candidates {
            if data_overlaps(f)? {
                data = true;
                break;
            }
        }
        if data {
            overlap = true;
            break;
        }
    }
    Ok((target, overlap))
}

/// A file's user-key span: smallest, largest, and whether largest is an exclusive bound.
type UserRange = (Vec<u8>, Vec<u8>, bool);

fn user_range_of(t: &Arc<Table>) -> Result<Option<UserRange>> {
    let mut it = t.iter(IterBounds::default());
    it.seek_to_first();
    it.status()?;
    let mut lo = it.valid().then(|| key::user_key(it.key()).to_vec());
    it.seek_to_last();
    it.status()?;
    let mut hi = it.valid().then(|| key::user_key(it.key()).to_vec());
    let mut excl = false;
    for rd in t.range_deletions() {
        if lo.as_ref().is_none_or(|l| rd.start < *l) {
            lo = Some(rd.start.clone());
        }
        if hi.as_ref().is_none_or(|h| rd.end > *h) {
            hi = Some(rd.end.clone());
            excl = true;
        }
    }
    Ok(lo.zip(hi).map(|(l, h)| (l, h, excl)))
}

impl Inner {
    /// Step 1: open and validate every file.
    pub(crate) fn ingest_validate(
        &self,
        paths: &[PathBuf],
        opts: &IngestOptions,
    ) -> Result<Vec<Prepared>> {
        let mut out = Vec::new();
        for p in paths {
            let ropts = TableReadOptions {
                verify_checksums: opts.verify_checksums,
                cache: None,
            };
            let file = self.fs.open(p).map_err(|e| Error::io(p, e))?;
            let t = Table::open(file, p.clone(), &ropts)?;
            if opts.verify_checksums {
                t.verify()?;
            }
            let props = t.properties();
            if props.largest_seqno != 0 && props.raw.contains_key("rocksdb.key.largest.seqno") {
                return Err(Error::corruption(
                    p,
                    0,
                    format!(
                        "external file has entries with seqno up to {} (expected 0)",
                        props.largest_seqno
                    ),
                ));
            }
            // Every key must carry seqno 0 and appear once (a global seqno relabels them all).
            let mut it = t.iter(IterBounds::default());
            it.seek_to_first();
            let mut prev: Option<Vec<u8>> = None;
            let mut n = 0u64;
            while it.valid() {
                let k = key::parse_internal_key(it.key())
                    .ok_or_else(|| Error::corruption(p, 0, "malformed key"))?;
                if k.seqno != 0 {
                    return Err(Error::corruption(
                        p,
                        0,
                        format!(
                            "key {:?} has seqno {} (external files need 0)",
                            crate::base::error::escape_bytes(k.user_key),
                            k.seqno
                        ),
                    ));
                }
                if prev.as_deref() == Some(k.user_key) {
                    return Err(Error::corruption(
                        p,
                        0,
                        format!(
                            "user key {:?} appears twice",
                            crate::base::error::escape_bytes(k.user_key)
                        ),
                    ));
                }
                prev = Some(k.user_key.to_vec());
                n += 1;
                it.next();
            }
            it.status()?;
            let Some((lo, hi, excl)) = user_range_of(&t)? else {
                return Err(Error::InvalidArgument(format!(
                    "{}: file holds no entries",
                    p.display()
                )));
            };
            let size = t.file_size();
            let range_dels = t.range_deletions().len() as u64;
            out.push(Prepared {
                source: p.clone(),
                table: t,
                smallest: lo,
                largest: hi,
                largest_exclusive: excl,
                size,
                entries: n,
                range_dels,
                number: 0,
            });
        }
        if !opts.allow_overlap {
            let mut sorted: Vec<&Prepared> = out.iter().collect();
            sorted.sort_by(|a, b| a.smallest.cmp(&b.smallest));
            for w in sorted.windows(2) {
                let touch = w[0].largest > w[1].smallest
                    || (w[0].largest == w[1].smallest && !w[0].largest_exclusive);
                if touch {
                    return Err(Error::InvalidArgument(format!(
                        "{} and {} overlap (set allow_overlap to layer them in L0)",
                        w[0].source.display(),
                        w[1].source.display()
                    )));
                }
            }
        }
        Ok(out)
    }

    /// Step 2: link or copy each file into the DB directory. On error nothing is left behind.
    pub(crate) fn ingest_link(&self, files: &mut [Prepared], opts: &IngestOptions) -> Result<()> {
        let mut linked: Vec<PathBuf> = Vec::new();
        let r = (|| -> Result<()> {
            for f in files.iter_mut() {
                let number = {
                    let mut s = self.state.lock();
                    let n = s.next_file_number;
                    s.next_file_number += 1;
                    s.pending_outputs.insert(n);
                    n
                };
                f.number = number;
                let dst = table_file_name(&self.dir, number);
                if opts.link_files {
                    self.fs
                        .link_or_copy(&f.source, &dst)
                        .map_err(|e| Error::io(&dst, e))?;
                } else {
                    copy_file(&*self.fs, &f.source, &dst)?;
                }
                linked.push(dst);
            }
            self.fs
                .sync_dir(&self.dir)
                .map_err(|e| Error::io(&self.dir, e))
        })();
        if r.is_err() {
            for p in &linked {
                let _ = self.fs.remove(p);
            }
            self.release_pending(files);
        }
        r
    }

    fn release_pending(&self, files: &[Prepared]) {
        let mut s = self.state.lock();
        for f in files {
            s.pending_outputs.remove(&f.number);
        }
    }

    /// True if any memtable holds data in one of the ranges.
    fn memtables_overlap(&self, files: &[Prepared]) -> bool {
        let (mem, imm) = {
            let s = self.state.lock();
            (Arc::clone(&s.mem), s.imm.clone())
        };
        std::iter::once(&mem).chain(imm.iter()).any(|m| {
            files.iter().any(|f| {
                let mut upper = f.largest.clone();
                if !f.largest_exclusive {
                    upper.push(0);
                }
                let mut it = m.iter(Some(f.smallest.clone()), Some(upper.clone()));
                it.seek_to_first();
                it.valid()
                    || m.range_deletions()
                        .iter()
                        .any(|t| t.start < upper && f.smallest < t.end)
            })
        })
    }

    /// Steps 3 and 4: flush overlapping memtables unlatched, then latch and re-check.
    fn ingest_flush_and_latch(self: &Arc<Self>, files: &[Prepared]) -> Result<u64> {
        for attempt in 0.. {
            if self.memtables_overlap(files) {
                self.flush_and_wait()?;
            }
            let ranges: Vec<(Vec<u8>, Vec<u8>)> = files
                .iter()
                .map(|f| (f.smallest.clone(), f.largest.clone()))
                .collect();
            let latch = self.latch_ranges(ranges);
            if !self.memtables_overlap(files) {
                return Ok(latch);
            }
            if attempt >= 3 {
                // Writers keep racing into the range: flush while latched (they wait).
                let r = self.flush_and_wait();
                if let Err(e) = r {
                    self.unlatch(latch);
                    return Err(e);
                }
                return Ok(latch);
            }
            self.unlatch(latch);
        }
        unreachable!("loop returns")
    }

    /// Steps 5 and 6.
    fn ingest_install(
        self: &Arc<Self>,
        files: &mut [Prepared],
        opts: &IngestOptions,
    ) -> Result<Vec<IngestedFile>> {
        let slot = self.ingest_begin_install(files, opts)?;
        let (mut m, version, running, _installing) =
            (slot.manifest, slot.version, slot.running, slot._guard);
        // Step 5: target levels.
        let mut placements: Vec<(usize, bool)> = Vec::new();
        for f in files.iter() {
            let hi = &f.largest;
            let mut data_overlaps = |existing: &FileMeta| -> Result<bool> {
                self.file_has_data_in(existing, &f.smallest, hi, f.largest_exclusive)
            };
            let placed = if opts.ingest_behind {
                let bottom = NUM_LEVELS - 1;
                if !version
                    .overlapping(bottom, Some(&f.smallest), Some(hi))
                    .is_empty()
                {
                    return Err(Error::InvalidArgument(format!(
                        "{}: ingest_behind needs the bottom level free in its range",
                        f.source.display()
                    )));
                }
                (bottom, false)
            } else if opts.allow_overlap && files.len() > 1 {
                (0, true)
            } else {
                ingest_target_level(&version, &f.smallest, hi, &running, &mut data_overlaps)?
            };
            if opts.fail_if_not_bottommost && placed.0 != NUM_LEVELS - 1 {
                return Err(Error::InvalidArgument(format!(
                    "{}: would go to L{}, not the bottom level (fail_if_not_bottommost)",
                    f.source.display(),
                    placed.0
                )));
            }
            placements.push(placed);
        }
        // Two files of this ingest bound for the same level must not overlap (they are
        // disjoint unless allow_overlap, which sends them all to L0).
        let needs_seqno = placements.iter().any(|p| p.1);
        let count = if opts.allow_overlap {
            files.len() as u64
        } else {
            u64::from(needs_seqno)
        };
        let first_seq = if count > 0 {
            self.last_sequence.fetch_add(count, Ordering::AcqRel) + 1
        } else {
            0
        };
        let mut edit = VersionEdit::default();
        let mut report = Vec::new();
        for (i, (f, (level, _))) in files.iter().zip(&placements).enumerate() {
            let g = match (opts.allow_overlap, needs_seqno) {
                (true, _) => first_seq + i as u64,
                (false, true) => first_seq,
                (false, false) => 0,
            };
            let largest = if f.largest_exclusive {
                key::make_internal_key(&f.largest, key::MAX_SEQNO, ValueKind::RangeDeletion)
            } else {
                key::make_internal_key(&f.largest, g, ValueKind::Value)
            };
            edit.added.push((
                *level,
                FileMeta {
                    number: f.number,
                    size: f.size,
                    smallest: key::make_internal_key(&f.smallest, g, ValueKind::Value),
                    largest,
                    smallest_seqno: g,
                    largest_seqno: g,
                    global_seqno: g,
                    range_dels: f.range_dels,
                },
            ));
            report.push(IngestedFile {
                source: f.source.clone(),
                level: Some(*level),
                seqno: g,
                number: f.number,
                entries: f.entries,
            });
        }
        let last = if count > 0 {
            first_seq + count - 1
        } else {
            self.last_sequence.load(Ordering::Acquire)
        };
        edit.last_sequence = Some(last.max(self.last_sequence.load(Ordering::Acquire)));
        // Every write with a lower seqno is applied (at most one write group is in flight; it
        // has passed its stall checks, so it needs no lock we hold), and therefore in the WAL.
        if count > 0 {
            self.wait_visible(first_seq - 1)?;
        }
        // Invariant 10: the WAL is durable before the edit, so an ingest that survives a crash
        // never survives without a write acknowledged before it.
        self.sync_wal()?;
        // Step 6: one durable edit, written under the manifest lock we hold.
        self.apply_edit_locked(&mut m, edit, |_| {})?;
        drop(m);
        if count > 0 {
            self.visible_seq.fetch_max(last, Ordering::AcqRel);
        }
        Ok(report)
    }

    /// Waits until every seqno up to `seq` is published, or the Db failed.
    fn wait_visible(&self, seq: u64) -> Result<()> {
        while self.visible_seq.load(Ordering::Acquire) < seq {
            if let Some(e) = self.read_only_error(&self.state.lock()) {
                return Err(e);
            }
            std::thread::yield_now();
        }
        Ok(())
    }

    /// Syncs the active WAL (earlier WALs were synced when the memtable switched).
    fn sync_wal(&self) -> Result<()> {
        let r = self.wal.lock().sync();
        r.map_err(|e| {
            let msg = format!("WAL sync failed: {e}");
            self.state.lock().bg_error.get_or_insert(msg);
            Error::Io {
                path: None,
                source: e,
            }
        })
    }

    /// Takes the manifest lock and a consistent (version, running compactions) pair, and
    /// registers the install so no compaction is picked until it is done (a compaction picked
    /// from the version before the install could write into the ingested range). An
    /// `ingest_behind` first waits for running compactions into the bottom level in its range.
    fn ingest_begin_install(
        &self,
        files: &[Prepared],
        opts: &IngestOptions,
    ) -> Result<InstallSlot<'_>> {
        loop {
            let m = self.manifest.lock();
            let mut s = self.state.lock();
            if let Some(e) = self.read_only_error(&s) {
                return Err(e);
            }
            let bottom = NUM_LEVELS - 1;
            let blocked = opts.ingest_behind
                && s.running_outputs.iter().any(|r| {
                    r.level == bottom
                        && files.iter().any(|f| {
                            r.lo.as_slice() <= f.largest.as_slice()
                                && f.smallest.as_slice() <= r.hi.as_slice()
                        })
                });
            if !blocked {
                s.ingests_installing += 1;
                let snapshot = (Arc::clone(&s.version), s.running_outputs.clone());
                drop(s);
                return Ok(InstallSlot {
                    manifest: m,
                    version: snapshot.0,
                    running: snapshot.1,
                    _guard: InstallGuard { inner: self },
                });
            }
            drop(m);
            self.done_cv
                .wait_for(&mut s, std::time::Duration::from_millis(50));
        }
    }

    /// True if `f` holds an entry or range deletion in user keys `[lo, hi]` (`hi` exclusive
    /// when `hi_exclusive`).
    fn file_has_data_in(
        &self,
        f: &FileMeta,
        lo: &[u8],
        hi: &[u8],
        hi_exclusive: bool,
    ) -> Result<bool> {
        let t = self.table(f)?;
        let mut upper = hi.to_vec();
        if !hi_exclusive {
            upper.push(0);
        }
        let mut it = t.iter(IterBounds {
            lower: Some(lo.to_vec()),
            upper: Some(upper.clone()),
        });
        it.seek_to_first();
        it.status()?;
        Ok(it.valid()
            || t.range_deletions()
                .iter()
                .any(|r| r.start.as_slice() < upper.as_slice() && lo < r.end.as_slice()))
    }

    /// Applies small files as one synced write batch: atomic, and later files newer (their
    /// entries get higher seqnos; within a file, range deletions come before the points, so a
    /// file's own deletions never hide its own points, as with a global seqno).
    fn ingest_as_batch(self: &Arc<Self>, files: &[Prepared]) -> Result<Vec<IngestedFile>> {
        let mut b = WriteBatch::new();
        for f in files {
            for rd in f.table.range_deletions() {
                b.delete_range(&rd.start, &rd.end);
            }
            let mut it = f.table.iter(IterBounds::default());
            it.seek_to_first();
            while it.valid() {
                let p = key::parse_internal_key(it.key())
                    .ok_or_else(|| Error::corruption(&f.source, 0, "malformed key"))?;
                match p.kind {
                    ValueKind::Value => b.put(p.user_key, it.value()),
                    ValueKind::Deletion => b.delete(p.user_key),
                    ValueKind::RangeDeletion => {}
                }
                it.next();
            }
            it.status()?;
        }
        self.write(
            b,
            WriteOptions {
                sync: true,
                disable_wal: false,
            },
        )?;
        let seqno = self.visible_seq.load(Ordering::Acquire);
        Ok(files
            .iter()
            .map(|f| IngestedFile {
                source: f.source.clone(),
                level: None,
                seqno,
                number: 0,
                entries: f.entries,
            })
            .collect())
    }

    /// `Db::ingest`: the numbered steps of the module docs.
    pub(crate) fn ingest(
        self: &Arc<Self>,
        paths: &[PathBuf],
        opts: &IngestOptions,
    ) -> Result<Vec<IngestedFile>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut big = self.ingest_validate(paths, opts)?;
        // All small: one write batch, atomic. Otherwise all are tables, in one edit: mixing
        // the two paths would make the ingest visible in two steps.
        if !opts.ingest_behind && big.iter().all(|f| f.size < opts.small_file_threshold) {
            return self.ingest_as_batch(&big);
        }
        let mut report = Vec::new();
        self.ingest_link(&mut big, opts)?;
        let latch = match self.ingest_flush_and_latch(&big) {
            Ok(l) => l,
            Err(e) => {
                self.remove_linked(&big);
                return Err(e);
            }
        };
        // Released on every path out, panics included.
        let guard = LatchGuard {
            inner: self,
            id: latch,
        };
        let r = self.ingest_install(&mut big, opts);
        drop(guard);
        match r {
            Ok(mut placed) => {
                self.release_pending(&big);
                report.append(&mut placed);
                self.bg_cv.notify_all();
                Ok(report)
            }
            Err(e) => {
                self.remove_linked(&big);
                Err(e)
            }
        }
    }

    fn remove_linked(&self, files: &[Prepared]) {
        for f in files {
            let _ = self.fs.remove(&table_file_name(&self.dir, f.number));
        }
        self.release_pending(files);
    }
}

/// What an ingest installs against: the manifest lock, the version and running compactions
/// read with it, and the registration that keeps compactions from being picked meanwhile.
struct InstallSlot<'a> {
    manifest: parking_lot::MutexGuard<'a, super::ManifestState>,
    version: Arc<Version>,
    running: Vec<RunningOutput>,
    _guard: InstallGuard<'a>,
}

/// Ends an ingest's install registration (see `ingest_begin_install`) when dropped.
struct InstallGuard<'a> {
    inner: &'a Inner,
}

impl Drop for InstallGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.inner.state.lock();
        s.ingests_installing -= 1;
        drop(s);
        self.inner.bg_cv.notify_all();
        self.inner.done_cv.notify_all();
    }
}

/// Releases an ingest's key-range latch when dropped.
struct LatchGuard<'a> {
    inner: &'a Inner,
    id: u64,
}

impl Drop for LatchGuard<'_> {
    fn drop(&mut self) {
        self.inner.unlatch(self.id);
    }
}

/// Copies `src` to the new file `dst` in 1 MiB pieces (memory stays bounded for any file
/// size) and syncs it; on error `dst` is removed.
fn copy_file(fs: &dyn crate::fs::FileSystem, src: &Path, dst: &Path) -> Result<()> {
    const CHUNK: u64 = 1 << 20;
    let input = fs.open(src).map_err(|e| Error::io(src, e))?;
    let len = fs.file_size(src).map_err(|e| Error::io(src, e))?;
    let mut w = fs.create(dst).map_err(|e| Error::io(dst, e))?;
    let mut buf = vec![0u8; CHUNK.min(len) as usize];
    let r = (|| -> Result<()> {
        let mut off = 0;
        while off < len {
            let n = CHUNK.min(len - off) as usize;
            input
                .read_exact_at(off, &mut buf[..n])
                .map_err(|e| Error::io(src, e))?;
            std::io::Write::write_all(&mut w, &buf[..n]).map_err(|e| Error::io(dst, e))?;
            off += n as u64;
        }
        w.sync().map_err(|e| Error::io(dst, e))
    })();
    if r.is_err() {
        drop(w);
        let _ = fs.remove(dst);
    }
    r
}
