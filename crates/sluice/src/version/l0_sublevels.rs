//! L0 sublevels: the order hidden in L0's overlapping files, derived from file age and key span.
//!
//! L0 files may overlap each other. Stacking each file just above the newest older file it
//! overlaps sorts them into *sublevels*: within a sublevel files are disjoint, like a level
//! below L0, and a higher sublevel holds newer data. A read consults at most one file per
//! sublevel for a key; compaction picking reasons about *intervals* — the pieces of the key
//! space between consecutive file boundaries — and their stack depth. Nothing here is stored:
//! [`L0Sublevels::new`] rebuilds it from a version's L0 files, and the owner of the version
//! decides when to do so.
//!
//! This module owns the structure and the read-side queries (read amplification,
//! [`L0Sublevels::files_for_key`], [`L0Sublevels::flush_split_keys`]); `l0_pick` owns the
//! compaction candidates built on it. Everything is pure: no I/O, no locks, values in and
//! values out, so any thread may build or query one.
//!
//! Invariants (checked by [`L0Sublevels::check_invariants`], in tests and debug builds):
//! 1. *Age order*: a file is older than another if its largest seqno is smaller, ties broken by
//!    the smaller file number (the reverse of `Version`'s L0 order).
//! 2. *Sublevel rule*: a file's sublevel is 0 if it overlaps no older L0 file, otherwise one
//!    above the highest sublevel of the older L0 files it overlaps. Overlap is on user keys and
//!    respects exclusive range-deletion ends (`[a, c)` does not overlap `[c, d]`).
//! 3. Files in one sublevel are pairwise disjoint and sorted by key; so a point read needs at
//!    most one file per sublevel, newest sublevel first.
//! 4. The intervals partition the key span of L0 at every file boundary: each file covers a
//!    contiguous run of intervals exactly (its first interval starts at its smallest key, the
//!    interval after its last starts at its end bound), and an interval's files are listed in
//!    increasing sublevel, which is also increasing age.
//! 5. An interval's byte estimate is the sum over its files of an equal share of each file's
//!    size across the intervals that file covers (Pebble's estimate); the shares of one file
//!    add up to its size.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use super::{FileMeta, Version};
use crate::base::error::escape_bytes;

/// A boundary between intervals: `key` itself, or (`after`) the point just past `key`.
///
/// A file `[a, c]` starts at `(a, false)` and ends at `(c, true)`; a file whose largest key is a
/// range-deletion end `c` (exclusive) ends at `(c, false)`. Ordering is by key, then `after`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bound {
    /// The user key.
    pub key: Vec<u8>,
    /// True for the point just past `key` (an inclusive end).
    pub after: bool,
}

impl Bound {
    /// Renders the bound as `key` or `key+` (the point just past `key`).
    pub fn describe(&self) -> String {
        format!(
            "{}{}",
            escape_bytes(&self.key),
            if self.after { "+" } else { "" }
        )
    }
}

/// How a file of a running compaction is busy, as the L0 picker needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// Input of a running L0→Lbase compaction.
    Base,
    /// Input of a running intra-L0 compaction.
    IntraL0,
}

/// A running compaction out of L0, as far as the picker needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningL0Compaction {
    /// Smallest user key of its L0 inputs.
    pub smallest: Vec<u8>,
    /// Largest user key of its L0 inputs (inclusive).
    pub largest: Vec<u8>,
    /// True for an intra-L0 compaction, false for L0→Lbase.
    pub intra_l0: bool,
    /// Its input file numbers.
    pub files: Vec<u64>,
}

/// One key interval `[start, end)` of L0, with the files covering it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct L0Interval {
    /// Start bound (the end is the next interval's start).
    pub start: Bound,
    /// Indexes into [`L0Sublevels::files`] of the files covering the interval, lowest
    /// sublevel (oldest) first.
    pub files: Vec<usize>,
    /// Estimated bytes of the interval (invariant 5).
    pub bytes: u64,
    /// How many of `files` are inputs of running compactions.
    pub compacting: usize,
    /// Some file in the interval, or a running L0→Lbase compaction's range, is compacting into
    /// Lbase: no new L0→Lbase compaction may take files here.
    pub base_compacting: bool,
    /// Some interval sharing a file with this one is `base_compacting` (a weaker hint: seeds
    /// here are tried after the others).
    pub near_base_compacting: bool,
    /// Smallest first interval of the files covering this one (itself when empty).
    pub(super) files_min: usize,
    /// Largest last interval of the files covering this one (itself when empty).
    pub(super) files_max: usize,
}

