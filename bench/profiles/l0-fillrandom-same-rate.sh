#!/bin/bash
# l0-fillrandom's L0 shape at Pebble's write rate: per round, Pebble's l0-fillrandom, then
# Sluice's at full speed, then Sluice's paced (`--fill-rate`) to the write rate Pebble just
# reached. Needs the release sluice-bench and the Pebble anchor (`bench/run` builds both).
# One result line each, in order, to stdout (bench/results/l0-fillrandom-same-rate.jsonl).
set -euo pipefail
cd "$(dirname "$0")/../.."
P=bench/anchors/pebble/pebble-anchor
B=target/release/sluice-bench
N=${N:-10000000}
for _ in 1 2 3; do
  peb=$($P l0-fillrandom --n "$N" 2>/dev/null | tail -1)
  echo "$peb"
  rate=$(python3 -c 'import json,sys; print(int(json.loads(sys.argv[1])["write_ops_per_s"]))' "$peb")
  $B l0-fillrandom --n "$N" 2>/dev/null | tail -1
  $B l0-fillrandom --n "$N" --fill-rate "$rate" 2>/dev/null | tail -1
done
