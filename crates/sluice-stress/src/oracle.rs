//! The expected state (RocksDB `db_stress` style): per key, the committed and the pending
//! version and a short history, shared by every thread.
//!
//! Invariants:
//! 1. Writers lock the keys they touch ([`Oracle::lock_keys`], always in key order, so two
//!    writers never deadlock) for the whole operation: the versions of one key are assigned and
//!    applied in order, one operation at a time.
//! 2. A writer calls [`Oracle::begin`] (version assigned, `pending` raised) *before* the DB
//!    operation and [`Oracle::finish`] after it: `committed` only moves to a version whose
//!    operation returned `Ok`. A failed operation is *ambiguous*: both outcomes stay allowed.
//! 3. Readers take no key lock. `committed` read before a read is a lower bound of what it may
//!    return, `pending` read after it an upper bound: the value read must be the value (or the
//!    absence) of some version in `[lower, upper]` that was not known to be rejected.
//! 4. Versions of a key only grow, also across crashes (the crash model hands the next free
//!    version to the next round), so a version names one write for the whole run.
//!
//! Each key's state sits in its own short-held mutex, separate from the writer lock of
//! invariant 1, so readers never wait for a DB operation.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};

use crate::keys::{make_value, parse_value, show, Key};

/// History entries kept per key (older ones are summarized by [`KeyState::dropped_upto`]).
const HISTORY: usize = 64;

/// What a version of a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The key holds `make_value(key, version)`.
    Put,
    /// The key is absent.
    Delete,
    /// Superseded within the same atomic operation (an earlier file of an overlapping ingest):
    /// must never be observed.
    Hidden,
}

impl Kind {
    /// The one-letter code used in journals.
    pub fn code(self) -> char {
        match self {
            Kind::Put => 'P',
            Kind::Delete => 'D',
            Kind::Hidden => 'H',
        }
    }

    /// Parses [`Kind::code`].
    pub fn from_code(c: char) -> Option<Kind> {
        match c {
            'P' => Some(Kind::Put),
            'D' => Some(Kind::Delete),
            'H' => Some(Kind::Hidden),
            _ => None,
        }
    }
}

/// What is known about whether a version's operation applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Operation in flight.
    Pending,
    /// Returned `Ok`.
    Applied,
    /// Returned an error that does not say whether it applied.
    Ambiguous,
    /// Known not to have applied.
    NotApplied,
}

/// One version in a key's history.
#[derive(Debug, Clone)]
pub struct Hist {
    /// The version.
    pub version: u64,
    /// Put, delete or hidden.
    pub kind: Kind,
    /// Outcome so far.
    pub status: Status,
    /// Operation name.
    pub op: &'static str,
    /// Thread that wrote it.
    pub thread: usize,
    /// Start, in microseconds since the oracle was created.
    pub start_us: u64,
    /// End, in microseconds (0 while pending).
    pub end_us: u64,
}

/// The state of a key at the start of a run or of a round after a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyBase {
    /// True if the key holds `make_value(key, version)`; false if absent.
    pub present: bool,
    /// The version of the current state (for an absent key, any unused number below `next`).
    pub version: u64,
    /// The next version to assign (above every version ever started).
    pub next: u64,
}

impl KeyBase {
    /// A key never written.
    pub const ABSENT: KeyBase = KeyBase {
        present: false,
        version: 0,
        next: 1,
    };
}

/// Expected state of one key.
#[derive(Debug)]
pub struct KeyState {
    committed: u64,
    pending: u64,
    next: u64,
    hist: VecDeque<Hist>,
    /// Highest version dropped from `hist` (reads reaching below it cannot be fully checked).
    dropped_upto: Option<u64>,
}

impl KeyState {
    fn new(base: KeyBase) -> Self {
        let mut hist = VecDeque::new();
        hist.push_back(Hist {
            version: base.version,
            kind: if base.present {
                Kind::Put
            } else {
                Kind::Delete
            },
            status: Status::Applied,
            op: "initial",
            thread: usize::MAX,
            start_us: 0,
            end_us: 0,
        });
        KeyState {
            committed: base.version,
            pending: base.version,
            next: base.next.max(base.version + 1),
            hist,
            dropped_upto: None,
        }
    }

    fn find(&self, version: u64) -> Option<&Hist> {
        self.hist.iter().find(|h| h.version == version)
    }
}

/// The shared expected state of the `k` and `z` key spaces, plus the counters of the
/// sequential series.
#[derive(Debug)]
pub struct Oracle {
    keys: u32,
    zcap: u32,
    locks: Vec<Mutex<()>>,
    states: Vec<Mutex<KeyState>>,
    /// Next `z` key to hand to an ingest-behind.
    pub z_next: AtomicU32,
    /// Sequential series: every index below is acknowledged.
    pub seq_acked: AtomicU64,
    /// Sequential series: every index at or above was never started.
    pub seq_started: AtomicU64,
    /// First index of the series written in this run or round.
    pub seq_base: u64,
    epoch: Instant,
}

