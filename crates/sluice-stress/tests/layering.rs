//! The stress harness's modules form layers like the engine's folders: a module may use only
//! modules drawn below it, no source file grows past 800 lines, and tests in `src/` sit in
//! `mod tests`. The checker is the engine's (`crates/sluice/tests/layers/mod.rs`).

#[path = "../../sluice/tests/layers/mod.rs"]
mod layers;

use layers::Layering;

/// Bottom to top (lib.rs and main.rs above them all).
const LAYERS: &[&str] = &[
    "report", "keys", "storage", "oracle", "journal", "workload", "imports", "stress", "crash",
    "faults",
];

/// Longest harness source file, in lines (tests excluded).
const MAX_LINES: usize = 800;

fn harness() -> Layering {
    Layering::of(env!("CARGO_MANIFEST_DIR"), LAYERS, MAX_LINES)
}

layers::layering_tests!(harness());
