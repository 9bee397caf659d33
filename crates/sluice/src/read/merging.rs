//! Merges sorted children into one sorted stream of internal keys.
//!
//! Invariant: in forward direction every non-current child is positioned at its first key
//! greater than `key()`; in reverse, at its last key less than `key()`. Switching direction
//! re-seeks the other children to restore that (LevelDB's scheme).

use std::cmp::Ordering;

use crate::base::error::Result;
use crate::base::iterator::InternalIterator;
use crate::base::key::compare_internal;

/// A boxed child iterator.
pub type BoxIter = Box<dyn InternalIterator + Send>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Forward,
    Reverse,
}

/// The merging iterator.
pub struct MergingIter {
    children: Vec<BoxIter>,
    current: Option<usize>,
    dir: Dir,
}

impl MergingIter {
    /// Merges `children` (their relative order does not matter).
    pub fn new(children: Vec<BoxIter>) -> Self {
        MergingIter {
            children,
            current: None,
            dir: Dir::Forward,
        }
    }

    /// A child that failed (an unreadable table) is not exhausted: merging on without it would
    /// show keys with its entries missing — a shadowed older version, a gap — as if valid. So
    /// the merge stops there, invalid, and `status` reports the error (as RocksDB's). Children
    /// are invalid only when exhausted or failed, so only those are asked.
    fn failed(c: &BoxIter) -> bool {
        !c.valid() && c.status().is_err()
    }

    /// True if `moved` (the one child positioned since the last check), or with `None` any
    /// child, failed. Only a child that moves can fail, so `next` and `prev` ask one child and
    /// the scan's hot path pays one call, not one per child.
    fn failed_since(&self, moved: Option<usize>) -> bool {
        match moved {
            Some(i) => Self::failed(&self.children[i]),
            None => self.children.iter().any(Self::failed),
        }
    }

    fn find_smallest(&mut self, moved: Option<usize>) {
        if self.failed_since(moved) {
            self.current = None;
            return;
        }
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if c.valid() {
                best = match best {
                    Some(b)
                        if compare_internal(self.children[b].key(), c.key())
                            != Ordering::Greater =>
                    {
                        Some(b)
                    }
                    _ => Some(i),
                };
            }
        }
        self.current = best;
    }

    fn find_largest(&mut self, moved: Option<usize>) {
        if self.failed_since(moved) {
            self.current = None;
            return;
        }
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate().rev() {
            if c.valid() {
                best = match best {
                    Some(b)
                        if compare_internal(self.children[b].key(), c.key()) != Ordering::Less =>
                    {
                        Some(b)
                    }
                    _ => Some(i),
                };
            }
        }
        self.current = best;
    }
}

