//! Step 2: hard-link or copy the files into the Db directory under new numbers.

use std::path::{Path, PathBuf};

use crate::base::error::{Error, Result};
use crate::base::filenames::table_file_name;

use super::super::Inner;
use super::{IngestOptions, Prepared};

impl Inner {
    /// Step 2: link or copy each file into the DB directory. On error nothing is left behind.
    pub(super) fn ingest_link(&self, files: &mut [Prepared], opts: &IngestOptions) -> Result<()> {
        let mut linked: Vec<PathBuf> = Vec::new();
        let r = (|| -> Result<()> {
            for f in files.iter_mut() {
                let number = self.state.lock().files.new_table_number();
                f.number = number;
                let dst = table_file_name(&self.dir, number);
                if opts.link_files {
                    self.fs
                        .link_or_copy(&f.source, &dst)
                        .map_err(|e| Error::io(&dst, e))?;
                    linked.push(dst.clone());
                    // The caller may never have synced the file: its bytes must be durable
                    // before an edit names it (invariant 4).
                    self.fs.sync_file(&dst).map_err(|e| Error::io(&dst, e))?;
                } else {
                    copy_file(&*self.fs, &f.source, &dst, f.size)?;
                    linked.push(dst);
                }
            }
            self.fs
                .sync_dir(&self.dir)
                .map_err(|e| Error::io(&self.dir, e))
        })();
        if r.is_err() {
            for p in &linked {
                let _ = self.fs.remove(p);
            }
            self.release_pending(files);
        }
        r
    }
}

/// Copies the first `len` bytes of `src` (its size when validated: a source that grows later
/// cannot make the table disagree with its MANIFEST size) to the new file `dst` in 1 MiB pieces (memory stays bounded for any file
/// size) and syncs it; on error `dst` is removed.
fn copy_file(fs: &dyn crate::fs::FileSystem, src: &Path, dst: &Path, len: u64) -> Result<()> {
    const CHUNK: u64 = 1 << 20;
    let input = fs.open(src).map_err(|e| Error::io(src, e))?;
    let mut w = fs.create(dst).map_err(|e| Error::io(dst, e))?;
    let mut buf = vec![0u8; CHUNK.min(len) as usize];
    let r = (|| -> Result<()> {
        let mut off = 0;
        while off < len {
            let n = CHUNK.min(len - off) as usize;
            input
                .read_exact_at(off, &mut buf[..n])
                .map_err(|e| Error::io(src, e))?;
            std::io::Write::write_all(&mut w, &buf[..n]).map_err(|e| Error::io(dst, e))?;
            off += n as u64;
        }
        w.sync().map_err(|e| Error::io(dst, e))
    })();
    if r.is_err() {
        drop(w);
        let _ = fs.remove(dst);
    }
    r
}
