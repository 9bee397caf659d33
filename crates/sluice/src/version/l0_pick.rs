//! Compaction candidates out of L0, built on [`L0Sublevels`] (pure: a value in, a plan out).
//!
//! Picture L0 as a grid: intervals left to right, sublevels bottom (old) to top (new). Good L0
//! compactions are *tall and thin*: they take a whole stack of files over a few intervals, so
//! they cut the stack depth where it is worst, finish quickly, and leave the rest of the key
//! space free for other compactions running at the same time.
//!
//! Invariants of every candidate returned:
//! 1. *L0→Lbase, closed downward*: with a file, every older L0 file overlapping it is taken
//!    (transitively) — otherwise newer data would land below older data for the same key. Newer
//!    files overlapping the candidate may stay in L0: they stay above the output, which is right.
//! 2. *Intra-L0, closed upward*: with a file, every newer L0 file overlapping it is taken
//!    (transitively), except files at or above `earliest_unflushed_seqno`, which are newer than
//!    every input; so no file left out lies between two inputs in age for any key, and the
//!    output (placed by its largest seqno) sits where all of its data belongs.
//! 3. No input is already compacting; an L0→Lbase candidate avoids intervals claimed by a
//!    running L0→Lbase compaction and Lbase files already compacting, so several L0→Lbase
//!    compactions run at once on disjoint key ranges.
//! 4. A candidate takes at least `min_depth` files of its seed interval's stack, and grows a
//!    stack level at a time only while the size bound allows (`L0PickOptions`).

use std::sync::Arc;

use super::l0_sublevels::L0Sublevels;
use super::FileMeta;

/// Knobs of L0 picking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct L0PickOptions {
    /// Least number of files an L0→Lbase candidate must take from its seed interval's stack.
    /// Default 1.
    pub min_base_depth: usize,
    /// Least number of files an intra-L0 candidate must take from its seed interval's stack.
    /// Default 4.
    pub min_intra_depth: usize,
    /// Bytes past which a candidate grows another stack level only if that adds at most
    /// `max_growth_pct` percent, or (L0→Lbase) if the step takes no more base-level bytes.
    /// Default 100 MiB.
    pub soft_max_bytes: u64,
    /// Bytes past which a candidate never grows another stack level. Default 500 MiB.
    pub hard_max_bytes: u64,
    /// Largest growth, in percent of the previous size, of one step past `soft_max_bytes`.
    /// Default 150.
    pub max_growth_pct: u64,
    /// Intra-L0 only: an older file joins the candidate only if its size is at most this
    /// percent of the largest file taken so far, so files of similar size merge and a run
    /// already merged waits for peers of its own size (size-tiered: a byte is rewritten about
    /// once per size class, not at every merge). 0: no bound. Default 0.
    pub max_absorb_pct: u64,
}

impl Default for L0PickOptions {
    fn default() -> Self {
        L0PickOptions {
            min_base_depth: 1,
            min_intra_depth: 4,
            soft_max_bytes: 100 << 20,
            hard_max_bytes: 500 << 20,
            max_growth_pct: 150,
            max_absorb_pct: 0,
        }
    }
}

/// A set of L0 files to compact together, with what the picker knew when it chose them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct L0CompactionCandidate {
    /// The input files, in the order they were taken.
    pub files: Vec<Arc<FileMeta>>,
    /// Smallest user key of the inputs.
    pub smallest: Vec<u8>,
    /// Largest user key of the inputs.
    pub largest: Vec<u8>,
    /// True if `largest` is an exclusive range-deletion end.
    pub largest_exclusive: bool,
    /// Total size of the inputs.
    pub bytes: u64,
    /// The interval the candidate was grown from.
    pub seed_interval: usize,
    /// How many files of the seed interval's stack it takes (its depth reduction there).
    pub depth_reduction: usize,
    /// First and last interval the inputs cover.
    pub intervals: (usize, usize),
    /// True for an intra-L0 compaction (output back into L0), false for L0→Lbase.
    pub intra_l0: bool,
    /// Indexes into the sublevels' files, as `files`.
    taken: Vec<usize>,
    /// Lowest and highest sublevel of the seed interval's files taken.
    seed_levels: (usize, usize),
    /// Files at or above this seqno are left out (intra-L0 only).
    earliest_unflushed_seqno: u64,
}

