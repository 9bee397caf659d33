#!/usr/bin/env bash
# Runs the engine's `unsafe` code (the memtable arena, crates/sluice/src/memtable/skiplist.rs,
# and the WAL stage's ring, crates/sluice/src/fs/staged/)
# under Miri: undefined behaviour, out-of-bounds accesses and data races between the writer and
# lock-free readers are errors. Needs the nightly toolchain with the miri and rust-src
# components (`rustup +nightly component add miri rust-src`); not part of scripts/test.sh,
# whose CI machine reaches the package registries only.
set -euo pipefail
cd "$(dirname "$0")/.."
# Few proptest cases (Miri runs ~1000x slower); isolation off so proptest can read its config.
export PROPTEST_CASES="${PROPTEST_CASES:-4}"
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/miri}"
# The skiplist, and the WAL stage's ring in process memory (its mapped files need mmap, which
# Miri does not model).
exec cargo +nightly miri test -p sluice --lib -- memtable::skiplist fs::staged::tests::ring_ "$@"
