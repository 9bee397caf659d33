//! The `sluice` binary: everything is in the library (`lib.rs`, the dispatcher).

fn main() -> std::process::ExitCode {
    sluice_cli::main()
}
