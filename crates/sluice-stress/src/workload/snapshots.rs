//! Snapshots: taken and read at once, held across later operations, and read again later by
//! point reads and an iterator, which must return exactly the same (check 4).

use std::sync::Arc;

use rand::Rng;
use sluice::{ReadOptions, Snapshot};

use crate::keys::{show, Key};

use super::Worker;

/// A snapshot held across later operations.
pub(super) struct Held {
    snap: Snapshot,
    lo: u32,
    hi: u32,
    results: Vec<Option<Vec<u8>>>,
}

impl Worker {
    pub(super) fn take_snapshot(&mut self) {
        if self.held.len() >= 3 {
            self.reread_snapshot();
        }
        let n = self.keys();
        let len = self.rng.gen_range(1..=32).min(n);
        let lo = self.rng.gen_range(0..=n - len);
        let hi = lo + len;
        let o = Arc::clone(&self.ctx.oracle);
        let lowers: Vec<u64> = (lo..hi).map(|i| o.committed(i as usize)).collect();
        let snap = self.ctx.db.snapshot();
        let uppers: Vec<u64> = (lo..hi).map(|i| o.pending(i as usize)).collect();
        let mut results = Vec::new();
        for i in lo..hi {
            let ro = ReadOptions {
                snapshot: Some(&snap),
                ..ReadOptions::default()
            };
            match self.ctx.db.get_opt(&Key::K(i).bytes(), &ro) {
                Ok(v) => {
                    let j = (i - lo) as usize;
                    if !self.verify(
                        "snapshot get",
                        Key::K(i),
                        lowers[j],
                        uppers[j],
                        v.as_deref(),
                        true,
                    ) {
                        return;
                    }
                    results.push(v);
                }
                Err(e) => return self.on_error("snapshot get", Some(Key::K(i)), &e),
            }
        }
        self.held.push(Held {
            snap,
            lo,
            hi,
            results,
        });
    }

    /// Check 4: a held snapshot, read again by point reads and by an iterator.
    pub(super) fn reread_snapshot(&mut self) {
        if self.held.is_empty() {
            return self.take_snapshot();
        }
        let h = self.held.remove(self.rng.gen_range(0..self.held.len()));
        let what = format!("snapshot re-read (seqno {})", h.snap.seqno());
        for i in h.lo..h.hi {
            let ro = ReadOptions {
                snapshot: Some(&h.snap),
                ..ReadOptions::default()
            };
            let first = &h.results[(i - h.lo) as usize];
            match self.ctx.db.get_opt(&Key::K(i).bytes(), &ro) {
                Ok(v) if &v == first => {}
                Ok(v) => {
                    return self.report(
                        &what,
                        Some(Key::K(i)),
                        v.as_deref().map_or("absent".into(), show),
                        format!(
                            "the same snapshot returned {} before",
                            first.as_deref().map_or("absent".into(), show)
                        ),
                    )
                }
                Err(e) => return self.on_error(&what, Some(Key::K(i)), &e),
            }
        }
        let ro = ReadOptions {
            snapshot: Some(&h.snap),
            lower_bound: Some(Key::K(h.lo).bytes()),
            upper_bound: Some(Key::K(h.hi).bytes()),
            ..Default::default()
        };
        let mut it = match self.ctx.db.iter(ro) {
            Ok(it) => it,
            Err(e) => return self.on_error(&what, None, &e),
        };
        let mut want: Vec<(Vec<u8>, &Vec<u8>)> = (h.lo..h.hi)
            .zip(&h.results)
            .filter_map(|(i, r)| r.as_ref().map(|v| (Key::K(i).bytes(), v)))
            .collect();
        let forward = self.rng.gen_bool(0.5);
        if forward {
            it.seek_to_first();
        } else {
            it.seek_to_last();
            want.reverse();
        }
        for (k, v) in &want {
            if !it.valid() || it.key() != k.as_slice() || it.value() != v.as_slice() {
                let read = if it.valid() {
                    format!("{} = {}", show(it.key()), show(it.value()))
                } else {
                    "end of iteration".into()
                };
                return self.report(
                    &format!("{what} by iterator"),
                    Key::parse(k),
                    read,
                    format!("expected {} = {} as read before", show(k), show(v)),
                );
            }
            if forward {
                it.next();
            } else {
                it.prev();
            }
        }
        if it.valid() {
            let read = format!("{} = {}", show(it.key()), show(it.value()));
            return self.report(
                &format!("{what} by iterator"),
                Key::parse(it.key()),
                read,
                "an extra key the point reads found absent".into(),
            );
        }
        if let Err(e) = it.status() {
            self.on_error(&what, None, &e);
        }
    }
}
