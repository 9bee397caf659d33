#!/usr/bin/env bash
# Installs everything Sluice's build and tests need on a fresh machine (idempotent):
# Rust components, the Python packages of the interop tests (rocksdict, pytest).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust (https://rustup.rs) first" >&2
  exit 1
fi
if command -v rustup >/dev/null 2>&1; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi
PY=${PYTHON:-python3}
if ! "$PY" -c "import rocksdict, pytest" >/dev/null 2>&1; then
  echo "setup: installing Python test packages (tests/requirements.txt)"
  "$PY" -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi
