//! The engine's side of events: what the flush, compaction, ingest and cleanup code calls to
//! report (each only enqueues, and builds nothing without a listener).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::base::filenames::table_file_name;
use crate::version::FileMeta;

use super::super::flushable::Flushable;
use super::super::open::Recovered;
use super::super::{Inner, State};
use super::{
    BackgroundErrorInfo, CompactionInfo, CompactionKind, Event, FlushInfo, FlushInput,
    IngestFileInfo, IngestInfo, TableFileCreatedInfo, TableFileCreation, TableFileDeletedInfo,
    TableFileDeletion, TableFileInfo,
};
use crate::db::IngestedFile;

/// A flush or compaction being reported: its begin info and when it began.
pub(crate) struct JobReport<T> {
    pub(crate) info: T,
    start: Instant,
}

/// Recovery's flush inside `Db::open`, reported once the Db is open (with a listener only).
pub(crate) struct RecoveryReport {
    wal_numbers: Vec<u64>,
    /// Tables of flushable ingests the WALs logged: added, but written by their ingest.
    ingested: Vec<u64>,
    outputs: Vec<TableFileInfo>,
    start: Instant,
}

impl RecoveryReport {
    /// Before the flush: what the WAL replay yielded.
    pub(crate) fn begin(recovered: &[Recovered]) -> RecoveryReport {
        let mut r = RecoveryReport {
            wal_numbers: Vec::new(),
            ingested: Vec::new(),
            outputs: Vec::new(),
            start: Instant::now(),
        };
        for item in recovered {
            match item {
                Recovered::Mem(m) => r.wal_numbers.push(m.wal_number),
                Recovered::Ingested(files) => r.ingested.extend(files.iter().map(|f| f.number)),
            }
        }
        r.wal_numbers.dedup();
        r
    }

    /// After the flush: the tables the open's edit adds to L0.
    pub(crate) fn flushed(self, tables: &[FileMeta]) -> RecoveryReport {
        RecoveryReport {
            outputs: table_infos(0, tables),
            ..self
        }
    }
}

/// What a compaction did, for its end event.
#[derive(Default)]
pub(crate) struct CompactionStats {
    pub(crate) bytes_read: u64,
    pub(crate) bytes_written: u64,
    pub(crate) subcompactions: usize,
}

/// `files` at `level`, as events name tables.
pub(crate) fn table_infos<'a>(
    level: usize,
    files: impl IntoIterator<Item = &'a FileMeta>,
) -> Vec<TableFileInfo> {
    files
        .into_iter()
        .map(|f| TableFileInfo::new(level, f))
        .collect()
}

impl Inner {
    /// Reports the begin of the flush of `entry`; `None` without a listener.
    pub(crate) fn flush_began(&self, entry: &Flushable) -> Option<JobReport<FlushInfo>> {
        if !self.events.enabled() {
            return None;
        }
        self.flush_began_with(match entry {
            Flushable::Mem(m) => FlushInput::Memtable {
                wal_number: m.wal_number,
                bytes: m.approximate_bytes(),
                smallest_seqno: m.smallest_seqno(),
                largest_seqno: m.largest_seqno(),
            },
            Flushable::Ingested(t) => FlushInput::IngestedTables {
                numbers: t.files.iter().map(|f| f.number).collect(),
            },
        })
    }

    /// Reports the begin of a flush of `input`; `None` without a listener.
    fn flush_began_with(&self, input: FlushInput) -> Option<JobReport<FlushInfo>> {
        if !self.events.enabled() {
            return None;
        }
        let info = FlushInfo {
            job_id: self.events.new_job_id(),
            input,
            outputs: Vec::new(),
            bytes_written: 0,
            duration: Duration::ZERO,
            error: None,
            time: SystemTime::now(),
        };
        self.events.emit(|| Event::FlushBegin(info.clone()));
        Some(JobReport {
            info,
            start: Instant::now(),
        })
    }

    /// Reports recovery's flush (if it wrote or added any table): begin, the tables written,
    /// end.
    pub(crate) fn recovery_flushed(&self, r: RecoveryReport) {
        if r.outputs.is_empty() {
            return;
        }
        let job = self.flush_began_with(FlushInput::Recovery {
            wal_numbers: r.wal_numbers,
        });
        let written: Vec<(u64, u64)> = (r.outputs.iter())
            .filter(|t| !r.ingested.contains(&t.number))
            .map(|t| (t.number, t.size))
            .collect();
        if let Some(mut j) = job {
            let id = Some(j.info.job_id);
            self.tables_created(&written, Some(0), TableFileCreation::Flush, id);
            j.start = r.start;
            let bytes = written.iter().map(|(_, size)| size).sum();
            self.flush_ended(Some(&j), r.outputs, bytes, None);
        }
    }

