//! What every Db command shares on the command line: the `--db` flag, the key/value encoding
//! flags, and the result type of a command. Above [`crate::text`] only.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use sluice::Trace;

use crate::text::Enc;

/// What a command returns: its exit status, or an error (exit 2).
pub(crate) type CmdResult = Result<ExitCode, Box<dyn std::error::Error>>;

/// `--trace` of the read commands (`get`, `scan`, raw or table forms).
#[derive(Args, Clone, Copy, Default)]
pub struct TraceArg {
    /// Trace the read and print the trace to stderr after the output, like `EXPLAIN (TRACE)`:
    /// one line per span (offset and duration in ms, indented by depth: memtable probes,
    /// tables with their filter answer and blocks, cache hits and misses, entries and
    /// tombstones stepped over), then the counters.
    #[arg(long)]
    pub trace: bool,
}

impl TraceArg {
    /// A fresh trace when `--trace` was given.
    pub fn new_trace(self) -> Option<Trace> {
        self.trace.then(Trace::new)
    }
}

/// Prints a command's trace, if it has one, to stderr (stdout stays the command's output).
pub fn print_trace(trace: Option<&Trace>) {
    if let Some(t) = trace {
        eprint!("{}", t.render());
    }
}

/// `--db DIR`.
#[derive(Args, Clone)]
pub struct DbArg {
    /// The database directory.
    #[arg(long)]
    pub db: PathBuf,
}

/// How keys and values are written on the command line, in input and in output.
#[derive(Args, Clone, Copy, Default)]
pub struct KvEnc {
    /// Keys and values are hex (input may carry a `0x` prefix).
    #[arg(long)]
    pub hex: bool,
    /// Keys only are hex.
    #[arg(long)]
    pub key_hex: bool,
    /// Values only are hex.
    #[arg(long)]
    pub value_hex: bool,
}

impl KvEnc {
    /// The encoding of keys.
    pub fn keys(self) -> Enc {
        Enc::hex_if(self.hex || self.key_hex)
    }

    /// The encoding of values.
    pub fn values(self) -> Enc {
        Enc::hex_if(self.hex || self.value_hex)
    }
}
