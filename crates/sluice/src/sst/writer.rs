//! [`SstWriter`]: builds an external SST file from strictly increasing user keys, the
//! counterpart of RocksDB's `SstFileWriter`. Every entry gets seqno 0; the file carries the
//! `rocksdb.external_sst_file.*` properties so RocksDB and Sluice can ingest it.
//!
//! Lifecycle: [`SstWriter::create`] → `put`/`delete`… → [`SstWriter::finish`] (consumes the
//! writer, fsyncs the file). The file is written under a temporary name beside the target and
//! renamed over it only by a successful `finish`: a writer dropped before `finish`, or one whose
//! `finish` fails, deletes its partial file and leaves whatever was at the target untouched.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::base::error::{Error, Result};
use crate::base::key::{append_internal_key, ValueKind};
use crate::fs::{FileWrites, SyncingFile};
use crate::sst::properties::TableProperties;
use crate::sst::table_builder::{TableBuilder, TableIdentity, TableOptions};

/// Buffer between the table builder and the file: large writes, few syscalls.
const WRITE_BUFFER: usize = 1 << 20;

/// What [`SstWriter::finish`] reports about the file it wrote.
#[derive(Debug, Clone)]
pub struct SstFileInfo {
    /// Where the file is.
    pub path: PathBuf,
    /// Smallest user key.
    pub smallest_key: Vec<u8>,
    /// Largest user key.
    pub largest_key: Vec<u8>,
    /// Number of entries (puts and deletes).
    pub entries: u64,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// The table properties written.
    pub properties: TableProperties,
}

/// Writes one external SST file.
pub struct SstWriter {
    builder: Option<TableBuilder<BufWriter<SyncingFile>>>,
    /// The target path.
    path: PathBuf,
    /// Where the file is written until `finish` renames it to `path`.
    tmp: PathBuf,
    /// The last user key, set by `finish` (the builder holds it until then).
    last_user_key: Vec<u8>,
    smallest: Vec<u8>,
    key_buf: Vec<u8>,
    entries: u64,
    /// Range deletions added (a file holding only those is not empty).
    range_deletions: u64,
}

impl std::fmt::Debug for SstWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstWriter")
            .field("path", &self.path)
            .field("entries", &self.entries)
            .finish()
    }
}

impl SstWriter {
    /// Starts the file that [`finish`](Self::finish) will put at `path` (replacing a file
    /// there only then).
    pub fn create(path: impl AsRef<Path>, opts: TableOptions) -> Result<SstWriter> {
        Self::create_buffered(path, opts, WRITE_BUFFER)
    }

    /// [`create`](Self::create) with a write buffer of `write_buffer` bytes instead of 1 MiB
    /// (for a caller keeping many writers open at once).
    pub fn create_buffered(
        path: impl AsRef<Path>,
        opts: TableOptions,
        write_buffer: usize,
    ) -> Result<SstWriter> {
        Self::create_with(path, opts, write_buffer, FileWrites::default())
    }

    /// [`create_buffered`](Self::create_buffered) writing the file as `writes` says (its
    /// writeback, and a rate shared with other writers).
    pub fn create_with(
        path: impl AsRef<Path>,
        opts: TableOptions,
        write_buffer: usize,
        writes: FileWrites,
    ) -> Result<SstWriter> {
        let path = path.as_ref().to_path_buf();
        opts.validate()?;
        let tmp = tmp_name(&path);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Error::io(&path, e))?;
        let identity = TableIdentity {
            external_sst: true,
            db_id: "SST Writer".into(),
            db_session_id: session_id(),
        };
        let file = SyncingFile::with_writes(file, writes);
        #[cfg(feature = "failpoints")]
        let file = file.with_fault_path(tmp.clone());
        let builder = match TableBuilder::new(
            BufWriter::with_capacity(write_buffer.max(4096), file),
            opts,
            identity,
        ) {
            Ok(b) => b,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        Ok(SstWriter {
            builder: Some(builder),
            path,
            tmp,
            last_user_key: Vec::new(),
            smallest: Vec::new(),
            key_buf: Vec::with_capacity(64),
            entries: 0,
            range_deletions: 0,
        })
    }

