//! The duplicate and unique policy, applied as the merge emits each key: `--on-duplicate`
//! for primary keys (input and stored rows), unique indexes, the secondary entries of dropped
//! and replaced rows, rejects and messages naming file and line.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use sluice::{Db, ReadOptions};

use crate::error::{OtherRow, RowPlace};
use crate::keycode::prefix_successor;
use crate::merge::FinalWriter;
use crate::parse::LINE_BITS;
use crate::pipeline::checkpoint::{load_policy, State};
use crate::pipeline::options::{ImportOptions, OnDuplicate};
use crate::pipeline::plan::Plan;
use crate::positions::StreamedPositions;
use crate::row::decode_row;
use crate::schema::{Layout, TableDef};
use crate::types::{format_text, ColumnType};
use crate::ImportError;

/// Shared state of the emit functions (duplicates, suppressions, rejects).
pub(crate) struct EmitCtx<'a> {
    pub(crate) db: &'a Db,
    pub(crate) table: &'a TableDef,
    pub(crate) opts: &'a ImportOptions,
    pub(crate) files: &'a [String],
    pub(crate) existing_rows: bool,
    /// Per secondary slot: keys to drop (count), from rows the primary index dropped.
    pub(crate) suppress: Vec<HashMap<Vec<u8>, u32>>,
    /// Per secondary slot: keys of replaced existing rows to delete. One entry more than the
    /// slots, last: the deletion marks of a columnar table's replaced rows (puts, not
    /// deletions; the merge writes them after the primary index, `Import::write_dead_marks`).
    /// Kept here, they are carried across checkpoints with the policy's other state.
    pub(crate) deletions: Vec<Vec<Vec<u8>>>,
    /// The deletions (sorted) of the secondary index being merged (taken out of `deletions`).
    pub(crate) merging_deletions: Arc<Vec<Vec<u8>>>,
    pub(crate) rejects: Option<std::io::BufWriter<RejectsFile>>,
    /// A parallel merge worker's rejects, replayed in key-range order by the caller.
    pub(crate) reject_log: Option<Vec<(ImportError, Vec<u8>)>>,
    pub(crate) rejected: u64,
    pub(crate) dropped: u64,
    pub(crate) rows: u64,
    /// Per slot: the last unique key written, the length of its unique prefix and its row's
    /// source position.
    pub(crate) last_unique: Vec<Option<(Vec<u8>, usize, u64)>>,
    /// Per slot: the positions of what it streamed before the input turned out unsorted.
    pub(crate) streamed: Vec<Option<Arc<StreamedPositions>>>,
}

/// The rejects file, with the CRC32C of every byte from its start (a checkpoint records it
/// with the length; a resume checks both).
pub(crate) struct RejectsFile {
    pub(crate) file: std::fs::File,
    pub(crate) crc: u32,
}

impl std::io::Write for RejectsFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// CRC32C of the first `len` bytes of the file at `p` (`None`: it holds fewer).
pub(crate) fn prefix_crc(p: &Path, len: u64) -> std::io::Result<Option<u32>> {
    use std::io::Read as _;
    let f = std::fs::File::open(p)?;
    if f.metadata()?.len() < len {
        return Ok(None);
    }
    let (mut r, mut crc, mut buf) = (f.take(len), 0u32, vec![0u8; 64 << 10]);
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok(Some(crc));
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
    }
}

