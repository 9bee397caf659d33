//! Write stall conditions: the one definition the write path stalls by
//! ([`StallCondition::of`], pure), and the tracker that turns changes of the condition into
//! [`Event::WriteStallBegin`] / [`Event::WriteStallEnd`] pairs (only with a listener).

use std::time::{Instant, SystemTime};

use super::super::{Inner, Options, State};
use super::{Event, StallCause, WriteStallInfo};

/// Writes are delayed (each by 1 ms) or stopped, and why.
#[derive(Debug, Clone)]
pub(crate) struct StallCondition {
    /// Writes stop until background work catches up; otherwise each is delayed.
    pub(crate) stopped: bool,
    pub(crate) cause: StallCause,
}

impl StallCondition {
    /// The condition of `s`, the strongest first: L0 at its stop trigger, compaction debt at
    /// its hard limit, all memtables full (stopped); L0 at its slowdown trigger, debt at its
    /// soft limit (delayed). Backpressure by L0 counts sublevels, not files: many narrow files
    /// side by side cost a read nothing; files with `l0_sublevels` off (RocksDB's L0).
    pub(crate) fn of(o: &Options, s: &State) -> Option<StallCondition> {
        // The option itself: building the picker's options costs a little on every write.
        let depth = crate::compaction::picker::l0_depth(&s.version, &s.l0, o.l0_sublevels);
        let sublevels = s.l0.sublevel_count();
        let pending = s.pending_compaction_bytes;
        let l0 = |limit| StallCause::L0Sublevels {
            sublevels,
            files: s.version.levels[0].len(),
            limit,
        };
        let debt = |limit| StallCause::PendingCompactionBytes {
            bytes: pending,
            limit,
        };
        let memtables_full = s.mem.approximate_bytes() >= o.write_buffer_size as u64
            && s.imm.len() + 1 >= o.max_write_buffer_number;
        let (stopped, cause) = if depth >= o.l0_stop_writes_trigger {
            (true, l0(o.l0_stop_writes_trigger))
        } else if pending >= o.hard_pending_compaction_bytes_limit {
            (true, debt(o.hard_pending_compaction_bytes_limit))
        } else if memtables_full {
            let count = s.imm.len() + 1;
            let limit = o.max_write_buffer_number;
            (true, StallCause::Memtables { count, limit })
        } else if depth >= o.l0_slowdown_writes_trigger {
            (false, l0(o.l0_slowdown_writes_trigger))
        } else if pending >= o.soft_pending_compaction_bytes_limit {
            (false, debt(o.soft_pending_compaction_bytes_limit))
        } else {
            return None;
        };
        Some(StallCondition { stopped, cause })
    }

    /// The same condition (stop or delay, and cause), whatever the numbers.
    fn same(&self, other: &StallCondition) -> bool {
        self.stopped == other.stopped && self.cause.name() == other.cause.name()
    }
}

/// The stall condition last reported, and since when (part of `State`).
#[derive(Default)]
pub(crate) struct StallTracker {
    active: Option<(StallCondition, Instant)>,
}

impl Inner {
    /// Reports a change of the write stall condition to `now`: the end of the one reported,
    /// the begin of the new one. Called with `state` held, by the write path and after every
    /// background job, only when a listener is registered; it only enqueues.
    pub(crate) fn track_stall(&self, s: &mut State, now: Option<StallCondition>) {
        let unchanged = match (&s.stall.active, &now) {
            (Some((a, _)), Some(b)) => a.same(b),
            (None, None) => true,
            _ => false,
        };
        if unchanged {
            return;
        }
        if let Some((old, since)) = s.stall.active.take() {
            self.events.emit(|| {
                Event::WriteStallEnd(WriteStallInfo {
                    cause: old.cause,
                    stopped: old.stopped,
                    duration: since.elapsed(),
                    time: SystemTime::now(),
                })
            });
        }
        if let Some(c) = now {
            self.events.emit(|| {
                Event::WriteStallBegin(WriteStallInfo {
                    cause: c.cause.clone(),
                    stopped: c.stopped,
                    duration: std::time::Duration::ZERO,
                    time: SystemTime::now(),
                })
            });
            s.stall.active = Some((c, Instant::now()));
        }
    }

    /// Re-reads the stall condition after background work changed the state (with a
    /// listener only).
    pub(crate) fn recheck_stall(&self, s: &mut State) {
        if self.events.enabled() {
            let now = StallCondition::of(&self.opts, s);
            self.track_stall(s, now);
        }
    }
}
