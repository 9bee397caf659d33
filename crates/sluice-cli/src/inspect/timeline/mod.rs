//! The LSM's history replayed from a MANIFEST: every version edit from the first, what each
//! did to the levels, and the series a reader of the history wants plotted (read
//! amplification, bytes per level, L0 files and sublevels, bytes written by flushes,
//! compactions and ingests). `sluice lsm --json` prints it; `sluice lsm --html` embeds it in a
//! page that replays it in the browser ([`html`]).
//!
//! Two readers produce the same neutral [`Edit`]s: [`sluice_manifest`] (Sluice's MANIFEST,
//! through the engine's own `VersionEdit` decoder) and [`rocksdb_manifest`] (RocksDB's, read
//! here tag by tag). [`replay`] then applies them in order, steps:
//! 1. check each deletion names a file of that level (else a corruption naming the
//!    MANIFEST and the edit's offset);
//! 2. classify the edit ([`classify`]: pure, from its shape) and each added file's arrival;
//! 3. update the levels, and L0's sublevels with the engine's own
//!    `L0Sublevels` (a file's sublevel is 1 + the highest sublevel of any older L0 file it
//!    overlaps);
//! 4. append one point to every series.
//!
//! Invariants:
//! 1. One step per edit of the drawn column family, in MANIFEST order; step `i`'s series
//!    describe the version *after* edit `i`.
//! 2. Keys are positions: every boundary key ever seen, sorted bytewise, indexed from 0;
//!    files refer to keys by index, so the page maps key space to [0, 1] without comparing
//!    bytes.
//! 3. Nothing read from disk panics or sizes an allocation: the readers return
//!    `sluice::Error::Corruption` with file and offset.

#[doc(hidden)]
pub mod fuzz;
pub mod html;
pub mod keys;
pub mod options;
pub mod rocksdb_manifest;
pub mod sluice_manifest;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use sluice::version::l0_sublevels::L0Sublevels;
use sluice::version::{FileMeta, NUM_LEVELS};
use sluice::wal::log::LogReader;

/// Version of the JSON layout printed by `sluice lsm --json` (bumped on any change that
/// renames or removes a field).
pub const FORMAT: &str = "sluice-lsm-timeline/1";

/// Which engine wrote the MANIFEST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Sluice (its first record carries Sluice's format version tag).
    Sluice,
    /// RocksDB.
    RocksDb,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Sluice => "sluice",
            Source::RocksDb => "rocksdb",
        }
    }
}

/// One version edit, as both readers give it.
#[derive(Debug, Clone, Default)]
pub struct Edit {
    /// Offset of the record in the MANIFEST.
    pub offset: u64,
    /// Part of the state dump a MANIFEST starts with (Sluice's format record; RocksDB's
    /// per-column-family dump written when it starts a MANIFEST): files present, not new work.
    pub snapshot: bool,
    /// WAL number the edit advances to (RocksDB and Sluice flushes set it).
    pub log_number: Option<u64>,
    /// The edit records a flushed seqno (Sluice flushes).
    pub flushed: bool,
    /// Last sequence number after the edit.
    pub last_sequence: Option<u64>,
    /// Files removed: (level, number).
    pub deleted: Vec<(usize, u64)>,
    /// Files added: (level, meta with internal keys).
    pub added: Vec<(usize, Arc<FileMeta>)>,
    /// What else the edit recorded that is worth a line in its details (RocksDB: column
    /// family added or dropped, compaction cursors, WAL records, ...).
    pub notes: Vec<String>,
}

/// How an edit changed the LSM, inferred from its shape ([`classify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A MANIFEST's opening state: files already there.
    Snapshot,
    /// Memtable (or WAL) flushed to L0: files added, the log number or flushed seqno advanced.
    Flush,
    /// A flush of a Sluice *flushable ingest*: its files were ingested (global seqno set).
    FlushableIngest,
    /// External files added without a flush's log advance.
    Ingest,
    /// Files rewritten: some deleted, new ones added (or none: everything dropped).
    Compaction,
    /// Files moved down unchanged: every deleted number added again one level (or more) down.
    Move,
    /// No file changed (log numbers, column family bookkeeping, ...).
    Other,
}

impl Kind {
    /// The name used in the JSON and the page.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Snapshot => "snapshot",
            Kind::Flush => "flush",
            Kind::FlushableIngest => "flushable_ingest",
            Kind::Ingest => "ingest",
            Kind::Compaction => "compaction",
            Kind::Move => "move",
            Kind::Other => "other",
        }
    }
}

