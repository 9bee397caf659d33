//! Flush: a memtable becomes L0 table(s) through one durable edit (invariant 2).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::base::error::{Error, Result};
use crate::compaction::job::{merge_to_tables, DropPolicy, OutputSpec};
use crate::fs::FileSystem;
use crate::memtable::MemTable;
use crate::version::{FileMeta, VersionEdit};

use super::events::{table_infos, FlushInfo, JobReport, TableFileCreation};
use super::flushable::Flushable;
use super::{Inner, Options};

/// Writes a memtable to L0 table(s), cut at `split_keys` (L0's flush split keys, so no new L0
/// file is wide); returns their metadata. Syncs files and the directory.
pub(super) fn flush_memtable(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    mem: &Arc<MemTable>,
    snapshots: &[u64],
    split_keys: &[Vec<u8>],
    new_number: &mut dyn FnMut() -> u64,
) -> Result<Vec<FileMeta>> {
    let mut it = mem.iter(None, None);
    let never_bottom = |_: &[u8], _: &[u8]| false;
    let policy = DropPolicy {
        snapshots: snapshots.to_vec(),
        bottommost: &never_bottom,
    };
    let mut spec = OutputSpec {
        fs,
        dir,
        table: opts.table_options(0),
        target_file_size: u64::MAX,
        split_keys,
        grandparents: &[],
        new_file_number: new_number,
    };
    let (files, _) = merge_to_tables(&mut it, mem.range_deletions(), &policy, &mut spec)?;
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    Ok(files)
}

