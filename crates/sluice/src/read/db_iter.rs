//! The user-facing iterator: collapses the internal stream (all versions, deletions) into the
//! newest visible value per user key at a snapshot, honouring range deletions and bounds.
//!
//! Forward: the internal iterator sits on the entry that produced `key()`.
//! Reverse: it sits just before every entry of `key()`, whose value is saved.
//! (LevelDB's `DBIter` scheme.) Every internal entry stepped over is counted in
//! [`DbIterator::entries_touched`], which tests use to prove bounds cut work short; with a
//! trace, each seek is a span of what it stepped over (entries, point tombstones, entries
//! under range tombstones) and `next`/`prev` add to the trace's counters.

use std::sync::Arc;

use crate::base::error::{escape_bytes, Result};
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, ValueKind};
use crate::base::trace::Trace;
use crate::read::merging::MergingIter;
use crate::read::range_del::RangeDelAggregator;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    Forward,
    Reverse,
}

/// Newest visible entries that hid their key, as an iterator stepped over them.
#[derive(Default)]
struct DeadTally {
    /// Point tombstones.
    tombstones: u64,
    /// Values under a range tombstone.
    range_deleted: u64,
}

impl DeadTally {
    fn count(&mut self, value: bool) {
        if value {
            self.range_deleted += 1;
        } else {
            self.tombstones += 1;
        }
    }
}

/// Iterator over user keys and values. Obtain one with `Db::iter`.
pub struct DbIterator {
    iter: MergingIter,
    snapshot: u64,
    range_dels: RangeDelAggregator,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    dir: Dir,
    valid: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    touched: u64,
    dead: DeadTally,
    /// Where positioning calls are recorded, if the iterator is traced.
    trace: Option<Trace>,
    /// Keeps memtables, versions and snapshots alive for the iterator's lifetime.
    _pins: Vec<Arc<dyn std::any::Any + Send + Sync>>,
}

impl DbIterator {
    /// Assembles an iterator (used by the DB).
    pub(crate) fn new(
        iter: MergingIter,
        snapshot: u64,
        range_dels: RangeDelAggregator,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        pins: Vec<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Self {
        DbIterator {
            iter,
            snapshot,
            range_dels,
            lower,
            upper,
            dir: Dir::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            touched: 0,
            dead: DeadTally::default(),
            trace: None,
            _pins: pins,
        }
    }

    /// Records every positioning call into `trace` (`None`: records nothing).
    pub(crate) fn with_trace(mut self, trace: Option<&Trace>) -> Self {
        self.trace = trace.cloned();
        self
    }

    /// Runs a positioning call; when traced, records what it stepped over — as a span named
    /// `name` if `name` is given, else only in the counters. Untraced: one `Option` test.
    fn traced(&mut self, name: Option<&dyn Fn() -> String>, op: impl FnOnce(&mut Self)) {
        let Some(trace) = self.trace.take() else {
            op(self);
            return;
        };
        let before = (self.touched, self.dead.tombstones, self.dead.range_deleted);
        let id = name.map(|n| trace.begin(n()));
        op(self);
        let entries = self.touched - before.0;
        let tombstones = self.dead.tombstones - before.1;
        let range_deleted = self.dead.range_deleted - before.2;
        if let Some(id) = id {
            trace.field(id, "entries", entries);
            trace.field(id, "tombstones", tombstones);
            trace.field(id, "range_deleted", range_deleted);
            trace.field(id, "valid", self.valid);
            trace.end(id);
        }
        trace.count("entries", entries);
        trace.count("tombstones", tombstones);
        trace.count("range_deleted", range_deleted);
        trace.count("keys_returned", u64::from(self.valid));
        self.trace = Some(trace);
    }

    /// True when positioned on a key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key.
    pub fn key(&self) -> &[u8] {
        match self.dir {
            Dir::Forward => key::user_key(self.iter.key()),
            Dir::Reverse => &self.saved_key,
        }
    }

    /// The current value.
    pub fn value(&self) -> &[u8] {
        match self.dir {
            Dir::Forward => self.iter.value(),
            Dir::Reverse => &self.saved_value,
        }
    }

    /// Internal entries examined since creation (all versions, tombstones included).
    pub fn entries_touched(&self) -> u64 {
        self.touched
    }

    /// The first error met by any source.
    pub fn status(&self) -> Result<()> {
        self.iter.status()
    }

    /// Positions at the first key >= `lower`.
    pub fn seek_to_first(&mut self) {
        self.traced(Some(&|| "seek_to_first".to_string()), |it| {
            it.dir = Dir::Forward;
            it.iter.seek_to_first();
            it.find_next_user_entry(None);
        });
    }

    /// Positions at the last key < `upper`.
    pub fn seek_to_last(&mut self) {
        self.traced(Some(&|| "seek_to_last".to_string()), |it| {
            it.dir = Dir::Reverse;
            it.iter.seek_to_last();
            it.find_prev_user_entry();
        });
    }

    /// Positions at the first key >= `target`.
    pub fn seek(&mut self, target: &[u8]) {
        let name = || format!("seek {}", escape_bytes(target));
        self.traced(Some(&name), |it| it.seek_untraced(target));
    }

    fn seek_untraced(&mut self, target: &[u8]) {
        self.dir = Dir::Forward;
        let t = match &self.lower {
            Some(lo) if target < lo.as_slice() => lo.clone(),
            _ => target.to_vec(),
        };
        self.iter.seek(&key::seek_key(&t, self.snapshot));
        self.find_next_user_entry(None);
    }

    /// Positions at the last key <= `target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        let name = || format!("seek_for_prev {}", escape_bytes(target));
        self.traced(Some(&name), |it| it.seek_for_prev_untraced(target));
    }

