//! `sluice`: the command-line tool for Sluice databases and SST files.

mod db_cmd;
mod import_cmd;
mod sst_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Sluice: bulk-load-first LSM key-value store.
#[derive(Parser)]
#[command(name = "sluice", version, about)]
struct Cli {
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
        db: db_cmd::DbArg,
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Print a key's value, or with --table a row by primary key (exit 1 if absent).
    Get {
        #[command(flatten)]
        db: db_cmd::DbArg,
        /// The key (raw mode).
        #[arg(required_unless_present = "pk")]
        key: Option<String>,
        /// Table of the row.
        #[arg(long, requires = "pk")]
        table: Option<String>,
        /// Primary key values `V[,V...]` (a table row; --table may be left out with one table).
        #[arg(long)]
        pk: Option<String>,
        /// Output format of the row (default json).
        #[arg(long, value_enum, requires = "pk")]
        format: Option<import_cmd::OutArg>,
    },
    /// Delete a key (synced).
    Delete {
        #[command(flatten)]
        db: db_cmd::DbArg,
        /// The key.
        key: String,
    },
    /// Print keys and values in order, or with --table a table's rows.
    Scan {
        #[command(flatten)]
        raw: db_cmd::ScanArgs,
        #[command(flatten)]
        table: import_cmd::TableScanArgs,
    },
    /// Import CSV/TSV/JSON-lines files into a table described by a SQL schema.
    Import(import_cmd::ImportArgs),
    /// List the tables of a Db.
    Tables {
        /// The database directory.
        #[arg(long)]
        db: std::path::PathBuf,
    },
    /// Per-level files and bytes, amplification, compactions, stalls.
    Stats {
        #[command(flatten)]
        db: db_cmd::DbArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Ingest external SST files atomically; prints each file's level and seqno.
    Ingest {
        /// The database directory.
        #[arg(long)]
        db: std::path::PathBuf,
        /// SST files (from `sluice sst build`, SstWriter or RocksDB's SstFileWriter).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
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
    /// Draw the LSM: levels and L0 sublevels as key-span bars (wide files marked).
    Lsm {
        #[command(flatten)]
        db: db_cmd::DbArg,
        /// Width of the drawing in columns.
        #[arg(long, default_value_t = 80)]
        width: usize,
    },
    /// Inspect the MANIFEST.
    #[command(subcommand)]
    Manifest(db_cmd::ManifestCommand),
    /// Inspect a WAL file.
    #[command(subcommand)]
    Wal(db_cmd::WalCommand),
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

fn main() -> ExitCode {
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
    let result = match cli.command {
        Command::Sst(c) => sst_cmd::run(c),
        Command::Put { db, key, value } => db_cmd::put(db, key, value),
        Command::Get {
            db,
            key,
            table,
            pk,
            format,
        } => match (pk, key) {
            (Some(pk), _) => import_cmd::get(db.db, table, pk, format),
            (None, Some(key)) => db_cmd::get(db, key),
            (None, None) => unreachable!("clap requires a key or --pk"),
        },
        Command::Delete { db, key } => db_cmd::delete(db, key),
        Command::Scan { raw, table } if table.table.is_some() => {
            import_cmd::scan(raw.db.db, table, raw.start, raw.end, raw.limit)
        }
        Command::Scan { raw, .. } => db_cmd::scan(raw),
        Command::Import(a) => import_cmd::import(a),
        Command::Tables { db } => import_cmd::tables(db),
        Command::Stats { db, json } => db_cmd::stats(db, json),
        Command::Lsm { db, width } => db_cmd::lsm(db, width),
        Command::Manifest(db_cmd::ManifestCommand::Dump { db }) => db_cmd::manifest_dump(db),
        Command::Ingest {
            db,
            files,
            allow_overlap,
            ingest_behind,
            link,
        } => db_cmd::ingest(db, files, allow_overlap, ingest_behind, link),
        Command::Wal(db_cmd::WalCommand::Dump { file, hex }) => db_cmd::wal_dump(file, hex),
    };
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&*e) => ExitCode::from(141),
        Err(e) => {
            eprintln!("sluice: error: {e}");
            ExitCode::from(1)
        }
    }
}
