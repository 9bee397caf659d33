//! Checkpoints: a consistent, openable copy of the Db in another directory, its tables
//! hard-linked (copied across file systems) and a fresh MANIFEST describing exactly them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::base::filenames::{manifest_name, table_file_name};
use crate::version::{Version, VersionEdit, MANIFEST_FORMAT_VERSION};
use crate::wal::log::LogWriter;

use super::open::{set_current, write_options_file};
use super::{Db, Inner};

/// What [`Db::checkpoint`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// Tables in the checkpoint.
    pub tables: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// The checkpoint holds exactly the writes up to this sequence number: every write
    /// acknowledged before `checkpoint` was called, and none above this number.
    pub last_sequence: u64,
}

/// Attempts at catching the memtables empty after a flush before giving up.
const ATTEMPTS: usize = 10;

impl Db {
    /// Writes a consistent copy of the Db into `dir`, which must not exist: the memtables are
    /// flushed, the current version is pinned (its tables cannot be deleted meanwhile), its
    /// tables are hard-linked (or copied where linking fails) into `dir.tmp`, a new MANIFEST
    /// describing exactly that version, `CURRENT` and the OPTIONS file are written and
    /// synced, and `dir.tmp` is renamed to `dir`. The checkpoint needs no WAL: it holds every
    /// write acknowledged before the flush that emptied the memtables. Writes may go on
    /// meanwhile; if they keep refilling the memtable the checkpoint fails rather than wait
    /// forever.
    ///
    /// Never rewrite the checkpoint's tables in place: hard-linked, they are the Db's too.
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointInfo> {
        self.inner.checkpoint(dir.as_ref())
    }
}

impl Inner {
    fn checkpoint(self: &Arc<Self>, out: &Path) -> Result<CheckpointInfo> {
        if self.read_only {
            return Err(Error::InvalidArgument(format!(
                "{} is open read-only: a checkpoint flushes the memtable first",
                self.dir.display()
            )));
        }
        if self.fs.exists(out) {
            return Err(Error::InvalidArgument(format!(
                "checkpoint directory {} already exists",
                out.display()
            )));
        }
        let mut tmp_name = OsString::from(out.as_os_str());
        tmp_name.push(".tmp");
        let tmp = PathBuf::from(tmp_name);
        if self.fs.exists(&tmp) {
            return Err(Error::InvalidArgument(format!(
                "{} exists (left by an interrupted checkpoint? remove it)",
                tmp.display()
            )));
        }
        // Flush until the memtables are caught empty with the version current at that
        // moment: the version then holds every acknowledged write (nothing is in a WAL only).
        let mut pinned = None;
        for _ in 0..ATTEMPTS {
            self.flush_and_wait()?;
            let s = self.state.lock();
            if s.mem.is_empty() && s.imm.is_empty() {
                let version = Arc::clone(&s.version);
                let next = s.files.next_file_number();
                // The read horizon, loaded in the same `state` critical section as the version
                // (invariant 1): every seqno at or below it is in the memtables (empty) or
                // the version. Not `last_sequence`: a write group can hold seqnos above the
                // horizon that are not in a memtable yet.
                let last_sequence = self.visible_seq.load(Ordering::Acquire);
                drop(s);
                pinned = Some((self.pin(version), next, last_sequence));
                break;
            }
        }
        let Some((pin, manifest_number, last_sequence)) = pinned else {
            return Err(Error::InvalidArgument(format!(
                "checkpoint of {}: writes kept refilling the memtable after {ATTEMPTS} flushes",
                self.dir.display()
            )));
        };
        let version = Arc::clone(pin.version());
        let r = self.write_checkpoint(&tmp, &version, manifest_number, last_sequence);
        drop(pin);
        let info = match r {
            Ok(info) => info,
            Err(e) => {
                self.remove_tmp(&tmp);
                return Err(e);
            }
        };
        if let Err(e) = self.fs.rename(&tmp, out) {
            self.remove_tmp(&tmp);
            return Err(Error::io(out, e));
        }
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        self.fs.sync_dir(parent).map_err(|e| Error::io(parent, e))?;
        Ok(info)
    }

    /// Removes a checkpoint's temporary directory (its files are links or copies: the Db's
    /// tables are not touched).
    fn remove_tmp(&self, tmp: &Path) {
        if let Ok(names) = self.fs.list(tmp) {
            for n in names {
                let _ = self.fs.remove(&tmp.join(n));
            }
        }
        let _ = self.fs.remove_dir(tmp);
    }

    /// Links the version's tables into `tmp` and writes a MANIFEST, CURRENT and OPTIONS
    /// describing exactly them, all synced.
    fn write_checkpoint(
        &self,
        tmp: &Path,
        version: &Version,
        manifest_number: u64,
        last_sequence: u64,
    ) -> Result<CheckpointInfo> {
        let fs = &*self.fs;
        fs.create_dir_all(tmp).map_err(|e| Error::io(tmp, e))?;
        let mut edit = VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION),
            // No WAL is needed: the next open starts one numbered above the MANIFEST.
            log_number: Some(manifest_number + 1),
            next_file_number: Some(manifest_number + 2),
            last_sequence: Some(last_sequence),
            flushed_seqno: Some(last_sequence),
            ..Default::default()
        };
        let mut bytes = 0;
        for (level, files) in version.levels.iter().enumerate() {
            for f in files {
                let from = table_file_name(&self.dir, f.number);
                let to = table_file_name(tmp, f.number);
                fs.link_or_copy(&from, &to)
                    .map_err(|e| Error::io(&from, e))?;
                fs.sync_file(&to).map_err(|e| Error::io(&to, e))?;
                bytes += f.size;
                edit.added.push((level, (**f).clone()));
            }
        }
        let tables = edit.added.len();
        let mpath = tmp.join(manifest_name(manifest_number));
        let mut writer = LogWriter::new(fs.create(&mpath).map_err(|e| Error::io(&mpath, e))?);
        writer
            .add_record(&edit.encode())
            .map_err(|e| Error::io(&mpath, e))?;
        writer.sync().map_err(|e| Error::io(&mpath, e))?;
        drop(writer);
        write_options_file(fs, tmp, &self.opts, manifest_number)?;
        set_current(fs, tmp, manifest_number)?; // syncs the directory
        Ok(CheckpointInfo {
            tables,
            bytes,
            last_sequence,
        })
    }
}