/// Refuses a rejects file an import would destroy: it is created (emptied) when the import
/// starts, so it must be none of the `inputs` (the same file, whatever the path: a hard link,
/// a symbolic link) and lie nowhere inside the Db's directory `db_dir` (a table, `CURRENT`, a
/// checkpoint), also through a symbolic link, nor be a hard link to a file there; nor lie in an
/// import's temporary or checkpoint directory (removed when that import ends). A symbolic link
/// to nothing is refused (creating the rejects file would make its target).
pub fn check_rejects_path(
    rejects: &Path,
    inputs: &[std::path::PathBuf],
    db_dir: &Path,
) -> Result<(), ImportError> {
    let refuse = |reason: String| {
        Err(ImportError::InvalidOption {
            option: "rejects",
            reason,
        })
    };
    let shown = rejects.display();
    // Where the rejects file is (or will be): the path itself when it exists, symbolic links
    // followed; else its directory, followed, and its name.
    let target = match std::fs::canonicalize(rejects) {
        Ok(t) => Some(t),
        Err(_) if std::fs::symlink_metadata(rejects).is_ok() => {
            return refuse(format!("{shown} is a symbolic link to nothing"));
        }
        Err(_) => {
            let parent = match rejects.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            match (std::fs::canonicalize(parent), rejects.file_name()) {
                (Ok(p), Some(name)) => Some(p.join(name)),
                _ => None,
            }
        }
    };
    for input in inputs {
        if same_file(rejects, input) {
            return refuse(format!(
                "{shown} is an input of this import (the rejects file is emptied when it starts)"
            ));
        }
    }
    if let (Some(t), Ok(d)) = (&target, std::fs::canonicalize(db_dir)) {
        if t.starts_with(&d) {
            return refuse(format!(
                "{shown} is inside the database directory {}",
                db_dir.display()
            ));
        }
    }
    // An import's temporary or checkpoint directory is removed when that import ends.
    if let Some(t) = &target {
        let in_tmp = t.ancestors().skip(1).any(|a| {
            a.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with(crate::tmp_dirs::TMP_PREFIX)
                    || n.starts_with(crate::tmp_dirs::RESUME_PREFIX)
            })
        });
        if in_tmp {
            return refuse(format!(
                "{shown} is inside an import's temporary or checkpoint directory, which is \
                 removed when that import ends"
            ));
        }
    }
    // A hard link to a file of the Db (a checkpoint's table, say): emptying it would empty
    // the Db's file.
    if let Some(d) = db_linked_file(rejects, db_dir) {
        return refuse(format!(
            "{shown} is a hard link to {} of the database (the rejects file is emptied when \
             the import starts)",
            d.display()
        ));
    }
    Ok(())
}

/// The file of the Db's directory `db_dir` that `path` is another name of (checked only for a
/// file with more than one link).
fn db_linked_file(path: &Path, db_dir: &Path) -> Option<std::path::PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        if !m.is_file() || m.nlink() < 2 {
            return None;
        }
        std::fs::read_dir(db_dir).ok()?.flatten().find_map(|e| {
            let x = std::fs::symlink_metadata(e.path()).ok()?;
            (x.dev() == m.dev() && x.ino() == m.ino()).then(|| e.path())
        })
    }
    #[cfg(not(unix))]
    {
        let _ = (path, db_dir);
        None
    }
}

/// True if `a` and `b` are one existing file (device and inode; elsewhere, canonical paths).
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        matches!((std::fs::metadata(a), std::fs::metadata(b)),
            (Ok(x), Ok(y)) if x.dev() == y.dev() && x.ino() == y.ino())
    }
    #[cfg(not(unix))]
    {
        matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    }
}

/// The rejects file: created, or (resuming) cut back to the length the checkpoint recorded
/// and appended to; either way its directory entry is made durable, so a checkpoint counting
/// its synced bytes never outlives it.
fn open_rejects(p: &Path, resume_len: Option<u64>) -> Result<RejectsFile, ImportError> {
    let io = |e| ImportError::io(p, e);
    let (mut file, crc) = match resume_len {
        None => (std::fs::File::create(p).map_err(io)?, 0),
        Some(len) => {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(p)
                .map_err(io)?;
            // The resume checked the length (and the CRC, when recorded).
            let crc = prefix_crc(p, len).map_err(io)?.unwrap_or(0);
            f.set_len(len).map_err(io)?;
            (f, crc)
        }
    };
    std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).map_err(io)?;
    crate::durable::sync_parent(p)?;
    Ok(RejectsFile { file, crc })
}