    /// Reports the end of a flush: its outputs, or its error.
    pub(crate) fn flush_ended(
        &self,
        job: Option<&JobReport<FlushInfo>>,
        outputs: Vec<TableFileInfo>,
        bytes_written: u64,
        error: Option<String>,
    ) {
        if let Some(j) = job {
            self.events.emit(|| {
                Event::FlushEnd(FlushInfo {
                    outputs,
                    bytes_written,
                    duration: j.start.elapsed(),
                    error,
                    time: SystemTime::now(),
                    ..j.info.clone()
                })
            });
        }
    }

    /// Reports the begin of a compaction of `inputs` (each with its level) into
    /// `output_level`; `None` without a listener.
    pub(crate) fn compaction_began(
        &self,
        kind: CompactionKind,
        score_x100: Option<u64>,
        inputs: &[(usize, Arc<FileMeta>)],
        output_level: usize,
    ) -> Option<JobReport<CompactionInfo>> {
        if !self.events.enabled() {
            return None;
        }
        let info = CompactionInfo {
            job_id: self.events.new_job_id(),
            kind,
            score_x100,
            level: inputs.iter().map(|(l, _)| *l).min().unwrap_or(output_level),
            output_level,
            inputs: inputs
                .iter()
                .map(|(l, f)| TableFileInfo::new(*l, f))
                .collect(),
            outputs: Vec::new(),
            bytes_read: 0,
            bytes_written: 0,
            subcompactions: 0,
            duration: Duration::ZERO,
            error: None,
            time: SystemTime::now(),
        };
        self.events.emit(|| Event::CompactionBegin(info.clone()));
        Some(JobReport {
            info,
            start: Instant::now(),
        })
    }

    /// Reports the end of a compaction: its outputs and bytes, or its error.
    pub(crate) fn compaction_ended(
        &self,
        job: Option<&JobReport<CompactionInfo>>,
        outputs: Vec<TableFileInfo>,
        stats: CompactionStats,
        error: Option<String>,
    ) {
        if let Some(j) = job {
            self.events.emit(|| {
                Event::CompactionEnd(CompactionInfo {
                    outputs,
                    bytes_read: stats.bytes_read,
                    bytes_written: stats.bytes_written,
                    subcompactions: stats.subcompactions,
                    duration: j.start.elapsed(),
                    error,
                    time: SystemTime::now(),
                    ..j.info.clone()
                })
            });
        }
    }

    /// Reports new table files: a job's outputs bound for `level`, or an ingest's (`level`
    /// and `job_id` `None`).
    pub(crate) fn tables_created(
        &self,
        files: &[(u64, u64)],
        level: Option<usize>,
        reason: TableFileCreation,
        job_id: Option<u64>,
    ) {
        for &(number, size) in files {
            self.events.emit(|| {
                Event::TableFileCreated(TableFileCreatedInfo {
                    number,
                    size,
                    level,
                    path: table_file_name(&self.dir, number),
                    reason,
                    job_id,
                    time: SystemTime::now(),
                })
            });
        }
    }

    /// Removes table `number` from the directory, reporting it if it was there.
    pub(crate) fn remove_table(&self, number: u64, reason: TableFileDeletion) {
        let path = table_file_name(&self.dir, number);
        self.remove_table_at(&path, number, reason);
    }

    /// [`Inner::remove_table`] for a path already built.
    pub(crate) fn remove_table_at(&self, path: &Path, number: u64, reason: TableFileDeletion) {
        if self.fs.remove(path).is_ok() {
            self.events.emit(|| {
                Event::TableFileDeleted(TableFileDeletedInfo {
                    number,
                    path: path.to_path_buf(),
                    reason,
                    time: SystemTime::now(),
                })
            });
        }
    }

    /// Puts the Db in its read-only error state (invariant 5) with `message`, unless it is
    /// already; reports the first error.
    pub(crate) fn set_background_error(&self, s: &mut State, message: String) {
        if s.background_error.is_some() {
            return;
        }
        self.events.emit(|| {
            Event::BackgroundError(BackgroundErrorInfo {
                message: message.clone(),
                time: SystemTime::now(),
            })
        });
        s.background_error = Some(message);
    }

    /// Reports an ingest that made its files visible: `added` the edit's (level, table) pairs
    /// in file order (empty for a write batch), `report` what `Db::ingest` returns.
    pub(crate) fn ingested(
        &self,
        added: &[(usize, FileMeta)],
        report: &[IngestedFile],
        flushable: bool,
        started: Instant,
    ) {
        self.events.emit(|| {
            let files = report
                .iter()
                .enumerate()
                .map(|(i, r)| IngestFileInfo {
                    source: r.source.clone(),
                    table: added.get(i).map(|(l, f)| TableFileInfo::new(*l, f)),
                    entries: r.entries,
                })
                .collect();
            Event::Ingest(IngestInfo {
                files,
                flushable,
                write_batch: added.is_empty(),
                seqno: report.iter().map(|r| r.seqno).max().unwrap_or(0),
                duration: started.elapsed(),
                time: SystemTime::now(),
            })
        });
    }
}
