//! Compaction picking: a pure function of a [`Version`], the options and the files already
//! being compacted. No I/O; golden-tested.
//!
//! Policy:
//! 1. Level targets are dynamic (RocksDB's `level_compaction_dynamic_level_bytes`): the last
//!    non-empty level sets the scale, each level above is `multiplier` times smaller, and the
//!    *base level* is the highest level whose target still exceeds `max_bytes_for_level_base`
//!    divided by the multiplier. L0 compacts into the base level; levels between L1 and the base
//!    stay empty.
//! 2. L0 scores `sublevels / l0_compaction_trigger` (its read amplification; with running
//!    compactions, the stack they leave), thin sublevels counted by their bytes while L0 is
//!    shallow ([`l0_score`], `Options::l0_thin_sublevels_wait`); other levels `bytes / target`.
//!    The highest score >= 1 wins.
//! 3. From Ln the file with the smallest overlap ratio (bytes it would rewrite in Ln+1 per
//!    byte moved) is chosen; with no overlap it is a *trivial move* (no rewrite). An L0 pick
//!    of one file (nothing older in L0 beneath it) that overlaps no base-level file is a
//!    trivial move to the base level too (RocksDB's and Pebble's L0 moves): merging it alone
//!    would only copy it.
//!    The choice says which: [`CompactionChoice::Move`], `Merge` or `IntraL0`.
//! 4. A file already being compacted is never picked again, and a compaction never writes into
//!    a key range another running compaction writes.
//! 5. With sublevels off (`PickerOptions::l0_sublevels`, RocksDB's L0), L0 scores
//!    `files / l0_compaction_trigger` and its compaction takes every L0 file, with every
//!    base-level file their span overlaps, while no other compaction out of L0 runs: no
//!    stacks, no intra-L0, no concurrent L0 compactions.
//! 6. *Tiered L0 over a large base* (`PickerOptions::l0_tiering_ratio_pct`): when the L0→Lbase
//!    candidate would rewrite more than that percent of its own L0 bytes in the base level —
//!    a few L0 files, each spanning the key space, over a base level many times their size, as
//!    out-of-order ingests make — newer L0 files of similar size are first merged among
//!    themselves (intra-L0), and L0 goes down once it holds enough bytes to be worth its base
//!    rewrite. The sublevel count falls as it would with the L0→Lbase merge; each byte is
//!    rewritten in L0 about once per size class instead of with the whole base level for
//!    every few files.
//! 7. *Small files* (`PickerOptions::small_file_bytes`, `small_file_prefix`; off by default):
//!    when no level scores 1, a run of at least [`SMALL_RUN_MIN`] neighbouring files of one
//!    level ≥ 1, each under that size, all keys starting with the same prefix, and no deeper
//!    file in its span, is merged into one file of that level (its output covers only the
//!    run's span, which no other file of the level touches, and has nothing beneath to be cut
//!    along). Ingests of small files leave them (a columnar table's append adds one file per
//!    column, each at the bottom level beside that column's older files, where no compaction
//!    would otherwise ever look); within a prefix, the gap after it stays open for the next
//!    append's files. A run goes only when its files other than the largest hold at least as
//!    many bytes as the largest, so a merged file is merged again only once it would at least
//!    double: each byte is rewritten about log2 (small size / file size) times at most.

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::RunningOutput;
use crate::version::l0_pick::L0PickOptions;
use crate::version::l0_sublevels::{L0Sublevels, RunningL0Compaction};
use crate::version::{FileMeta, Version, NUM_LEVELS};

