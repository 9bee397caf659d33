#!/usr/bin/env bash
# The main job, end to end on a fresh machine: set up, build, turn the bundled example data
# into an SST file, verify it, and show what is inside.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release -q -p sluice-cli
SLUICE=target/release/sluice
OUT=${OUT:-target/demo}
mkdir -p "$OUT"

echo "== building $OUT/cities.sst from examples/cities.tsv (zstd, bloom filter)"
LC_ALL=C sort examples/cities.tsv | "$SLUICE" sst build --text --compression zstd --out "$OUT/cities.sst"
echo "== sluice sst check"
"$SLUICE" sst check "$OUT/cities.sst"
echo "== sluice sst dump --text (first 5 entries)"
"$SLUICE" sst dump --text "$OUT/cities.sst" | head -n 5
echo "== sluice sst props (selected)"
"$SLUICE" sst props "$OUT/cities.sst" | grep -E "num.entries|data.size|compression:|filter.policy|format.version"