impl L0Interval {
    /// Stack depth still to be compacted: files not already in a running compaction.
    pub fn depth(&self) -> usize {
        self.files.len() - self.compacting
    }
}

/// Where one L0 file sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilePlace {
    /// Its sublevel (0 = oldest).
    pub sublevel: usize,
    /// First interval it covers.
    pub first: usize,
    /// Last interval it covers (inclusive).
    pub last: usize,
}

/// The sublevel view of a version's L0 files (see the module doc for the invariants).
#[derive(Debug, Clone)]
pub struct L0Sublevels {
    /// The L0 files, oldest first (invariant 1).
    pub(super) files: Vec<Arc<FileMeta>>,
    /// Place of each file of `files`.
    pub(super) places: Vec<FilePlace>,
    /// File number → index into `files`.
    pub(super) index: HashMap<u64, usize>,
    /// Per sublevel, indexes into `files` sorted by key (invariant 3).
    pub(super) sublevels: Vec<Vec<usize>>,
    /// Intervals in key order; the last one only marks the end of the one before and is empty.
    pub(super) intervals: Vec<L0Interval>,
    /// Busy state per file (from [`L0Sublevels::with_compacting`]).
    pub(super) busy: Vec<Option<Busy>>,
    /// Every busy file number, any level (Lbase files are checked against it too).
    pub(super) busy_numbers: HashSet<u64>,
}

fn start_bound(f: &FileMeta) -> Bound {
    Bound {
        key: f.smallest_user().to_vec(),
        after: false,
    }
}

fn end_bound(f: &FileMeta) -> Bound {
    let end = Bound {
        key: f.largest_user().to_vec(),
        after: !f.largest_is_exclusive(),
    };
    // A malformed file whose exclusive end does not lie past its start still covers its start.
    if end <= start_bound(f) {
        Bound {
            key: f.smallest_user().to_vec(),
            after: true,
        }
    } else {
        end
    }
}

/// Invariant 1's order: true if `a` is older than `b`.
pub fn older(a: &FileMeta, b: &FileMeta) -> bool {
    (a.largest_seqno, a.number) < (b.largest_seqno, b.number)
}

impl L0Sublevels {
    /// Builds the sublevels of `l0_files` (any order; nothing is compacting).
    pub fn new(l0_files: &[Arc<FileMeta>]) -> L0Sublevels {
        let mut files = l0_files.to_vec();
        files.sort_by_key(|f| (f.largest_seqno, f.number));
        let mut bounds: Vec<Bound> = files
            .iter()
            .flat_map(|f| [start_bound(f), end_bound(f)])
            .collect();
        bounds.sort();
        bounds.dedup();
        let mut s = L0Sublevels {
            index: files
                .iter()
                .enumerate()
                .map(|(i, f)| (f.number, i))
                .collect(),
            busy: vec![None; files.len()],
            places: Vec::with_capacity(files.len()),
            sublevels: Vec::new(),
            intervals: bounds
                .into_iter()
                .enumerate()
                .map(|(i, start)| L0Interval {
                    start,
                    files: Vec::new(),
                    bytes: 0,
                    compacting: 0,
                    base_compacting: false,
                    near_base_compacting: false,
                    files_min: i,
                    files_max: i,
                })
                .collect(),
            files,
            busy_numbers: HashSet::new(),
        };
        for i in 0..s.files.len() {
            s.place_file(i);
        }
        for level in 0..s.sublevels.len() {
            let mut members = std::mem::take(&mut s.sublevels[level]);
            members.sort_by_key(|&i| s.places[i].first);
            s.sublevels[level] = members;
        }
        debug_assert_eq!(s.check_invariants(), Ok(()));
        s
    }

    /// Builds the sublevels of `version`'s L0.
    pub fn from_version(version: &Version) -> L0Sublevels {
        L0Sublevels::new(&version.levels[0])
    }

