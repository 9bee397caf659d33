//! `sluice`: the command-line tool for Sluice databases and SST files. The binary
//! (`main.rs`) only calls [`main`]; the crate is a library so that the fuzz targets
//! (`fuzz/`) reach the MANIFEST replay behind `sluice lsm` through [`fuzz`]. Nothing else is
//! public: this is not an API.
//!
//! This file parses the command line and hands each command to its room, by what it does:
//! `kv_cmd` (key by key), `ops_cmd` (whole tables), `inspect/` (read-only views), `sst_cmd`
//! (SST files), `import_cmd` (tables of rows). Below them, shared by all: `db_dir` (opening a
//! Db directory), `args` (common flags), `text` (bytes as text, hex, JSON). The layers and
//! which file holds which command: ARCHITECTURE.md, "The CLI"; `tests/layering.rs` keeps them.

mod args;
mod db_dir;
mod import_cmd;
mod inspect;
mod kv_cmd;
mod ops_cmd;
mod sst_cmd;
mod text;

#[doc(hidden)]
pub use inspect::timeline::fuzz;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use args::{print_trace, DbArg, KvEnc, TraceArg};
use kv_cmd::OutArgs;

const AFTER_HELP: &str = "\
Keys and values: text by default. Command-line keys and values are taken as given; output
escapes reversibly (UTF-8 as is; \\\\, \\t, \\n, \\r, and \\xNN for other control bytes and bytes
that are not UTF-8), and input lines (load, sst build --text) read the same escapes.
--hex, --key-hex, --value-hex switch to hex (input may start with 0x). JSON output carries
bytes that are not UTF-8 as key_hex/value_hex.

Locking: a write command (put, delete, delete-range, load, ingest, import, rewrite-groups,
flush, compact, checkpoint) holds the Db's LOCK file while it runs; a second writer fails at once (exit 2).
Read commands (get, scan, approx-size, stats, lsm, verify, tables, manifest dump) open the Db
read-only, take no lock and write nothing, so they run beside a writer. get, scan,
approx-size, lsm and tables hold the tables they open with, so a compaction of the writer's
meanwhile takes nothing from them; stats and verify read tables by name (a table the writer
deletes meanwhile makes them fail: rerun).

Exit status: 0 success; 1 `get`: the key (or row) is absent; 2 any error (bad usage, I/O,
corruption, a failed `sst check` or `verify`); 141 the output pipe was closed (`| head`).";

