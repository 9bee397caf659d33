//! What every Db command shares on the command line: the `--db` flag, the key/value encoding
//! flags, and the result type of a command. Above [`crate::text`] only.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::text::Enc;

/// What a command returns: its exit status, or an error (exit 2).
pub(crate) type CmdResult = Result<ExitCode, Box<dyn std::error::Error>>;

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
