#!/usr/bin/env bash
# The main job, end to end on a fresh machine: set up, build, turn the bundled example data
# into an SST, ingest it into a database, and query it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release -q -p sluice-cli
SLUICE=target/release/sluice
OUT=${OUT:-target/demo}
rm -rf "$OUT"
mkdir -p "$OUT"

echo "== building $OUT/cities.sst from examples/cities.tsv (zstd, bloom filter)"
LC_ALL=C sort examples/cities.tsv | "$SLUICE" sst build --text --compression zstd --out "$OUT/cities.sst"
echo "== sluice sst check"
"$SLUICE" sst check "$OUT/cities.sst"
echo "== sluice ingest into $OUT/db"
"$SLUICE" put --db "$OUT/db" Anbri "country=Peru;population=1 (overwritten by the ingest)"
"$SLUICE" ingest --db "$OUT/db" "$OUT/cities.sst"
echo "== sluice get Anbri"
"$SLUICE" get --db "$OUT/db" Anbri
echo "== sluice scan --prefix Ka --limit 5"
"$SLUICE" scan --db "$OUT/db" --prefix Ka --limit 5
echo "== sluice stats"
"$SLUICE" stats --db "$OUT/db"