impl Oracle {
    /// An oracle where every key starts from `bases[i]` (`k` keys first, then `z` keys).
    pub fn new(keys: u32, zcap: u32, bases: &[KeyBase], z_next: u32, seq_next: u64) -> Self {
        assert_eq!(bases.len(), (keys + zcap) as usize);
        Oracle {
            keys,
            zcap,
            locks: (0..keys).map(|_| Mutex::new(())).collect(),
            states: bases
                .iter()
                .map(|b| Mutex::new(KeyState::new(*b)))
                .collect(),
            z_next: AtomicU32::new(z_next),
            seq_acked: AtomicU64::new(seq_next),
            seq_started: AtomicU64::new(seq_next),
            seq_base: seq_next,
            epoch: Instant::now(),
        }
    }

    /// Every key absent.
    pub fn fresh(keys: u32, zcap: u32) -> Self {
        let bases = vec![KeyBase::ABSENT; (keys + zcap) as usize];
        Self::new(keys, zcap, &bases, 0, 0)
    }

    /// Size of the `k` space.
    pub fn keys(&self) -> u32 {
        self.keys
    }

    /// Capacity of the `z` space.
    pub fn zcap(&self) -> u32 {
        self.zcap
    }

    /// Index of a `k` or `z` key in the state table.
    pub fn idx(&self, key: Key) -> Option<usize> {
        match key {
            Key::K(i) if i < self.keys => Some(i as usize),
            Key::Z(i) if i < self.zcap => Some((self.keys + i) as usize),
            _ => None,
        }
    }

    /// The key at a state-table index.
    pub fn key_at(&self, idx: usize) -> Key {
        let i = idx as u32;
        if i < self.keys {
            Key::K(i)
        } else {
            Key::Z(i - self.keys)
        }
    }

