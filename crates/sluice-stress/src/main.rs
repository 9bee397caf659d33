//! The `sluice-stress` command: `run` (concurrent stress), `crash` (process kills), `faults`
//! (in-process fault injection and power loss). Each prints one `TOTALS …` line and exits 1
//! after an anomaly.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sluice_stress::crash::{child_main, parse_names, run_crash, ChildArgs, CrashConfig};
use sluice_stress::faults::{run_faults, FaultsConfig};
use sluice_stress::stress::{run, RunConfig};
use sluice_stress::Op;

#[derive(Parser)]
#[command(
    name = "sluice-stress",
    about = "Concurrent stress, crash and fault tests for Sluice"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Concurrent stress with an expected-state oracle.
    Run {
        /// Seed (replays every thread's operation sequence).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Worker threads.
        #[arg(long, default_value_t = 8)]
        threads: usize,
        /// Running time in seconds.
        #[arg(long, default_value_t = 30.0)]
        secs: f64,
        /// A fresh directory for the database (default: in memory).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Keys in the main key space.
        #[arg(long, default_value_t = 10_000)]
        keys: u32,
        /// Close and reopen every this many seconds.
        #[arg(long, default_value_t = 10.0)]
        reopen_every: f64,
        /// Operations to leave out, comma-separated (e.g. `ingest_small,compact`).
        #[arg(long, default_value = "")]
        disable: String,
        /// Also run imports beside the workload, most with an I/O error injected at a random
        /// point (EIO, ENOSPC, a torn write, a failed fsync), each checked at once, half of
        /// the failed ones resumed after their unsynced files are torn (needs --dir).
        #[arg(long)]
        imports: bool,
    },
    /// Kill a child running the workload with SIGKILL, reopen, verify; repeat.
    Crash {
        /// Seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Number of kills.
        #[arg(long, default_value_t = 20)]
        kills: u64,
        /// A fresh directory (default: a temporary one).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Worker threads of the child.
        #[arg(long, default_value_t = 8)]
        threads: usize,
        /// Keys in the main key space.
        #[arg(long, default_value_t = 2_000)]
        keys: u32,
        /// Shortest time before a kill, in ms.
        #[arg(long, default_value_t = 200)]
        min_ms: u64,
        /// Longest time before a kill, in ms.
        #[arg(long, default_value_t = 2_000)]
        max_ms: u64,
        /// Skip the check for leftover table files after recoveries.
        #[arg(long)]
        no_leak_check: bool,
        /// Operations to leave out, comma-separated (e.g. `ingest_small,compact`).
        #[arg(long, default_value = "")]
        disable: String,
        /// The child also runs imports (row and columnar tables, indexes, every duplicate
        /// policy, spills), each verified all-or-nothing after every kill; half of those a kill
        /// left absent are resumed by the next child after their unsynced files are torn.
        #[arg(long)]
        imports: bool,
    },
    /// Faults on MemFs at a random moment, then power loss, reopen, verify.
    Faults {
        /// First seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Number of seeds.
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// Crash rounds per seed.
        #[arg(long, default_value_t = 3)]
        rounds: u64,
        /// Worker threads.
        #[arg(long, default_value_t = 4)]
        threads: usize,
        /// Keys in the main key space.
        #[arg(long, default_value_t = 2_000)]
        keys: u32,
        /// Length of a round in ms.
        #[arg(long, default_value_t = 1_500)]
        round_ms: u64,
        /// Skip the check for leftover table files after recoveries.
        #[arg(long)]
        no_leak_check: bool,
        /// Operations to leave out, comma-separated (e.g. `ingest_small,compact`).
        #[arg(long, default_value = "")]
        disable: String,
    },
    /// (internal) The crash mode's child process.
    #[command(hide = true)]
    Child {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        round: u64,
        #[arg(long)]
        threads: usize,
        #[arg(long, default_value = "")]
        disable: String,
        /// Run imports, numbered from this one.
        #[arg(long)]
        imports: Option<u64>,
    },
}

fn ops(names: &str) -> Vec<Op> {
    parse_names(names).unwrap_or_else(|e| {
        eprintln!("--disable: {e}");
        std::process::exit(2)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (summary, line) = match cli.cmd {
        Cmd::Run {
            seed,
            threads,
            secs,
            dir,
            keys,
            reopen_every,
            disable,
            imports,
        } => {
            let s = run(&RunConfig {
                seed,
                threads,
                secs,
                keys,
                zcap: 20_000,
                dir,
                reopen_every,
                disabled: ops(&disable),
                imports,
            });
            let line = s.totals_line("run", seed, &format!("threads={threads} secs={secs}"));
            (s, line)
        }
        Cmd::Crash {
            seed,
            kills,
            dir,
            threads,
            keys,
            min_ms,
            max_ms,
            disable,
            no_leak_check,
            imports,
        } => {
            let bin = std::env::current_exe().expect("own path");
            let s = run_crash(&CrashConfig {
                bin,
                seed,
                kills,
                dir,
                keys,
                zcap: 20_000,
                threads,
                min_ms,
                max_ms: max_ms.max(min_ms),
                disabled: ops(&disable),
                check_leaks: !no_leak_check,
                imports,
            });
            let line = s.totals_line("crash", seed, &format!("kills={kills} threads={threads}"));
            (s, line)
        }
        Cmd::Faults {
            seed,
            seeds,
            rounds,
            threads,
            keys,
            round_ms,
            disable,
            no_leak_check,
        } => {
            let s = run_faults(&FaultsConfig {
                seed,
                seeds,
                rounds,
                threads,
                keys,
                zcap: 20_000,
                round_ms,
                disabled: ops(&disable),
                check_leaks: !no_leak_check,
            });
            let line = s.totals_line("faults", seed, &format!("seeds={seeds} rounds={rounds}"));
            (s, line)
        }
        Cmd::Child {
            dir,
            seed,
            round,
            threads,
            disable,
            imports,
        } => {
            let code = child_main(&ChildArgs {
                dir,
                seed,
                round,
                threads,
                disabled: ops(&disable),
                imports,
            });
            return ExitCode::from(code as u8);
        }
    };
    println!("{line}");
    if summary.anomalies.is_empty() {
        ExitCode::SUCCESS
    } else {
        for a in summary.anomalies.iter().take(5) {
            eprintln!("{a}");
        }
        if summary.anomalies.len() > 5 {
            eprintln!(
                "({} more anomalies after the stop)",
                summary.anomalies.len() - 5
            );
        }
        ExitCode::FAILURE
    }
}