    /// Places file `i` (all older files are placed): its intervals, sublevel and byte shares.
    fn place_file(&mut self, i: usize) {
        let f = Arc::clone(&self.files[i]);
        let find = |b: &Bound| {
            self.intervals
                .binary_search_by(|iv| iv.start.cmp(b))
                .expect("every file bound is an interval start")
        };
        let first = find(&start_bound(&f));
        let last = find(&end_bound(&f)) - 1;
        let width = (last - first + 1) as u64;
        let mut sublevel = 0;
        for (k, iv) in self.intervals[first..=last].iter_mut().enumerate() {
            if let Some(&top) = iv.files.last() {
                sublevel = sublevel.max(self.places[top].sublevel + 1);
            }
            // Equal shares; the remainder goes to the first intervals so the shares add up.
            iv.bytes += f.size / width + u64::from((k as u64) < f.size % width);
            iv.files_min = iv.files_min.min(first);
            iv.files_max = iv.files_max.max(last);
            iv.files.push(i);
        }
        self.places.push(FilePlace {
            sublevel,
            first,
            last,
        });
        if sublevel == self.sublevels.len() {
            self.sublevels.push(Vec::new());
        }
        self.sublevels[sublevel].push(i);
    }

    /// Marks what running compactions hold: `busy` is every input file number of every running
    /// compaction (any level); `running` lists the compactions out of L0. A busy L0 file is
    /// intra-L0 busy if an intra-L0 entry of `running` lists it, otherwise Lbase busy.
    pub fn with_compacting(
        mut self,
        busy: &HashSet<u64>,
        running: &[RunningL0Compaction],
    ) -> L0Sublevels {
        let intra: HashSet<u64> = running
            .iter()
            .filter(|c| c.intra_l0)
            .flat_map(|c| c.files.iter().copied())
            .collect();
        for iv in &mut self.intervals {
            iv.compacting = 0;
            iv.base_compacting = false;
            iv.near_base_compacting = false;
        }
        for (i, f) in self.files.iter().enumerate() {
            let state = if intra.contains(&f.number) {
                Some(Busy::IntraL0)
            } else if busy.contains(&f.number) {
                Some(Busy::Base)
            } else {
                None
            };
            self.busy[i] = state;
            let Some(state) = state else { continue };
            let p = self.places[i];
            for iv in &mut self.intervals[p.first..=p.last] {
                iv.compacting += 1;
                iv.base_compacting |= state == Busy::Base;
            }
        }
        // A running L0→Lbase compaction also claims its range in files flushed after it began.
        for c in running.iter().filter(|c| !c.intra_l0) {
            let lo = self.interval_at_or_after(&Bound {
                key: c.smallest.clone(),
                after: false,
            });
            let hi = self.interval_at_or_after(&Bound {
                key: c.largest.clone(),
                after: true,
            });
            for iv in &mut self.intervals[lo..hi] {
                iv.base_compacting = true;
            }
        }
        for i in 0..self.intervals.len() {
            if self.intervals[i].base_compacting {
                let (lo, hi) = (self.intervals[i].files_min, self.intervals[i].files_max);
                for iv in &mut self.intervals[lo..=hi] {
                    iv.near_base_compacting = true;
                }
            }
        }
        self.busy_numbers = busy.clone();
        self
    }

    /// Index of the first interval whose start is at or after `b` (may be `intervals.len()`).
    fn interval_at_or_after(&self, b: &Bound) -> usize {
        self.intervals.partition_point(|iv| iv.start < *b)
    }

    /// The L0 files, oldest first.
    pub fn files(&self) -> &[Arc<FileMeta>] {
        &self.files
    }

    /// Number of sublevels.
    pub fn sublevel_count(&self) -> usize {
        self.sublevels.len()
    }

    /// The files of each sublevel (index 0 = oldest), each sorted by key.
    pub fn sublevel_files(&self) -> Vec<Vec<Arc<FileMeta>>> {
        self.sublevels
            .iter()
            .map(|l| l.iter().map(|&i| Arc::clone(&self.files[i])).collect())
            .collect()
    }

    /// Where file `number` sits, if it is in L0.
    pub fn place_of(&self, number: u64) -> Option<FilePlace> {
        self.index.get(&number).map(|&i| self.places[i])
    }

