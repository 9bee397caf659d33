//! Step 1: open and check every external file, and that they are disjoint.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::bounds::IterBounds;
use crate::base::error::{Error, Result};
use crate::base::iterator::InternalIterator;
use crate::base::key;
use crate::sst::table::{Table, TableReadOptions};

use super::super::Inner;
use super::{IngestOptions, Prepared};

/// A file's user-key span.
struct KeySpan {
    smallest: Vec<u8>,
    largest: Vec<u8>,
    /// `largest` is a range deletion's end, itself not in the file.
    largest_exclusive: bool,
}

/// The span of a table's points and range deletions, or `None` for an empty table.
fn key_span(t: &Arc<Table>) -> Result<Option<KeySpan>> {
    let mut it = t.iter(IterBounds::default());
    it.seek_to_first();
    it.status()?;
    let mut lo = it.valid().then(|| key::user_key(it.key()).to_vec());
    it.seek_to_last();
    it.status()?;
    let mut hi = it.valid().then(|| key::user_key(it.key()).to_vec());
    let mut exclusive = false;
    for rd in t.range_deletions() {
        if lo.as_ref().is_none_or(|l| rd.start < *l) {
            lo = Some(rd.start.clone());
        }
        if hi.as_ref().is_none_or(|h| rd.end > *h) {
            hi = Some(rd.end.clone());
            exclusive = true;
        }
    }
    Ok(lo.zip(hi).map(|(smallest, largest)| KeySpan {
        smallest,
        largest,
        largest_exclusive: exclusive,
    }))
}

impl Inner {
    /// Step 1: open and validate every file, then check they are disjoint (unless
    /// `allow_overlap`).
    pub(super) fn ingest_validate(
        &self,
        paths: &[PathBuf],
        opts: &IngestOptions,
    ) -> Result<Vec<Prepared>> {
        let files = paths
            .iter()
            .map(|p| self.ingest_validate_file(p, opts))
            .collect::<Result<Vec<_>>>()?;
        if !opts.allow_overlap {
            check_disjoint(&files)?;
        }
        Ok(files)
    }

    /// One file: open it (checksums of every block when asked), check its seqnos and keys
    /// (every key when asked), find its key span.
    fn ingest_validate_file(&self, p: &Path, opts: &IngestOptions) -> Result<Prepared> {
        let ropts = TableReadOptions {
            verify_checksums: opts.verify_checksums,
            cache: None,
        };
        let file = self.fs.open(p).map_err(|e| Error::io(p, e))?;
        let t = Table::open(file, p.to_path_buf(), &ropts)?;
        if opts.verify_checksums {
            t.verify()?;
        }
        check_external_seqno(p, &t)?;
        let entries = if opts.verify_keys {
            check_keys(p, &t)?
        } else {
            t.properties().num_entries
        };
        let Some(span) = key_span(&t)? else {
            return Err(Error::InvalidArgument(format!(
                "{}: file holds no entries",
                p.display()
            )));
        };
        Ok(Prepared {
            source: p.to_path_buf(),
            size: t.file_size(),
            range_dels: t.range_deletions().len() as u64,
            table: (t.file_size() < opts.small_file_threshold).then_some(t),
            smallest: span.smallest,
            largest: span.largest,
            largest_exclusive: span.largest_exclusive,
            entries,
            number: 0,
        })
    }
}

/// An external file's properties must say its entries carry seqno 0.
fn check_external_seqno(p: &Path, t: &Table) -> Result<()> {
    let props = t.properties();
    if props.largest_seqno != 0 && props.raw.contains_key("rocksdb.key.largest.seqno") {
        return Err(Error::corruption(
            p,
            0,
            format!(
                "external file has entries with seqno up to {} (expected 0)",
                props.largest_seqno
            ),
        ));
    }
    Ok(())
}

/// Every key carries seqno 0 and appears once (a global seqno relabels them all); returns
/// the number of entries.
fn check_keys(p: &Path, t: &Arc<Table>) -> Result<u64> {
    let mut it = t.iter(IterBounds::default());
    it.seek_to_first();
    let mut prev: Option<Vec<u8>> = None;
    let mut n = 0u64;
    while it.valid() {
        let k = key::parse_internal_key(it.key())
            .ok_or_else(|| Error::corruption(p, 0, "malformed key"))?;
        let shown = || crate::base::error::escape_bytes(k.user_key);
        if k.seqno != 0 {
            return Err(Error::corruption(
                p,
                0,
                format!(
                    "key {:?} has seqno {} (external files need 0)",
                    shown(),
                    k.seqno
                ),
            ));
        }
        match prev.as_deref().map(|q| q.cmp(k.user_key)) {
            Some(std::cmp::Ordering::Equal) => {
                return Err(Error::corruption(
                    p,
                    0,
                    format!("user key {:?} appears twice", shown()),
                ));
            }
            // Out of order (possible across blocks: each block is checked on its own): the
            // file's span, and so the overlap checks and its level, would be wrong.
            Some(std::cmp::Ordering::Greater) => {
                return Err(Error::corruption(
                    p,
                    0,
                    format!("user key {:?} is out of order", shown()),
                ));
            }
            _ => {}
        }
        prev = Some(k.user_key.to_vec());
        n += 1;
        it.next();
    }
    it.status()?;
    Ok(n)
}

/// No two files share a key (a range deletion's end is exclusive).
fn check_disjoint(files: &[Prepared]) -> Result<()> {
    let mut sorted: Vec<&Prepared> = files.iter().collect();
    sorted.sort_by(|a, b| a.smallest.cmp(&b.smallest));
    for w in sorted.windows(2) {
        let touch = w[0].largest > w[1].smallest
            || (w[0].largest == w[1].smallest && !w[0].largest_exclusive);
        if touch {
            return Err(Error::InvalidArgument(format!(
                "{} and {} overlap (set allow_overlap to layer them in L0)",
                w[0].source.display(),
                w[1].source.display()
            )));
        }
    }
    Ok(())
}
