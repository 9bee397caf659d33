//! Obsolete files: a table leaves the directory when no live version holds it (invariant 7),
//! WALs after a durable edit above them (invariant 3), old MANIFESTs and OPTIONS files at once.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use crate::base::filenames::{classify, FileKind};
use crate::version::Version;

use super::events::TableFileDeletion;
use super::Inner;

/// Held by every reader of a view (snapshot, iterator, point read), holding its own reference
/// to the view's version and dropped after every other one the reader holds. A reader that
/// finds the version dead once it let go deletes the obsolete tables only that version held,
/// at once (invariant 7). Every other drop costs an atomic
/// decrement: readers never contend for `state` to find out that nothing can be deleted.
pub(crate) struct ReadPin {
    inner: Weak<Inner>,
    version: Option<Arc<Version>>,
}

impl ReadPin {
    /// The pinned version.
    pub(super) fn version(&self) -> &Arc<Version> {
        self.version.as_ref().expect("present until drop")
    }
}

impl Drop for ReadPin {
    fn drop(&mut self) {
        let Some(v) = self.version.take() else {
            return;
        };
        // Whoever finds the version dead after letting go purges. (`Arc::try_unwrap` would miss
        // two readers dropping at once: both see the other's reference, then both let go.)
        let weak = Arc::downgrade(&v);
        drop(v);
        if weak.strong_count() > 0 {
            return;
        }
        if let Some(inner) = self.inner.upgrade() {
            if inner.obsolete_pending.load(Ordering::Acquire) {
                inner.purge_obsolete_tables();
            }
        }
    }
}

impl Inner {
    /// A pin owning a reader's reference to `version` (see [`ReadPin`]).
    pub(super) fn pin(self: &Arc<Self>, version: Arc<Version>) -> ReadPin {
        ReadPin {
            inner: Arc::downgrade(self),
            version: Some(version),
        }
    }

    /// Deletes every obsolete table no live version holds any more.
    pub(super) fn purge_obsolete_tables(&self) {
        let dead: Vec<u64> = {
            let mut s = self.state.lock();
            // After a failed MANIFEST write the edit may be on disk anyway: nothing it names
            // or removes is deleted until the next open reads what the MANIFEST holds.
            if !s.files.has_obsolete() || s.background_error.is_some() {
                return;
            }
            let st = &mut *s;
            let dead = st.files.take_dead(&st.version);
            if !st.files.has_obsolete() {
                self.obsolete_pending.store(false, Ordering::Release);
            }
            dead
        };
        let taken = dead.len();
        for n in dead {
            self.table_cache.evict(n);
            self.remove_table(n, TableFileDeletion::Obsolete);
        }
        if taken > 0 {
            // wait_for_background_work counts these as background work until now.
            self.state.lock().files.removed(taken);
            self.done_cv.notify_all();
        }
    }

    /// Deletes every file in the directory that no live version, memtable or running job needs.
    pub(super) fn delete_obsolete_files(&self) {
        if self.read_only {
            return;
        }
        self.purge_obsolete_tables();
        // Lock order is manifest before state (as in log_and_apply): read the number first.
        let manifest_number = self.manifest.lock().number;
        let (live, log_number, number_limit) = {
            let mut s = self.state.lock();
            if s.background_error.is_some() {
                return; // see purge_obsolete_tables
            }
            let st = &mut *s;
            let live = st.files.needed_tables(&st.version);
            let min_wal = st.imm.first().map_or(st.mem.wal_number, |m| m.wal_number());
            // Files numbered from here on were allocated after this live set was taken.
            let number_limit = st.files.next_file_number();
            (live, st.files.log_number().min(min_wal), number_limit)
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
            if !remove {
                continue;
            }
            let path = self.dir.join(&name);
            if let FileKind::Table(n) = classify(&name) {
                self.table_cache.evict(n);
                self.remove_table_at(&path, n, TableFileDeletion::Unreferenced);
            } else {
                let _ = self.fs.remove(&path);
            }
        }
    }
}
