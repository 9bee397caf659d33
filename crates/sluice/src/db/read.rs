//! The read path: a view (seqno + memtables + version, taken atomically, invariant 1), point
//! reads newest source first, and iterators merging every source under the view's seqno.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::base::bounds::IterBounds;
use crate::base::error::{escape_bytes, Result};
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, ValueKind};
use crate::base::range_tombstone::RangeTombstone;
use crate::base::trace::{span, Trace};
use crate::memtable::MemTable;
use crate::read::db_iter::DbIterator;
use crate::read::level::{file_iter, trace_open, LevelIter};
use crate::read::merging::{BoxIter, MergingIter};
use crate::read::range_del::RangeDelAggregator;
use crate::version::l0_sublevels::L0Sublevels;
use crate::version::{FileMeta, Version};

use super::flushable::Flushable;
use super::obsolete::ReadPin;
use super::{Inner, Snapshot};

/// The sources a read consults.
#[derive(Clone)]
pub(super) struct View {
    pub(super) mem: Arc<MemTable>,
    pub(super) imm: Vec<Flushable>,
    pub(super) version: Arc<Version>,
}

impl Inner {
    /// The read seqno and the sources holding everything visible at it, taken in one `state`
    /// critical section (invariant 1): a flush or compaction installed after this cannot have
    /// removed a version this seqno needs from the view.
    pub(super) fn read_view(&self) -> (u64, View) {
        let s = self.state.lock();
        let seq = self.visible_seq.load(Ordering::Acquire);
        let view = View {
            mem: Arc::clone(&s.mem),
            imm: s.imm.clone(),
            version: Arc::clone(&s.version),
        };
        (seq, view)
    }

    /// The view a read uses: the snapshot's, or a fresh one.
    pub(super) fn sources(&self, snapshot: Option<&Snapshot>) -> (u64, View) {
        match snapshot {
            Some(snap) => (snap.seqno, snap.view.clone()),
            None => self.read_view(),
        }
    }

    /// Point read: newest source first — active memtable, the immutable queue newest first
    /// (memtables and flushable ingests), L0 newest first, then L1..L6 — collecting the
    /// newest range deletion covering the key on the way. With a trace, each source consulted
    /// is a span (trace invariant 1: without one, each layer only tests the `Option`).
    pub(super) fn get(
        self: &Arc<Self>,
        user_key: &[u8],
        snapshot: Option<&Snapshot>,
        trace: Option<&Trace>,
    ) -> Result<Option<Vec<u8>>> {
        let root = span(trace, || format!("get {}", escape_bytes(user_key)));
        let found = self.get_newest(user_key, snapshot, trace)?;
        if let Some(root) = &root {
            root.field("result", if found.is_some() { "found" } else { "none" });
        }
        Ok(found)
    }

    fn get_newest(
        self: &Arc<Self>,
        user_key: &[u8],
        snapshot: Option<&Snapshot>,
        trace: Option<&Trace>,
    ) -> Result<Option<Vec<u8>>> {
        let (found, max_tomb) = self.probe_newest(user_key, snapshot, trace)?;
        Ok(found.and_then(|f| resolve(f, max_tomb)))
    }

    /// The sequence number of the newest entry (a value or a deletion) or range deletion
    /// touching `user_key` in the current view; 0 if none (see
    /// [`Db::newest_seqno`](super::Db::newest_seqno)).
    pub(super) fn newest_seqno(self: &Arc<Self>, user_key: &[u8]) -> Result<u64> {
        let (found, max_tomb) = self.probe_newest(user_key, None, None)?;
        Ok(found.map_or(0, |(_, _, seqno)| seqno).max(max_tomb))
    }