impl InternalIterator for MergingIter {
    fn valid(&self) -> bool {
        self.current.is_some()
    }
    fn seek_to_first(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_first());
        self.dir = Dir::Forward;
        self.find_smallest(None);
    }
    fn seek_to_last(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_last());
        self.dir = Dir::Reverse;
        self.find_largest(None);
    }
    fn seek(&mut self, target: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek(target));
        self.dir = Dir::Forward;
        self.find_smallest(None);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.children
            .iter_mut()
            .for_each(|c| c.seek_for_prev(target));
        self.dir = Dir::Reverse;
        self.find_largest(None);
    }
    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        let mut moved = Some(cur);
        if self.dir == Dir::Reverse {
            moved = None;
            let k = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek(&k);
                    if c.valid() && compare_internal(c.key(), &k) == Ordering::Equal {
                        c.next();
                    }
                }
            }
            self.dir = Dir::Forward;
        }
        self.children[cur].next();
        self.find_smallest(moved);
    }
    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        let mut moved = Some(cur);
        if self.dir == Dir::Forward {
            moved = None;
            let k = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek_for_prev(&k);
                    if c.valid() && compare_internal(c.key(), &k) == Ordering::Equal {
                        c.prev();
                    }
                }
            }
            self.dir = Dir::Reverse;
        }
        self.children[cur].prev();
        self.find_largest(moved);
    }
    fn key(&self) -> &[u8] {
        self.current.map_or(&[], |c| self.children[c].key())
    }
    fn value(&self) -> &[u8] {
        self.current.map_or(&[], |c| self.children[c].value())
    }
    fn status(&self) -> Result<()> {
        self.children.iter().try_for_each(|c| c.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::Error;
    use crate::base::key::{make_internal_key, user_key, ValueKind};

    /// Sorted entries, or (`fail`) a source that fails when positioned: a table that cannot
    /// be read.
    struct Source {
        keys: Vec<Vec<u8>>,
        at: Option<usize>,
        fail: bool,
    }

    impl Source {
        fn boxed(keys: &[&str], fail: bool) -> BoxIter {
            let keys = keys
                .iter()
                .map(|k| make_internal_key(k.as_bytes(), 1, ValueKind::Value))
                .collect();
            Box::new(Source {
                keys,
                at: None,
                fail,
            })
        }
        fn set(&mut self, at: Option<usize>) {
            self.at = if self.fail { None } else { at };
        }
    }

    impl InternalIterator for Source {
        fn valid(&self) -> bool {
            self.at.is_some()
        }
        fn seek_to_first(&mut self) {
            self.set((!self.keys.is_empty()).then_some(0));
        }
        fn seek_to_last(&mut self) {
            self.set(self.keys.len().checked_sub(1));
        }
        fn seek(&mut self, target: &[u8]) {
            let i = self
                .keys
                .iter()
                .position(|k| compare_internal(k, target) != Ordering::Less);
            self.set(i);
        }
        fn seek_for_prev(&mut self, target: &[u8]) {
            let i = self
                .keys
                .iter()
                .rposition(|k| compare_internal(k, target) != Ordering::Greater);
            self.set(i);
        }
        fn next(&mut self) {
            let i = self.at.map(|i| i + 1).filter(|&i| i < self.keys.len());
            self.set(i);
        }
        fn prev(&mut self) {
            let i = self.at.and_then(|i| i.checked_sub(1));
            self.set(i);
        }
        fn key(&self) -> &[u8] {
            self.at.map_or(&[], |i| &self.keys[i])
        }
        fn value(&self) -> &[u8] {
            b""
        }
        fn status(&self) -> Result<()> {
            match self.fail {
                true => Err(Error::Io {
                    path: None,
                    source: std::io::Error::from(std::io::ErrorKind::NotFound),
                }),
                false => Ok(()),
            }
        }
    }

    /// One unreadable source among readable ones: every way of positioning leaves the merge
    /// invalid with the error, never on the other sources' keys as if they were all there.
    #[test]
    fn a_failed_child_stops_the_merge_with_its_error() {
        let merged = || {
            MergingIter::new(vec![
                Source::boxed(&["a", "c"], false),
                Source::boxed(&["b"], true),
                Source::boxed(&["d"], false),
            ])
        };
        let b = make_internal_key(b"b", 1, ValueKind::Value);
        let moves: [&dyn Fn(&mut MergingIter); 4] = [
            &|m| m.seek_to_first(),
            &|m| m.seek_to_last(),
            &|m| m.seek(&b),
            &|m| m.seek_for_prev(&b),
        ];
        for (i, position) in moves.iter().enumerate() {
            let mut m = merged();
            position(&mut m);
            assert!(!m.valid(), "move {i}: on {:?}", user_key(m.key()));
            assert!(m.status().is_err(), "move {i}");
        }
        // Without the failing source the others merge as usual.
        let mut m = MergingIter::new(vec![
            Source::boxed(&["a", "c"], false),
            Source::boxed(&["d"], false),
        ]);
        m.seek_to_first();
        let mut seen = Vec::new();
        while m.valid() {
            seen.push(user_key(m.key()).to_vec());
            m.next();
        }
        assert_eq!(seen, [b"a".to_vec(), b"c".to_vec(), b"d".to_vec()]);
        assert!(m.status().is_ok());
    }
}
