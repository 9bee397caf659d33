#!/usr/bin/env bash
# Runs every test: formatting, lints, the Rust test suites, the Python package's tests (against
# its wheel in a fresh venv), and the RocksDB interop suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# A clean clone gains nothing from incremental caches; they only take disk.
export CARGO_INCREMENTAL=0

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets -q -- -D warnings
echo "== cargo test"
cargo test --workspace -q 2>&1 | tee /tmp/sluice-cargo-test.log
echo "== release build"
cargo build --release -q -p sluice-cli -p sluice-bench
echo "== bench/run --quick: Sluice and Pebble load the same data; scan checksums must agree"
# The RocksDB anchor (a 10-minute C++ build needing libclang-dev) runs locally: bench/run --quick
bench/run --quick --engines sluice,pebble
echo "== Python package: wheel built into a fresh venv (target/py-venv), its tests (pytest)"
scripts/build_python.sh
target/py-venv/bin/python -m pytest -q python/tests
echo "== the package's types: mypy --strict against the installed wheel (stubs and py.typed)"
target/py-venv/bin/python -m mypy --strict -p sluice
echo "== interop + CLI tests, bench settings check (pytest)"
SLUICE_BIN="$PWD/target/release/sluice" SLUICE_BENCH_BIN="$PWD/target/release/sluice-bench" \
  ${PYTHON:-python3} -m pytest -q tests bench/test_params.py bench/test_import_online.py bench/test_harness.py
