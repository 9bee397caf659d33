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

    fn find_smallest(&mut self) {
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

    fn find_largest(&mut self) {
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
        self.find_smallest();
    }
    fn seek_to_last(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_last());
        self.dir = Dir::Reverse;
        self.find_largest();
    }
    fn seek(&mut self, target: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek(target));
        self.dir = Dir::Forward;
        self.find_smallest();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.children
            .iter_mut()
            .for_each(|c| c.seek_for_prev(target));
        self.dir = Dir::Reverse;
        self.find_largest();
    }
    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.dir == Dir::Reverse {
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
        self.find_smallest();
    }
    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.dir == Dir::Forward {
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
        self.find_largest();
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