/// The knobs the picker reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickerOptions {
    /// L0 sublevel count (not file count) at which L0 scores 1 and is compacted (file count
    /// with `l0_sublevels` off).
    pub l0_compaction_trigger: usize,
    /// Sublevel-aware L0 (policy 2); `false`: RocksDB's L0 (policy 5).
    pub l0_sublevels: bool,
    /// Target size of the base level, bytes.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels.
    pub level_multiplier: u64,
    /// Largest L0 file that moves down unrewritten (twice the target file size): a larger
    /// one, such as an intra-L0 compaction's single output, is merged, which cuts it into
    /// files of about the target size (up to twice it where they line up with the level
    /// beneath), so later L0 compactions over part of its span rewrite only part.
    pub max_l0_move_bytes: u64,
    /// Levels whose tables are written alike (per-level compression and Bloom filter) share a
    /// class; a file moves unrewritten only between levels of one class (RocksDB's
    /// `InputCompressionMatchesOutput`), else it is rewritten with its new level's settings.
    pub table_class: [u8; NUM_LEVELS],
    /// Policy 6: when an L0→Lbase candidate would rewrite more than this percent of its own
    /// L0 bytes in the base level, an intra-L0 compaction of newer, similar-sized L0 files
    /// comes first if there is one. 0: off.
    pub l0_tiering_ratio_pct: u64,
    /// One flush's worth of bytes: the memtable size times the measured ratio of a flush's
    /// output to its memtable (`Options::l0_thin_sublevels_wait`). While L0 is less than twice
    /// `l0_compaction_trigger` deep, it scores as no deeper than the number of these its bytes
    /// make, to the nearest ([`l0_score`]). 0: depth alone.
    pub l0_round_bytes: u64,
    /// L0 depth at which writes slow down: thin sublevels are due one short of it at the
    /// latest, where ingests start to wait for L0 room.
    pub l0_slowdown_writes_trigger: usize,
    /// Policy 7: a file of a level ≥ 1 under this many bytes is small: a 64th of the target
    /// file size (`Options::target_file_size`). 0: off.
    pub small_file_bytes: u64,
    /// Policy 7: the key bytes every file of a merged run starts with alike
    /// (`Options::small_file_merge_prefix`). 0: off.
    pub small_file_prefix: usize,
}

/// Policy 7: fewest small files merged at once.
pub const SMALL_RUN_MIN: usize = 8;

/// Policy 7: most small files merged at once (also bounds the picker's scan to this many
/// files per file of a level).
pub const SMALL_RUN_MAX: usize = 64;

/// Policy 6's size-tiered bound: an older L0 file joins its intra-L0 compaction only if it is
/// at most this percent of the largest file taken so far (`L0PickOptions::max_absorb_pct`),
/// so files of similar size merge and a run already merged waits for peers of its own size.
pub const L0_TIER_ABSORB_PCT: u64 = 200;

impl Default for PickerOptions {
    /// The picker's view of `Options::default()`.
    fn default() -> Self {
        PickerOptions {
            l0_compaction_trigger: 4,
            l0_sublevels: true,
            max_bytes_for_level_base: 256 << 20,
            level_multiplier: 10,
            max_l0_move_bytes: 128 << 20,
            table_class: [0; NUM_LEVELS],
            l0_tiering_ratio_pct: 200,
            l0_round_bytes: 64 << 20,
            l0_slowdown_writes_trigger: 20,
            small_file_bytes: 1 << 20,
            small_file_prefix: 0,
        }
    }
}

/// True if a file of level `from` may move to level `to` as it is (see `table_class`).
fn may_move(o: &PickerOptions, from: usize, to: usize) -> bool {
    o.table_class[from] == o.table_class[to]
}

/// What to compact: a typed plan, whole when the picker returns it (lsm-tree's
/// `compaction::Choice`). The score that picked it is the level's, [`level_scores`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactionChoice {
    /// One file of `level` goes down to `output_level` as it is: no file there overlaps it,
    /// so nothing is rewritten (a *trivial move*).
    Move {
        /// Source level (0 only for a file with nothing older beneath it in L0).
        level: usize,
        /// Destination level: `level + 1`, or the base level for a move out of L0.
        output_level: usize,
        /// The file moved.
        file: Arc<FileMeta>,
    },
    /// Files of `level` merged with the files of `output_level` they overlap into new tables
    /// of `output_level`.
    Merge {
        /// Source level.
        level: usize,
        /// Destination level.
        output_level: usize,
        /// Files from `level`.
        inputs: Vec<Arc<FileMeta>>,
        /// Overlapping files from `output_level`.
        output_inputs: Vec<Arc<FileMeta>>,
    },
    /// L0 files merged into one L0 file, when the base level is busy where they lie.
    IntraL0 {
        /// Files from L0.
        inputs: Vec<Arc<FileMeta>>,
    },
}

impl CompactionChoice {
    /// Source level.
    pub fn level(&self) -> usize {
        match self {
            CompactionChoice::Move { level, .. } | CompactionChoice::Merge { level, .. } => *level,
            CompactionChoice::IntraL0 { .. } => 0,
        }
    }

