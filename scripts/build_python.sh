#!/usr/bin/env bash
# Builds the `sluice` Python package (crates/sluice-py + python/sluice) as a wheel and installs it
# into a fresh venv, target/py-venv, with what its tests need (pytest, rocksdict, pyarrow, pandas,
# polars, duckdb: python/tests/requirements.txt). The release
# build of the extension shares the workspace's target/ directory, so after `cargo release-bins`
# (.cargo/config.toml) only the binding crate and pyo3 are compiled.
# Run the tests with: target/py-venv/bin/python -m pytest -q python/tests
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=target/py-venv
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  'maturin>=1.7,<2' mypy -r tests/requirements.txt -r python/tests/requirements.txt
rm -rf target/wheels/sluice-*.whl
nice -n 10 "$VENV/bin/maturin" build --release --quiet --interpreter "$VENV/bin/python" \
  --out target/wheels
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall \
  --no-deps target/wheels/sluice-*.whl
"$VENV/bin/python" -c 'import sluice; print("sluice", sluice.__version__, "installed in target/py-venv")'