impl L0CompactionCandidate {
    fn new(seed_interval: usize, intra_l0: bool, earliest_unflushed_seqno: u64) -> Self {
        L0CompactionCandidate {
            files: Vec::new(),
            smallest: Vec::new(),
            largest: Vec::new(),
            largest_exclusive: false,
            bytes: 0,
            seed_interval,
            depth_reduction: 0,
            intervals: (usize::MAX, 0),
            intra_l0,
            taken: Vec::new(),
            seed_levels: (0, 0),
            earliest_unflushed_seqno,
        }
    }

    /// File numbers of the inputs, in the order they were taken.
    pub fn numbers(&self) -> Vec<u64> {
        self.files.iter().map(|f| f.number).collect()
    }

    fn add(&mut self, s: &L0Sublevels, i: usize) {
        if self.taken.contains(&i) {
            return;
        }
        self.taken.push(i);
        self.files.push(Arc::clone(&s.files[i]));
        self.bytes += s.files[i].size;
        let p = s.places[i];
        self.intervals = (self.intervals.0.min(p.first), self.intervals.1.max(p.last));
    }

    /// Sets `smallest`/`largest` from the interval span.
    fn finish(mut self, s: &L0Sublevels) -> Self {
        self.smallest = s.intervals[self.intervals.0].start.key.clone();
        let end = &s.intervals[self.intervals.1 + 1].start;
        self.largest = end.key.clone();
        self.largest_exclusive = !end.after;
        self
    }

    /// Past the size bound: growing from `last` (the previous accepted state) to `self` is
    /// refused once `last` is deep enough.
    fn too_big(&self, last: &L0CompactionCandidate, o: &L0PickOptions, min_depth: usize) -> bool {
        last.depth_reduction >= min_depth
            && self.bytes > o.soft_max_bytes
            && (self.bytes.saturating_mul(100) > last.bytes.saturating_mul(o.max_growth_pct)
                || self.bytes > o.hard_max_bytes)
    }

    /// [`too_big`](Self::too_big) for an L0→Lbase candidate that merges with `base` bytes of
    /// the base level (`last_base` before this step): a step past the growth bound (not past
    /// `hard_max_bytes`) is still taken when it adds no base bytes, i.e. its L0 files overlap
    /// only base files the candidate rewrites anyway. Flushes spanning the whole key space
    /// (random keys, before L0 has split keys) each overlap every base file: a candidate held
    /// to one of them rewrote the whole base level for each flush (`l0-fillrandom`,
    /// ARCHITECTURE.md), where taking the stack rewrites it once for all of them, as RocksDB's
    /// L0 compaction (every L0 file) does. A step that also takes more base files stops as
    /// before, so the base bytes stay those of a candidate within the growth bound.
    fn too_big_for_base(
        &self,
        last: &L0CompactionCandidate,
        o: &L0PickOptions,
        base: u64,
        last_base: u64,
    ) -> bool {
        self.too_big(last, o, o.min_base_depth)
            && (self.bytes > o.hard_max_bytes || base > last_base)
    }
}

impl L0Sublevels {
    /// Picks an L0→Lbase compaction, or `None`. `lbase` is the base level's files (busy ones
    /// are known from [`L0Sublevels::with_compacting`]).
    ///
    /// Steps: 1. score the intervals not claimed by a running L0→Lbase compaction by depth
    /// (those whose files reach no claimed interval first); 2. for each, best first, grow a
    /// candidate from the oldest file of its stack (`base_candidate_from_seed`); 3. the first
    /// candidate whose key span touches no busy Lbase file wins.
    pub fn pick_base_compaction(
        &self,
        lbase: &[Arc<FileMeta>],
        o: &L0PickOptions,
    ) -> Option<L0CompactionCandidate> {
        let n = self.intervals.len().saturating_sub(1);
        let mut scored: Vec<(usize, usize)> = (0..n)
            .filter_map(|k| {
                let iv = &self.intervals[k];
                if iv.base_compacting || iv.depth() < o.min_base_depth.max(1) {
                    return None;
                }
                let bonus = if iv.near_base_compacting {
                    0
                } else {
                    self.sublevels.len()
                };
                Some((k, iv.depth() + bonus))
            })
            .collect();
        scored.sort_by_key(|&(_, score)| std::cmp::Reverse(score));
        let mut considered = vec![false; self.intervals.len()];
        for (k, _) in scored {
            if considered[k] {
                continue;
            }
            let seed = self.intervals[k].files[0];
            let p = self.places[seed];
            considered[p.first..=p.last].fill(true);
            if self.busy[seed].is_some() {
                continue;
            }
            let Some(c) = self.base_candidate_from_seed(seed, k, lbase, o) else {
                continue;
            };
            let c = c.finish(self);
            if !self.touches_busy(lbase, &c) {
                return Some(c);
            }
        }
        None
    }