    /// Destination level.
    pub fn output_level(&self) -> usize {
        match self {
            CompactionChoice::Move { output_level, .. }
            | CompactionChoice::Merge { output_level, .. } => *output_level,
            CompactionChoice::IntraL0 { .. } => 0,
        }
    }

    /// Files from the source level.
    pub fn inputs(&self) -> &[Arc<FileMeta>] {
        match self {
            CompactionChoice::Move { file, .. } => std::slice::from_ref(file),
            CompactionChoice::Merge { inputs, .. } | CompactionChoice::IntraL0 { inputs } => inputs,
        }
    }

    /// Files from the destination level (none for a move or an intra-L0 compaction).
    pub fn output_inputs(&self) -> &[Arc<FileMeta>] {
        match self {
            CompactionChoice::Merge { output_inputs, .. } => output_inputs,
            CompactionChoice::Move { .. } | CompactionChoice::IntraL0 { .. } => &[],
        }
    }

    /// Every input file.
    pub fn all_inputs(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs().iter().chain(self.output_inputs())
    }
}

/// Per-level byte targets and the base level.
pub fn level_targets(v: &Version, o: &PickerOptions) -> ([u64; NUM_LEVELS], usize) {
    let mut targets = [0u64; NUM_LEVELS];
    let last = NUM_LEVELS - 1;
    let max_size = (1..NUM_LEVELS).map(|l| v.level_bytes(l)).max().unwrap_or(0);
    let mult = o.level_multiplier.max(2);
    let mut size = max_size.max(o.max_bytes_for_level_base);
    let mut base = last;
    targets[last] = size;
    // Up a level while this one's target is above `max_bytes_for_level_base`, so the base
    // level's target ends in (base / multiplier, base] (RocksDB's rule). Staying at the last
    // level until it held multiplier × base bytes made every L0 compaction of a random-key
    // load rewrite the whole bottom level (BENCHMARKS.md, notes from earlier measurements).
    while base > 1 && size > o.max_bytes_for_level_base {
        size /= mult;
        base -= 1;
        targets[base] = size;
    }
    // No level from the base down is targeted under `max_bytes_for_level_base` (RocksDB's
    // `level_max_bytes_[i] = max(level_size, base_bytes_max)`): with the last level at 3× the
    // base size, a base level held to a tenth of it made every byte moved down rewrite ~10×
    // its size of the last level, where RocksDB's rule keeps it near 3.
    for t in targets.iter_mut().take(last).skip(base) {
        *t = (*t).max(o.max_bytes_for_level_base);
    }
    // The base level is never below a non-empty level: an L0 compaction that skipped a level
    // holding data (an ingested file, say) would put newer data beneath older data. Levels
    // above the size-derived base get small targets so that they drain downwards: the
    // base-size floor there would park L0's data at L1 and cascade it through every level.
    if let Some(first) = (1..NUM_LEVELS).find(|&l| !v.levels[l].is_empty()) {
        while base > first {
            base -= 1;
            targets[base] = (targets[base + 1] / mult).max(1);
        }
    }
    (targets, base)
}

/// Scores of L0..L5 (×100), as the picker sees them.
pub fn level_scores(v: &Version, l0: &L0Sublevels, o: &PickerOptions) -> [u64; NUM_LEVELS] {
    let (targets, base) = level_targets(v, o);
    let mut scores = [0u64; NUM_LEVELS];
    scores[0] = l0_score(v, l0, o);
    for l in base..NUM_LEVELS - 1 {
        if let Some(s) = (v.level_bytes(l) * 100).checked_div(targets[l]) {
            scores[l] = s;
        }
    }
    scores
}

/// Estimated bytes compaction is behind (RocksDB's pending compaction bytes): every level's
/// excess over its target, plus L0's bytes once L0 is due for compaction.
pub fn pending_compaction_bytes(v: &Version, l0: &L0Sublevels, o: &PickerOptions) -> u64 {
    let (targets, base) = level_targets(v, o);
    let l0 = if l0_score(v, l0, o) >= 100 {
        v.level_bytes(0)
    } else {
        0
    };
    (base..NUM_LEVELS - 1)
        .map(|l| v.level_bytes(l).saturating_sub(targets[l]))
        .sum::<u64>()
        + l0
}

/// The L0 depth below which [`l0_score`] counts thin sublevels by their bytes: twice the
/// trigger (at least 1), at most one short of the slowdown trigger, where ingests start to wait
/// for L0 room (a wait that only a compaction ends must never be one the rule defers).
pub fn thin_sublevels_until(trigger: usize, slowdown: usize) -> usize {
    trigger
        .max(1)
        .saturating_mul(2)
        .min(slowdown.saturating_sub(1))
}

