//! The table cache: open tables by file number, bounded by `max_open_files` (LevelDB's
//! `table_cache`); a table's size is checked against the MANIFEST when it is opened.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::base::error::{Error, Result};
use crate::base::filenames::table_file_name;
use crate::fs::{FileSystem, RandomAccessFile};
use crate::read::level::TableOpener;
use crate::sst::table::{Table, TableReadOptions};
use crate::version::FileMeta;

use super::Inner;

pub(super) type TableMap = BTreeMap<u64, (Arc<Table>, u64)>;

/// Table files held open by number: a read-only Db's, opened with its view, so that a table
/// the writer beside it compacts away and deletes stays readable through its handle.
pub(super) type PinnedTables = BTreeMap<u64, Arc<dyn RandomAccessFile>>;

pub(super) struct TableCache {
    /// Open tables by file number with their last-use tick, and the tick counter.
    pub(super) map: Mutex<(TableMap, u64)>,
    pub(super) capacity: usize,
    /// Handles a table is opened from instead of its name (a read-only Db's; empty otherwise).
    pub(super) pinned: PinnedTables,
}

impl TableCache {
    pub(super) fn get(
        &self,
        fs: &dyn FileSystem,
        dir: &Path,
        f: &FileMeta,
        ropts: &TableReadOptions,
    ) -> Result<Arc<Table>> {
        {
            let mut g = self.map.lock();
            let (map, tick) = &mut *g;
            *tick += 1;
            let t = *tick;
            if let Some((table, used)) = map.get_mut(&f.number) {
                *used = t;
                return Ok(Arc::clone(table));
            }
        }
        let path = table_file_name(dir, f.number);
        let (file, size) = match self.pinned.get(&f.number) {
            Some(file) => (
                Arc::clone(file),
                file.size().map_err(|e| Error::io(&path, e))?,
            ),
            None => {
                let file = fs.open(&path).map_err(|e| Error::io(&path, e))?;
                (file, fs.file_size(&path).map_err(|e| Error::io(&path, e))?)
            }
        };
        // RocksDB's paranoid check: a table whose size is not the MANIFEST's was changed
        // behind the Db's back (e.g. a linked ingest source rewritten in place).
        if size != f.size {
            return Err(Error::corruption(
                &path,
                0,
                format!(
                    "table size is {size} bytes but the MANIFEST records {} (changed outside the Db?)",
                    f.size
                ),
            ));
        }
        let table = Table::open(file, path, ropts)?;
        let mut g = self.map.lock();
        let (map, tick) = &mut *g;
        map.insert(f.number, (Arc::clone(&table), *tick));
        if map.len() > self.capacity {
            if let Some((&victim, _)) = map.iter().min_by_key(|(_, (_, used))| *used) {
                map.remove(&victim);
            }
        }
        if !self.pinned.is_empty() && !self.pinned.contains_key(&f.number) {
            // Each table opened by name holds a descriptor of its own beside the held ones:
            // at most `capacity - pinned` of them, so that all stay within `capacity`.
            let room = self.capacity.saturating_sub(self.pinned.len()).max(1);
            let unpinned = || map.iter().filter(|(n, _)| !self.pinned.contains_key(n));
            if unpinned().count() > room {
                if let Some(victim) = unpinned()
                    .min_by_key(|(_, (_, used))| *used)
                    .map(|(&n, _)| n)
                {
                    map.remove(&victim);
                }
            }
        }
        Ok(table)
    }

    pub(super) fn evict(&self, number: u64) {
        self.map.lock().0.remove(&number);
    }
}

impl Inner {
    pub(super) fn table_read_options(&self) -> TableReadOptions {
        TableReadOptions {
            verify_checksums: self.opts.verify_checksums,
            cache: Some(Arc::clone(&self.block_cache)),
        }
    }

    pub(super) fn table(&self, f: &FileMeta) -> Result<Arc<Table>> {
        self.table_cache
            .get(&*self.fs, &self.dir, f, &self.table_read_options())
    }

    pub(super) fn opener(self: &Arc<Self>) -> TableOpener {
        let weak = Arc::downgrade(self);
        Arc::new(move |f: &FileMeta| {
            let inner = weak
                .upgrade()
                .ok_or_else(|| Error::InvalidArgument("database closed".into()))?;
            inner.table(f)
        })
    }
}
