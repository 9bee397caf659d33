//! `sluice`: the command-line tool for Sluice databases and SST files.

mod db_cmd;
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
    /// Print a key's value (exit 1 if absent).
    Get {
        #[command(flatten)]
        db: db_cmd::DbArg,
        /// The key.
        key: String,
    },
    /// Delete a key (synced).
    Delete {
        #[command(flatten)]
        db: db_cmd::DbArg,
        /// The key.
        key: String,
    },
    /// Print keys and values in order.
    Scan(db_cmd::ScanArgs),
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
    /// Inspect the MANIFEST.
    #[command(subcommand)]
    Manifest(db_cmd::ManifestCommand),
    /// Inspect a WAL file.
    #[command(subcommand)]
    Wal(db_cmd::WalCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sst(c) => sst_cmd::run(c),
        Command::Put { db, key, value } => db_cmd::put(db, key, value),
        Command::Get { db, key } => db_cmd::get(db, key),
        Command::Delete { db, key } => db_cmd::delete(db, key),
        Command::Scan(a) => db_cmd::scan(a),
        Command::Stats { db, json } => db_cmd::stats(db, json),
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
        Err(e) => {
            eprintln!("sluice: error: {e}");
            ExitCode::from(1)
        }
    }
}