/// L0's score ×100: its depth ([`l0_depth`]) over the trigger.
///
/// With sublevels, while the depth is under twice the trigger (and under one short of the
/// slowdown trigger, where ingests start to wait for L0 room), it counts for no more than the
/// flushes' worth of bytes L0 holds (`l0_round_bytes`, to the nearest). Thin sublevels — flush
/// outputs cut at split keys, the stacks a partial L0→Lbase compaction leaves beside its
/// span — then wait until a round's worth of bytes has come, as RocksDB's file-count trigger
/// waits for that many whole memtables: each byte of the base level is rewritten for more L0
/// bytes. Past twice the trigger the depth scores alone, which bounds read amplification.
/// (l0-fillrandom: write-amp 3.95–4.04 → 3.17–3.25; bench/profiles/README.md.)
pub fn l0_score(v: &Version, l0: &L0Sublevels, o: &PickerOptions) -> u64 {
    let trigger = o.l0_compaction_trigger.max(1) as u64;
    let mut depth = l0_depth(v, l0, o.l0_sublevels) as u64;
    let thin_until = thin_sublevels_until(o.l0_compaction_trigger, o.l0_slowdown_writes_trigger);
    if o.l0_sublevels && o.l0_round_bytes > 0 && depth < thin_until as u64 {
        // To the nearest round: the estimate of a round is a mean, so whole flushes come out
        // a little over or under it.
        let rounds = v.level_bytes(0).saturating_add(o.l0_round_bytes / 2) / o.l0_round_bytes;
        depth = depth.min(rounds.max(1));
    }
    depth * 100 / trigger
}

/// What L0's compaction score and the write slowdown/stop triggers count: its read
/// amplification, sublevels (many narrow files side by side cost a read nothing); with
/// sublevels off, its files (as RocksDB counts).
pub fn l0_depth(v: &Version, l0: &L0Sublevels, sublevels: bool) -> usize {
    if sublevels {
        l0.sublevel_count()
    } else {
        v.levels[0].len()
    }
}

/// `unflushed_in(lo, hi)`: true if a memtable or queued ingest may hold data in user keys
/// `[lo, hi]`.
pub type UnflushedIn<'a> = dyn Fn(&[u8], &[u8]) -> bool + 'a;

/// What the picker knows of L0 beyond the version: its sublevels marked with the running
/// compactions, and the smallest seqno not yet in a table (an intra-L0 compaction never takes
/// a file at or above it).
pub struct L0Context<'a> {
    /// The version's L0 sublevels.
    pub sublevels: &'a L0Sublevels,
    /// Running compactions out of L0.
    pub running: &'a [RunningL0Compaction],
    /// Smallest seqno still in a memtable or queued ingest.
    pub earliest_unflushed_seqno: u64,
    /// The output ranges of every running compaction: no new compaction or trivial move may
    /// write into one at the same level (an L0→Lbase compaction's L0 span can have gaps with
    /// no base file, where a file moved down would overlap its outputs).
    pub running_outputs: &'a [RunningOutput],
    /// True if a memtable or queued ingest may hold data in the user keys `[lo, hi]`; `None`:
    /// assume it may. An intra-L0 compaction whose span this clears may take files at or
    /// above `earliest_unflushed_seqno` (policy 6).
    pub unflushed_in: Option<&'a UnflushedIn<'a>>,
}

/// True if a choice writing user keys `[lo, hi]` into `level` would overlap a running
/// compaction's outputs there.
fn conflicts(running: &[RunningOutput], level: usize, lo: &[u8], hi: &[u8]) -> bool {
    running
        .iter()
        .any(|r| r.level == level && r.lo.as_slice() <= hi && lo <= r.hi.as_slice())
}

impl CompactionChoice {
    /// The user keys its outputs may hold: the span of all its inputs (`None` without inputs).
    pub fn span(&self) -> Option<(&[u8], &[u8])> {
        let lo = self.all_inputs().map(|f| f.smallest_user()).min()?;
        let hi = self.all_inputs().map(|f| f.largest_user()).max()?;
        Some((lo, hi))
    }
}

