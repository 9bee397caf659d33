//! Events: what the Db's background work and write path did, reported to the
//! [`EventListener`]s registered in [`Options::listeners`](crate::Options::listeners).
//!
//! How events travel (`dispatch.rs`): the code that sees an event only *enqueues* it — a
//! `VecDeque` push under a leaf mutex, never a listener call — and one dispatcher thread per
//! Db (`sluice-events`) calls the listeners. A slow listener therefore never holds a lock of
//! the Db, never stalls a writer, a flush or a compaction; what it delays is only the delivery
//! of later events (the queue is unbounded: a listener slower than the event rate costs memory,
//! not throughput).
//!
//! Guarantees:
//! 1. One dispatcher thread calls every listener, in registration order, one event at a time:
//!    a listener needs no locking of its own against itself.
//! 2. Events are delivered in the order they were enqueued, one total order for all kinds.
//! 3. Events that install a version — [`Event::FlushEnd`], [`Event::CompactionEnd`] and an
//!    [`Event::Ingest`] that is not `flushable` — are enqueued in the critical section that
//!    installs the version, so they arrive in the order of their edits in the MANIFEST (one
//!    event per edit; a failed job's end carries its `error` and has no edit).
//! 4. For each job, `…Begin` arrives before `…End` (same `job_id`); the
//!    [`Event::TableFileCreated`] of every table a job writes arrives before its end, and the
//!    [`Event::TableFileDeleted`] of a table it removes after it. Each table file the Db creates
//!    (flush and compaction outputs, ingested files linked or copied in) is announced by exactly
//!    one `TableFileCreated`, each one it deletes by exactly one `TableFileDeleted`.
//! 5. A [`Event::WriteStallBegin`] is followed by exactly one [`Event::WriteStallEnd`] of the
//!    same cause before the next stall begins, at the latest when the Db closes.
//! 6. `Db::close` (and dropping the Db) returns only after every event enqueued before it has
//!    been delivered; no listener is called after that. An iterator or snapshot outliving the
//!    Db may still delete the tables it held: those deletions are not reported.
//! 7. With no listener registered nothing is enqueued, allocated or locked for events, and no
//!    thread is started: the write path pays one `Vec::is_empty` branch.
//!
//! Recovery inside `Db::open` is reported as one flush ([`FlushInput::Recovery`]) once the Db
//! is open, its outputs in the open's MANIFEST edit (or in the snapshot a new MANIFEST starts
//! from). Not reported: ingests that failed (their linked files' deletions are), and writes
//! themselves.

mod check;
mod dispatch;
mod json;
mod report;
mod stall;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

pub use check::{check_against_manifest, edit_files, manifest_edits, LevelFiles, ManifestMatch};
pub(super) use dispatch::Events;
pub use json::{event_json, JsonLinesListener};
pub(super) use report::{table_infos, CompactionStats, JobReport, RecoveryReport};
pub(super) use stall::{StallCondition, StallTracker};

use crate::version::FileMeta;

/// Receives the Db's events. Every method has an empty default body: implement the ones you
/// need. Called from the Db's event thread, never from the thread doing the work, and never
/// under one of the Db's locks (see the module docs for the order guarantees).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use sluice::events::{Event, EventListener};
/// use sluice::{Db, Options};
///
/// #[derive(Default)]
/// struct Count(Mutex<usize>);
/// impl EventListener for Count {
///     fn on_flush_end(&self, _info: &sluice::events::FlushInfo) {
///         *self.0.lock().unwrap() += 1;
///     }
/// }
///
/// let dir = tempfile::tempdir().unwrap();
/// let count = Arc::new(Count::default());
/// let mut opts = Options::default();
/// opts.listeners.push(count.clone());
/// let db = Db::open(dir.path(), opts).unwrap();
/// db.put(b"k", b"v").unwrap();
/// db.flush().unwrap();
/// db.close().unwrap(); // every event delivered before close returns
/// assert_eq!(*count.0.lock().unwrap(), 1);
/// ```
pub trait EventListener: Send + Sync {
    /// Every event goes through here first; the default hands it to the method of its kind.
    /// Override it to see all events in one place (as [`JsonLinesListener`] does).
    fn on_event(&self, event: &Event) {
        match event {
            Event::FlushBegin(i) => self.on_flush_begin(i),
            Event::FlushEnd(i) => self.on_flush_end(i),
            Event::CompactionBegin(i) => self.on_compaction_begin(i),
            Event::CompactionEnd(i) => self.on_compaction_end(i),
            Event::Ingest(i) => self.on_ingest(i),
            Event::WriteStallBegin(i) => self.on_write_stall_begin(i),
            Event::WriteStallEnd(i) => self.on_write_stall_end(i),
            Event::BackgroundError(i) => self.on_background_error(i),
            Event::TableFileCreated(i) => self.on_table_file_created(i),
            Event::TableFileDeleted(i) => self.on_table_file_deleted(i),
        }
    }
    /// A flush starts (`outputs` empty, `duration` zero).
    fn on_flush_begin(&self, _info: &FlushInfo) {}
    /// A flush installed its tables, or failed (`error`).
    fn on_flush_end(&self, _info: &FlushInfo) {}
    /// A compaction starts (`outputs` empty, `duration` zero).
    fn on_compaction_begin(&self, _info: &CompactionInfo) {}
    /// A compaction installed its outputs, or failed (`error`).
    fn on_compaction_end(&self, _info: &CompactionInfo) {}
    /// An ingest made its files visible.
    fn on_ingest(&self, _info: &IngestInfo) {}
    /// Writes started to be delayed or stopped.
    fn on_write_stall_begin(&self, _info: &WriteStallInfo) {}
    /// The stall condition of the matching begin cleared (`duration` set).
    fn on_write_stall_end(&self, _info: &WriteStallInfo) {}
    /// The Db hit its first background error and refuses writes from now on.
    fn on_background_error(&self, _info: &BackgroundErrorInfo) {}
    /// A table file was written (or linked in by an ingest), before any edit names it.
    fn on_table_file_created(&self, _info: &TableFileCreatedInfo) {}
    /// A table file was deleted from the Db directory.
    fn on_table_file_deleted(&self, _info: &TableFileDeletedInfo) {}
}

