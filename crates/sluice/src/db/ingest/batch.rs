//! Small files: when every file is under `small_file_threshold`, one synced write batch.

use std::sync::Arc;

use crate::base::bounds::IterBounds;
use crate::base::error::{Error, Result};
use crate::base::iterator::InternalIterator;
use crate::base::key::{self, ValueKind};
use crate::wal::batch::WriteBatch;

use super::super::{Inner, WriteOptions};
use super::{IngestedFile, Prepared};

impl Inner {
    /// Applies small files as one synced write batch: atomic, and later files newer (their
    /// entries get higher seqnos; within a file, range deletions come before the points, so a
    /// file's own deletions never hide its own points, as with a global seqno).
    pub(super) fn ingest_as_batch(
        self: &Arc<Self>,
        files: &[Prepared],
        started: std::time::Instant,
    ) -> Result<Vec<IngestedFile>> {
        let mut b = WriteBatch::new();
        for f in files {
            let Some(table) = &f.table else {
                return Err(Error::InvalidArgument(format!(
                    "{}: not a small file (internal: no open table for the write-batch path)",
                    f.source.display()
                )));
            };
            for rd in table.range_deletions() {
                b.delete_range(&rd.start, &rd.end);
            }
            let mut it = table.iter(IterBounds::default());
            it.seek_to_first();
            while it.valid() {
                let p = key::parse_internal_key(it.key())
                    .ok_or_else(|| Error::corruption(&f.source, 0, "malformed key"))?;
                match p.kind {
                    ValueKind::Value => b.put(p.user_key, it.value()),
                    ValueKind::Deletion => b.delete(p.user_key),
                    ValueKind::RangeDeletion => {}
                }
                it.next();
            }
            it.status()?;
        }
        self.write(
            b,
            WriteOptions {
                sync: true,
                disable_wal: false,
                ..Default::default()
            },
        )?;
        // The entries carry ordinary seqnos of the batch, not a global one.
        let seqno = 0;
        let report: Vec<IngestedFile> = files
            .iter()
            .map(|f| IngestedFile {
                source: f.source.clone(),
                level: None,
                seqno,
                number: 0,
                entries: f.entries,
            })
            .collect();
        self.ingested(&[], &report, false, started);
        Ok(report)
    }
}
