//! Reads: point reads (checks 1 and 2 of the workload) and bounded scans in either direction,
//! with an optional change of direction (check 3).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rand::Rng;
use sluice::ReadOptions;

use crate::keys::{make_value, show, Key};

use super::Worker;

impl Worker {
    pub(super) fn gets(&mut self) {
        let n = if self.rng.gen_bool(0.2) {
            self.rng.gen_range(2..=8)
        } else {
            1
        };
        for _ in 0..n {
            let zn = self.ctx.oracle.z_next.load(Ordering::SeqCst);
            let key = if zn > 0 && self.rng.gen_bool(0.1) {
                Key::Z(self.rng.gen_range(0..zn.min(self.ctx.oracle.zcap())))
            } else {
                Key::K(self.pick())
            };
            let idx = self.ctx.oracle.idx(key).expect("key in space");
            let lower = self.ctx.oracle.committed(idx);
            let r = self.ctx.db.get(&key.bytes());
            let upper = self.ctx.oracle.pending(idx);
            match r {
                Ok(v) => {
                    if !self.verify("get", key, lower, upper, v.as_deref(), true) {
                        return;
                    }
                }
                Err(e) => self.on_error("get", Some(key), &e),
            }
        }
    }

    /// A read-only open of the Db beside its live writer, and point reads through it (check
    /// 1): each key holds a version at least the one committed before the open began and at
    /// most one pending when it ended — every acknowledged write, also one still in the
    /// writer's WAL stage, and nothing from after the open. The view holds its tables, so a
    /// table the writer compacts away under it still reads: any error is one.
    pub(super) fn read_only_open(&mut self) {
        let keys: Vec<Key> = (0..16).map(|_| Key::K(self.pick())).collect();
        let o = Arc::clone(&self.ctx.oracle);
        let idx: Vec<usize> = keys
            .iter()
            .map(|&k| o.idx(k).expect("key in space"))
            .collect();
        let lowers: Vec<u64> = idx.iter().map(|&i| o.committed(i)).collect();
        let seq_acked = o.seq_acked.load(Ordering::SeqCst);
        let opts = sluice::Options {
            fs: self.ctx.storage.fs(),
            ..sluice::Options::default()
        };
        let ro = match sluice::Db::open_read_only(self.ctx.storage.db_dir(), opts) {
            Ok(db) => db,
            Err(e) => return self.on_error("read_only_open", None, &e),
        };
        let uppers: Vec<u64> = idx.iter().map(|&i| o.pending(i)).collect();
        let seq_started = o.seq_started.load(Ordering::SeqCst);
        if !self.read_only_sequence(&ro, seq_acked, seq_started) {
            return;
        }
        for (j, &key) in keys.iter().enumerate() {
            match ro.get(&key.bytes()) {
                Ok(v) => {
                    if !self.verify(
                        "read_only_get",
                        key,
                        lowers[j],
                        uppers[j],
                        v.as_deref(),
                        false,
                    ) {
                        return;
                    }
                }
                Err(e) => return self.on_error("read_only_get", Some(key), &e),
            }
        }
    }

    /// The sequential log through a read-only view (check 1 across keys): the `s` keys of
    /// this run present in it are `s<base>..s<m>` without a gap, with every one acknowledged
    /// before the open (`acked`) among them and none started after it (`started`). The log
    /// mixes puts and ingests of new keys (a MANIFEST edit only, at seqno 0), so a view that
    /// showed a later put without an earlier ingest would have a gap. `false` on an anomaly.
    fn read_only_sequence(&mut self, ro: &sluice::Db, acked: u64, started: u64) -> bool {
        let base = self.ctx.oracle.seq_base;
        if started <= base {
            return true;
        }
        let opts = ReadOptions {
            snapshot: None,
            lower_bound: Some(Key::S(base).bytes()),
            upper_bound: Some(Key::S(started).bytes()),
            ..ReadOptions::default()
        };
        let mut it = match ro.iter(opts) {
            Ok(it) => it,
            Err(e) => return self.read_only_error(e),
        };
        it.seek_to_first();
        let mut next = base;
        while it.valid() {
            let want = Key::S(next).bytes();
            if it.key() != want.as_slice() || it.value() != make_value(&want, 1).as_slice() {
                let got = format!("{} = {}", show(it.key()), show(it.value()));
                // Where the gap is: the view, or the live Db as well.
                let live = match self.ctx.db.get(&want) {
                    Ok(v) => v.map_or("absent".into(), |v| show(&v)),
                    Err(e) => format!("error {e}"),
                };
                self.report(
                    "read_only_seq",
                    Some(Key::S(next)),
                    got,
                    format!(
                        "a gap in the sequential log before it (log from s{base}); the live Db \
                         has {live}"
                    ),
                );
                return false;
            }
            next += 1;
            it.next();
        }
        if let Err(e) = it.status() {
            return self.read_only_error(e);
        }
        if next < acked {
            self.report(
                "read_only_seq",
                Some(Key::S(next)),
                "absent".into(),
                format!("acknowledged before the read-only open (all below {acked})"),
            );
            return false;
        }
        true
    }

    /// A read through a read-only view failed (the view holds its tables, so a compaction
    /// beside it is no excuse). Always `false`.
    fn read_only_error(&mut self, e: sluice::Error) -> bool {
        self.on_error("read_only_seq", None, &e);
        false
    }

