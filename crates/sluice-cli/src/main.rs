//! `sluice`: the command-line tool for Sluice databases and SST files.

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sst(c) => sst_cmd::run(c),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sluice: error: {e}");
            ExitCode::from(1)
        }
    }
}
