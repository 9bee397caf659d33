//! The import crate's modules form layers like the engine's folders: a module may use only
//! modules drawn below it, no source file grows past 800 lines, and tests in `src/` sit in
//! `mod tests` or `<subject>_tests.rs`. The checker is the engine's
//! (`crates/sluice/tests/layers/mod.rs`).

#[path = "../../sluice/tests/layers/mod.rs"]
mod layers;

use layers::Layering;

/// Bottom to top (lib.rs above them all): test-only fault injection, helper threads, values and
/// their encodings, the schema, errors,
/// the catalog, column chunks and table latches, commit locks, reading and parsing input, sorted sources and writers, reading tables back,
/// progress, then the pipeline that drives them all.
const LAYERS: &[&str] = &[
    "failpoints",
    "workers",
    "types",
    "keycode",
    "row",
    "schema",
    "error",
    "durable",
    "catalog",
    "chunk",
    "commit_lock",
    "arrow_io",
    "input",
    "parse",
    "positions",
    "merge",
    "query",
    "progress",
    "tmp_dirs",
    "pipeline",
    "distributed",
    "fuzz",
];

/// Longest import source file, in lines (tests excluded).
const MAX_LINES: usize = 800;

fn import_crate() -> Layering {
    Layering::of(env!("CARGO_MANIFEST_DIR"), LAYERS, MAX_LINES)
}

layers::layering_tests!(import_crate());