/// The kind of `e` from its shape (nothing records it): a snapshot is marked by its reader;
/// deletions whose numbers all come back in the same edit are a trivial move, other deletions
/// a compaction; added files with a log or flushed-seqno advance a flush (a flushable ingest
/// when every file carries a global seqno, as only ingested files do); other additions an
/// ingest.
pub fn classify(e: &Edit) -> Kind {
    if e.snapshot {
        return Kind::Snapshot;
    }
    if !e.deleted.is_empty() {
        let moved = e
            .deleted
            .iter()
            .all(|(_, n)| e.added.iter().any(|(_, f)| f.number == *n));
        return if moved && e.added.len() == e.deleted.len() {
            Kind::Move
        } else {
            Kind::Compaction
        };
    }
    if e.added.is_empty() {
        return Kind::Other;
    }
    if e.flushed || e.log_number.is_some() {
        if e.added.iter().all(|(_, f)| f.global_seqno != 0) {
            Kind::FlushableIngest
        } else {
            Kind::Flush
        }
    } else {
        Kind::Ingest
    }
}

/// A setting of the OPTIONS file: (section, key, value).
pub type Setting = (String, String, String);

/// Where a torn tail ends a MANIFEST: (offset, reason).
pub type TornTail = (u64, String);

/// What the replay knows about the Db beside its edits.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The MANIFEST's file name.
    pub manifest: String,
    /// Column families: (id, name, edits seen); the drawn one is id 0.
    pub column_families: Vec<(u32, String, u64)>,
    /// Settings from the OPTIONS file: (section, key, value).
    pub options: Vec<Setting>,
    /// The OPTIONS file's name, if one was read.
    pub options_file: Option<String>,
    /// Where a torn tail ends the MANIFEST: (offset, reason).
    pub torn_tail: Option<TornTail>,
}

/// One file of the history (a number may appear once: a moved file keeps its entry).
#[derive(Debug, Clone)]
pub struct FileRec {
    /// The file's metadata as first added.
    pub meta: Arc<FileMeta>,
    /// Index of its smallest and largest user key in [`Timeline::keys`].
    pub lo: usize,
    /// See `lo`.
    pub hi: usize,
    /// How it arrived (the kind of the edit that first added it).
    pub kind: Kind,
    /// Step of that edit.
    pub step: usize,
    /// Small in bytes but wide in key span ([`flag_wide_files`]).
    pub wide: bool,
}

/// One replayed step.
#[derive(Debug, Clone)]
pub struct Step {
    /// The edit.
    pub edit: Edit,
    /// Its kind.
    pub kind: Kind,
    /// Added files: (level, index in [`Timeline::files`], L0 sublevel after the edit).
    pub added: Vec<(usize, usize, Option<usize>)>,
    /// Deleted files: (level, index in [`Timeline::files`]).
    pub deleted: Vec<(usize, usize)>,
    /// Bytes of the deleted files that did not come back (compaction input).
    pub bytes_in: u64,
    /// Bytes of the added files that were not there before.
    pub bytes_out: u64,
}

/// Values of the series after one step.
#[derive(Debug, Clone, Copy, Default)]
pub struct Point {
    /// L0 sublevels + non-empty levels below L0.
    pub read_amp: usize,
    /// L0 files.
    pub l0_files: usize,
    /// L0 sublevels.
    pub l0_sublevels: usize,
    /// Bytes per level.
    pub level_bytes: [u64; NUM_LEVELS],
    /// Cumulative bytes written by flushes (a flushable ingest's flush counts as ingest).
    pub flush_written: u64,
    /// Cumulative bytes written by compactions.
    pub compaction_written: u64,
    /// Cumulative bytes added by ingests.
    pub ingest_written: u64,
}

/// The replayed history.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Which engine wrote the MANIFEST.
    pub source: Source,
    /// Context: MANIFEST name, column families, options.
    pub context: Context,
    /// Every boundary user key ever seen, sorted bytewise (invariant 2).
    pub keys: Vec<Vec<u8>>,
    /// Every file of the history.
    pub files: Vec<FileRec>,
    /// One step per edit.
    pub steps: Vec<Step>,
    /// The series, one point per step.
    pub points: Vec<Point>,
}