impl<'a> EmitCtx<'a> {
    pub(crate) fn new(
        db: &'a Db,
        plan: &'a Plan,
        opts: &'a ImportOptions,
    ) -> Result<Self, ImportError> {
        let n = 1 + plan.table.indexes.len();
        let rejects = match &opts.rejects {
            Some(p) => Some(std::io::BufWriter::new(open_rejects(
                p,
                plan.resume.as_ref().map(|r| r.rejects_len),
            )?)),
            None => None,
        };
        Ok(EmitCtx {
            db,
            table: &plan.table,
            opts,
            files: &plan.file_names,
            existing_rows: plan.existing_rows,
            suppress: vec![HashMap::new(); n],
            deletions: vec![Vec::new(); n + 1],
            merging_deletions: Arc::default(),
            rejects,
            reject_log: None,
            rejected: 0,
            dropped: 0,
            rows: 0,
            last_unique: vec![None; n],
            streamed: vec![None; n],
        })
    }

    /// The counts and pending suppressions and deletions of the checkpoint `r` (in `dir`).
    pub(crate) fn restore(&mut self, dir: &Path, r: &State) -> Result<(), ImportError> {
        self.rows = r.rows;
        self.rejected = r.rejected;
        self.dropped = r.dropped;
        if r.last_unique.len() == self.last_unique.len() {
            self.last_unique = r.last_unique.clone();
        }
        for (slot, ck) in r.indexes.iter().enumerate() {
            if let (Some((samples, files)), Some(to)) = (&ck.positions, self.streamed.get_mut(slot))
            {
                let files = files.iter().map(|f| dir.join(f)).collect();
                let path = crate::pipeline::checkpoint::positions_path(dir, slot);
                let restored = StreamedPositions::restore(
                    path.clone(),
                    samples.clone(),
                    files,
                    ck.positions_file,
                )
                .map_err(|e| {
                    if crate::pipeline::checkpoint::damaged(&e) {
                        ImportError::CannotResume {
                            dir: dir.to_path_buf(),
                            reason: format!("{}: {e}", path.display()),
                        }
                    } else {
                        ImportError::io(&path, e)
                    }
                })?;
                *to = Some(Arc::new(restored));
            }
        }
        if let Some(p) = &r.policy {
            let (sup, mut del) = load_policy(dir, p)?;
            if del.len() == sup.len() {
                // Written before deletion marks were kept beside the slots.
                del.push(Vec::new());
            }
            if sup.len() != self.suppress.len() || del.len() != self.deletions.len() {
                return Err(ImportError::CannotResume {
                    dir: dir.to_path_buf(),
                    reason: format!("{} does not match the table's indexes", p.0),
                });
            }
            self.suppress = sup;
            self.deletions = del;
        }
        Ok(())
    }