    /// Microseconds since the oracle was created.
    pub fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// Locks the writer locks of `k` keys `sorted` (must be strictly increasing: invariant 1).
    pub fn lock_keys(&self, sorted: &[u32]) -> Vec<MutexGuard<'_, ()>> {
        debug_assert!(sorted.windows(2).all(|w| w[0] < w[1]));
        sorted
            .iter()
            .map(|&i| self.locks[i as usize].lock())
            .collect()
    }

    /// Assigns the next version of key `idx` and marks it pending (invariant 2).
    pub fn begin(&self, idx: usize, kind: Kind, op: &'static str, thread: usize) -> u64 {
        let now = self.now_us();
        let mut s = self.states[idx].lock();
        let v = s.next;
        s.next += 1;
        s.pending = v;
        s.hist.push_back(Hist {
            version: v,
            kind,
            status: Status::Pending,
            op,
            thread,
            start_us: now,
            end_us: 0,
        });
        if s.hist.len() > HISTORY {
            let old = s.hist.pop_front().expect("non-empty");
            s.dropped_upto = Some(old.version);
        }
        v
    }

    /// Records the outcome of version `version` of key `idx`.
    pub fn finish(&self, idx: usize, version: u64, status: Status) {
        let now = self.now_us();
        let mut s = self.states[idx].lock();
        let mut visible = false;
        if let Some(h) = s.hist.iter_mut().find(|h| h.version == version) {
            h.status = status;
            h.end_us = now;
            visible = h.kind != Kind::Hidden;
        }
        if status == Status::Applied && visible && version > s.committed {
            s.committed = version;
        }
    }

    /// Lower bound for a read starting now (invariant 3).
    pub fn committed(&self, idx: usize) -> u64 {
        self.states[idx].lock().committed
    }

    /// Upper bound for a read that has ended (invariant 3).
    pub fn pending(&self, idx: usize) -> u64 {
        self.states[idx].lock().pending
    }

    /// Checks what a read of key `idx` returned against versions `[max(lower, seen), upper]`.
    /// Returns the version to remember for monotonic reads (for an absence, the oldest
    /// deletion that explains it), or why the read is an anomaly.
    pub fn check(
        &self,
        idx: usize,
        lower: u64,
        upper: u64,
        seen: u64,
        got: Option<&[u8]>,
    ) -> Result<u64, String> {
        let key = self.key_at(idx).bytes();
        let lo = lower.max(seen);
        let s = self.states[idx].lock();
        let unknown_below = s.dropped_upto.is_some_and(|d| lo <= d);
        let Some(v) = got else {
            let del = s.hist.iter().find(|h| {
                h.version >= lo
                    && h.version <= upper
                    && h.kind == Kind::Delete
                    && h.status != Status::NotApplied
            });
            return match del {
                Some(h) => Ok(h.version),
                None if unknown_below => Ok(lo),
                None => {
                    let older = s
                        .hist
                        .iter()
                        .rev()
                        .find(|h| h.version < lo && h.kind == Kind::Delete)
                        .map_or(String::new(), |h| {
                            format!("; stale read? the last older deletion is v{}", h.version)
                        });
                    Err(format!(
                        "key absent, but no deletion among versions [{lo}, {upper}] \
                         (committed before the read {lower}, seen before by this thread {seen}){older}"
                    ))
                }
            };
        };
        let Some((k, ver)) = parse_value(v) else {
            return Err("value is not of the form key:version:padding".into());
        };
        if k != key.as_slice() {
            return Err(format!("value belongs to key {}", show(k)));
        }
        if v != make_value(&key, ver).as_slice() {
            return Err(format!("value bytes of version {ver} are damaged"));
        }
        if let Some(h) = s.find(ver).filter(|h| h.kind == Kind::Hidden) {
            return Err(format!(
                "version {ver} is a superseded copy written by {} (an older file of the same \
                 overlapping ingest): only the newest file's value may be visible",
                h.op
            ));
        }
        if ver < lo {
            return Err(format!(
                "stale read: version {ver} is older than the lower bound {lo} \
                 (committed before the read {lower}, seen before by this thread {seen})"
            ));
        }
        if ver > upper {
            return Err(format!(
                "version {ver} was not started before the read ended (upper bound {upper})"
            ));
        }
        match s.find(ver) {
            Some(h) if h.kind != Kind::Put => Err(format!(
                "version {ver} is a {:?} ({}), yet a value was read",
                h.kind, h.op
            )),
            Some(h) if h.status == Status::NotApplied => Err(format!(
                "version {ver} was rejected ({}), yet it was read",
                h.op
            )),
            Some(_) => Ok(ver),
            None if s.dropped_upto.is_some_and(|d| ver <= d) => Ok(ver),
            None => Err(format!("version {ver} was never written")),
        }
    }

    /// The key's recent history, one version per line, for anomaly reports.
    pub fn history(&self, idx: usize) -> String {
        let s = self.states[idx].lock();
        let mut out = format!(
            "  {} committed={} pending={} next={}{}\n",
            self.key_at(idx),
            s.committed,
            s.pending,
            s.next,
            s.dropped_upto
                .map_or(String::new(), |d| format!(" (history before {d} dropped)"))
        );
        for h in s
            .hist
            .iter()
            .rev()
            .take(24)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            let thread = if h.thread == usize::MAX {
                "-".to_string()
            } else {
                h.thread.to_string()
            };
            out.push_str(&format!(
                "    v{:<6} {:<6} {:<10} {:<14} thread {:<3} {:>10}us .. {}\n",
                h.version,
                format!("{:?}", h.kind),
                format!("{:?}", h.status),
                h.op,
                thread,
                h.start_us,
                if h.end_us == 0 {
                    "pending".to_string()
                } else {
                    format!("{}us", h.end_us)
                }
            ));
        }
        out
    }

    /// The current expected state of key `idx` when no operation is in flight: the committed
    /// version and the versions of ambiguous operations after it.
    pub fn settled(&self, idx: usize) -> (u64, u64) {
        let s = self.states[idx].lock();
        (s.committed, s.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_accept_any_version_in_flight_and_reject_stale_ones() {
        let o = Oracle::fresh(10, 0);
        let k = Key::K(3).bytes();
        assert_eq!(o.check(3, 0, 0, 0, None), Ok(0), "never written = absent");
        let v1 = o.begin(3, Kind::Put, "put", 0);
        o.finish(3, v1, Status::Applied);
        let v2 = o.begin(3, Kind::Delete, "delete", 0);
        // While v2 is pending both v1 and its absence are fine.
        assert!(o.check(3, v1, v2, 0, Some(&make_value(&k, v1))).is_ok());
        assert!(o.check(3, v1, v2, 0, None).is_ok());
        o.finish(3, v2, Status::Ambiguous);
        assert_eq!(o.committed(3), v1, "ambiguous does not commit");
        let v3 = o.begin(3, Kind::Put, "put", 1);
        o.finish(3, v3, Status::Applied);
        let e = o
            .check(3, v3, v3, 0, Some(&make_value(&k, v1)))
            .unwrap_err();
        assert!(e.contains("stale"), "{e}");
        assert!(o.check(3, v3, v3, 0, None).is_err());
        let e = o
            .check(3, v1, v3, 0, Some(&make_value(&Key::K(4).bytes(), v1)))
            .unwrap_err();
        assert!(e.contains("belongs to key"), "{e}");
        // A thread that saw v3 may not see v1 any more.
        assert!(o.check(3, v1, v3, v3, Some(&make_value(&k, v1))).is_err());
        let hidden = o.begin(3, Kind::Hidden, "ingest", 1);
        o.finish(3, hidden, Status::Applied);
        assert!(o
            .check(3, v3, hidden, 0, Some(&make_value(&k, hidden)))
            .is_err());
        assert!(o.history(3).contains("Ambiguous"));
    }
}