    /// A bounded scan of `[lo, hi)`, forward or backward, from an end or a seek, with an
    /// optional change of direction (check 3).
    pub(super) fn iterate(&mut self) {
        let n = self.keys();
        let len = self.rng.gen_range(1..=200).min(n);
        let lo = self.rng.gen_range(0..=n - len);
        let hi = lo + len;
        let o = Arc::clone(&self.ctx.oracle);
        let lowers: Vec<u64> = (lo..hi).map(|i| o.committed(i as usize)).collect();
        let opts = ReadOptions {
            snapshot: None,
            lower_bound: Some(Key::K(lo).bytes()),
            upper_bound: Some(Key::K(hi).bytes()),
            ..Default::default()
        };
        let mut it = match self.ctx.db.iter(opts) {
            Ok(it) => it,
            Err(e) => return self.on_error("iter", None, &e),
        };
        let mode = self.rng.gen_range(0..4);
        let target = self.rng.gen_range(lo.saturating_sub(3)..(hi + 3).min(n));
        let forward = mode < 2;
        // The first key the scan may return, in its direction.
        let first = match mode {
            0 => {
                it.seek_to_first();
                lo as i64
            }
            1 => {
                it.seek(&Key::K(target).bytes());
                target.max(lo) as i64
            }
            2 => {
                it.seek_to_last();
                hi as i64 - 1
            }
            _ => {
                it.seek_for_prev(&Key::K(target).bytes());
                (target as i64).min(hi as i64 - 1)
            }
        };
        let what = [
            "iter seek_to_first+next",
            "iter seek+next",
            "iter seek_to_last+prev",
            "iter seek_for_prev+prev",
        ][mode];
        let steps = self.rng.gen_range(1..=len as usize + 1);
        let mut got: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        while it.valid() && got.len() < steps {
            got.push((it.key().to_vec(), it.value().to_vec()));
            if got.len() < steps {
                if forward {
                    it.next();
                } else {
                    it.prev();
                }
            }
        }
        let exhausted = !it.valid();
        // Change of direction: the entries already returned, in reverse, identical.
        if !exhausted && got.len() > 1 && self.rng.gen_bool(0.4) {
            let back = self.rng.gen_range(1..got.len());
            for j in 1..=back {
                if forward {
                    it.prev();
                } else {
                    it.next();
                }
                let want = &got[got.len() - 1 - j];
                let ok =
                    it.valid() && it.key() == want.0.as_slice() && it.value() == want.1.as_slice();
                if !ok {
                    let read = if it.valid() {
                        format!("{} = {}", show(it.key()), show(it.value()))
                    } else {
                        "end of iteration".into()
                    };
                    self.report(
                        &format!("{what}, then {} step(s) back", j),
                        Key::parse(&want.0),
                        read,
                        format!(
                            "changing direction should revisit {} = {}",
                            show(&want.0),
                            show(&want.1)
                        ),
                    );
                    return;
                }
            }
        }
        if let Err(e) = it.status() {
            return self.on_error(what, None, &e);
        }
        drop(it);
        let uppers: Vec<u64> = (lo..hi).map(|i| o.pending(i as usize)).collect();
        // Checks 1–3 on every returned entry.
        let mut prev: Option<i64> = None;
        let mut returned = std::collections::HashSet::new();
        for (k, v) in &got {
            let i = match Key::parse(k) {
                Some(Key::K(i)) if i >= lo && i < hi => i,
                _ => {
                    self.report(
                        what,
                        Key::parse(k),
                        format!("{} = {}", show(k), show(v)),
                        format!("key outside the bounds [{}, {})", Key::K(lo), Key::K(hi)),
                    );
                    return;
                }
            };
            let ii = i as i64;
            if let Some(p) = prev {
                if (forward && ii <= p) || (!forward && ii >= p) {
                    self.report(
                        what,
                        Some(Key::K(i)),
                        show(k),
                        format!("out of order after {}", Key::K(p as u32)),
                    );
                    return;
                }
            } else if (forward && ii < first) || (!forward && ii > first) {
                self.report(
                    what,
                    Some(Key::K(i)),
                    show(k),
                    format!("first key returned is before the seek position {first}"),
                );
                return;
            }
            prev = Some(ii);
            returned.insert(i);
            let j = (i - lo) as usize;
            if !self.verify(what, Key::K(i), lowers[j], uppers[j], Some(v), true) {
                return;
            }
        }
        // Keys inside the scanned interval that were not returned must be allowed absent.
        let (from, to) = match (forward, exhausted, prev) {
            (true, true, _) => (first, hi as i64 - 1),
            (true, false, Some(p)) => (first, p),
            (false, true, _) => (lo as i64, first),
            (false, false, Some(p)) => (p, first),
            (_, false, None) => return,
        };
        for ii in from.max(lo as i64)..=to.min(hi as i64 - 1) {
            let i = ii as u32;
            if returned.contains(&i) {
                continue;
            }
            let j = (i - lo) as usize;
            if !self.verify(
                &format!("{what} (key skipped)"),
                Key::K(i),
                lowers[j],
                uppers[j],
                None,
                true,
            ) {
                return;
            }
        }
    }
}
