//! Writes: single puts and deletes, range deletions (bounds sometimes between keys), batches,
//! and flushes and compactions on request.

use std::sync::Arc;

use rand::Rng;
use sluice::WriteBatch;

use crate::keys::{make_value, Key};
use crate::oracle::Kind;
use crate::report::Op;

use super::{sync_opts, Worker};

impl Worker {
    pub(super) fn single_write(&mut self, kind: Kind) {
        let i = self.pick();
        let sync = self.rng.gen_bool(0.1);
        let op = if kind == Kind::Put {
            Op::Put
        } else {
            Op::Delete
        };
        let ctx = Arc::clone(&self.ctx);
        let _locks = ctx.oracle.lock_keys(&[i]);
        let a = self.begin(op, &[(Key::K(i), kind)]);
        let key = Key::K(i).bytes();
        let jid = self.journal.start(op, sync, &a);
        let r = match (kind, sync) {
            (Kind::Put, false) => ctx.db.put(&key, &make_value(&key, a[0].1)),
            (_, false) => ctx.db.delete(&key),
            (_, true) => {
                let mut b = WriteBatch::new();
                if kind == Kind::Put {
                    b.put(&key, &make_value(&key, a[0].1));
                } else {
                    b.delete(&key);
                }
                ctx.db.write(b, sync_opts(true))
            }
        };
        self.finish(op, jid, &a, &r, false);
    }

    /// Deletes `[a, b)`; the bounds are sometimes not keys themselves (`k…~` sorts between two
    /// keys), so that range-deletion ends fall between a file's keys.
    pub(super) fn delete_range(&mut self) {
        let n = self.keys();
        let a = self.rng.gen_range(0..n);
        let b = (a + self.rng.gen_range(1..=40)).min(n);
        let start = if a > 0 && self.rng.gen_bool(0.4) {
            let mut s = Key::K(a - 1).bytes();
            s.push(b'~');
            s
        } else {
            Key::K(a).bytes()
        };
        let end = if self.rng.gen_bool(0.4) {
            let mut e = Key::K(b - 1).bytes();
            e.push(b'~');
            e
        } else {
            Key::K(b).bytes()
        };
        let range: Vec<u32> = (a..b).collect();
        let sync = self.rng.gen_bool(0.1);
        let use_batch = sync || self.rng.gen_bool(0.3);
        let ctx = Arc::clone(&self.ctx);
        let _locks = ctx.oracle.lock_keys(&range);
        let writes: Vec<(Key, Kind)> = range.iter().map(|&i| (Key::K(i), Kind::Delete)).collect();
        let a = self.begin(Op::DeleteRange, &writes);
        let jid = self.journal.start(Op::DeleteRange, sync, &a);
        let r = if use_batch {
            let mut b = WriteBatch::new();
            b.delete_range(&start, &end);
            ctx.db.write(b, sync_opts(sync))
        } else {
            ctx.db.delete_range(&start, &end)
        };
        self.finish(Op::DeleteRange, jid, &a, &r, false);
    }

    pub(super) fn batch(&mut self) {
        let mut keys: Vec<u32> = (0..self.rng.gen_range(2..=8))
            .map(|_| self.pick())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let sync = self.rng.gen_bool(0.15);
        let writes: Vec<(Key, Kind)> = keys
            .iter()
            .map(|&i| {
                let kind = if self.rng.gen_bool(0.8) {
                    Kind::Put
                } else {
                    Kind::Delete
                };
                (Key::K(i), kind)
            })
            .collect();
        let ctx = Arc::clone(&self.ctx);
        let _locks = ctx.oracle.lock_keys(&keys);
        let a = self.begin(Op::Batch, &writes);
        let mut b = WriteBatch::new();
        for &(k, v, kind) in &a {
            let key = k.bytes();
            if kind == Kind::Put {
                b.put(&key, &make_value(&key, v));
            } else {
                b.delete(&key);
            }
        }
        let jid = self.journal.start(Op::Batch, sync, &a);
        let r = ctx.db.write(b, sync_opts(sync));
        self.finish(Op::Batch, jid, &a, &r, false);
    }

    pub(super) fn flush_or_compact(&mut self, compact: bool) {
        let op = if compact { Op::Compact } else { Op::Flush };
        let jid = self.journal.start(op, false, &[]);
        let r = if compact && self.rng.gen_bool(0.5) {
            let n = self.keys();
            let a = self.rng.gen_range(0..n);
            let b = (a + self.rng.gen_range(1..=n / 4 + 1)).min(n - 1);
            self.ctx
                .db
                .compact_range(Some(&Key::K(a).bytes()), Some(&Key::K(b).bytes()))
        } else if compact {
            self.ctx.db.compact_range(None, None)
        } else {
            self.ctx.db.flush()
        };
        self.finish(op, jid, &[], &r, false);
    }
}
