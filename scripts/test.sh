#!/usr/bin/env bash
# Runs every test: formatting, lints, the Rust test suites, the Python package's tests (against
# its wheel in a fresh venv), and the RocksDB interop suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's start, in seconds since this script began: where a CI run's time goes.
phase() { echo "== [${SECONDS}s] $*"; }
scripts/setup.sh
# A clean clone gains nothing from incremental caches; they only take disk.
export CARGO_INCREMENTAL=0

phase "cargo fmt --check"
cargo fmt --all -- --check
phase "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -q -- -D warnings
phase "cargo test"
# Not -q: cargo names each test binary as it starts (how long each ran shows in the log).
cargo test --workspace 2>&1 -- -q | grep -v '^ *Compiling ' | tee /tmp/sluice-cargo-test.log
phase "release build"
cargo release-bins -q
phase "bench/run --quick: Sluice and Pebble load the same data; scan checksums must agree"
# The RocksDB anchor (a 10-minute C++ build needing libclang-dev) runs locally: bench/run --quick
bench/run --quick --engines sluice,pebble
phase "Python package: wheel built into a fresh venv (target/py-venv), its tests (pytest)"
scripts/build_python.sh
target/py-venv/bin/python -m pytest -q --durations=10 python/tests
phase "the package's types: mypy --strict against the installed wheel (stubs and py.typed)"
target/py-venv/bin/python -m mypy --strict -p sluice
phase "interop + CLI tests, bench settings check (pytest)"
SLUICE_BIN="$PWD/target/release/sluice" SLUICE_BENCH_BIN="$PWD/target/release/sluice-bench" \
  ${PYTHON:-python3} -m pytest -q --durations=15 tests bench/test_params.py bench/test_import_online.py \
    bench/test_harness.py
phase "all passed"