    fn seek_for_prev_untraced(&mut self, target: &[u8]) {
        self.dir = Dir::Reverse;
        match &self.upper {
            Some(up) if target >= up.as_slice() => self.iter.seek_to_last(),
            _ => self
                .iter
                .seek_for_prev(&key::make_internal_key(target, 0, ValueKind::Deletion)),
        }
        self.find_prev_user_entry();
    }

    /// Moves to the next key.
    pub fn next(&mut self) {
        self.traced(None, Self::next_untraced);
    }

    fn next_untraced(&mut self) {
        debug_assert!(self.valid);
        if self.dir == Dir::Reverse {
            self.dir = Dir::Forward;
            // The internal iterator is before every entry of saved_key: step in, then skip them.
            if self.iter.valid() {
                self.iter.next();
            } else {
                self.iter.seek_to_first();
            }
            let skip = std::mem::take(&mut self.saved_key);
            self.find_next_user_entry(Some(&skip));
            self.saved_key = skip;
            return;
        }
        let skip = key::user_key(self.iter.key()).to_vec();
        self.iter.next();
        self.find_next_user_entry(Some(&skip));
    }

    /// Moves to the previous key.
    pub fn prev(&mut self) {
        self.traced(None, Self::prev_untraced);
    }

    fn prev_untraced(&mut self) {
        debug_assert!(self.valid);
        if self.dir == Dir::Forward {
            // Step back over every entry of the current user key.
            self.saved_key = key::user_key(self.iter.key()).to_vec();
            loop {
                self.iter.prev();
                self.touched += 1;
                if !self.iter.valid() || key::user_key(self.iter.key()) < self.saved_key.as_slice()
                {
                    break;
                }
            }
            self.dir = Dir::Reverse;
        }
        self.find_prev_user_entry();
    }

    fn visible(&self, seqno: u64) -> bool {
        seqno <= self.snapshot
    }

    fn in_bounds(&self, user: &[u8]) -> bool {
        self.upper.as_deref().is_none_or(|u| user < u)
            && self.lower.as_deref().is_none_or(|l| user >= l)
    }

    /// From the current internal position forward, finds the first user key (other than
    /// `skip` and anything sorting before it) whose newest visible entry is a live value.
    fn find_next_user_entry(&mut self, skip: Option<&[u8]>) {
        let mut decided: Option<Vec<u8>> = skip.map(|s| s.to_vec());
        while self.iter.valid() {
            self.touched += 1;
            let Some(p) = key::parse_internal_key(self.iter.key()) else {
                self.iter.next();
                continue;
            };
            if !self.in_bounds(p.user_key) {
                if self.upper.as_deref().is_some_and(|u| p.user_key >= u) {
                    break;
                }
                self.iter.next();
                continue;
            }
            let already = decided.as_deref().is_some_and(|d| p.user_key <= d);
            if self.visible(p.seqno) && !already {
                let value = p.kind == ValueKind::Value;
                let live = value && !self.range_dels.covers(p.user_key, p.seqno);
                if live {
                    self.valid = true;
                    return;
                }
                self.dead.count(value);
                decided = Some(p.user_key.to_vec());
            }
            self.iter.next();
        }
        self.valid = false;
    }

    /// Walks backward collecting the newest visible entry of each user key; stops once a user
    /// key with a live value is complete.
    fn find_prev_user_entry(&mut self) {
        let mut live = false;
        self.saved_key.clear();
        self.saved_value.clear();
        while self.iter.valid() {
            self.touched += 1;
            if let Some(p) = key::parse_internal_key(self.iter.key()) {
                if self.lower.as_deref().is_some_and(|l| p.user_key < l) {
                    break;
                }
                if self.visible(p.seqno) && self.in_bounds(p.user_key) {
                    if live && p.user_key < self.saved_key.as_slice() {
                        break;
                    }
                    let value = p.kind == ValueKind::Value;
                    live = value && !self.range_dels.covers(p.user_key, p.seqno);
                    if !live {
                        self.dead.count(value);
                    }
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(p.user_key);
                    self.saved_value.clear();
                    if live {
                        self.saved_value.extend_from_slice(self.iter.value());
                    }
                }
            }
            self.iter.prev();
        }
        self.valid = live;
        if !live {
            self.saved_key.clear();
            self.dir = Dir::Forward;
        }
    }
}