/// Replays `edits` (of one column family, in order) into a [`Timeline`]; `manifest` names the
/// file in errors. A file whose key range is inverted is corruption (its keys index the page's
/// key space: invariant 2).
pub fn replay(
    source: Source,
    context: Context,
    edits: Vec<Edit>,
    manifest: &Path,
) -> Result<Timeline, sluice::Error> {
    let mut levels: Vec<BTreeMap<u64, usize>> = vec![BTreeMap::new(); NUM_LEVELS];
    let mut by_number: HashMap<u64, usize> = HashMap::new();
    let mut files: Vec<FileRec> = Vec::new();
    let mut steps = Vec::with_capacity(edits.len());
    let mut points = Vec::with_capacity(edits.len());
    let mut p = Point::default();
    let mut l0_sublevels: Option<L0Sublevels> = None;
    for (step, e) in edits.into_iter().enumerate() {
        let kind = classify(&e);
        let mut deleted = Vec::with_capacity(e.deleted.len());
        let mut bytes_in = 0;
        for &(level, number) in &e.deleted {
            let Some(fi) = levels[level].remove(&number) else {
                return Err(sluice::Error::corruption(
                    manifest,
                    e.offset,
                    format!("edit deletes file {number}, which is not in L{level}"),
                ));
            };
            if !e.added.iter().any(|(_, f)| f.number == number) {
                bytes_in += files[fi].meta.size;
            }
            p.level_bytes[level] -= files[fi].meta.size;
            deleted.push((level, fi));
        }
        let mut added = Vec::with_capacity(e.added.len());
        let mut bytes_out = 0;
        for (level, f) in &e.added {
            if f.smallest_user() > f.largest_user() {
                return Err(sluice::Error::corruption(
                    manifest,
                    e.offset,
                    format!(
                        "edit adds file {} whose smallest key is above its largest",
                        f.number
                    ),
                ));
            }
            let moved = e.deleted.iter().any(|(_, n)| *n == f.number);
            let fi = match by_number.get(&f.number) {
                Some(&fi) if moved => fi,
                _ => {
                    bytes_out += f.size;
                    files.push(FileRec {
                        meta: Arc::clone(f),
                        lo: 0,
                        hi: 0,
                        kind: if moved { Kind::Move } else { kind },
                        step,
                        wide: false,
                    });
                    by_number.insert(f.number, files.len() - 1);
                    files.len() - 1
                }
            };
            if levels[*level].insert(f.number, fi).is_some() {
                return Err(sluice::Error::corruption(
                    manifest,
                    e.offset,
                    format!("edit adds file {} to L{level} twice", f.number),
                ));
            }
            p.level_bytes[*level] += f.size;
            added.push((*level, fi, None));
        }
        let l0_changed =
            e.added.iter().any(|(l, _)| *l == 0) || e.deleted.iter().any(|(l, _)| *l == 0);
        if l0_changed {
            let l0: Vec<Arc<FileMeta>> = levels[0]
                .values()
                .map(|&fi| Arc::clone(&files[fi].meta))
                .collect();
            l0_sublevels = Some(L0Sublevels::new(&l0));
        }
        let subs = l0_sublevels.as_ref();
        for a in added.iter_mut().filter(|a| a.0 == 0) {
            a.2 = subs
                .and_then(|s| s.place_of(files[a.1].meta.number))
                .map(|pl| pl.sublevel);
        }
        match kind {
            Kind::Flush => p.flush_written += bytes_out,
            Kind::Compaction => p.compaction_written += bytes_out,
            Kind::Ingest | Kind::FlushableIngest => p.ingest_written += bytes_out,
            Kind::Snapshot | Kind::Move | Kind::Other => {}
        }
        p.l0_files = levels[0].len();
        p.l0_sublevels = subs.map_or(0, |s| s.sublevel_count());
        p.read_amp = p.l0_sublevels + levels[1..].iter().filter(|l| !l.is_empty()).count();
        points.push(p);
        steps.push(Step {
            edit: e,
            kind,
            added,
            deleted,
            bytes_in,
            bytes_out,
        });
    }
    let keys = index_keys(&mut files);
    flag_wide_files(&mut files, keys.len());
    Ok(Timeline {
        source,
        context,
        keys,
        files,
        steps,
        points,
    })
}