    /// A parallel merge worker's copy (see [`Import::merge_parallel`]): the same counts to
    /// start from, `suppress` as index `slot`'s suppressions in its range, empty deletions,
    /// rejects logged for the caller instead of written.
    pub(crate) fn worker(&self, slot: usize, suppress: HashMap<Vec<u8>, u32>) -> EmitCtx<'a> {
        let n = self.suppress.len();
        let mut sup = vec![HashMap::new(); n];
        sup[slot] = suppress;
        EmitCtx {
            db: self.db,
            table: self.table,
            opts: self.opts,
            files: self.files,
            existing_rows: self.existing_rows,
            suppress: sup,
            deletions: vec![Vec::new(); n + 1],
            merging_deletions: Arc::clone(&self.merging_deletions),
            rejects: None,
            reject_log: Some(Vec::new()),
            rejected: self.rejected,
            dropped: 0,
            rows: self.rows,
            last_unique: vec![None; n],
            streamed: self.streamed.clone(),
        }
    }

    /// The stored row value of primary key `key` (columnar: assembled from its cells).
    pub(crate) fn existing_row(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ImportError> {
        let Some(v) = self.db.get(key)? else {
            return Ok(None);
        };
        let ropts = ReadOptions {
            snapshot: None,
            lower_bound: None,
            upper_bound: None,
            ..Default::default()
        };
        let vals = match self.table.layout {
            Layout::Row => return Ok(Some(v)),
            Layout::Cells => crate::query::columnar_row(self.db, self.table, key, &ropts)?,
            Layout::Columnar => crate::query::chunked_row(self.db, self.table, key, &v, &ropts)?,
        };
        let mut out = Vec::new();
        crate::row::encode_row(&mut out, self.table.version, &vals);
        Ok(Some(out))
    }

    /// A columnar table's stored row `key` is being replaced: its position in its row group
    /// gets a deletion mark, written with the import (the last entry of `deletions`).
    fn mark_replaced(&mut self, key: &[u8]) -> Result<(), ImportError> {
        let Some(v) = self.db.get(key)? else {
            return Ok(());
        };
        let k = crate::query::replaced_mark(self.table, key, &v)?;
        if let Some(marks) = self.deletions.last_mut() {
            marks.push(k);
        }
        Ok(())
    }

    /// Counts a bad row (`error`: a data error) and writes it to the rejects file; fails once
    /// more than `max_errors` were seen.
    pub(crate) fn reject(&mut self, error: ImportError, record: &[u8]) -> Result<(), ImportError> {
        self.rejected += 1;
        let over = self.rejected > self.opts.max_errors;
        if let Some(log) = self.reject_log.as_mut() {
            // A parallel merge worker: the caller replays the log in key-range order, and the
            // replay fails at this same row (its count is at least this worker's), so the
            // error returned here never reaches the user.
            let rec = if self.opts.rejects.is_some() {
                record.to_vec()
            } else {
                Vec::new()
            };
            log.push((error, rec));
            return if over {
                Err(ImportError::Internal(
                    "a merge worker passed max_errors".into(),
                ))
            } else {
                Ok(())
            };
        }
        if let Some(w) = self.rejects.as_mut() {
            let r = writeln!(w, "# {error}")
                .and_then(|_| w.write_all(record))
                .and_then(|_| w.write_all(b"\n"))
                // The row that fails the import is kept too, so the file names every row the
                // user has to mend (with `max_errors` 0, the one that failed).
                .and_then(|_| if over { w.flush() } else { Ok(()) });
            // Past the limit the import fails on the row whatever the write did: a full disk
            // here must not turn a data error into a resumable one.
            if !over {
                let shown = self.opts.rejects.as_deref().unwrap_or(Path::new("rejects"));
                r.map_err(|e| ImportError::io(shown, e))?;
            }
        }
        if over {
            return Err(if self.opts.max_errors == 0 {
                error
            } else {
                ImportError::TooManyErrors {
                    count: self.rejected,
                    last: Box::new(error),
                }
            });
        }
        Ok(())
    }

    /// The file and line of the entry `key` of index `slot` from source position `src`
    /// (`None`: a streamed row whose position is no longer known).
    pub(crate) fn place(&self, slot: usize, key: &[u8], src: u64) -> Option<RowPlace> {
        let src = if src == 0 {
            // A row streamed before the input turned out unsorted: its position was recorded
            // beside the streamed files.
            self.streamed[slot].as_ref().and_then(|p| p.lookup(key))?
        } else {
            src
        };
        let file = (src >> LINE_BITS) as usize;
        Some(RowPlace {
            file: self.files.get(file).map_or("?", |s| s.as_str()).to_string(),
            line: src & ((1 << LINE_BITS) - 1),
        })
    }

    /// [`EmitCtx::place`] of the row being refused (always an input row).
    fn refused_place(&self, slot: usize, key: &[u8], src: u64) -> RowPlace {
        self.place(slot, key, src).unwrap_or_else(|| RowPlace {
            file: "an earlier row of the input".into(),
            line: 0,
        })
    }

    /// `(v1, v2)` of a primary key.
    pub(crate) fn show_pk(&self, key: &[u8]) -> String {
        self.table.show_pk(key)
    }

    /// The row as a CSV record (for the rejects file).
    pub(crate) fn row_record(&self, value: &[u8]) -> Vec<u8> {
        row_record(self.table, value)
    }

    /// The secondary keys of a row (by slot), given its primary key.
    pub(crate) fn secondary_keys(&self, pk_key: &[u8], value: &[u8]) -> Vec<Vec<u8>> {
        secondary_keys(self.table, pk_key, value)
    }

    pub(crate) fn suppress_row(&mut self, key: &[u8], value: &[u8]) {
        for (n, k) in self.secondary_keys(key, value).into_iter().enumerate() {
            *self.suppress[n + 1].entry(k).or_insert(0) += 1;
        }
    }

    /// One primary key with its rows from the input (in input order).
    pub(crate) fn emit_primary(
        &mut self,
        w: &mut FinalWriter,
        key: &[u8],
        group: &[(u64, &[u8])],
    ) -> Result<(), ImportError> {
        let Some(first) = group.first() else {
            return Ok(());
        };
        let keep = match self.opts.on_duplicate {
            OnDuplicate::Error | OnDuplicate::First => 0,
            OnDuplicate::Last => group.len() - 1,
        };
        for (i, (src, value)) in group.iter().enumerate() {
            if i == keep {
                continue;
            }
            self.suppress_row(key, value);
            self.rows -= 1;
            if self.opts.on_duplicate == OnDuplicate::Error {
                let err = ImportError::DuplicateKey {
                    place: self.refused_place(0, key, *src),
                    key: self.show_pk(key),
                    other: OtherRow::Input(self.place(0, key, first.0)),
                };
                let rec = self.row_record(value);
                self.reject(err, &rec)?;
            } else {
                self.dropped += 1;
            }
        }
        let (src, value) = &group[keep];
        // src 0: a streamed row merged again, already checked against the table.
        if self.existing_rows && *src != 0 {
            if let Some(old) = self.existing_row(key)? {
                match self.opts.on_duplicate {
                    OnDuplicate::Error => {
                        self.suppress_row(key, value);
                        self.rows -= 1;
                        let err = ImportError::DuplicateKey {
                            place: self.refused_place(0, key, *src),
                            key: self.show_pk(key),
                            other: OtherRow::Stored(self.table.name.clone()),
                        };
                        let rec = self.row_record(value);
                        return self.reject(err, &rec);
                    }
                    OnDuplicate::First => {
                        self.suppress_row(key, value);
                        self.rows -= 1;
                        self.dropped += 1;
                        return Ok(());
                    }
                    OnDuplicate::Last => {
                        if self.table.layout == Layout::Columnar {
                            self.mark_replaced(key)?;
                        }
                        let new_keys = self.secondary_keys(key, value);
                        for (n, k) in self.secondary_keys(key, &old).into_iter().enumerate() {
                            if new_keys.get(n) != Some(&k) {
                                self.deletions[n + 1].push(k);
                            }
                        }
                        self.dropped += 1;
                    }
                }
            }
        }
        w.put_from(key, value, *src)?;
        Ok(())
    }

    /// Length of the unique part (prefix + index columns) of a secondary key, or `None` when
    /// one of those columns is NULL (exempt from uniqueness).
    pub(crate) fn unique_prefix<'k>(&self, slot: usize, key: &'k [u8]) -> Option<&'k [u8]> {
        self.table.unique_prefix(slot, key)
    }

    /// One secondary key: the rows at `srcs` carry it; `deletion`: an existing row did.
    pub(crate) fn emit_secondary(
        &mut self,
        w: &mut FinalWriter,
        slot: usize,
        unique: Option<usize>,
        key: &[u8],
        srcs: &[u64],
        deletion: bool,
    ) -> Result<(), ImportError> {
        let mut count = srcs.len() as u32;
        if let Some(s) = self.suppress[slot].get_mut(key) {
            let take = (*s).min(count);
            *s -= take;
            count -= take;
            if *s == 0 {
                self.suppress[slot].remove(key);
            }
        }
        if count == 0 {
            if deletion {
                w.delete(key)?;
            }
            return Ok(());
        }
        if unique.is_some() {
            if let Some(p) = self.unique_prefix(slot, key) {
                let idx_name = &self.table.indexes[slot - 1].name;
                let src = srcs.last().copied().unwrap_or(0);
                if let Some((last, last_len, last_src)) = &self.last_unique[slot] {
                    if &last[..*last_len] == p {
                        return Err(ImportError::UniqueViolation {
                            place: self.refused_place(slot, key, src),
                            index: idx_name.clone(),
                            value: self.show_unique_value(slot, p),
                            other: OtherRow::Input(self.place(slot, last, *last_src)),
                        });
                    }
                }
                if self.existing_rows {
                    self.check_unique_existing(slot, p, key, src)?;
                }
                self.last_unique[slot] = Some((key.to_vec(), p.len(), src));
            }
        }
        w.put_from(key, &[], srcs.last().copied().unwrap_or(0))?;
        Ok(())
    }

    pub(crate) fn show_pk_of_secondary(&self, key: &[u8], prefix_len: usize) -> String {
        self.table.show_pk_of_secondary(key, prefix_len)
    }

    /// `column email: "a@x"` (or `columns (a, b): ("x", "y")`) of a unique prefix.
    pub(crate) fn show_unique_value(&self, slot: usize, p: &[u8]) -> String {
        self.table.show_unique_value(slot, p)
    }

    pub(crate) fn check_unique_existing(
        &self,
        slot: usize,
        p: &[u8],
        key: &[u8],
        src: u64,
    ) -> Result<(), ImportError> {
        let mut it = self.db.iter(ReadOptions {
            snapshot: None,
            lower_bound: Some(p.to_vec()),
            upper_bound: prefix_successor(p),
            ..Default::default()
        })?;
        it.seek_to_first();
        while it.valid() {
            let k = it.key();
            // An entry this import deletes (a replaced row's old value) is not a conflict.
            if k != key
                && self
                    .merging_deletions
                    .binary_search_by(|d| d.as_slice().cmp(k))
                    .is_err()
            {
                return Err(ImportError::UniqueViolation {
                    place: self.refused_place(slot, key, src),
                    index: self.table.indexes[slot - 1].name.clone(),
                    value: self.show_unique_value(slot, p),
                    other: OtherRow::Stored(self.show_pk_of_secondary(k, p.len())),
                });
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }
}

/// A stored row value as a CSV record of its visible columns (for the rejects file).
pub(crate) fn row_record(table: &TableDef, value: &[u8]) -> Vec<u8> {
    let Ok(vals) = decode_row(value, &column_types(table)) else {
        return Vec::new();
    };
    let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
    let fields: Vec<String> = table
        .visible_columns()
        .map(|(i, c)| {
            let mut s = String::new();
            format_text(&vals[i], &c.ty, &mut s);
            s
        })
        .collect();
    let _ = w.write_record(&fields);
    let mut out = w.into_inner().unwrap_or_default();
    while out.last() == Some(&b'\n') {
        out.pop();
    }
    out
}

/// The secondary keys of a stored row (by index, in schema order), given its primary key.
pub(crate) fn secondary_keys(table: &TableDef, pk_key: &[u8], value: &[u8]) -> Vec<Vec<u8>> {
    match decode_row(value, &column_types(table)) {
        Ok(vals) => crate::query::index_keys(table, pk_key, &vals),
        Err(_) => Vec::new(),
    }
}

fn column_types(table: &TableDef) -> Vec<ColumnType> {
    table.columns.iter().map(|c| c.ty).collect()
}
