#!/usr/bin/env bash
# Installs everything Sluice's build and tests need on a fresh machine (idempotent):
# Rust components, the Python packages of the interop tests (rocksdict, pytest,
# websocket-client) and Debian's chromium for the HTML page's browser test.
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
if ! "$PY" -c "import rocksdict, pytest, websocket, pyarrow" >/dev/null 2>&1; then
  echo "setup: installing Python test packages (tests/requirements.txt)"
  "$PY" -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi
# Headless Chromium for the browser test of `sluice lsm --html` (tests/interop/test_lsm_html.py).
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing chromium (apt-get)"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
fi
# Java 17+ for Spark (the distributed import's tests run pyspark with local[2]).
if ! command -v java >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing Java for Spark (apt-get openjdk-17-jre-headless)"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
