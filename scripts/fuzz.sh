#!/usr/bin/env bash
# Coverage-guided fuzzing of every reader (docs/FUZZING.md): builds the cargo-fuzz targets on
# nightly (installing cargo-fuzz if missing) and runs each for N seconds, one at a time, under
# a memory bound: an allocation sized by a length read from the input fails the run
# (-malloc_limit_mb), and so does a process grown past -rss_limit_mb. Each target grows its
# working corpus (fuzz/corpus/TARGET, not committed) from the committed seeds
# (testdata/fuzz/TARGET); a crash, timeout or OOM input lands in fuzz/artifacts/TARGET.
# Prints one summary line per target: executions, exec/s, cov, ft, corpus files, crashes.
#
#   scripts/fuzz.sh [--seconds N] [--merge] [TARGET|all]...
#
# --merge: after the run, add the working-corpus inputs that reach new coverage to the
# committed seeds (libFuzzer -merge=1), to commit them.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=600
merge=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

# target → the crate whose fuzz/ directory holds it, and extra seed directories.
crate_of() {
  case "$1" in
    table_reader|wal|manifest|options) echo crates/sluice ;;
    readers|schema|parquet|arrow) echo crates/sluice-import ;;
    lsm) echo crates/sluice-cli ;;
    *) echo "unknown target $1" >&2; exit 2 ;;
  esac
}
extra_seeds() {
  case "$1" in
    table_reader) echo testdata/rocksdb ;;
  esac
}
ALL=(table_reader wal manifest options readers schema parquet arrow lsm)
if [ ${#targets[@]} -eq 0 ] || [ "${targets[0]}" = all ]; then
  targets=("${ALL[@]}")
fi

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# One target directory for the three fuzz crates, so that they share built dependencies.
target_dir=$PWD/target/fuzz
logs=$PWD/target/fuzz-logs
mkdir -p "$logs"
limits=(-rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=30 -print_final_stats=1)

for t in "${targets[@]}"; do
  crate=$(crate_of "$t")
  seeds=$crate/testdata/fuzz/$t
  mkdir -p "$seeds" "$crate/fuzz/corpus/$t"
  extra=$(extra_seeds "$t")
  log=$logs/$t.log
  (
    cd "$crate"
    cargo +nightly fuzz build --target-dir "$target_dir" "$t"
    set +e
    cargo +nightly fuzz run --target-dir "$target_dir" "$t" "fuzz/corpus/$t" "testdata/fuzz/$t" \
      ${extra:+"$extra"} -- "${limits[@]}" -max_total_time="$seconds" >"$log" 2>&1
    echo "exit=$?" >>"$log"
    if [ "$merge" = 1 ]; then
      cargo +nightly fuzz run --target-dir "$target_dir" "$t" "testdata/fuzz/$t" "fuzz/corpus/$t" \
        -- -merge=1 "${limits[@]}" >"$log.merge" 2>&1
    fi
  )
  # libFuzzer's last status line (#N DONE/pulse cov: ft: corp:) and its final stats.
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(ls "$crate/fuzz/corpus/$t" | wc -l)
  crashes=$(ls "$crate/fuzz/artifacts/$t" 2>/dev/null | wc -l)
  echo "$t: seconds=$seconds execs=${execs:-?} exec/s=${rate:-?} cov=${cov:-?} ft=${ft:-?}" \
    "corpus=$corp artifacts=$crashes $(tail -1 "$log")"
done
