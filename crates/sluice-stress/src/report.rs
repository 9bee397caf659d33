//! Operation counters, anomalies, and the one parseable totals line.

use std::sync::atomic::{AtomicU64, Ordering};

/// Every operation kind the harness runs (the counters are indexed by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Single put (sometimes synced).
    Put,
    /// Single delete.
    Delete,
    /// Range deletion.
    DeleteRange,
    /// Multi-key write batch.
    Batch,
    /// Point reads.
    Get,
    /// Bounded iteration.
    Iter,
    /// Snapshot taken and read.
    Snapshot,
    /// Snapshot read again later.
    SnapshotReread,
    /// Ingest of disjoint files.
    Ingest,
    /// Ingest of overlapping files (`allow_overlap`).
    IngestOverlap,
    /// Ingest with tiny files applied as a batch (`small_file_threshold`).
    IngestSmall,
    /// Ingest behind, on the reserved `z` keys.
    IngestBehind,
    /// `Db::flush`.
    Flush,
    /// `Db::compact_range`.
    Compact,
    /// Sequential-series put.
    SeqPut,
    /// Sequential-series ingest.
    SeqIngest,
    /// Close and open again.
    Reopen,
    /// `Db::open_read_only` beside the live writer, and point reads through it.
    ReadOnlyOpen,
}

impl Op {
    /// All kinds, in counter order.
    pub const ALL: [Op; 18] = [
        Op::Put,
        Op::Delete,
        Op::DeleteRange,
        Op::Batch,
        Op::Get,
        Op::Iter,
        Op::Snapshot,
        Op::SnapshotReread,
        Op::Ingest,
        Op::IngestOverlap,
        Op::IngestSmall,
        Op::IngestBehind,
        Op::Flush,
        Op::Compact,
        Op::SeqPut,
        Op::SeqIngest,
        Op::Reopen,
        Op::ReadOnlyOpen,
    ];

    /// Name used in journals and the totals line.
    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::Delete => "delete",
            Op::DeleteRange => "delete_range",
            Op::Batch => "batch",
            Op::Get => "get",
            Op::Iter => "iter",
            Op::Snapshot => "snapshot",
            Op::SnapshotReread => "snapshot_reread",
            Op::Ingest => "ingest",
            Op::IngestOverlap => "ingest_overlap",
            Op::IngestSmall => "ingest_small",
            Op::IngestBehind => "ingest_behind",
            Op::Flush => "flush",
            Op::Compact => "compact",
            Op::SeqPut => "seq_put",
            Op::SeqIngest => "seq_ingest",
            Op::Reopen => "reopen",
            Op::ReadOnlyOpen => "read_only_open",
        }
    }

    /// Parses [`Op::name`].
    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL.iter().copied().find(|o| o.name() == s)
    }

    /// True for operations after whose acknowledgement every write acknowledged before they
    /// started must survive a power loss: synced writes, ingests, flushes, compactions.
    pub fn is_durability_point(self) -> bool {
        matches!(
            self,
            Op::Ingest
                | Op::IngestOverlap
                | Op::IngestSmall
                | Op::IngestBehind
                | Op::SeqIngest
                | Op::Flush
                | Op::Compact
        )
    }
}

/// Counters shared by all threads.
#[derive(Debug, Default)]
pub struct Stats {
    ops: [AtomicU64; Op::ALL.len()],
    /// Operations that returned an error (tolerated only while faults are injected).
    pub errors: AtomicU64,
    /// Ingest-behind calls the engine refused with `InvalidArgument`.
    pub rejected: AtomicU64,
    /// Fault configurations switched on.
    pub faults: AtomicU64,
    /// Crash (or kill) and recovery rounds verified.
    pub rounds: AtomicU64,
    /// Keys verified after recoveries.
    pub verified_keys: AtomicU64,
    /// Intra-L0 compactions the Db started (from its events, concurrent mode).
    pub intra_l0: AtomicU64,
    /// Small-file merges (picker policy 7: in the background, or an import's
    /// `Db::merge_small_files`) the Db started (from its events, concurrent mode).
    pub small_files: AtomicU64,
}