    /// Adds `key → value`. `key` must sort strictly after every key added before.
    #[inline]
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add(key, value, ValueKind::Value)
    }

    /// Adds a deletion of `key`. `key` must sort strictly after every key added before.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.add(key, &[], ValueKind::Deletion)
    }

    /// Adds a deletion of every key in `[start, end)` (RocksDB's `SstFileWriter::DeleteRange`):
    /// once ingested it hides the older values of those keys. Range deletions may come in any
    /// order, before, between or after the points; a file may hold only range deletions. They
    /// do not count in [`SstFileInfo::entries`] nor widen its smallest and largest key (the
    /// points'); the ingest reads their span from the file.
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) -> Result<()> {
        let Some(builder) = self.builder.as_mut() else {
            return Err(Error::InvalidArgument("SstWriter already failed".into()));
        };
        builder
            .add_range_deletion(start, end, 0)
            .map_err(|e| naming(e, &self.path))?;
        self.range_deletions += 1;
        Ok(())
    }

    #[inline]
    fn add(&mut self, key: &[u8], value: &[u8], kind: ValueKind) -> Result<()> {
        let Some(builder) = self.builder.as_mut() else {
            return Err(Error::InvalidArgument("SstWriter already failed".into()));
        };
        // The builder's last internal key holds the last user key: no copy of our own.
        let last = crate::base::key::user_key(builder.last_key());
        if self.entries > 0 && key <= last {
            return Err(Error::KeyOrder {
                previous: last.to_vec(),
                key: key.to_vec(),
            });
        }
        self.key_buf.clear();
        append_internal_key(&mut self.key_buf, key, 0, kind as u8);
        // The user-key check above implies the internal-key order the builder would check.
        if let Err(e) = builder.add_ordered(&self.key_buf, value) {
            // Sticky: the builder may have taken the entry before failing, and a retry would
            // slip past the order check (it reads `entries`); the partial file goes.
            self.builder = None;
            let _ = std::fs::remove_file(&self.tmp);
            return Err(naming(e, &self.path));
        }
        if self.entries == 0 {
            self.smallest = key.to_vec();
        }
        self.entries += 1;
        Ok(())
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Bytes written so far (a lower bound of the final size).
    pub fn estimated_file_size(&self) -> u64 {
        self.builder.as_ref().map_or(0, |b| b.estimated_file_size())
    }

    /// Writes the meta blocks and footer, fsyncs, and returns what was written. A file without
    /// entries is an error (RocksDB refuses to ingest one) and is deleted.
    pub fn finish(mut self) -> Result<SstFileInfo> {
        let Some(builder) = self.builder.take() else {
            return Err(Error::InvalidArgument("SstWriter already failed".into()));
        };
        self.last_user_key = crate::base::key::user_key(builder.last_key()).to_vec();
        if self.entries == 0 && self.range_deletions == 0 {
            let _ = std::fs::remove_file(&self.tmp);
            return Err(Error::InvalidArgument(
                "cannot finish an SST file with no entries".into(),
            ));
        }
        let result = (|| -> Result<SstFileInfo> {
            let (w, properties) = builder.finish().map_err(|e| naming(e, &self.path))?;
            let mut file = w
                .into_inner()
                .map_err(|e| Error::io(&self.path, e.into_error()))?;
            file.sync_all().map_err(|e| Error::io(&self.path, e))?;
            let file_size = file
                .file()
                .metadata()
                .map_err(|e| Error::io(&self.path, e))?
                .len();
            drop(file);
            std::fs::rename(&self.tmp, &self.path).map_err(|e| Error::io(&self.path, e))?;
            if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
                File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| Error::io(dir, e))?;
            }
            Ok(SstFileInfo {
                path: self.path.clone(),
                smallest_key: std::mem::take(&mut self.smallest),
                largest_key: std::mem::take(&mut self.last_user_key),
                entries: self.entries,
                file_size,
                properties,
            })
        })();
        match result {
            Ok(info) => {
                self.entries = u64::MAX; // finished: Drop keeps the file
                Ok(info)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&self.tmp);
                self.entries = u64::MAX;
                Err(e)
            }
        }
    }
}

impl Drop for SstWriter {
    fn drop(&mut self) {
        if self.entries != u64::MAX {
            self.builder.take();
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// A temporary name beside `path`, unique within this process and across processes.
fn tmp_name(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}-{n}.sluice-tmp", std::process::id()))
}

/// A 20-character base-36 session id in RocksDB's style, from the clock and process id.
fn session_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut v = nanos ^ (u128::from(std::process::id()) << 64);
    const DIGITS: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut s = String::with_capacity(20);
    for _ in 0..20 {
        s.push(DIGITS[(v % 36) as usize] as char);
        v /= 36;
    }
    s
}

/// `e`, naming `path` if it is an I/O error that names no file (the table builder writes to a
/// `Write` and knows no path): a user must be told which file failed.
fn naming(e: Error, path: &Path) -> Error {
    match e {
        Error::Io { path: None, source } => Error::io(path, source),
        e => e,
    }
}