/// One event, as the dispatcher hands it to [`EventListener::on_event`].
#[non_exhaustive]
#[derive(Debug, Clone)]
pub enum Event {
    /// See [`EventListener::on_flush_begin`].
    FlushBegin(FlushInfo),
    /// See [`EventListener::on_flush_end`].
    FlushEnd(FlushInfo),
    /// See [`EventListener::on_compaction_begin`].
    CompactionBegin(CompactionInfo),
    /// See [`EventListener::on_compaction_end`].
    CompactionEnd(CompactionInfo),
    /// See [`EventListener::on_ingest`].
    Ingest(IngestInfo),
    /// See [`EventListener::on_write_stall_begin`].
    WriteStallBegin(WriteStallInfo),
    /// See [`EventListener::on_write_stall_end`].
    WriteStallEnd(WriteStallInfo),
    /// See [`EventListener::on_background_error`].
    BackgroundError(BackgroundErrorInfo),
    /// See [`EventListener::on_table_file_created`].
    TableFileCreated(TableFileCreatedInfo),
    /// See [`EventListener::on_table_file_deleted`].
    TableFileDeleted(TableFileDeletedInfo),
}

impl Event {
    /// The event's name in snake case (`flush_end`, …), as [`JsonLinesListener`] writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Event::FlushBegin(_) => "flush_begin",
            Event::FlushEnd(_) => "flush_end",
            Event::CompactionBegin(_) => "compaction_begin",
            Event::CompactionEnd(_) => "compaction_end",
            Event::Ingest(_) => "ingest",
            Event::WriteStallBegin(_) => "write_stall_begin",
            Event::WriteStallEnd(_) => "write_stall_end",
            Event::BackgroundError(_) => "background_error",
            Event::TableFileCreated(_) => "table_file_created",
            Event::TableFileDeleted(_) => "table_file_deleted",
        }
    }

    /// When it happened (the wall clock when it was enqueued).
    pub fn time(&self) -> SystemTime {
        match self {
            Event::FlushBegin(i) | Event::FlushEnd(i) => i.time,
            Event::CompactionBegin(i) | Event::CompactionEnd(i) => i.time,
            Event::Ingest(i) => i.time,
            Event::WriteStallBegin(i) | Event::WriteStallEnd(i) => i.time,
            Event::BackgroundError(i) => i.time,
            Event::TableFileCreated(i) => i.time,
            Event::TableFileDeleted(i) => i.time,
        }
    }
}

/// A table file as a version holds it: the identity (`number`) the MANIFEST uses.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableFileInfo {
    /// File number (`NNNNNN.sst`), never reused.
    pub number: u64,
    /// Level it is in (inputs), or goes to (outputs, ingested files).
    pub level: usize,
    /// Size in bytes.
    pub size: u64,
    /// Smallest user key.
    pub smallest_key: Vec<u8>,
    /// Largest user key (exclusive when the file ends with a range deletion's end).
    pub largest_key: Vec<u8>,
    /// Smallest seqno of its entries.
    pub smallest_seqno: u64,
    /// Largest seqno of its entries.
    pub largest_seqno: u64,
}

impl TableFileInfo {
    pub(super) fn new(level: usize, f: &FileMeta) -> TableFileInfo {
        TableFileInfo {
            number: f.number,
            level,
            size: f.size,
            smallest_key: f.smallest_user().to_vec(),
            largest_key: f.largest_user().to_vec(),
            smallest_seqno: f.smallest_seqno,
            largest_seqno: f.largest_seqno,
        }
    }
}

