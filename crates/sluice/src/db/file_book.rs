//! The file book: which file numbers are taken, and which tables must stay on disk. A part of
//! `State`, under the `state` lock; jobs take numbers and release them, installs retire tables,
//! and the obsolete-file scan (`obsolete.rs`) asks what may go — all through these methods.
//!
//! Invariants:
//! 1. A number is handed out once, ever: tables, WALs and MANIFESTs share the counter, and
//!    recovery starts it above every number on disk (`base/filenames.rs`).
//! 2. A table number a job took is *uninstalled* until the job installs its edit or removes the
//!    file: the obsolete-file scan never deletes it meanwhile.
//! 3. A table an installed edit removed is *obsolete* until no live version and no live
//!    flushable ingest holds it (Db invariant 7).

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use crate::version::{Version, VersionEdit};

use super::flushable::IngestedTables;

/// File numbers and table liveness.
pub(super) struct FileBook {
    /// The next file number (invariant 1).
    next_file_number: u64,
    /// WALs below this number are flushed and may be deleted (Db invariant 3).
    log_number: u64,
    /// Numbers of files being written or linked whose edit is not installed yet (invariant 2).
    uninstalled: HashSet<u64>,
    /// Tables removed from the current version that an older, still-read version may hold
    /// (invariant 3).
    obsolete: Vec<u64>,
    /// Every version handed out, with its tables; a table any live one holds stays on disk.
    /// Liveness is read from the weak count, never by upgrading: a reader dropping the last
    /// reference purges if and only if it sees the count reach zero (`ReadPin`), which an
    /// upgrade here would hide from it, leaving its tables undeleted until some later purge.
    live_versions: Vec<(Weak<Version>, Vec<u64>)>,
    /// Every flushable ingest handed out (a snapshot's view may hold one after its tables were
    /// installed and compacted away): their tables stay on disk too.
    live_ingested: Vec<Weak<IngestedTables>>,
    /// Tables taken by [`FileBook::take_dead`] whose files are not unlinked yet.
    removing: usize,
}

impl FileBook {
    /// The book of a Db just opened on `version`.
    pub(super) fn new(next_file_number: u64, log_number: u64, version: &Arc<Version>) -> Self {
        FileBook {
            next_file_number,
            log_number,
            uninstalled: HashSet::new(),
            obsolete: Vec::new(),
            live_versions: vec![(Arc::downgrade(version), version.file_numbers().collect())],
            live_ingested: Vec::new(),
            removing: 0,
        }
    }

    /// The number the next file will get.
    pub(super) fn next_file_number(&self) -> u64 {
        self.next_file_number
    }

    /// A number for a table a job writes or links, uninstalled until [`FileBook::release`].
    pub(super) fn new_table_number(&mut self) -> u64 {
        let n = self.take_number();
        self.uninstalled.insert(n);
        n
    }

    /// A number for a new WAL (kept by `log_number`, not by the uninstalled set).
    pub(super) fn new_wal_number(&mut self) -> u64 {
        self.take_number()
    }

    fn take_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// The table numbered `n` is installed, or its file removed: the scan may judge it now.
    pub(super) fn release(&mut self, n: u64) {
        self.uninstalled.remove(&n);
    }

    /// WALs below this number are flushed.
    pub(super) fn log_number(&self) -> u64 {
        self.log_number
    }

    pub(super) fn set_log_number(&mut self, n: u64) {
        self.log_number = n;
    }

    /// A version is handed out: its tables stay while it lives.
    pub(super) fn track_version(&mut self, v: &Arc<Version>) {
        self.live_versions.retain(|(w, _)| w.strong_count() > 0);
        self.live_versions
            .push((Arc::downgrade(v), v.file_numbers().collect()));
    }

    /// A flushable ingest is queued: its tables stay while it lives.
    pub(super) fn track_ingested(&mut self, t: &Arc<IngestedTables>) {
        self.live_ingested.push(Arc::downgrade(t));
    }

    /// The tables an installed `edit` removed become obsolete (a trivial move deletes and
    /// re-adds the same number: that table stays).
    pub(super) fn retire(&mut self, edit: &VersionEdit) {
        for (_, n) in &edit.deleted {
            if !edit.added.iter().any(|(_, f)| f.number == *n) {
                self.obsolete.push(*n);
            }
        }
    }

    /// Some table is obsolete.
    pub(super) fn has_obsolete(&self) -> bool {
        !self.obsolete.is_empty()
    }

    /// Takes the obsolete tables that neither `current` nor any live version or flushable
    /// ingest holds any more: the caller deletes them.
    pub(super) fn take_dead(&mut self, current: &Version) -> Vec<u64> {
        let live = self.live_tables(current);
        let (dead, still): (Vec<u64>, Vec<u64>) =
            self.obsolete.iter().partition(|n| !live.contains(n));
        self.obsolete = still;
        self.removing += dead.len();
        dead
    }

    /// `n` tables [`FileBook::take_dead`] handed out are unlinked.
    pub(super) fn removed(&mut self, n: usize) {
        self.removing -= n;
    }

    /// Some table taken for deletion is not unlinked yet.
    pub(super) fn removing(&self) -> bool {
        self.removing > 0
    }

    /// Every table that must stay on disk: held by `current`, a live version or a live
    /// flushable ingest, or uninstalled.
    pub(super) fn needed_tables(&mut self, current: &Version) -> HashSet<u64> {
        let mut live = self.live_tables(current);
        live.extend(self.uninstalled.iter().copied());
        live
    }

    /// Every table `current`, a live version or a live flushable ingest holds.
    fn live_tables(&mut self, current: &Version) -> HashSet<u64> {
        self.live_versions.retain(|(w, _)| w.strong_count() > 0);
        self.live_ingested.retain(|w| w.strong_count() > 0);
        let mut live: HashSet<u64> = current.file_numbers().collect();
        for (_, numbers) in &self.live_versions {
            live.extend(numbers.iter().copied());
        }
        for t in self.live_ingested.iter().filter_map(Weak::upgrade) {
            live.extend(t.files.iter().map(|f| f.number));
        }
        live
    }
}