/// Sluice: bulk-load-first LSM key-value store.
#[derive(Parser)]
#[command(name = "sluice", version, about, after_help = AFTER_HELP)]
struct Cli {
    /// Append the events of the Db a write command opens (flushes, compactions, ingests,
    /// write stalls, table files created and deleted) to FILE, one JSON object per line.
    #[arg(long, global = true, value_name = "FILE")]
    events: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build, dump, check and inspect SST files.
    #[command(subcommand)]
    Sst(sst_cmd::SstCommand),
    /// Set a key (synced).
    Put {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        enc: KvEnc,
        /// The key.
        #[arg(allow_hyphen_values = true)]
        key: String,
        /// The value.
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
    /// Print a key's value, or with --pk a table row (exit 1 if absent, 2 on error).
    Get {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        enc: KvEnc,
        /// The key (raw mode).
        #[arg(required_unless_present = "pk", allow_hyphen_values = true)]
        key: Option<String>,
        /// Write the value's exact bytes, no escaping, no newline.
        #[arg(long, conflicts_with_all = ["json", "pk"])]
        raw: bool,
        #[command(flatten)]
        out: OutArgs,
        /// Table of the row.
        #[arg(long, requires = "pk")]
        table: Option<String>,
        /// Primary key values `V[,V...]` (a table row; --table may be left out with one table;
        /// a value may start with `-`: `--pk -3`).
        #[arg(long, allow_hyphen_values = true)]
        pk: Option<String>,
        /// Output format of the row (default json).
        #[arg(long, value_enum, requires = "pk")]
        format: Option<import_cmd::OutArg>,
        /// CSV output: write NULL as this string (default: an empty field).
        #[arg(long, requires = "pk")]
        null: Option<String>,
        #[command(flatten)]
        trace: TraceArg,
    },
    /// Delete a key, or a table row with --pk (synced).
    Delete {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        enc: KvEnc,
        /// The key (raw mode).
        #[arg(required_unless_present = "pk", allow_hyphen_values = true)]
        key: Option<String>,
        /// Table of the row.
        #[arg(long, requires = "pk")]
        table: Option<String>,
        /// Primary key values `V[,V...]` of the row to delete, with its index entries (a table
        /// row; --table may be left out with one table). Exit 1 when there is no such row.
        #[arg(long, allow_hyphen_values = true, conflicts_with = "key")]
        pk: Option<String>,
    },
    /// Rewrite a columnar table's row groups whose rows are mostly deleted or replaced: their
    /// live rows move to new groups, their chunks and deletion marks are deleted (each batch
    /// synced). Prints what was done as JSON.
    RewriteGroups {
        #[command(flatten)]
        db: DbArg,
        /// The table (may be left out with one table).
        #[arg(long)]
        table: Option<String>,
        /// Rewrite a group when at least this share of its rows is deleted or replaced
        /// (0 < S <= 1).
        #[arg(long, default_value_t = 0.5)]
        min_dead: f64,
    },
    /// Delete every key in [--start, --end) with one range tombstone (synced).
    DeleteRange {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        enc: KvEnc,
        /// First key deleted (inclusive).
        #[arg(long, allow_hyphen_values = true)]
        start: String,
        /// End of the range (exclusive).
        #[arg(long, allow_hyphen_values = true)]
        end: String,
    },
    /// Write `KEY<TAB>VALUE` lines (or JSON lines) from stdin in large batches.
    Load(kv_cmd::LoadArgs),
    /// Print keys and values in order (or their count), or with --table a table's rows.
    Scan {
        #[command(flatten)]
        raw: kv_cmd::ScanArgs,
        #[command(flatten)]
        table: import_cmd::TableScanArgs,
    },
    /// Estimated bytes on disk of the keys in [--start, --end) (table indexes; no memtable).
    ApproxSize {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        enc: KvEnc,
        /// First key (inclusive; default: the first).
        #[arg(long, allow_hyphen_values = true)]
        start: Option<String>,
        /// End key (exclusive; default: past the last).
        #[arg(long, allow_hyphen_values = true)]
        end: Option<String>,
    },
    /// Flush the memtable and any WAL left behind into L0 tables.
    Flush {
        #[command(flatten)]
        db: DbArg,
    },
    /// Compact every file overlapping [--start, --end] (inclusive) into the last level.
    Compact {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        enc: KvEnc,
        /// First key (default: the first).
        #[arg(long, allow_hyphen_values = true)]
        start: Option<String>,
        /// Last key, inclusive (default: the last).
        #[arg(long, allow_hyphen_values = true)]
        end: Option<String>,
    },
    /// Write a consistent, openable copy of the Db into DIR (tables hard-linked).
    Checkpoint {
        #[command(flatten)]
        db: DbArg,
        /// The new directory (must not exist).
        dir: PathBuf,
    },
    /// Verify every table (checksums, sizes and key ranges vs the MANIFEST) and key order
    /// across the files of each level and L0 sublevel; exit 2 naming what is damaged.
    Verify {
        #[command(flatten)]
        db: DbArg,
    },
    /// Import CSV/TSV/JSON-lines files into a table described by a SQL schema.
    Import(import_cmd::ImportArgs),
    /// List the tables of a Db.
    Tables {
        /// The database directory.
        #[arg(long)]
        db: PathBuf,
    },
    /// Per-level files, bytes, entries and deletions; amplification; this process's flush,
    /// compaction and stall counters.
    Stats {
        #[command(flatten)]
        db: DbArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Ingest external SST files atomically; prints each file's level and seqno.
    Ingest {
        /// The database directory.
        #[arg(long)]
        db: PathBuf,
        /// SST files (from `sluice sst build`, SstWriter or RocksDB's SstFileWriter).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Allow the files to overlap each other (layered in L0, later files newer).
        #[arg(long)]
        allow_overlap: bool,
        /// Put the files at the bottom level with seqno 0 (existing keys win).
        #[arg(long)]
        ingest_behind: bool,
        /// Hard-link the files instead of copying them (the Db then owns them: never rewrite
        /// them in place afterwards).
        #[arg(long)]
        link: bool,
    },
    /// Draw the LSM: levels and L0 sublevels as key-span bars (wide files marked); with
    /// --json or --html, its whole history replayed from the MANIFEST (Sluice or RocksDB Db).
    Lsm {
        #[command(flatten)]
        db: DbArg,
        /// Width of the drawing in columns (20 to 1000).
        #[arg(long, default_value_t = 80)]
        width: usize,
        /// Print the MANIFEST's history replayed (every edit, files, series) as JSON.
        #[arg(long)]
        json: bool,
        /// Write the history as one self-contained HTML page (timeline, levels, charts).
        #[arg(long, value_name = "OUT.html")]
        html: Option<PathBuf>,
    },
    /// Inspect the MANIFEST.
    #[command(subcommand)]
    Manifest(inspect::manifest::ManifestCommand),
    /// Inspect a WAL file.
    #[command(subcommand)]
    Wal(inspect::wal::WalCommand),
}

/// True if `e` is, or wraps, a write to a closed pipe (`sluice scan | head`).
fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        if let Some(sluice::Error::Io { source, .. }) = err.downcast_ref::<sluice::Error>() {
            if source.kind() == std::io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        cur = err.source();
    }
    false
}

/// Runs the `sluice` command on the process's arguments; the process's exit status.
pub fn main() -> ExitCode {
    // A reader that stops reading (`| head`) ends the output quietly, as Unix tools do: the
    // `print!` family panics on a closed pipe, so its message is recognised and the process
    // exits with the shell's SIGPIPE status instead of a backtrace.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default_hook(info);
    }));
    let cli = Cli::parse();
    if let Some(path) = cli.events {
        db_dir::record_events_to(path);
    }
    let result = run(cli.command);
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&*e) => ExitCode::from(141),
        Err(e) => {
            eprintln!("sluice: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> args::CmdResult {
    match command {
        Command::Sst(c) => sst_cmd::run(c),
        Command::Put {
            db,
            enc,
            key,
            value,
        } => kv_cmd::put(db, enc, key, value),
        Command::Get {
            db,
            enc,
            key,
            raw,
            out,
            table,
            pk,
            format,
            null,
            trace,
        } => {
            let trace = trace.new_trace();
            let t = trace.as_ref();
            let r = match (pk, key) {
                (Some(pk), _) => {
                    db_dir::check_db_dir(&db.db, false)?;
                    import_cmd::get(db.db, table, pk, format, null, t)
                }
                (None, Some(key)) => kv_cmd::get(db, enc, key, raw, out, t),
                (None, None) => Err("give a KEY, or --pk for a table row".into()),
            };
            print_trace(t);
            r
        }
        Command::Delete {
            db,
            enc,
            key,
            table,
            pk,
        } => match (pk, key) {
            (Some(pk), _) => {
                db_dir::check_db_dir(&db.db, false)?;
                import_cmd::delete_row(db.db, table, pk)
            }
            (None, Some(key)) => kv_cmd::delete(db, enc, key),
            (None, None) => Err("give a KEY, or --pk for a table row".into()),
        },
        Command::RewriteGroups {
            db,
            table,
            min_dead,
        } => {
            db_dir::check_db_dir(&db.db, false)?;
            import_cmd::rewrite_groups(db.db, table, min_dead)
        }
        Command::DeleteRange {
            db,
            enc,
            start,
            end,
        } => kv_cmd::delete_range(db, enc, start, end),
        Command::Load(a) => kv_cmd::load(a),
        Command::Scan { raw, table } => {
            let trace = raw.trace.new_trace();
            let t = trace.as_ref();
            let r = if table.table.is_some() {
                db_dir::check_db_dir(&raw.db.db, false)?;
                let (start, end) = (raw.start, raw.end);
                import_cmd::scan(raw.db.db, table, start, end, raw.limit, raw.count, t)
            } else {
                kv_cmd::scan(raw, t)
            };
            print_trace(t);
            r
        }
        Command::ApproxSize {
            db,
            enc,
            start,
            end,
        } => kv_cmd::approx_size(db, enc, start, end),
        Command::Flush { db } => ops_cmd::flush(db),
        Command::Compact {
            db,
            enc,
            start,
            end,
        } => ops_cmd::compact(db, enc, start, end),
        Command::Checkpoint { db, dir } => ops_cmd::checkpoint(db, dir),
        Command::Verify { db } => ops_cmd::verify(db),
        Command::Import(a) => {
            db_dir::check_db_dir(a.db(), true)?;
            import_cmd::import(a)
        }
        Command::Tables { db } => {
            db_dir::check_db_dir(&db, false)?;
            import_cmd::tables(db)
        }
        Command::Stats { db, json } => inspect::stats::run(db, json),
        Command::Lsm {
            db,
            width,
            json,
            html,
        } => inspect::lsm::run(db, width, json, html),
        Command::Manifest(inspect::manifest::ManifestCommand::Dump { db, json }) => {
            inspect::manifest::dump(db, json)
        }
        Command::Ingest {
            db,
            files,
            allow_overlap,
            ingest_behind,
            link,
        } => ops_cmd::ingest(db, files, allow_overlap, ingest_behind, link),
        Command::Wal(inspect::wal::WalCommand::Dump { file, enc }) => inspect::wal::dump(file, enc),
    }
}