/// What a flush writes out: the oldest entry of the immutable queue.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlushInput {
    /// A memtable, written to new L0 tables.
    Memtable {
        /// The WAL its writes were logged in (memtables rotated by a flushable ingest share it
        /// with the next one; the seqnos tell them apart).
        wal_number: u64,
        /// Its approximate size, bytes.
        bytes: u64,
        /// Its smallest seqno.
        smallest_seqno: u64,
        /// Its largest seqno.
        largest_seqno: u64,
    },
    /// A flushable ingest's tables, added to L0 as they are (the `outputs`; nothing written).
    IngestedTables {
        /// Their file numbers.
        numbers: Vec<u64>,
    },
    /// Recovery inside `Db::open`: the WALs a crash or an unflushed close left, replayed and
    /// written to L0 (with the tables of flushable ingests they logged) before the Db opened;
    /// reported once it has, begin and end together.
    Recovery {
        /// The WALs replayed.
        wal_numbers: Vec<u64>,
    },
}

/// A flush, at its begin and its end.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct FlushInfo {
    /// Pairs the begin with the end; unique per Db open among flushes and compactions.
    pub job_id: u64,
    /// What it flushes.
    pub input: FlushInput,
    /// Tables added to L0 (end only).
    pub outputs: Vec<TableFileInfo>,
    /// Bytes written (end only; 0 for ingested tables).
    pub bytes_written: u64,
    /// From begin to end (end only).
    pub duration: Duration,
    /// Why it failed (end only).
    pub error: Option<String>,
    /// When it happened.
    pub time: SystemTime,
}

/// The shape of a compaction, as the picker chose it (its `CompactionChoice`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionKind {
    /// One file moved down a level without a rewrite (a trivial move).
    Move,
    /// Files of a level merged with the overlapping files of the next into new tables.
    Merge,
    /// L0 files merged into one L0 file: the base level was busy where they lie, or merging
    /// them into it would rewrite over `Options::l0_tiering_ratio_pct` of their bytes there.
    IntraL0,
    /// `Db::compact_range`: every overlapping file into the last level.
    Manual,
    /// Small neighbouring files of one key prefix merged into one file of their own level
    /// (`Options::small_file_merge_prefix`, `Db::merge_small_files`): file count, not score.
    SmallFiles,
}

impl CompactionKind {
    /// Its name in snake case (`move`, `merge`, `intra_l0`, `manual`, `small_files`).
    pub fn name(self) -> &'static str {
        match self {
            CompactionKind::Move => "move",
            CompactionKind::Merge => "merge",
            CompactionKind::IntraL0 => "intra_l0",
            CompactionKind::Manual => "manual",
            CompactionKind::SmallFiles => "small_files",
        }
    }
}

/// A compaction, at its begin and its end.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct CompactionInfo {
    /// Pairs the begin with the end; unique per Db open among flushes and compactions.
    pub job_id: u64,
    /// Its shape.
    pub kind: CompactionKind,
    /// Why it was picked: the source level's score ×100 when picked (L0: sublevels over
    /// `l0_compaction_trigger`, thin sublevels counted by their bytes while L0 is shallow, see
    /// `Options::l0_thin_sublevels_wait`; other levels: bytes over target); `None` for a
    /// manual one and for a caller's `Db::merge_small_files`.
    pub score_x100: Option<u64>,
    /// Source level (the shallowest input level for a manual compaction).
    pub level: usize,
    /// Destination level.
    pub output_level: usize,
    /// Input tables, each with its level.
    pub inputs: Vec<TableFileInfo>,
    /// Tables added at `output_level` (end only; a move's is its input, at the new level).
    pub outputs: Vec<TableFileInfo>,
    /// Bytes of the inputs read (end only; 0 for a move).
    pub bytes_read: u64,
    /// Bytes of the outputs written (end only; 0 for a move).
    pub bytes_written: u64,
    /// Subcompactions it ran as (end only; 0 for a move).
    pub subcompactions: usize,
    /// From begin to end (end only).
    pub duration: Duration,
    /// Why it failed (end only).
    pub error: Option<String>,
    /// When it happened.
    pub time: SystemTime,
}

/// One file of an ingest.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct IngestFileInfo {
    /// The caller's path.
    pub source: PathBuf,
    /// The table in the Db, with its target level and (in `smallest_seqno`) the global seqno
    /// assigned (0: its entries keep their own seqno 0); `None` when applied as a write batch.
    pub table: Option<TableFileInfo>,
    /// Entries in the file.
    pub entries: u64,
}

