//! The version set: the MANIFEST writer and `log_and_apply`, the only way a version is installed
//! (write the edit, sync it, then swap the version in one `state` critical section).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::base::filenames::manifest_name;
use crate::version::VersionEdit;
use crate::wal::log::LogWriter;

use super::{Inner, State};

pub(super) struct ManifestState {
    pub(super) writer: LogWriter,
    pub(super) number: u64,
}

impl Inner {
    /// Writes `edit` to the MANIFEST, syncs it, installs the new version and runs `also`
    /// in the same critical section.
    pub(super) fn log_and_apply(
        &self,
        edit: VersionEdit,
        also: impl FnOnce(&mut State),
    ) -> Result<()> {
        let mut m = self.manifest.lock();
        self.apply_edit_locked(&mut m, edit, also)
    }

    /// [`Inner::log_and_apply`] for a caller already holding the manifest lock.
    pub(super) fn apply_edit_locked(
        &self,
        m: &mut ManifestState,
        edit: VersionEdit,
        also: impl FnOnce(&mut State),
    ) -> Result<()> {
        self.apply_edit_then(m, edit, |_| {}, also)
    }

    /// [`Inner::apply_edit_locked`], running `durable` once the edit is durable and before
    /// the version holding it is installed (an ingest's install marker, `db/ingest`).
    pub(super) fn apply_edit_then(
        &self,
        m: &mut ManifestState,
        mut edit: VersionEdit,
        durable: impl FnOnce(&ManifestState),
        also: impl FnOnce(&mut State),
    ) -> Result<()> {
        let next_version = {
            let s = self.state.lock();
            if let Some(e) = self.read_only_error(&s) {
                return Err(e);
            }
            edit.next_file_number = Some(s.files.next_file_number());
            s.version
                .apply(&edit)
                .map_err(|e| Error::InvalidArgument(format!("bad version edit: {e}")))?
        };
        let path = self.dir.join(manifest_name(m.number));
        let written = m
            .writer
            .add_record(&edit.encode())
            .and_then(|_| m.writer.sync());
        if let Err(e) = written {
            let mut s = self.state.lock();
            self.set_background_error(&mut s, format!("MANIFEST write failed: {e}"));
            return Err(Error::io(&path, e));
        }
        durable(m);
        let mut s = self.state.lock();
        let v = Arc::new(next_version);
        s.files.track_version(&v);
        s.files.retire(&edit);
        self.set_version(&mut s, v);
        also(&mut s);
        if s.files.has_obsolete() {
            self.obsolete_pending.store(true, Ordering::Release);
        }
        drop(s);
        self.purge_obsolete_tables();
        Ok(())
    }
}
