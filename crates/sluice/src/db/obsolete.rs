//! Obsolete files: a table leaves the directory when no live version holds it (invariant 7),
//! WALs after a durable edit above them (invariant 3), old MANIFESTs and OPTIONS files at once.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use crate::base::filenames::{classify, table_file_name, FileKind};

use super::*;

/// Held by every reader of a view (snapshot, iterator, point read) and dropped after the
/// view's version: when the last reader of an obsolete table lets go, the table is deleted
/// at once (invariant 7), not at the next background job or open.
pub(crate) struct ReadPin {
    pub(super) inner: Weak<Inner>,
}

impl Drop for ReadPin {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            if inner.obsolete_pending.load(Ordering::Acquire) {
                inner.purge_obsolete_tables();
            }
        }
    }
}

impl Inner {
    /// A pin for a reader of a view (see [`ReadPin`]).
    pub(super) fn pin(self: &Arc<Self>) -> ReadPin {
        ReadPin {
            inner: Arc::downgrade(self),
        }
    }

    /// Deletes every obsolete table no live version holds any more.
    pub(super) fn purge_obsolete_tables(&self) {
        let dead: Vec<u64> = {
            let mut s = self.state.lock();
            if s.obsolete.is_empty() {
                return;
            }
            s.live_versions.retain(|w| w.strong_count() > 0);
            let mut live: HashSet<u64> = s.version.file_numbers().collect();
            for v in s.live_versions.iter().filter_map(Weak::upgrade) {
                live.extend(v.file_numbers());
            }
            let (dead, still): (Vec<u64>, Vec<u64>) =
                s.obsolete.iter().partition(|n| !live.contains(n));
            s.obsolete = still;
            if s.obsolete.is_empty() {
                self.obsolete_pending.store(false, Ordering::Release);
            }
            dead
        };
        for n in dead {
            self.table_cache.evict(n);
            let _ = self.fs.remove(&table_file_name(&self.dir, n));
        }
    }

    /// Deletes every file in the directory that no live version, memtable or running job needs.
    pub(super) fn delete_obsolete_files(&self) {
        self.purge_obsolete_tables();
        // Lock order is manifest before state (as in log_and_apply): read the number first.
        let manifest_number = self.manifest.lock().number;
        let (live, log_number, number_limit) = {
            let mut s = self.state.lock();
            s.live_versions.retain(|w| w.strong_count() > 0);
            let mut live: HashSet<u64> = s.version.file_numbers().collect();
            for v in s.live_versions.iter().filter_map(Weak::upgrade) {
                live.extend(v.file_numbers());
            }
            live.extend(s.pending_outputs.iter().copied());
            let min_wal = s.imm.first().map_or(s.mem.wal_number, |m| m.wal_number);
            // Files numbered from here on were allocated after this live set was taken.
            (live, s.log_number.min(min_wal), s.next_file_number)
        };
        let Ok(names) = self.fs.list(&self.dir) else {
            return;
        };
        for name in names {
            let remove = match classify(&name) {
                FileKind::Table(n) => n < number_limit && !live.contains(&n),
                FileKind::Wal(n) => n < log_number,
                FileKind::Manifest(n) => n < manifest_number,
                FileKind::Temp => true,
                FileKind::Other => {
                    name.starts_with("OPTIONS-") && name != format!("OPTIONS-{manifest_number:06}")
                }
            };
            if remove {
                if let FileKind::Table(n) = classify(&name) {
                    self.table_cache.evict(n);
                }
                let _ = self.fs.remove(&self.dir.join(&name));
            }
        }
    }
}
