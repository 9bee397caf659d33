//! Iterators over table files: a [`GlobalSeqnoIter`] that presents an ingested file's entries
//! at the file's global seqno, and a [`LevelIter`] that walks a sorted, non-overlapping level
//! one file at a time, skipping files outside its bounds.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::base::bounds::IterBounds;
use crate::base::error::Result;
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, compare_internal, MAX_SEQNO};
use crate::base::trace::Trace;
use crate::sst::table::Table;
use crate::sst::table_iter::TableIter;
use crate::version::FileMeta;

/// Opens the table of a file (through the table cache).
pub type TableOpener = Arc<dyn Fn(&FileMeta) -> Result<Arc<Table>> + Send + Sync>;

/// A table iterator whose entries are all read at one seqno (files ingested with a global
/// seqno store seqno 0 on disk). Requires unique user keys in the file, which external files
/// guarantee.
pub struct GlobalSeqnoIter {
    inner: TableIter,
    seqno: u64,
    key: Vec<u8>,
}

impl GlobalSeqnoIter {
    /// Wraps `inner`, presenting every entry at `seqno`.
    pub fn new(inner: TableIter, seqno: u64) -> Self {
        GlobalSeqnoIter {
            inner,
            seqno,
            key: Vec::new(),
        }
    }

    fn refresh(&mut self) {
        self.key.clear();
        if self.inner.valid() && self.inner.key().len() >= key::TRAILER_LEN {
            let k = self.inner.key();
            let kind = key::trailer(k) as u8;
            key::append_internal_key(&mut self.key, key::user_key(k), self.seqno, kind);
        }
    }
}

impl InternalIterator for GlobalSeqnoIter {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.refresh();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.refresh();
    }
    fn seek(&mut self, target: &[u8]) {
        // The entry (u, G) sorts at or after the target (u, s) iff G <= s.
        let u = key::user_key(target);
        self.inner.seek(&key::seek_key(u, MAX_SEQNO));
        if self.inner.valid()
            && key::user_key(self.inner.key()) == u
            && self.seqno > key::trailer(target) >> 8
        {
            self.inner.next();
        }
        self.refresh();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let u = key::user_key(target);
        self.inner
            .seek_for_prev(&key::make_internal_key(u, 0, key::ValueKind::Deletion));
        if self.inner.valid()
            && key::user_key(self.inner.key()) == u
            && self.seqno < key::trailer(target) >> 8
        {
            self.inner.prev();
        }
        self.refresh();
    }
    fn next(&mut self) {
        self.inner.next();
        self.refresh();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.refresh();
    }
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

/// Opens an iterator over one file, honouring its global seqno; its block reads are
/// recorded into `trace` when set.
pub fn file_iter(
    table: &Arc<Table>,
    f: &FileMeta,
    bounds: IterBounds,
    trace: Option<&Trace>,
) -> Box<dyn InternalIterator + Send> {
    let mut it = table.iter(bounds);
    it.set_trace(trace.cloned());
    if f.global_seqno > 0 {
        Box::new(GlobalSeqnoIter::new(it, f.global_seqno))
    } else {
        Box::new(it)
    }
}

/// Records that an iterator opened `f`'s table, when tracing.
pub fn trace_open(trace: Option<&Trace>, f: &FileMeta) {
    if let Some(trace) = trace {
        trace.end(trace.begin(format!("open table {:06}", f.number)));
        trace.count("tables_opened", 1);
    }
}

/// Walks the files of one level (L1+) in key order.
pub struct LevelIter {
    files: Vec<Arc<FileMeta>>,
    opener: TableOpener,
    bounds: IterBounds,
    index: usize,
    current: Option<Box<dyn InternalIterator + Send>>,
    err: Option<crate::base::error::Error>,
    /// Files opened so far (a measure of work for bound tests).
    pub files_opened: u64,
    /// Where opens and block reads are recorded, if the read is traced.
    trace: Option<Trace>,
}

impl LevelIter {
    /// An iterator over `files` (sorted, non-overlapping), restricted to `bounds`.
    pub fn new(files: Vec<Arc<FileMeta>>, opener: TableOpener, bounds: IterBounds) -> Self {
        // Files wholly outside the bounds are never opened.
        let files = files
            .into_iter()
            .filter(|f| {
                let below = bounds.lower.as_deref().is_some_and(|lo| {
                    f.largest_user() < lo || (f.largest_user() == lo && f.largest_is_exclusive())
                });
                let above = bounds
                    .upper
                    .as_deref()
                    .is_some_and(|up| f.smallest_user() >= up);
                !(below || above)
            })
            .collect();
        LevelIter {
            files,
            opener,
            bounds,
            index: 0,
            current: None,
            err: None,
            files_opened: 0,
            trace: None,
        }
    }

    /// Records each file opened, and its block reads, into `trace` (`None`: records nothing).
    pub fn with_trace(mut self, trace: Option<&Trace>) -> Self {
        self.trace = trace.cloned();
        self
    }

    fn open(&mut self, i: usize) -> bool {
        self.index = i;
        self.current = None;
        let Some(f) = self.files.get(i).cloned() else {
            return false;
        };
        match (self.opener)(&f) {
            Ok(t) => {
                self.files_opened += 1;
                trace_open(self.trace.as_ref(), &f);
                self.current = Some(file_iter(&t, &f, self.bounds.clone(), self.trace.as_ref()));
                true
            }
            Err(e) => {
                self.err.get_or_insert(e);
                false
            }
        }
    }

    fn cur_valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn cur_error(&mut self) -> bool {
        if let Some(Err(e)) = self.current.as_ref().map(|c| c.status()) {
            self.err.get_or_insert(e);
            self.current = None;
            return true;
        }
        false
    }

    fn skip_forward(&mut self) {
        while !self.cur_valid() && self.err.is_none() {
            if self.cur_error() || self.index + 1 >= self.files.len() {
                self.current = None;
                return;
            }
            if self.open(self.index + 1) {
                self.current.as_mut().expect("opened").seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while !self.cur_valid() && self.err.is_none() {
            if self.cur_error() || self.index == 0 {
                self.current = None;
                return;
            }
            if self.open(self.index - 1) {
                self.current.as_mut().expect("opened").seek_to_last();
            }
        }
    }

    /// First file whose largest key is >= the target's user key.
    fn find_file(&self, target: &[u8]) -> usize {
        self.files
            .partition_point(|f| compare_internal(&f.largest, target) == Ordering::Less)
    }
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.cur_valid()
    }
    fn seek_to_first(&mut self) {
        if self.open(0) {
            self.current.as_mut().expect("opened").seek_to_first();
        }
        self.skip_forward();
    }
    fn seek_to_last(&mut self) {
        if !self.files.is_empty() && self.open(self.files.len() - 1) {
            self.current.as_mut().expect("opened").seek_to_last();
        }
        self.skip_backward();
    }
    fn seek(&mut self, target: &[u8]) {
        let i = self.find_file(target);
        if self.open(i) {
            self.current.as_mut().expect("opened").seek(target);
        }
        self.skip_forward();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self
            .find_file(target)
            .min(self.files.len().saturating_sub(1));
        if self.open(i) {
            self.current.as_mut().expect("opened").seek_for_prev(target);
        }
        self.skip_backward();
    }
    fn next(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.next();
        }
        self.skip_forward();
    }
    fn prev(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.key())
    }
    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |c| c.value())
    }
    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(crate::base::error::clone_error(e)),
            None => self.current.as_ref().map_or(Ok(()), |c| c.status()),
        }
    }
}