/// An ingest that made its files visible.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct IngestInfo {
    /// The files, in the caller's order.
    pub files: Vec<IngestFileInfo>,
    /// Queued above the memtables at L0 (a memtable overlapped them): visible now, added to
    /// the version later by a flush ([`FlushInput::IngestedTables`]).
    pub flushable: bool,
    /// Applied as one write batch (every file under `small_file_threshold`): no table added.
    pub write_batch: bool,
    /// The largest global seqno assigned (0: none needed).
    pub seqno: u64,
    /// From the call to visibility.
    pub duration: Duration,
    /// When it happened.
    pub time: SystemTime,
}

/// Why writes stall. The numbers are those at the begin.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StallCause {
    /// The active memtable is full and `max_write_buffer_number` memtables are held.
    Memtables {
        /// Memtables held (active + immutable queue).
        count: usize,
        /// `max_write_buffer_number`.
        limit: usize,
    },
    /// L0's read amplification reached `l0_slowdown_writes_trigger` (delayed) or
    /// `l0_stop_writes_trigger` (stopped); with `Options::l0_sublevels` off, its file count
    /// did (RocksDB's L0).
    L0Sublevels {
        /// L0 sublevels.
        sublevels: usize,
        /// L0 files.
        files: usize,
        /// The trigger reached.
        limit: usize,
    },
    /// Compaction debt reached `soft_pending_compaction_bytes_limit` (delayed) or
    /// `hard_pending_compaction_bytes_limit` (stopped).
    PendingCompactionBytes {
        /// Estimated bytes compaction is behind.
        bytes: u64,
        /// The limit reached.
        limit: u64,
    },
}

impl StallCause {
    /// Its name in snake case (`memtables`, `l0_sublevels`, `pending_compaction_bytes`).
    pub fn name(&self) -> &'static str {
        match self {
            StallCause::Memtables { .. } => "memtables",
            StallCause::L0Sublevels { .. } => "l0_sublevels",
            StallCause::PendingCompactionBytes { .. } => "pending_compaction_bytes",
        }
    }
}

/// A write stall condition, at its begin and its end (RocksDB's stall conditions: each write
/// is delayed by 1 ms, or writes stop until background work catches up).
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct WriteStallInfo {
    /// Why.
    pub cause: StallCause,
    /// Writes stop (`true`) or are each delayed (`false`).
    pub stopped: bool,
    /// How long the condition held (end only).
    pub duration: Duration,
    /// When it happened.
    pub time: SystemTime,
}

/// The Db's first background error: it refuses writes from now on.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct BackgroundErrorInfo {
    /// What failed.
    pub message: String,
    /// When it happened.
    pub time: SystemTime,
}

/// Why a table file was created.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFileCreation {
    /// Written by a flush.
    Flush,
    /// Written by a compaction.
    Compaction,
    /// Linked or copied in by an ingest.
    Ingest,
}

impl TableFileCreation {
    /// Its name in snake case (`flush`, `compaction`, `ingest`).
    pub fn name(self) -> &'static str {
        match self {
            TableFileCreation::Flush => "flush",
            TableFileCreation::Compaction => "compaction",
            TableFileCreation::Ingest => "ingest",
        }
    }
}

/// A table file written or linked into the Db directory.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct TableFileCreatedInfo {
    /// Its file number (the MANIFEST's identity of the table).
    pub number: u64,
    /// Size in bytes.
    pub size: u64,
    /// The level its job puts it in; `None` for an ingest (placed at install: see
    /// [`Event::Ingest`]).
    pub level: Option<usize>,
    /// Its path.
    pub path: PathBuf,
    /// Who made it.
    pub reason: TableFileCreation,
    /// The flush or compaction that wrote it (`None` for an ingest).
    pub job_id: Option<u64>,
    /// When it happened.
    pub time: SystemTime,
}

/// Why a table file was deleted.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFileDeletion {
    /// No live version holds it any more (removed by a compaction).
    Obsolete,
    /// Found in the directory unreferenced (a leftover of a crash or an earlier open).
    Unreferenced,
    /// Output of a compaction that failed.
    JobFailed,
    /// Linked in by an ingest that failed.
    IngestFailed,
}

impl TableFileDeletion {
    /// Its name in snake case (`obsolete`, `unreferenced`, `job_failed`, `ingest_failed`).
    pub fn name(self) -> &'static str {
        match self {
            TableFileDeletion::Obsolete => "obsolete",
            TableFileDeletion::Unreferenced => "unreferenced",
            TableFileDeletion::JobFailed => "job_failed",
            TableFileDeletion::IngestFailed => "ingest_failed",
        }
    }
}

/// A table file deleted from the Db directory.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct TableFileDeletedInfo {
    /// Its file number.
    pub number: u64,
    /// Its path.
    pub path: PathBuf,
    /// Why.
    pub reason: TableFileDeletion,
    /// When it happened.
    pub time: SystemTime,
}
