#!/bin/bash
# ingest-under-load, Sluice against the RocksDB anchor only, in more alternated rounds than
# bench/run's three (its p99.9/p99.99 move from run to run on a small VM). Same arguments as
# bench/run (N 1,000,000, 20 s per phase, 20,000 puts/s). Needs the release sluice-bench and
# the RocksDB anchor (`bench/run` builds both). One result line per run, in order, to stdout
# (bench/results/ingest-under-load-vs-rocksdb.jsonl).
set -euo pipefail
cd "$(dirname "$0")/../.."
S=target/release/sluice-bench
R=${ROCKSDB_ANCHOR_TARGET:-bench/anchors/rocksdb/target}/release/rocksdb-anchor
ROUNDS=${ROUNDS:-6}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
for i in $(seq 1 "$ROUNDS"); do
  if [ $((i % 2)) = 1 ]; then order="$S $R"; else order="$R $S"; fi
  for b in $order; do
    rm -rf "$D/db" && mkdir -p "$D/db"
    "$b" ingest-under-load --n 1000000 --dir "$D/db" --rounds 1 --seconds 20 --rate 20000 2>/dev/null | grep '^{' | tail -1
  done
done