/// Sorts every boundary key, sets each file's `lo`/`hi` to its keys' indexes (invariant 2).
fn index_keys(files: &mut [FileRec]) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = files
        .iter()
        .flat_map(|f| {
            [
                f.meta.smallest_user().to_vec(),
                f.meta.largest_user().to_vec(),
            ]
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let at = |k: &[u8]| keys.binary_search_by(|x| x.as_slice().cmp(k)).unwrap_or(0);
    for f in files.iter_mut() {
        f.lo = at(f.meta.smallest_user());
        f.hi = at(f.meta.largest_user());
    }
    keys
}

/// Flags the files CockroachDB's spiral starts from: a key span covering at least a quarter of
/// every key position ever seen, and at most a quarter of the median file size. (With fewer
/// than 8 key positions nothing is wide: there is no key space to be wide in.)
pub fn flag_wide_files(files: &mut [FileRec], key_count: usize) {
    if key_count < 8 || files.is_empty() {
        return;
    }
    let mut sizes: Vec<u64> = files.iter().map(|f| f.meta.size).collect();
    sizes.sort_unstable();
    let median = sizes[sizes.len() / 2];
    let positions = (key_count - 1) as f64;
    for f in files.iter_mut() {
        let span = (f.hi - f.lo) as f64 / positions;
        f.wide = span >= 0.25 && f.meta.size.saturating_mul(4) <= median;
    }
}

/// Writes the timeline as JSON: one object, each element of `files`, `steps` and the series on
/// a line of its own (a 100,000-edit history stays diffable and streams without building a
/// tree of it). `key_names` are the keys as shown (decoded or escaped).
pub fn write_json(
    t: &Timeline,
    key_names: &[String],
    key_decoding: &serde_json::Value,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let c = &t.context;
    writeln!(out, "{{\"format\": {},", json!(FORMAT))?;
    writeln!(out, "\"source\": {},", json!(t.source.name()))?;
    writeln!(out, "\"manifest\": {},", json!(c.manifest))?;
    let cfs: Vec<_> = c
        .column_families
        .iter()
        .map(|(id, name, n)| json!({"id": id, "name": name, "edits": n, "drawn": *id == 0}))
        .collect();
    writeln!(out, "\"column_families\": {},", json!(cfs))?;
    let opts: Vec<_> = c.options.iter().map(|(s, k, v)| json!([s, k, v])).collect();
    writeln!(
        out,
        "\"options\": {},",
        json!({"file": c.options_file, "settings": opts})
    )?;
    if let Some((off, why)) = &c.torn_tail {
        writeln!(
            out,
            "\"torn_tail\": {},",
            json!({"offset": off, "reason": why})
        )?;
    }
    writeln!(out, "\"key_decoding\": {key_decoding},")?;
    write_lines(out, "keys", key_names.iter().map(|k| json!(k)))?;
    write_lines(out, "files", t.files.iter().map(file_json))?;
    write_lines(out, "edits", t.steps.iter().map(step_json))?;
    writeln!(out, "\"series\": {{")?;
    let col = |f: fn(&Point) -> u64| -> serde_json::Value {
        t.points.iter().map(f).collect::<Vec<u64>>().into()
    };
    writeln!(out, "\"read_amp\": {},", col(|p| p.read_amp as u64))?;
    writeln!(out, "\"l0_files\": {},", col(|p| p.l0_files as u64))?;
    writeln!(out, "\"l0_sublevels\": {},", col(|p| p.l0_sublevels as u64))?;
    writeln!(out, "\"flush_written\": {},", col(|p| p.flush_written))?;
    writeln!(
        out,
        "\"compaction_written\": {},",
        col(|p| p.compaction_written)
    )?;
    writeln!(out, "\"ingest_written\": {},", col(|p| p.ingest_written))?;
    writeln!(out, "\"level_bytes\": [")?;
    for l in 0..NUM_LEVELS {
        let sep = if l + 1 < NUM_LEVELS { "," } else { "" };
        let v: Vec<u64> = t.points.iter().map(|p| p.level_bytes[l]).collect();
        writeln!(out, "{}{sep}", json!(v))?;
    }
    writeln!(out, "]}}}}")
}

/// `"name": [` then one element per line, then `],`.
fn write_lines(
    out: &mut dyn Write,
    name: &str,
    items: impl Iterator<Item = serde_json::Value>,
) -> std::io::Result<()> {
    writeln!(out, "{}: [", json!(name))?;
    let mut first = true;
    for v in items {
        if !first {
            writeln!(out, ",")?;
        }
        first = false;
        write!(out, "{v}")?;
    }
    writeln!(out, "\n],")
}

fn file_json(f: &FileRec) -> serde_json::Value {
    let m = &f.meta;
    let mut v = json!({
        "number": m.number, "size": m.size, "lo": f.lo, "hi": f.hi,
        "seqnos": [m.smallest_seqno, m.largest_seqno], "kind": f.kind.name(), "edit": f.step,
    });
    if m.largest_is_exclusive() {
        v["hi_exclusive"] = true.into();
    }
    if m.global_seqno != 0 {
        v["global_seqno"] = m.global_seqno.into();
    }
    if f.wide {
        v["wide"] = true.into();
    }
    v
}

fn step_json(s: &Step) -> serde_json::Value {
    let e = &s.edit;
    let mut v = json!({
        "offset": e.offset, "kind": s.kind.name(),
        "added": s.added.iter().map(|(l, fi, sub)| match sub {
            Some(sub) => json!([l, fi, sub]),
            None => json!([l, fi]),
        }).collect::<Vec<_>>(),
        "deleted": s.deleted.iter().map(|(l, fi)| json!([l, fi])).collect::<Vec<_>>(),
        "bytes_in": s.bytes_in, "bytes_out": s.bytes_out,
    });
    if let Some(x) = e.last_sequence {
        v["last_sequence"] = x.into();
    }
    if let Some(x) = e.log_number {
        v["log_number"] = x.into();
    }
    if !e.notes.is_empty() {
        v["notes"] = e.notes.clone().into();
    }
    v
}

/// Everything `sluice lsm --json/--html` shows: the replayed history of the Db in `dir` (a
/// Sluice or a RocksDB Db, told apart by its MANIFEST's first record), its keys as shown, and
/// how they were decoded.
pub struct Loaded {
    /// The replay.
    pub timeline: Timeline,
    /// `timeline.keys` as shown.
    pub key_names: Vec<String>,
    /// How the keys were shown (`{"mode": "catalog"|"escaped", ...}`).
    pub key_decoding: serde_json::Value,
}

/// Reads and replays the MANIFEST that `dir`'s `CURRENT` names (read-only).
pub fn load(dir: &Path) -> Result<Loaded, Box<dyn std::error::Error>> {
    if !dir.join("CURRENT").is_file() {
        crate::db_dir::check_db_dir(dir, false)?;
        return Err(format!("--db {}: no CURRENT file", dir.display()).into());
    }
    let (path, data) = super::read_manifest(dir)?;
    let sluice_db = manifest_is_sluice(&path, &data)?;
    let mut context = Context {
        manifest: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        ..Context::default()
    };
    if let Some((file, settings)) = options::read(dir, sluice_db) {
        context.options_file = Some(file);
        context.options = settings;
    }
    let source = if sluice_db {
        Source::Sluice
    } else {
        Source::RocksDb
    };
    let edits = read_history(source, &path, &data, &mut context)?;
    let tables = match source {
        Source::Sluice => keys::load_catalog(dir),
        Source::RocksDb => Err("a RocksDB Db has no Sluice import catalog".to_string()),
    };
    let timeline = replay(source, context, edits, &path)?;
    let (key_names, key_decoding) = keys::names(&timeline.keys, tables);
    Ok(Loaded {
        timeline,
        key_names,
        key_decoding,
    })
}

/// The edits of the MANIFEST at `path` (bytes `data`), read as `source` writes them; fills
/// `context`'s torn tail and column families.
pub fn read_history(
    source: Source,
    path: &Path,
    data: &[u8],
    context: &mut Context,
) -> Result<Vec<Edit>, sluice::Error> {
    Ok(match source {
        Source::Sluice => {
            let (edits, torn) = sluice_manifest::read_edits(path, data)?;
            context.torn_tail = torn;
            context.column_families = vec![(0, "default".into(), edits.len() as u64)];
            edits
        }
        Source::RocksDb => {
            let h = rocksdb_manifest::read_edits(path, data)?;
            context.torn_tail = h.torn_tail;
            context.column_families = h.column_families;
            h.edits
        }
    })
}

/// True if the MANIFEST at `path` (bytes `data`) was written by Sluice, false for RocksDB's.
pub fn manifest_is_sluice(path: &Path, data: &[u8]) -> Result<bool, sluice::Error> {
    let first = LogReader::new(data, path)
        .next_record()?
        .ok_or_else(|| sluice::Error::corruption(path, 0, "the MANIFEST holds no record"))?;
    Ok(sluice_manifest::is_sluice_manifest(&first.1))
}

/// True if `dir` holds a Db whose MANIFEST RocksDB wrote (false when unsure: the caller's own
/// open then says what is wrong).
pub fn is_rocksdb(dir: &Path) -> bool {
    super::read_manifest(dir)
        .ok()
        .and_then(|(path, data)| manifest_is_sluice(&path, &data).ok())
        == Some(false)
}
