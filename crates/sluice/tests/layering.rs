//! The engine's folders form layers (ARCHITECTURE.md): a folder may use only folders drawn
//! below it. This test reads every `crate::<folder>` path in `src/` and fails on an arrow that
//! runs back up, on a source file grown past the size a newcomer can read in one sitting, and
//! on test code outside the one place tests in `src/` go. The checker (`layers/mod.rs`) is
//! shared with the stress harness's layering test.

mod layers;

use layers::Layering;

/// Bottom to top.
const LAYERS: &[&str] = &[
    "base",
    "fs",
    "wal",
    "memtable",
    "sst",
    "version",
    "read",
    "compaction",
    "db",
];

/// Longest engine source file, in lines (tests excluded).
const MAX_LINES: usize = 800;

fn engine() -> Layering {
    Layering::of(env!("CARGO_MANIFEST_DIR"), LAYERS, MAX_LINES)
}

layers::layering_tests!(engine());