    /// The newest entry for `user_key` in the view, and the newest range deletion covering it
    /// in the sources consulted up to that entry (every source if there is none).
    fn probe_newest(
        self: &Arc<Self>,
        user_key: &[u8],
        snapshot: Option<&Snapshot>,
        trace: Option<&Trace>,
    ) -> Result<(Option<Found>, u64)> {
        let (seq, View { mem, imm, version }) = self.sources(snapshot);
        // The pin owns the reader's only reference to the version.
        let pin = self.pin(version);
        let version = pin.version();
        let mut max_tomb = 0u64;
        let probe = Probe {
            user_key,
            seq,
            trace,
        };
        if let Some(found) = probe.memtable(&mem, "active", &mut max_tomb) {
            return Ok((Some(found), max_tomb));
        }
        for entry in imm.iter().rev() {
            let found = match entry {
                Flushable::Mem(m) => probe.memtable(m, "immutable", &mut max_tomb),
                Flushable::Ingested(t) => {
                    self.files_lookup(&t.files, &probe, Place::Queued, &mut max_tomb)?
                }
            };
            if let Some(found) = found {
                return Ok((Some(found), max_tomb));
            }
        }
        // Sublevels are named only in traces, and computed only for them.
        let sublevels = trace.map(|_| L0Sublevels::from_version(version));
        for (level, files) in version.levels.iter().enumerate() {
            let found = if level == 0 {
                let place = Place::L0(sublevels.as_ref());
                self.files_lookup(files, &probe, place, &mut max_tomb)?
            } else {
                // The first file whose largest key may reach `user_key`. A file whose largest
                // key is an exclusive range-deletion end equal to `user_key` does not hold it,
                // and the next file may start at it: look at both.
                let i = files.partition_point(|f| f.largest_user() < user_key);
                let candidates: Vec<Arc<FileMeta>> = files[i..]
                    .iter()
                    .take(2)
                    .find(|f| f.overlaps(Some(user_key), Some(user_key)))
                    .cloned()
                    .into_iter()
                    .collect();
                self.files_lookup(&candidates, &probe, Place::Level(level), &mut max_tomb)?
            };
            if let Some(found) = found {
                return Ok((Some(found), max_tomb));
            }
        }
        Ok((None, max_tomb))
    }