/// Picks the next compaction with no compaction running (for tools and tests).
pub fn pick_compaction(
    v: &Version,
    o: &PickerOptions,
    busy: &HashSet<u64>,
) -> Option<CompactionChoice> {
    let l0 = L0Sublevels::from_version(v);
    let ctx = L0Context {
        sublevels: &l0,
        running: &[],
        earliest_unflushed_seqno: u64::MAX,
        running_outputs: &[],
        unflushed_in: None,
    };
    pick_compaction_with(v, &ctx, o, busy)
}

/// Picks the next compaction, or `None` if nothing needs compacting. `busy` holds every input
/// of every running compaction.
pub fn pick_compaction_with(
    v: &Version,
    l0: &L0Context<'_>,
    o: &PickerOptions,
    busy: &HashSet<u64>,
) -> Option<CompactionChoice> {
    let (_, base) = level_targets(v, o);
    let scores = level_scores(v, l0.sublevels, o);
    // L0 scores by its sublevel count, the same measure the write stalls use: a staircase of
    // files (many sublevels, shallow stacks) must still be compacted, or writes would stall
    // with nothing picked. Candidates come from the stacks not already compacting.
    let sub = l0.sublevels.clone().with_compacting(busy, l0.running);
    let mut order: Vec<usize> = (0..NUM_LEVELS - 1).filter(|&l| scores[l] >= 100).collect();
    order.sort_by(|a, b| scores[*b].cmp(&scores[*a]).then(a.cmp(b)));
    for level in order {
        let choice = if level == 0 && !o.l0_sublevels {
            pick_l0_all(v, base, busy)
        } else if level == 0 {
            pick_l0(v, &sub, base, busy, l0, o)
        } else {
            pick_level(v, level, busy, l0.running_outputs, o)
        };
        // Defence in depth for L0→Lbase (its picks already avoid running L0→Lbase ranges;
        // `pick_level` checks its own choices).
        let choice = choice.filter(|c| match c {
            CompactionChoice::Merge {
                level: 0,
                output_level,
                ..
            }
            | CompactionChoice::Move {
                level: 0,
                output_level,
                ..
            } => c
                .span()
                .is_none_or(|(lo, hi)| !conflicts(l0.running_outputs, *output_level, lo, hi)),
            _ => true,
        });
        if choice.is_some() {
            return choice;
        }
    }
    if scores.iter().any(|&s| s >= 100) {
        // Due work that could not be picked now (busy files) comes first.
        return None;
    }
    pick_small_files(v, busy, l0.running_outputs, o, None)
}

/// Policy 7: the longest run of neighbouring small files of one level ≥ 1 that may merge, as a
/// merge into the same level (first level, then leftmost, on ties). Every key of the run
/// starts with the same `small_file_prefix` bytes, and no deeper file overlaps its span: the
/// merge has no file beneath it to cut its output along, so it always leaves fewer files.
/// With `within`, only runs whose files lie wholly in user keys `[lo, hi)`.
pub fn pick_small_files(
    v: &Version,
    busy: &HashSet<u64>,
    running: &[RunningOutput],
    o: &PickerOptions,
    within: Option<(&[u8], &[u8])>,
) -> Option<CompactionChoice> {
    let inside = |f: &FileMeta| {
        within.is_none_or(|(lo, hi)| f.smallest_user() >= lo && f.largest_user() < hi)
    };
    let p = o.small_file_prefix;
    if o.small_file_bytes == 0 || p == 0 {
        return None;
    }
    // The merged file stays one file of at most the target size.
    let cap = (o.max_l0_move_bytes / 2).max(o.small_file_bytes);
    let mut best: Option<(usize, usize, std::ops::Range<usize>)> = None;
    for (level, files) in v.levels.iter().enumerate().skip(1) {
        for i in 0..files.len() {
            let Some(prefix) = file_prefix(&files[i], p).filter(|_| inside(&files[i])) else {
                continue;
            };
            let (mut sum, mut max, mut j) = (0u64, 0u64, i);
            while let Some(f) = files.get(j).filter(|_| j - i < SMALL_RUN_MAX) {
                if f.size >= o.small_file_bytes
                    || busy.contains(&f.number)
                    || sum + f.size > cap
                    || file_prefix(f, p) != Some(prefix)
                    || !inside(f)
                {
                    break;
                }
                sum += f.size;
                max = max.max(f.size);
                j += 1;
            }
            let n = j - i;
            if n < SMALL_RUN_MIN || sum - max < max || best.as_ref().is_some_and(|b| b.0 >= n) {
                continue;
            }
            let (lo, hi) = (files[i].smallest_user(), files[j - 1].largest_user());
            let beneath = v.levels[level + 1..].iter().any(|deeper| {
                // Sorted and disjoint: the first file not wholly below `lo` (a file ending
                // exactly at `lo` counts, the safe side for an exclusive range-deletion end).
                let k = deeper.partition_point(|f| f.largest_user() < lo);
                deeper.get(k).is_some_and(|f| f.smallest_user() <= hi)
            });
            if beneath || conflicts(running, level, lo, hi) {
                continue;
            }
            best = Some((n, level, i..j));
            if n == SMALL_RUN_MAX {
                break; // none longer; the leftmost wins ties
            }
        }
        if best.is_some() {
            break; // the first level with a run
        }
    }
    let (_, level, run) = best?;
    Some(CompactionChoice::Merge {
        level,
        output_level: level,
        inputs: v.levels[level][run].to_vec(),
        output_inputs: Vec::new(),
    })
}