    /// The intervals in key order (the last one is an empty end marker).
    pub fn intervals(&self) -> &[L0Interval] {
        &self.intervals
    }

    /// Read amplification of L0: its number of sublevels (a bound on the files a point read
    /// consults in L0).
    pub fn read_amp(&self) -> usize {
        self.sublevels.len()
    }

    /// The tallest stack of files over any one key (at most [`L0Sublevels::read_amp`]).
    pub fn max_depth(&self) -> usize {
        self.intervals
            .iter()
            .map(|iv| iv.files.len())
            .max()
            .unwrap_or(0)
    }

    /// The tallest stack once running compactions finish (their files gone): the L0 score.
    pub fn max_depth_after_running(&self) -> usize {
        self.intervals
            .iter()
            .map(L0Interval::depth)
            .max()
            .unwrap_or(0)
    }

    /// The L0 files that may hold `user_key`, at most one per sublevel, newest sublevel first:
    /// what a point read consults.
    pub fn files_for_key(&self, user_key: &[u8]) -> Vec<Arc<FileMeta>> {
        // The interval holding the key: the last one starting at or before it.
        let at = self.interval_at_or_after(&Bound {
            key: user_key.to_vec(),
            after: true,
        });
        let Some(iv) = at.checked_sub(1).map(|i| &self.intervals[i]) else {
            return Vec::new();
        };
        iv.files
            .iter()
            .rev()
            .map(|&i| Arc::clone(&self.files[i]))
            .collect()
    }

