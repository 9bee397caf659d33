//! Step 1: open and check every external file, and that they are disjoint.

use std::path::PathBuf;
use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::base::iterator::InternalIterator;
use crate::base::key::{self};
use crate::sst::table::{IterBounds, Table, TableReadOptions};

use super::super::Inner;

use super::*;

/// A file's user-key span: smallest, largest, and whether largest is an exclusive bound.
type UserRange = (Vec<u8>, Vec<u8>, bool);

fn user_range_of(t: &Arc<Table>) -> Result<Option<UserRange>> {
    let mut it = t.iter(IterBounds::default());
    it.seek_to_first();
    it.status()?;
    let mut lo = it.valid().then(|| key::user_key(it.key()).to_vec());
    it.seek_to_last();
    it.status()?;
    let mut hi = it.valid().then(|| key::user_key(it.key()).to_vec());
    let mut excl = false;
    for rd in t.range_deletions() {
        if lo.as_ref().is_none_or(|l| rd.start < *l) {
            lo = Some(rd.start.clone());
        }
        if hi.as_ref().is_none_or(|h| rd.end > *h) {
            hi = Some(rd.end.clone());
            excl = true;
        }
    }
    Ok(lo.zip(hi).map(|(l, h)| (l, h, excl)))
}

impl Inner {
    /// Step 1: open and validate every file.
    pub(super) fn ingest_validate(
        &self,
        paths: &[PathBuf],
        opts: &IngestOptions,
    ) -> Result<Vec<Prepared>> {
        let mut out = Vec::new();
        for p in paths {
            let ropts = TableReadOptions {
                verify_checksums: opts.verify_checksums,
                cache: None,
            };
            let file = self.fs.open(p).map_err(|e| Error::io(p, e))?;
            let t = Table::open(file, p.clone(), &ropts)?;
            if opts.verify_checksums {
                t.verify()?;
            }
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
            // Every key must carry seqno 0 and appear once (a global seqno relabels them all).
            let mut it = t.iter(IterBounds::default());
            it.seek_to_first();
            let mut prev: Option<Vec<u8>> = None;
            let mut n = 0u64;
            while it.valid() {
                let k = key::parse_internal_key(it.key())
                    .ok_or_else(|| Error::corruption(p, 0, "malformed key"))?;
                if k.seqno != 0 {
                    return Err(Error::corruption(
                        p,
                        0,
                        format!(
                            "key {:?} has seqno {} (external files need 0)",
                            crate::base::error::escape_bytes(k.user_key),
                            k.seqno
                        ),
                    ));
                }
                if prev.as_deref() == Some(k.user_key) {
                    return Err(Error::corruption(
                        p,
                        0,
                        format!(
                            "user key {:?} appears twice",
                            crate::base::error::escape_bytes(k.user_key)
                        ),
                    ));
                }
                prev = Some(k.user_key.to_vec());
                n += 1;
                it.next();
            }
            it.status()?;
            let Some((lo, hi, excl)) = user_range_of(&t)? else {
                return Err(Error::InvalidArgument(format!(
                    "{}: file holds no entries",
                    p.display()
                )));
            };
            let size = t.file_size();
            let range_dels = t.range_deletions().len() as u64;
            out.push(Prepared {
                source: p.clone(),
                table: t,
                smallest: lo,
                largest: hi,
                largest_exclusive: excl,
                size,
                entries: n,
                range_dels,
                number: 0,
            });
        }
        if !opts.allow_overlap {
            let mut sorted: Vec<&Prepared> = out.iter().collect();
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
        }
        Ok(out)
    }
}