/// The first `p` bytes every key of `f` starts with, if they all start alike.
fn file_prefix(f: &FileMeta, p: usize) -> Option<&[u8]> {
    let (lo, hi) = (f.smallest_user(), f.largest_user());
    (lo.len() >= p && hi.len() >= p && lo[..p] == hi[..p]).then(|| &lo[..p])
}

/// From the tallest stack of L0 intervals, a candidate that keeps newer data above older data
/// for every key (`L0Sublevels::pick_base_compaction`), plus the base-level files it overlaps,
/// grown over L0 files between those base files; when it would rewrite many times its own
/// bytes there, a policy-6 intra-L0 compaction first if there is one; when the base level is
/// busy there, an intra-L0 compaction of a deep stack instead.
fn pick_l0(
    v: &Version,
    sub: &L0Sublevels,
    base: usize,
    busy: &HashSet<u64>,
    ctx: &L0Context<'_>,
    o: &PickerOptions,
) -> Option<CompactionChoice> {
    let lbase: Vec<Arc<FileMeta>> = v.levels[base].clone();
    let opts = L0PickOptions::default();
    if let Some(mut c) = sub.pick_base_compaction(&lbase, &opts) {
        let output_inputs = v.overlapping(base, Some(&c.smallest), Some(&c.largest));
        if !output_inputs.iter().any(|f| busy.contains(&f.number)) {
            // The neighbouring base files the candidate may grow up to: the last one wholly
            // below it (a file whose exclusive end, a range deletion's, equals the candidate's
            // smallest key is below it too) and the first one wholly above it.
            let lo = lbase
                .iter()
                .rev()
                .find(|f| !f.overlaps(Some(&c.smallest), None))
                .map(|f| f.largest_user().to_vec());
            let hi = lbase
                .iter()
                .find(|f| f.smallest_user() > c.largest.as_slice())
                .map(|f| f.smallest_user().to_vec());
            let before = c.clone();
            if sub.extend_base_candidate(&mut c, lo.as_deref(), hi.as_deref()) {
                // Growing must never reach another base file: the outputs would overlap it.
                // Checked in release builds too — keep the candidate as it was if it did.
                let grown = v.overlapping(base, Some(&c.smallest), Some(&c.largest));
                if grown.len() != output_inputs.len() {
                    debug_assert!(false, "an L0 candidate grew into base file(s)");
                    c = before;
                }
            }
            // Policy 6: a candidate that would rewrite many times its own bytes in the base
            // level gives way to an intra-L0 compaction of newer, similar-sized L0 files.
            let base_bytes: u64 = output_inputs.iter().map(|f| f.size).sum();
            if o.l0_tiering_ratio_pct > 0
                && base_bytes.saturating_mul(100) > c.bytes.saturating_mul(o.l0_tiering_ratio_pct)
            {
                if let Some(t) = pick_l0_tier(sub, ctx, &opts) {
                    return Some(CompactionChoice::IntraL0 { inputs: t.files });
                }
            }
            // One file with nothing older beneath it in L0 and no base file to merge with:
            // a merge would only copy it, so it moves down as it is (unless it is too big or
            // the base level writes its tables otherwise, see `PickerOptions`).
            if let [file] = c.files.as_slice() {
                if output_inputs.is_empty()
                    && file.size <= o.max_l0_move_bytes
                    && may_move(o, 0, base)
                {
                    return Some(CompactionChoice::Move {
                        level: 0,
                        output_level: base,
                        file: Arc::clone(file),
                    });
                }
            }
            return Some(CompactionChoice::Merge {
                level: 0,
                output_level: base,
                inputs: c.files.clone(),
                output_inputs,
            });
        }
    }
    let c = sub.pick_intra_l0_compaction(ctx.earliest_unflushed_seqno, &opts)?;
    Some(CompactionChoice::IntraL0 {
        inputs: c.files.clone(),
    })
}