impl Inner {
    /// Switches the memtable (through the write queue, so no write is in flight) and waits
    /// until every immutable memtable is flushed.
    pub(super) fn flush_and_wait(self: &Arc<Self>) -> Result<()> {
        // Become the write leader with an empty group to exclude concurrent writes.
        let me = self.enter_queue_barrier();
        let r = {
            let mut s = self.state.lock();
            match self.read_only_error(&s) {
                Some(e) => Err(e),
                None if !s.mem.is_empty() => self
                    .switch_memtable(&mut s)
                    .map(|_| s.unlogged_writes = false),
                None => Ok(()),
            }
        };
        self.leave_queue_barrier(&me);
        r?;
        let mut s = self.state.lock();
        while !s.imm.is_empty() || s.jobs.flush_running() {
            if let Some(e) = self.read_only_error(&s) {
                return Err(e);
            }
            self.bg_cv.notify_all();
            self.done_cv.wait_for(&mut s, Duration::from_millis(50));
        }
        match self.read_only_error(&s) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Flushes the oldest entry of the immutable queue: a memtable becomes table(s), a
    /// flushable ingest's tables are added as they are. Reported to listeners as a flush begin
    /// and end (the end of a success in the install's critical section: MANIFEST order).
    pub(super) fn run_flush(self: &Arc<Self>, entry: &Flushable) -> Result<()> {
        let job = self.flush_began(entry);
        let r = match entry {
            Flushable::Mem(mem) => self.flush_mem(entry, mem, job.as_ref()),
            Flushable::Ingested(t) => {
                let files: Vec<FileMeta> = t.files.iter().map(|f| (**f).clone()).collect();
                let numbers: Vec<u64> = files.iter().map(|f| f.number).collect();
                self.install_flush(entry, files, numbers, job.as_ref())
            }
        };
        if let Err(e) = &r {
            self.flush_ended(job.as_ref(), Vec::new(), 0, Some(e.to_string()));
        }
        r
    }

    /// Flush of a memtable, step by step: write the table(s), then install them.
    fn flush_mem(
        self: &Arc<Self>,
        entry: &Flushable,
        mem: &Arc<MemTable>,
        job: Option<&JobReport<FlushInfo>>,
    ) -> Result<()> {
        let snapshots = self.live_snapshots();
        let split_keys = {
            let s = self.state.lock();
            flush_split_keys_with_base(
                &s.l0,
                &s.version,
                &self.picker_options(),
                self.opts.flush_split_bytes,
            )
        };
        let mut alloc = self.allocate_numbers();
        let files = flush_memtable(
            &*self.fs,
            &self.dir,
            &self.opts,
            mem,
            &snapshots,
            &split_keys,
            &mut alloc,
        )?;
        let bytes: u64 = files.iter().map(|f| f.size).sum();
        let numbers: Vec<u64> = files.iter().map(|f| f.number).collect();
        if let Some(j) = job {
            let created: Vec<(u64, u64)> = files.iter().map(|f| (f.number, f.size)).collect();
            self.tables_created(
                &created,
                Some(0),
                TableFileCreation::Flush,
                Some(j.info.job_id),
            );
        }
        // Before the install: the picker that scores the new L0 must see this flush's ratio.
        self.note_flush_ratio(mem.approximate_bytes(), bytes);
        self.install_flush(entry, files, numbers, job)?;
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        self.counters
            .flush_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// One durable edit that adds the entry's tables to L0, advances the log number to the
    /// next entry's WAL and the flushed seqno past the entry, and drops the entry from the
    /// queue in the same critical section (invariant 2). `numbers` stop being protected as
    /// uninstalled either way.
    fn install_flush(
        &self,
        entry: &Flushable,
        files: Vec<FileMeta>,
        numbers: Vec<u64>,
        job: Option<&JobReport<FlushInfo>>,
    ) -> Result<()> {
        let next_log = {
            let s = self.state.lock();
            s.imm.get(1).map_or(s.mem.wal_number, Flushable::wal_number)
        };
        // Only a memtable's tables are written by the flush.
        let written = matches!(entry, Flushable::Mem(_));
        let bytes_written = if written {
            files.iter().map(|f| f.size).sum()
        } else {
            0
        };
        let outputs = job.map(|_| table_infos(0, &files)).unwrap_or_default();
        let edit = VersionEdit {
            log_number: Some(next_log),
            last_sequence: Some(self.last_sequence.load(Ordering::Acquire)),
            flushed_seqno: Some(entry.largest_seqno()),
            added: files.into_iter().map(|f| (0, f)).collect(),
            ..Default::default()
        };
        let r = self.log_and_apply(edit, |s| {
            if s.imm.first().is_some_and(|m| m.same(entry)) {
                s.imm.remove(0);
            }
            s.files.set_log_number(next_log);
            self.flush_ended(job, outputs, bytes_written, None);
        });
        let mut s = self.state.lock();
        for n in numbers {
            s.files.release(n);
        }
        r
    }
}

/// Where a flush cuts its outputs: the L0 sublevels' split keys (no new L0 file wide over deep
/// intervals) and the starts of the base level's files. The latter matter when L0 is empty or
/// its files all span the key space (random keys): L0 gives no split keys then, every flush
/// would be one file as wide as the key space, and every L0→Lbase compaction would take whole
/// flushes and write outputs as wide, which the next level down then rewrites whole. Cut at the
/// base level's boundaries, L0 files line up with the files they will be compacted into.
pub(super) fn flush_split_keys_with_base(
    l0: &crate::version::l0_sublevels::L0Sublevels,
    version: &crate::version::Version,
    picker: &crate::compaction::picker::PickerOptions,
    flush_split_bytes: u64,
) -> Vec<Vec<u8>> {
    if flush_split_bytes == 0 || !picker.l0_sublevels {
        // RocksDB's L0 (sublevels off): one file per flush, however wide.
        return Vec::new();
    }
    let mut keys = l0.flush_split_keys(flush_split_bytes);
    let (_, base) = crate::compaction::picker::level_targets(version, picker);
    keys.extend(
        version.levels[base]
            .iter()
            .skip(1)
            .map(|f| f.smallest_user().to_vec()),
    );
    keys.sort();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::flush_split_keys_with_base;
    use crate::compaction::picker::PickerOptions;
    use crate::version::l0_sublevels::L0Sublevels;
    use crate::version::{FileMeta, Version, VersionEdit};

    fn file(n: u64, lo: &str, hi: &str) -> FileMeta {
        FileMeta::for_test(n, lo.as_bytes(), hi.as_bytes(), 1 << 20, n)
    }

    #[test]
    fn flushes_cut_at_base_level_file_starts_when_l0_is_empty() {
        let v = Version::default()
            .apply(&VersionEdit {
                added: vec![
                    (6, file(1, "a", "f")),
                    (6, file(2, "g", "m")),
                    (6, file(3, "n", "z")),
                ],
                ..Default::default()
            })
            .unwrap();
        let picker = PickerOptions {
            l0_compaction_trigger: 4,
            l0_sublevels: true,
            max_bytes_for_level_base: 256 << 20,
            level_multiplier: 10,
            ..PickerOptions::default()
        };
        let l0 = L0Sublevels::from_version(&v);
        assert!(
            l0.flush_split_keys(4 << 20).is_empty(),
            "empty L0 gives no split keys"
        );
        assert_eq!(
            flush_split_keys_with_base(&l0, &v, &picker, 4 << 20),
            vec![b"g".to_vec(), b"n".to_vec()]
        );
        // flush_split_bytes 0 turns splitting off altogether; so do sublevels off.
        assert!(flush_split_keys_with_base(&l0, &v, &picker, 0).is_empty());
        let off = PickerOptions {
            l0_sublevels: false,
            ..picker
        };
        assert!(flush_split_keys_with_base(&l0, &v, &off, 4 << 20).is_empty());
    }
}