    /// Keys to start new flush outputs at, so that no new L0 file is wide: walking the
    /// intervals in key order, a key is emitted at an interval's start once the bytes
    /// accumulated since the last split exceed `flush_split_bytes` × the sublevel count (more
    /// sublevels, fewer splits: each sublevel holds a share of those bytes). Each key is the
    /// first user key of the next output. An interval starting just past a key `k` (a file's
    /// inclusive end) gives `k ‖ 0x00`, the first key after `k`, so that the cut falls exactly
    /// on the existing file boundary. 0 disables splitting.
    pub fn flush_split_keys(&self, flush_split_bytes: u64) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let limit = flush_split_bytes.saturating_mul(self.sublevels.len() as u64);
        let mut acc = 0u64;
        for iv in &self.intervals {
            let mut key = iv.start.key.clone();
            if iv.start.after {
                key.push(0);
            }
            if limit > 0 && acc > limit && keys.last() != Some(&key) {
                keys.push(key);
                acc = 0;
            }
            acc += iv.bytes;
        }
        keys
    }

    /// Checks invariants 1–5; the error names the first broken one.
    pub fn check_invariants(&self) -> Result<(), String> {
        for w in self.files.windows(2) {
            if !older(&w[0], &w[1]) {
                return Err(format!(
                    "files {} and {} out of age order",
                    w[0].number, w[1].number
                ));
            }
        }
        for (i, f) in self.files.iter().enumerate() {
            let want = self.files[..i]
                .iter()
                .enumerate()
                .filter(|(_, o)| user_spans_overlap(o, f))
                .map(|(j, _)| self.places[j].sublevel + 1)
                .max()
                .unwrap_or(0);
            if self.places[i].sublevel != want {
                return Err(format!(
                    "file {} in sublevel {} but older overlapping files put it in {want}",
                    f.number, self.places[i].sublevel
                ));
            }
            let p = self.places[i];
            if self.intervals[p.first].start != start_bound(f)
                || self.intervals.get(p.last + 1).map(|iv| &iv.start) != Some(&end_bound(f))
            {
                return Err(format!(
                    "file {} does not cover its intervals exactly",
                    f.number
                ));
            }
        }
        for (level, members) in self.sublevels.iter().enumerate() {
            for w in members.windows(2) {
                let (a, b) = (&self.files[w[0]], &self.files[w[1]]);
                if user_spans_overlap(a, b) || self.places[w[0]].last >= self.places[w[1]].first {
                    return Err(format!(
                        "files {} and {} overlap or are unsorted in sublevel {level}",
                        a.number, b.number
                    ));
                }
            }
            if members.iter().any(|&i| self.places[i].sublevel != level) {
                return Err(format!("sublevel {level} lists a file of another sublevel"));
            }
        }
        let mut bytes = 0;
        for w in self.intervals.windows(2) {
            if w[0].start >= w[1].start {
                return Err("intervals out of order".into());
            }
        }
        for (k, iv) in self.intervals.iter().enumerate() {
            bytes += iv.bytes;
            let covering = (0..self.files.len())
                .filter(|&i| (self.places[i].first..=self.places[i].last).contains(&k));
            if !covering.eq(iv.files.iter().copied())
                || iv
                    .files
                    .windows(2)
                    .any(|w| self.places[w[0]].sublevel >= self.places[w[1]].sublevel)
            {
                return Err(format!("interval {k} lists the wrong files"));
            }
        }
        if bytes != self.files.iter().map(|f| f.size).sum::<u64>() {
            return Err("interval bytes do not add up to the file sizes".into());
        }
        Ok(())
    }

    /// A file is *wide* when it covers more than half of L0's intervals (and there are at
    /// least four): compacting it drags most of L0 along.
    pub fn is_wide(&self, number: u64) -> bool {
        let Some(p) = self.place_of(number) else {
            return false;
        };
        let n = self.intervals.len().saturating_sub(1);
        n >= 4 && (p.last - p.first + 1) * 2 > n
    }

    /// Text description: one line per sublevel (newest first) with its files, then the
    /// intervals with their files, depth, bytes and compacting state.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "L0: {} files, {} sublevels, {} intervals, read amp {}, max depth {}\n",
            self.files.len(),
            self.sublevels.len(),
            self.intervals.len().saturating_sub(1),
            self.read_amp(),
            self.max_depth()
        );
        for (level, members) in self.sublevels.iter().enumerate().rev() {
            let _ = write!(s, "L0.{level}:");
            for &i in members {
                let _ = write!(s, " {}", self.describe_file(i));
            }
            s.push('\n');
        }
        s.push_str(&self.describe_intervals());
        s
    }

    /// `number:[lo-hi]`, with `)` for an exclusive end, `*` for a wide file and `(busy)`.
    pub(super) fn describe_file(&self, i: usize) -> String {
        let f = &self.files[i];
        format!(
            "{}:[{}-{}{}{}{}",
            f.number,
            escape_bytes(f.smallest_user()),
            escape_bytes(f.largest_user()),
            if f.largest_is_exclusive() { ")" } else { "]" },
            if self.is_wide(f.number) { "*" } else { "" },
            match self.busy[i] {
                Some(Busy::Base) => "(base)",
                Some(Busy::IntraL0) => "(intra)",
                None => "",
            }
        )
    }

    /// One line per interval: `[start, end)`, its files (oldest first), depth, bytes, flags.
    pub fn describe_intervals(&self) -> String {
        let mut s = String::new();
        for (k, w) in self.intervals.windows(2).enumerate() {
            let iv = &w[0];
            let files: Vec<String> = iv
                .files
                .iter()
                .map(|&i| self.files[i].number.to_string())
                .collect();
            let _ = writeln!(
                s,
                "  {k}: [{}, {}) files {} depth {} bytes {}{}{}",
                iv.start.describe(),
                w[1].start.describe(),
                if files.is_empty() {
                    "-".into()
                } else {
                    files.join(",")
                },
                iv.depth(),
                iv.bytes,
                if iv.base_compacting {
                    " base-compacting"
                } else {
                    ""
                },
                if iv.near_base_compacting && !iv.base_compacting {
                    " near-base-compacting"
                } else {
                    ""
                }
            );
        }
        s
    }
}

/// True if two files share a user key (invariant 2's overlap, exclusive ends respected).
pub fn user_spans_overlap(a: &FileMeta, b: &FileMeta) -> bool {
    start_ref(a) < end_ref(b) && start_ref(b) < end_ref(a)
}

/// Borrowed twin of `start_bound` (the overlap test runs O(n²) times in the checks).
fn start_ref(f: &FileMeta) -> (&[u8], bool) {
    (f.smallest_user(), false)
}

/// Borrowed twin of `end_bound`.
fn end_ref(f: &FileMeta) -> (&[u8], bool) {
    let end = (f.largest_user(), !f.largest_is_exclusive());
    if end <= start_ref(f) {
        (f.smallest_user(), true)
    } else {
        end
    }
}