    /// The newest entry for the probed key visible at its seqno in the first of `files`
    /// (newest first) that holds one; range deletions of every file consulted raise `max_tomb`.
    fn files_lookup(
        &self,
        files: &[Arc<FileMeta>],
        probe: &Probe<'_>,
        place: Place<'_>,
        max_tomb: &mut u64,
    ) -> Result<Option<Found>> {
        let (user_key, seq) = (probe.user_key, probe.seq);
        for f in files
            .iter()
            .filter(|f| f.overlaps(Some(user_key), Some(user_key)))
        {
            let span = span(probe.trace, || {
                format!("table {:06} {}", f.number, place.describe(f))
            });
            let table = self.table(f)?;
            for t in table.range_deletions() {
                let ts = f.entry_seqno(t.seqno);
                if ts <= seq && t.start.as_slice() <= user_key && user_key < t.end.as_slice() {
                    *max_tomb = (*max_tomb).max(ts);
                }
            }
            let found = if f.global_seqno > 0 {
                if f.global_seqno > seq {
                    None
                } else {
                    table
                        .get_traced(user_key, key::MAX_SEQNO, probe.trace)?
                        .map(|(k, v, _)| (k, v, f.global_seqno))
                }
            } else {
                table.get_traced(user_key, seq, probe.trace)?
            };
            if let Some(span) = &span {
                span.field("result", describe_found(found.as_ref()));
            }
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// An iterator merging every source of the view, bounded at every layer.
    pub(super) fn iter(
        self: &Arc<Self>,
        snapshot: Option<&Snapshot>,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        trace: Option<&Trace>,
    ) -> Result<DbIterator> {
        let setup = span(trace, || "iterator setup".to_string());
        let (seq, View { mem, imm, version }) = self.sources(snapshot);
        let bounds = IterBounds {
            lower: lower.clone(),
            upper: upper.clone(),
        };
        let mut children: Vec<BoxIter> = Vec::new();
        let mut tombs: Vec<RangeTombstone> = Vec::new();
        let mut pins: Vec<Arc<dyn std::any::Any + Send + Sync>> = Vec::new();
        let mut add_mem = |m: &Arc<MemTable>, children: &mut Vec<BoxIter>| {
            children.push(Box::new(m.iter(lower.clone(), upper.clone())));
            tombs.extend(m.range_deletions());
            pins.push(Arc::clone(m) as Arc<dyn std::any::Any + Send + Sync>);
        };
        add_mem(&mem, &mut children);
        let mut ingested: Vec<Arc<FileMeta>> = Vec::new();
        let mut queued = Vec::new();
        for entry in &imm {
            match entry {
                Flushable::Mem(m) => add_mem(m, &mut children),
                Flushable::Ingested(t) => {
                    ingested.extend(t.files.iter().cloned());
                    queued.push(Arc::clone(t));
                }
            }
        }
        // The queued ingests keep their tables on disk while the iterator lives (invariant 7).
        pins.extend(
            queued
                .into_iter()
                .map(|t| t as Arc<dyn std::any::Any + Send + Sync>),
        );
        let memtables = children.len();
        self.add_files(&ingested, &bounds, &mut children, &mut tombs, trace)?;
        for (level, files) in version.levels.iter().enumerate() {
            if level == 0 {
                self.add_files(files, &bounds, &mut children, &mut tombs, trace)?;
                continue;
            }
            let in_range = in_bounds(files, &bounds);
            self.add_range_deletions(&in_range, &mut tombs)?;
            if !in_range.is_empty() {
                children.push(Box::new(
                    LevelIter::new(in_range, self.opener(), bounds.clone()).with_trace(trace),
                ));
            }
        }
        if let Some(setup) = &setup {
            setup.field("memtables", memtables);
            setup.field("table_iters", children.len() - memtables);
            setup.field("range_tombstones", tombs.len());
        }
        drop(setup);
        // The pin owns the iterator's reference to the version.
        pins.push(Arc::new(self.pin(version)) as Arc<dyn std::any::Any + Send + Sync>);
        let agg = RangeDelAggregator::new(tombs, seq);
        Ok(
            DbIterator::new(MergingIter::new(children), seq, agg, lower, upper, pins)
                .with_trace(trace),
        )
    }

    /// One iterator per file in bounds (files that may overlap: L0, flushable ingests), and
    /// their range deletions.
    fn add_files(
        &self,
        files: &[Arc<FileMeta>],
        bounds: &IterBounds,
        children: &mut Vec<BoxIter>,
        tombs: &mut Vec<RangeTombstone>,
        trace: Option<&Trace>,
    ) -> Result<()> {
        let in_range = in_bounds(files, bounds);
        self.add_range_deletions(&in_range, tombs)?;
        for f in &in_range {
            let t = self.table(f)?;
            trace_open(trace, f);
            children.push(file_iter(&t, f, bounds.clone(), trace));
        }
        Ok(())
    }

    /// The range deletions of `files`, at their files' global seqno where they have one.
    fn add_range_deletions(
        &self,
        files: &[Arc<FileMeta>],
        tombs: &mut Vec<RangeTombstone>,
    ) -> Result<()> {
        for f in files.iter().filter(|f| f.range_dels > 0) {
            let t = self.table(f)?;
            tombs.extend(t.range_deletions().iter().map(|t| RangeTombstone {
                seqno: f.entry_seqno(t.seqno),
                ..t.clone()
            }));
        }
        Ok(())
    }
}

/// The files that may hold keys within `bounds`.
fn in_bounds(files: &[Arc<FileMeta>], bounds: &IterBounds) -> Vec<Arc<FileMeta>> {
    files
        .iter()
        .filter(|f| {
            f.overlaps(bounds.lower.as_deref(), None)
                && bounds
                    .upper
                    .as_deref()
                    .is_none_or(|u| f.smallest_user() < u)
        })
        .cloned()
        .collect()
}

/// What [`Inner::range_sources`] gathers for a key range.
struct RangeSources {
    /// The range as iterator bounds.
    bounds: IterBounds,
    /// Keeps the files below on disk while they are read.
    _pin: ReadPin,
    /// The active and immutable memtables, newest first.
    mems: Vec<Arc<MemTable>>,
    /// The queued ingests' files and every level's, that reach into the range.
    files: Vec<Arc<FileMeta>>,
}

/// An entry found for a key: (kind, value, its seqno).
type Found = (ValueKind, Vec<u8>, u64);

/// One point read's key, seqno and trace, as every source is probed.
struct Probe<'a> {
    user_key: &'a [u8],
    seq: u64,
    trace: Option<&'a Trace>,
}

impl Probe<'_> {
    /// The newest entry for the key visible at the seqno in a memtable; its range deletions
    /// covering the key raise `max_tomb`.
    fn memtable(&self, m: &MemTable, which: &str, max_tomb: &mut u64) -> Option<Found> {
        let span = span(self.trace, || format!("memtable probe ({which})"));
        let (user_key, seq) = (self.user_key, self.seq);
        if m.has_range_deletions() {
            for t in m.range_deletions() {
                if t.seqno <= seq && t.start.as_slice() <= user_key && user_key < t.end.as_slice() {
                    *max_tomb = (*max_tomb).max(t.seqno);
                }
            }
        }
        let found = m.get(user_key, seq);
        if let Some(span) = &span {
            span.field("result", describe_found(found.as_ref()));
        }
        found
    }
}