impl Stats {
    /// Counts one operation.
    pub fn count(&self, op: Op) {
        self.ops[op as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` operations.
    pub fn add(&self, op: Op, n: u64) {
        self.ops[op as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// Operations of one kind.
    pub fn get(&self, op: Op) -> u64 {
        self.ops[op as usize].load(Ordering::Relaxed)
    }

    /// All operations.
    pub fn total(&self) -> u64 {
        Op::ALL.iter().map(|&o| self.get(o)).sum()
    }

    /// Adds another set of counters into this one.
    pub fn merge(&self, other: &Stats) {
        for op in Op::ALL {
            self.add(op, other.get(op));
        }
        for (a, b) in [
            (&self.errors, &other.errors),
            (&self.rejected, &other.rejected),
            (&self.faults, &other.faults),
            (&self.rounds, &other.rounds),
            (&self.verified_keys, &other.verified_keys),
            (&self.intra_l0, &other.intra_l0),
            (&self.small_files, &other.small_files),
        ] {
            a.fetch_add(b.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// `ops=N put=N … errors=N` (the counters part of the totals line).
    pub fn render(&self) -> String {
        let mut s = format!("ops={}", self.total());
        for op in Op::ALL {
            s.push_str(&format!(" {}={}", op.name(), self.get(op)));
        }
        s.push_str(&format!(
            " errors={} rejected={} faults={} rounds={} verified_keys={} intra_l0={} small_files={}",
            self.errors.load(Ordering::Relaxed),
            self.rejected.load(Ordering::Relaxed),
            self.faults.load(Ordering::Relaxed),
            self.rounds.load(Ordering::Relaxed),
            self.verified_keys.load(Ordering::Relaxed),
            self.intra_l0.load(Ordering::Relaxed),
            self.small_files.load(Ordering::Relaxed),
        ));
        s
    }
}

/// A wrong result: what was done, what was read, and the key's recent history.
#[derive(Debug, Clone)]
pub struct Anomaly {
    /// Seed of the run (replays the operation sequence of every thread).
    pub seed: u64,
    /// Where: thread, phase or crash round.
    pub context: String,
    /// The operation that observed it.
    pub op: String,
    /// The key.
    pub key: String,
    /// What was read (or found on disk).
    pub read: String,
    /// Why it is wrong.
    pub detail: String,
    /// The key's recent history (versions, op, status, timestamps).
    pub history: String,
}

impl Anomaly {
    /// An anomaly of the harness or of a whole round, about no one key.
    pub fn without_key(seed: u64, context: String, op: &str, read: String, detail: String) -> Self {
        Anomaly {
            seed,
            context,
            op: op.into(),
            key: "-".into(),
            read,
            detail,
            history: String::new(),
        }
    }
}

impl std::fmt::Display for Anomaly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "ANOMALY seed={} ({})", self.seed, self.context)?;
        writeln!(f, "  op:     {}", self.op)?;
        writeln!(f, "  key:    {}", self.key)?;
        writeln!(f, "  read:   {}", self.read)?;
        writeln!(f, "  why:    {}", self.detail)?;
        if !self.history.is_empty() {
            writeln!(f, "  history:")?;
            write!(f, "{}", self.history)?;
        }
        Ok(())
    }
}

/// What a run reports: counters and every anomaly (a run stops at the first ones).
#[derive(Debug, Default)]
pub struct Summary {
    /// Operation counters.
    pub stats: Stats,
    /// Anomalies found.
    pub anomalies: Vec<Anomaly>,
    /// Imports verified after kills (crash mode with imports).
    pub imports: ImportCounts,
}

/// What the imports' verification counted over the run.
#[derive(Debug, Default, Clone)]
pub struct ImportCounts {
    /// Imports logged as done and found applied.
    pub done: u64,
    /// Imports that failed (duplicates under `error`, unique violations, refused policies), and
    /// were found not applied.
    pub failed: u64,
    /// Imports interrupted by the kill and found entirely applied.
    pub interrupted_applied: u64,
    /// Imports interrupted by the kill and found entirely absent.
    pub interrupted_absent: u64,
    /// Imports failed by an injected I/O error and found absent (the faults mode).
    pub faulted: u64,
    /// Interrupted (killed or faulted) imports run again with `resume`, their unsynced files
    /// torn first, each checked against the reference like any other import.
    pub resume_runs: u64,
    /// Of those, the ones that continued from a checkpoint (the others had reached none and
    /// started over).
    pub resumed: u64,
    /// Files of checkpoint directories torn (truncated, damaged or deleted) before a resume.
    pub torn: u64,
    /// Table rows compared after recoveries (each with its index entries).
    pub rows_checked: u64,
    /// Row groups of the columnar table rewritten after imports (the crash mode's child).
    pub groups_rewritten: u64,
}

impl ImportCounts {
    /// Whether any import was verified.
    pub fn any(&self) -> bool {
        self.done + self.failed + self.interrupted_applied + self.interrupted_absent + self.faulted
            > 0
    }

    /// ` imports_done=N …` for the totals line.
    pub fn render(&self) -> String {
        format!(
            "imports_done={} imports_failed={} interrupted_applied={} interrupted_absent={} imports_faulted={} resume_runs={} resumed={} torn_files={} import_rows_checked={} groups_rewritten={}",
            self.done, self.failed, self.interrupted_applied, self.interrupted_absent, self.faulted, self.resume_runs, self.resumed, self.torn, self.rows_checked, self.groups_rewritten
        )
    }
}

impl Summary {
    /// The totals line: `TOTALS mode=… seed=… ops=… … anomalies=N`.
    pub fn totals_line(&self, mode: &str, seed: u64, extra: &str) -> String {
        let imports = if self.imports.any() {
            format!(" {}", self.imports.render())
        } else {
            String::new()
        };
        format!(
            "TOTALS mode={mode} seed={seed}{}{} {}{imports} anomalies={}",
            if extra.is_empty() { "" } else { " " },
            extra,
            self.stats.render(),
            self.anomalies.len()
        )
    }
}