    fn touches_busy(&self, lbase: &[Arc<FileMeta>], c: &L0CompactionCandidate) -> bool {
        self.base_overlap(lbase, c.intervals)
            .any(|f| self.busy_numbers.contains(&f.number))
    }

    /// The base-level files overlapping intervals `first..=last`.
    fn base_overlap<'a>(
        &'a self,
        lbase: &'a [Arc<FileMeta>],
        (first, last): (usize, usize),
    ) -> impl Iterator<Item = &'a Arc<FileMeta>> + 'a {
        let start = &self.intervals[first].start.key;
        let end = &self.intervals[last + 1].start;
        lbase.iter().filter(move |f| {
            let below = f.largest_user() < start.as_slice()
                || (f.largest_user() == start.as_slice() && f.largest_is_exclusive());
            let above = f.smallest_user() > end.key.as_slice()
                || (f.smallest_user() == end.key.as_slice() && !end.after);
            !below && !above
        })
    }

    /// Grows an L0→Lbase candidate up the seed interval's stack: each step takes the next
    /// file of the stack, then every older file overlapping the candidate's span, sublevel by
    /// sublevel downward (invariant 1). A step that meets a busy file, or breaks the size
    /// bound (which weighs the `lbase` bytes the candidate merges with), is undone and growth
    /// stops.
    fn base_candidate_from_seed(
        &self,
        seed: usize,
        k: usize,
        lbase: &[Arc<FileMeta>],
        o: &L0PickOptions,
    ) -> Option<L0CompactionCandidate> {
        let mut c = L0CompactionCandidate::new(k, false, u64::MAX);
        c.add(self, seed);
        let base_bytes = |c: &L0CompactionCandidate| -> u64 {
            self.base_overlap(lbase, c.intervals).map(|f| f.size).sum()
        };
        let mut last: Option<(L0CompactionCandidate, u64)> = None;
        for &f in &self.intervals[k].files {
            // A newer file of the stack already compacting (intra-L0) ends the growth: taking
            // it would put one file in two compactions (the second's edit then deletes a file
            // that is gone and the Db turns read-only). Found by the concurrent-picks proptest.
            if self.busy[f].is_some() {
                break;
            }
            let sl = self.places[f].sublevel;
            c.depth_reduction += 1;
            c.seed_levels.1 = sl;
            c.add(self, f);
            if !(0..sl)
                .rev()
                .all(|level| self.take_overlapping(level, &mut c))
            {
                break;
            }
            let base = base_bytes(&c);
            if let Some((prev, prev_base)) = &last {
                if c.too_big_for_base(prev, o, base, *prev_base) {
                    break;
                }
            }
            last = Some((c.clone(), base));
        }
        last.map(|(c, _)| c)
            .filter(|c| c.depth_reduction >= o.min_base_depth)
    }

    /// Takes the files of sublevel `level` overlapping the candidate's interval span (skipping
    /// files at or above its earliest unflushed seqno). False if one of them is busy.
    fn take_overlapping(&self, level: usize, c: &mut L0CompactionCandidate) -> bool {
        let members = &self.sublevels[level];
        let from = members.partition_point(|&i| self.places[i].last < c.intervals.0);
        for &i in &members[from..] {
            if self.places[i].first > c.intervals.1 {
                break;
            }
            if self.busy[i].is_some() {
                return false;
            }
            if self.files[i].largest_seqno < c.earliest_unflushed_seqno {
                c.add(self, i);
            }
        }
        true
    }

    /// Picks an intra-L0 compaction, for when no L0→Lbase compaction can be picked, or `None`.
    /// Files with a largest seqno at or above `earliest_unflushed_seqno` (flushable ingests
    /// still queued above a memtable) are never taken.
    ///
    /// Steps: 1. score intervals by depth; 2. for each, best first, seed with the newest file
    /// of the stack that may be taken (none busy above it); 3. grow down the stack
    /// (`intra_candidate_from_seed`) and square the result off within the intervals it covers,
    /// so the output is no wider than its inputs' span.
    pub fn pick_intra_l0_compaction(
        &self,
        earliest_unflushed_seqno: u64,
        o: &L0PickOptions,
    ) -> Option<L0CompactionCandidate> {
        let n = self.intervals.len().saturating_sub(1);
        let mut scored: Vec<(usize, usize)> = (0..n)
            .map(|k| (k, self.intervals[k].depth()))
            .filter(|&(_, d)| d >= o.min_intra_depth.max(1))
            .collect();
        scored.sort_by_key(|&(_, score)| std::cmp::Reverse(score));
        let mut considered = vec![false; self.intervals.len()];
        for (k, depth) in scored {
            if considered[k] {
                continue;
            }
            let Some(seed) =
                self.intra_seed(k, depth, earliest_unflushed_seqno, o, &mut considered)
            else {
                continue;
            };
            if let Some(c) = self.intra_candidate_from_seed(seed, k, earliest_unflushed_seqno, o) {
                return Some(c.finish(self));
            }
        }
        None
    }

    /// The newest file of interval `k`'s stack below the unflushed seqno, if none above it is
    /// busy and enough of the stack remains under it.
    fn intra_seed(
        &self,
        k: usize,
        depth: usize,
        earliest_unflushed_seqno: u64,
        o: &L0PickOptions,
        considered: &mut [bool],
    ) -> Option<usize> {
        let mut remaining = depth;
        for &f in self.intervals[k].files.iter().rev() {
            if self.busy[f].is_some() {
                return None;
            }
            let p = self.places[f];
            considered[p.first..=p.last].fill(true);
            if self.files[f].largest_seqno < earliest_unflushed_seqno {
                return Some(f);
            }
            remaining = remaining.saturating_sub(1);
            if remaining < o.min_intra_depth {
                return None;
            }
        }
        None
    }

    /// Grows an intra-L0 candidate down the seed interval's stack: each step takes the next
    /// older file of the stack, then every newer file overlapping the candidate's span,
    /// sublevel by sublevel upward (invariant 2).
    fn intra_candidate_from_seed(
        &self,
        seed: usize,
        k: usize,
        earliest_unflushed_seqno: u64,
        o: &L0PickOptions,
    ) -> Option<L0CompactionCandidate> {
        let mut c = L0CompactionCandidate::new(k, true, earliest_unflushed_seqno);
        c.seed_levels.1 = self.sublevels.len() - 1;
        c.add(self, seed);
        let stack = &self.intervals[k].files;
        let top = stack.iter().position(|&f| f == seed)?;
        let mut last: Option<L0CompactionCandidate> = None;
        for &f in stack[..=top].iter().rev() {
            if self.busy[f].is_some() {
                break;
            }
            if f != seed && o.max_absorb_pct > 0 {
                let largest = c.files.iter().map(|f| f.size).max().unwrap_or(0);
                if self.files[f].size.saturating_mul(100) > largest.saturating_mul(o.max_absorb_pct)
                {
                    break;
                }
            }
            let sl = self.places[f].sublevel;
            c.depth_reduction += 1;
            c.seed_levels.0 = sl;
            c.add(self, f);
            if !(sl + 1..self.sublevels.len()).all(|level| self.take_overlapping(level, &mut c)) {
                break;
            }
            if let Some(prev) = &last {
                if c.too_big(prev, o, o.min_intra_depth) {
                    break;
                }
            }
            last = Some(c.clone());
        }
        let mut c = last.filter(|c| c.depth_reduction >= o.min_intra_depth)?;
        let (lo, hi) = c.intervals;
        self.square_off(lo, hi, &mut c);
        Some(c)
    }

    /// Grows an L0→Lbase candidate, after its Lbase inputs are chosen, over the L0 files lying
    /// strictly between `lo` and `hi` (user keys of the neighbouring Lbase files, exclusive;
    /// `None` = unbounded), so that it takes no more Lbase files. True if it took any.
    pub fn extend_base_candidate(
        &self,
        c: &mut L0CompactionCandidate,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> bool {
        let first = lo.map_or(0, |lo| {
            self.intervals
                .partition_point(|iv| iv.start.key.as_slice() <= lo)
        });
        let len = self.intervals.len() as isize;
        let last = hi.map_or(len - 1, |hi| {
            let j = self
                .intervals
                .partition_point(|iv| iv.start.key.as_slice() < hi) as isize;
            // Step back past the interval that may reach `hi` itself.
            if j < len {
                j - 2
            } else {
                j - 1
            }
        });
        if last < first as isize {
            return false;
        }
        let added = self.square_off(first, last as usize, c);
        *c = c.clone().finish(self);
        added
    }

    /// Best-effort growth of `c` to the rectangle of intervals `[lo, hi]` (widened to its own
    /// span) between its seed interval's lowest and highest sublevels taken. L0→Lbase walks up
    /// from sublevel 0, intra-L0 down from the top; a file sticking out of the rectangle, or a
    /// busy file, narrows it for the sublevels beyond (keeping invariants 1 and 2). True if
    /// any file was added.
    fn square_off(&self, lo: usize, hi: usize, c: &mut L0CompactionCandidate) -> bool {
        let (mut lo, mut hi) = (
            lo.min(c.intervals.0) as isize,
            hi.max(c.intervals.1) as isize,
        );
        let levels: Vec<usize> = if c.intra_l0 {
            (c.seed_levels.0..self.sublevels.len()).rev().collect()
        } else {
            (0..=c.seed_levels.1).collect()
        };
        let mut added = false;
        for level in levels {
            let members = &self.sublevels[level];
            let place = |i: usize| self.places[members[i]];
            let from = members.partition_point(|&i| (self.places[i].last as isize) < lo);
            // Files inside [lo, hi]; ones sticking out narrow the rectangle.
            let mut inside = Vec::new();
            for i in from..members.len() {
                let p = place(i);
                if p.first as isize > hi {
                    break;
                }
                let mut fits = true;
                if (p.first as isize) < lo {
                    fits = false;
                    lo = p.last as isize + 1;
                }
                if p.last as isize > hi {
                    fits = false;
                    hi = p.first as isize - 1;
                }
                if fits {
                    inside.push(i);
                }
            }
            if lo > hi {
                break;
            }
            let inside: Vec<usize> = inside
                .into_iter()
                .filter(|&i| {
                    let p = place(i);
                    p.first as isize >= lo && p.last as isize <= hi
                })
                .collect();
            if inside.is_empty() {
                continue;
            }
            let Some((a, b)) = self.best_run(members, &inside, c) else {
                break;
            };
            if a > inside[0] {
                lo = place(a - 1).last as isize + 1;
            }
            if b < *inside.last().expect("non-empty") {
                hi = place(b + 1).first as isize - 1;
            }
            for &i in &members[a..=b] {
                if c.intra_l0 && self.files[i].largest_seqno >= c.earliest_unflushed_seqno {
                    continue;
                }
                if !c.taken.contains(&i) {
                    c.add(self, i);
                    added = true;
                }
            }
        }
        added
    }

    /// The run of consecutive non-busy files among `inside` (positions in `members`) to take:
    /// the first run holding an already taken file, else the longest. `None` if all are busy.
    fn best_run(
        &self,
        members: &[usize],
        inside: &[usize],
        c: &L0CompactionCandidate,
    ) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize, bool)> = None;
        let mut run: Option<(usize, usize, bool)> = None;
        let mut close = |run: &mut Option<(usize, usize, bool)>| {
            if let Some(r) = run.take() {
                let better = match best {
                    None => true,
                    Some(b) => !b.2 && (r.2 || r.1 - r.0 > b.1 - b.0),
                };
                if better {
                    best = Some(r);
                }
            }
        };
        for &i in inside {
            let f = members[i];
            if self.busy[f].is_some() {
                close(&mut run);
                continue;
            }
            let picked = c.taken.contains(&f);
            run = Some(match run {
                Some((a, _, had)) => (a, i, had || picked),
                None => (i, i, picked),
            });
        }
        close(&mut run);
        best.map(|(a, b, _)| (a, b))
    }
}

/// True if taking `c` out of L0 (L0→Lbase) or rewriting it inside L0 (intra-L0) keeps every
/// key's versions in age order against the files of `s` left behind (invariants 1 and 2).
pub fn candidate_keeps_age_order(s: &L0Sublevels, c: &L0CompactionCandidate) -> bool {
    use super::l0_sublevels::{older, user_spans_overlap};
    let taken: Vec<&Arc<FileMeta>> = c.files.iter().collect();
    let left: Vec<&Arc<FileMeta>> = s
        .files()
        .iter()
        .filter(|f| !taken.iter().any(|t| t.number == f.number))
        .collect();
    let newest_taken = taken.iter().map(|f| (f.largest_seqno, f.number)).max();
    left.iter().all(|x| {
        taken.iter().all(|t| {
            if !user_spans_overlap(x, t) {
                return true;
            }
            if c.intra_l0 {
                // A file left behind that is newer than an input it overlaps must be newer
                // than every input: the output is placed by its newest input.
                !older(t, x) || Some((x.largest_seqno, x.number)) > newest_taken
            } else {
                // An older file overlapping an input may not stay above it.
                !older(x, t)
            }
        })
    })
}