/// Where a table consulted by a point read sits, as its trace span names it.
#[derive(Clone, Copy)]
enum Place<'a> {
    /// A flushable ingest queued above the memtables.
    Queued,
    /// L0, with its sublevels when tracing.
    L0(Option<&'a L0Sublevels>),
    /// L1 and below.
    Level(usize),
}

impl Place<'_> {
    fn describe(&self, f: &FileMeta) -> String {
        match self {
            Place::Queued => "queued ingest".to_string(),
            Place::L0(subs) => match subs.and_then(|s| s.place_of(f.number)) {
                Some(p) => format!("L0.{}", p.sublevel),
                None => "L0".to_string(),
            },
            Place::Level(l) => format!("L{l}"),
        }
    }
}

fn describe_found(found: Option<&Found>) -> String {
    match found {
        None => "miss".to_string(),
        Some((ValueKind::Value, v, seqno)) => format!("value({} bytes)@{seqno}", v.len()),
        Some((kind, _, seqno)) => format!("{kind:?}@{seqno}"),
    }
}

/// The value a found entry yields, unless a newer range deletion covers it.
fn resolve((kind, value, seqno): Found, max_tomb: u64) -> Option<Vec<u8>> {
    if max_tomb > seqno {
        return None;
    }
    (kind == ValueKind::Value).then_some(value)
}

impl Inner {
    /// The largest seqno of any entry or range deletion with a user key in `[lower, upper)`,
    /// across every source of the current view (see [`Db::max_seqno_in_range`](super::Db)).
    ///
    /// Files wholly inside the range answer from their metadata (`largest_seqno`: every entry
    /// of such a file is in the range); a file that straddles a bound is read, within the
    /// range only, so that a neighbour's newer keys sharing a file with the range do not count.
    /// At most two files a level straddle a bound (plus L0's and the queued ingests'), so the
    /// cost is the range's memtable entries and its two edges, not its size.
    pub(super) fn max_seqno_in_range(self: &Arc<Self>, lower: &[u8], upper: &[u8]) -> Result<u64> {
        // Held to the end: its pin keeps the files on disk.
        let src = self.range_sources(lower, upper);
        let (bounds, mems, files) = (&src.bounds, &src.mems, &src.files);
        let in_range = |t: &RangeTombstone| t.start.as_slice() < upper && lower < t.end.as_slice();
        let mut max = 0u64;
        for m in mems {
            let mut it = m.iter(bounds.lower.clone(), bounds.upper.clone());
            it.seek_to_first();
            while it.valid() {
                max = max.max(key::parse_internal_key(it.key()).map_or(0, |p| p.seqno));
                it.next();
            }
            max = max.max(
                m.range_deletions()
                    .iter()
                    .filter(|t| in_range(t))
                    .map(|t| t.seqno)
                    .max()
                    .unwrap_or(0),
            );
        }
        for f in files {
            let inside = f.smallest_user() >= lower && f.largest_user() < upper;
            if inside {
                max = max.max(f.entry_seqno(f.largest_seqno));
                continue;
            }
            let t = self.table(f)?;
            let mut it = file_iter(&t, f, bounds.clone(), None);
            it.seek_to_first();
            while it.valid() {
                max = max.max(key::parse_internal_key(it.key()).map_or(0, |p| p.seqno));
                it.next();
            }
            it.status()?;
            for rd in t.range_deletions().iter().filter(|t| in_range(t)) {
                max = max.max(f.entry_seqno(rd.seqno));
            }
        }
        Ok(max)
    }

