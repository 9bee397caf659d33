#!/usr/bin/env bash
# The main job, end to end on a fresh machine: set up, build, import the bundled example data
# set (Palmer penguins, CSV + SQL schema) into a database, and query it by key and by index.
# Then the lower level: turn examples/cities.tsv into an SST by hand and ingest it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo release-bins -q
SLUICE=target/release/sluice
OUT=${OUT:-target/demo}
rm -rf "$OUT"
mkdir -p "$OUT"

echo "== sluice import: examples/penguins.csv with examples/penguins.sql (NA is NULL)"
"$SLUICE" import --db "$OUT/penguins" --schema examples/penguins.sql --header --null NA \
    examples/penguins.csv
echo "== sluice tables"
"$SLUICE" tables --db "$OUT/penguins"
echo "== sluice scan --table penguins --limit 5"
"$SLUICE" scan --db "$OUT/penguins" --table penguins --limit 5
echo "== sluice get --table penguins --pk 4 (a row of NULLs, as JSON)"
"$SLUICE" get --db "$OUT/penguins" --table penguins --pk 4
echo "== sluice scan --index by_species_island --start Gentoo,Biscoe --limit 3 --format json"
"$SLUICE" scan --db "$OUT/penguins" --table penguins --index by_species_island \
    --start Gentoo,Biscoe --limit 3 --format json

echo "== lower level: building $OUT/cities.sst from examples/cities.tsv (zstd, bloom filter)"
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