/// Policy 6's intra-L0 candidate: from the deepest stack, the newest files down to the first
/// one over [`L0_TIER_ABSORB_PCT`] of the largest taken, at least `min_intra_depth` of them,
/// at most `hard_max_bytes` in all.
/// Files newer than a memtable's oldest entry may be taken when no memtable or queued ingest
/// holds a key in the candidate's span (`L0Context::unflushed_in`): whatever reaches those
/// keys from memory later is written after every input, so its flush sits above the output,
/// as a version-path ingest's file does beside a memtable of other keys. Otherwise only files
/// below `earliest_unflushed_seqno`, as every intra-L0 compaction.
fn pick_l0_tier(
    sub: &L0Sublevels,
    ctx: &L0Context<'_>,
    opts: &L0PickOptions,
) -> Option<crate::version::l0_pick::L0CompactionCandidate> {
    let tier = L0PickOptions {
        max_absorb_pct: L0_TIER_ABSORB_PCT,
        ..opts.clone()
    };
    ctx.unflushed_in
        .and_then(|held| {
            sub.pick_intra_l0_compaction(u64::MAX, &tier)
                .filter(|t| !held(&t.smallest, &t.largest))
        })
        .or_else(|| sub.pick_intra_l0_compaction(ctx.earliest_unflushed_seqno, &tier))
        // An intra-L0 output is one file written by one thread: runs stop growing at the size
        // bound, and L0 goes down into the base level instead.
        .filter(|t| t.bytes <= opts.hard_max_bytes)
}

/// Sublevels off (policy 5, RocksDB's L0→Lbase): every L0 file, and every base file in their
/// span. Nothing while an L0 file or one of those base files is being compacted: L0
/// compactions run one at a time, and none is ever intra-L0.
fn pick_l0_all(v: &Version, base: usize, busy: &HashSet<u64>) -> Option<CompactionChoice> {
    let inputs = v.levels[0].clone();
    if inputs.iter().any(|f| busy.contains(&f.number)) {
        return None;
    }
    let lo = inputs.iter().map(|f| f.smallest_user()).min()?;
    let hi = inputs.iter().map(|f| f.largest_user()).max()?;
    let output_inputs = v.overlapping(base, Some(lo), Some(hi));
    if output_inputs.iter().any(|f| busy.contains(&f.number)) {
        return None;
    }
    Some(CompactionChoice::Merge {
        level: 0,
        output_level: base,
        inputs,
        output_inputs,
    })
}

fn pick_level(
    v: &Version,
    level: usize,
    busy: &HashSet<u64>,
    running: &[RunningOutput],
    o: &PickerOptions,
) -> Option<CompactionChoice> {
    let mut best: Option<(u128, CompactionChoice)> = None;
    for f in &v.levels[level] {
        if busy.contains(&f.number) {
            continue;
        }
        let next = v.overlapping(level + 1, Some(f.smallest_user()), Some(f.largest_user()));
        if next.iter().any(|n| busy.contains(&n.number)) {
            continue;
        }
        let overlap_bytes: u64 = next.iter().map(|n| n.size).sum();
        let ratio = u128::from(overlap_bytes) * 1024 / u128::from(f.size.max(1));
        if best.as_ref().is_none_or(|(r, _)| ratio < *r) {
            let c = if next.is_empty() && may_move(o, level, level + 1) {
                CompactionChoice::Move {
                    level,
                    output_level: level + 1,
                    file: Arc::clone(f),
                }
            } else {
                CompactionChoice::Merge {
                    level,
                    output_level: level + 1,
                    inputs: vec![Arc::clone(f)],
                    output_inputs: next,
                }
            };
            if c.span()
                .is_some_and(|(lo, hi)| conflicts(running, level + 1, lo, hi))
            {
                continue;
            }
            best = Some((ratio, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
#[path = "picker_tests.rs"]
mod tests;