    /// The user keys in `[lower, upper)` with an entry newer than `seqno` (see
    /// [`Db::keys_written_since`](super::Db)): the memtables' entries in the range, and those
    /// of the files whose largest seqno is past `seqno` (no other file can hold one).
    pub(super) fn keys_written_since(
        self: &Arc<Self>,
        lower: &[u8],
        upper: &[u8],
        seqno: u64,
        budget: usize,
    ) -> Result<Option<Vec<Vec<u8>>>> {
        // Held to the end: its pin keeps the files on disk.
        let src = self.range_sources(lower, upper);
        let (bounds, mems, files) = (&src.bounds, &src.mems, &src.files);
        let newer = |t: &RangeTombstone, s: u64| {
            s > seqno && t.start.as_slice() < upper && lower < t.end.as_slice()
        };
        let mut keys = Vec::new();
        let mut read = 0usize;
        // Every entry of the range in `it` past `seqno`; false once `budget` entries were read.
        let mut collect = |it: &mut dyn InternalIterator| {
            it.seek_to_first();
            while it.valid() {
                read += 1;
                if read > budget {
                    return false;
                }
                if let Some(p) = key::parse_internal_key(it.key()) {
                    if p.seqno > seqno {
                        keys.push(p.user_key.to_vec());
                    }
                }
                it.next();
            }
            true
        };
        for m in mems {
            if m.range_deletions().iter().any(|t| newer(t, t.seqno)) {
                return Ok(None);
            }
            if !collect(&mut m.iter(bounds.lower.clone(), bounds.upper.clone())) {
                return Ok(None);
            }
        }
        for f in files
            .iter()
            .filter(|f| f.entry_seqno(f.largest_seqno) > seqno)
        {
            let t = self.table(f)?;
            if (t.range_deletions().iter()).any(|t| newer(t, f.entry_seqno(t.seqno))) {
                return Ok(None);
            }
            let mut it = file_iter(&t, f, bounds.clone(), None);
            if !collect(&mut *it) {
                return Ok(None);
            }
            it.status()?;
        }
        keys.sort_unstable();
        keys.dedup();
        Ok(Some(keys))
    }

    /// The sources of the current view that reach into `[lower, upper)`: the memtables, and
    /// the files of the queued ingests and of every level, kept on disk by the returned pin.
    fn range_sources(self: &Arc<Self>, lower: &[u8], upper: &[u8]) -> RangeSources {
        let (_, View { mem, imm, version }) = self.read_view();
        let pin = self.pin(version);
        let bounds = IterBounds {
            lower: Some(lower.to_vec()),
            upper: Some(upper.to_vec()),
        };
        let mut mems = vec![mem];
        let mut queued: Vec<Arc<FileMeta>> = Vec::new();
        for entry in &imm {
            match entry {
                Flushable::Mem(m) => mems.push(Arc::clone(m)),
                Flushable::Ingested(t) => queued.extend(t.files.iter().cloned()),
            }
        }
        let mut files = in_bounds(&queued, &bounds);
        for level in &pin.version().levels {
            files.extend(in_bounds(level, &bounds));
        }
        RangeSources {
            bounds,
            _pin: pin,
            mems,
            files,
        }
    }
}
