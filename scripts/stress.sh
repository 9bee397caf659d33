#!/usr/bin/env bash
# Long stress run: builds sluice-stress in release, then alternates its modes for H hours
# (concurrent stress on a real directory, SIGKILL crash rounds, MemFs faults + power loss,
# SIGKILL crash rounds with imports running, imports with injected I/O errors beside the
# concurrent workload), in chunks of at most 10 minutes, each chunk with
# the next seed. `--modes import` (comma-separated) runs only some of them. Prints every chunk's TOTALS line
# and, at the end, one line with the sums (ops, kills, fault rounds, anomalies). Exits 1 if any
# chunk found an anomaly; the failing chunk's output (seed, operation, key, history) is kept in
# the log directory.
#
#   scripts/stress.sh --hours 2 [--seed 100] [--threads 8] [--modes run,crash,faults,import,import-faults]
#                     [--bin path] [--log dir] [--jobs N]
#
# `--jobs N` runs N such streams side by side (seeds S, S+100000, ...; logs in DIR/jobK) and
# prints their summed totals: the driver of a crash round is one thread, so on a 2-core machine
# two streams do about twice the rounds an hour.
set -euo pipefail
cd "$(dirname "$0")/.."

hours=1
seed=$(date +%s)
threads=8
bin=""
log=""
mode_list="run,crash,faults,import,import-faults"
jobs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --hours) hours=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --modes) mode_list=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) echo "usage: $0 --hours H [--seed S] [--threads N] [--modes LIST] [--bin PATH] [--log DIR] [--jobs N]" >&2; exit 2 ;;
  esac
done

if [ -z "$bin" ]; then
  cargo build --release -q -p sluice-stress
  bin="$PWD/target/release/sluice-stress"
fi
log=${log:-$(mktemp -d /tmp/sluice-stress-log.XXXXXX)}
mkdir -p "$log"

if [ "$jobs" -gt 1 ]; then
  echo "stress: $jobs streams of ${hours}h from seed $seed, logs in $log/job*"
  pids=()
  for k in $(seq 0 $(( jobs - 1 ))); do
    # Each stream in a process group of its own, so an interrupt stops all of it.
    setsid bash "$0" --hours "$hours" --seed $(( seed + k * 100000 )) --threads "$threads" \
      --modes "$mode_list" --bin "$bin" --log "$log/job$k" > "$log/job$k.out" 2>&1 &
    pids+=($!)
  done
  trap 'for p in "${pids[@]}"; do kill -- -"$p" 2>/dev/null; done' INT TERM
  failed_jobs=0
  for p in "${pids[@]}"; do wait "$p" || failed_jobs=$(( failed_jobs + 1 )); done
  trap - INT TERM
  # Every stream's chunks, then the sum of their STRESS TOTALS lines (a stream with none, or
  # one that exited non-zero, counts as an anomaly).
  sum="" failed_list=""
  for k in $(seq 0 $(( jobs - 1 ))); do
    { grep -E '^(TOTALS|ANOMALY|  )' "$log/job$k.out" || true; } | sed "s/^/job$k: /"
    t=$(grep '^STRESS TOTALS' "$log/job$k.out" || echo "STRESS TOTALS anomalies=1")
    echo "job$k: $t"
    case "$t" in *" failed="*) failed_list="$failed_list job$k:${t#* failed=}" ;; esac
    sum="$sum ${t#STRESS TOTALS }"
  done
  echo "$sum failed_jobs=$failed_jobs" | tr ' ' '\n' | awk -F= -v jobs="$jobs" -v hours="$hours" -v failed="$failed_list" '
    $1 == "elapsed_s" { if ($2 > el) el = $2; next }
    $2 ~ /^[0-9]+$/ && $1 != "hours" { s[$1] += $2; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
    END {
      if (s["failed_jobs"] > 0 && s["anomalies"] == 0) s["anomalies"] = s["failed_jobs"]
      line = "STRESS TOTALS jobs=" jobs " hours=" hours " elapsed_s=" el + 0
      for (i = 1; i <= n; i++) if (order[i] != "failed_jobs") line = line " " order[i] "=" s[order[i]]
      if (failed != "") line = line " failed=" failed
      print line
      exit (s["anomalies"] > 0)
    }'
  exit $?
fi
total=$(awk -v h="$hours" 'BEGIN { printf "%d", h * 3600 }')
start=$(date +%s)
echo "stress: ${hours}h from seed $seed, logs in $log"

ops=0; kills=0; faults=0; imports=0; interrupted=0; import_faults=0; resumes=0; resumed=0; torn=0; anomalies=0; chunks=0; failed_seeds=""
mode_index=0
IFS=, read -r -a modes <<< "$mode_list"
nmodes=${#modes[@]}
while :; do
  now=$(date +%s)
  left=$(( total - (now - start) ))
  [ "$left" -ge 20 ] || break
  # Chunks of at most 10 minutes, and at least one chunk per mode in short runs.
  chunk=$(( total / nmodes > 60 ? total / nmodes : 60 )); chunk=$(( chunk < 600 ? chunk : 600 ))
  chunk=$(( left < chunk ? left : chunk ))
  mode=${modes[$(( mode_index % nmodes ))]}
  mode_index=$(( mode_index + 1 ))
  work=$(mktemp -d /tmp/sluice-stress-work.XXXXXX)
  out="$log/$mode-seed$seed.log"
  case "$mode" in
    run)
      # Phases of 60 s with a close + reopen between them.
      args=(run --seed "$seed" --threads "$threads" --secs "$chunk" --dir "$work" --reopen-every 60) ;;
    crash)
      # A kill every 0.2-2 s plus recovery and verification: about 2.5 s per kill.
      args=(crash --seed "$seed" --threads "$threads" --kills $(( chunk * 2 / 5 + 1 )) --dir "$work") ;;
    import)
      # A kill every 0.3-3 s of a child importing beside the workload, plus recovery and the
      # imports' verification (a reference import per logged one): about 4 s per kill. Half
      # the imports a kill left absent are resumed, their unsynced files torn first.
      args=(crash --imports --seed "$seed" --threads "$(( threads < 4 ? threads : 4 ))" \
        --min-ms 300 --max-ms 3000 --kills $(( chunk / 4 + 1 )) --dir "$work") ;;
    import-faults)
      # Imports one after another beside the workload, three in four with EIO, ENOSPC, a torn
      # write or a failed fsync injected at a random point (half of those then resumed), each
      # checked at once; phases of 60 s.
      args=(run --imports --seed "$seed" --threads "$(( threads < 4 ? threads : 4 ))" \
        --secs "$chunk" --dir "$work" --reopen-every 60) ;;
    faults)
      # Rounds of 1.5 s (plus recovery); 5 rounds per seed.
      args=(faults --seed "$seed" --seeds $(( chunk / 10 + 1 )) --rounds 5 --threads 4) ;;
  esac
  set +e
  "$bin" "${args[@]}" >"$out" 2>&1
  rc=$?
  set -e
  rm -rf "$work"
  line=$(grep '^TOTALS' "$out" || echo "TOTALS mode=$mode seed=$seed ops=0 rounds=0 faults=0 anomalies=1 (no totals: exit $rc)")
  echo "$line"
  field() { echo "$line" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print $2 }' | head -1; }
  ops=$(( ops + $(field ops || echo 0) ))
  n_anom=$(field anomalies); n_anom=${n_anom:-1}
  if [ "$rc" -ne 0 ] && [ "$n_anom" -eq 0 ]; then n_anom=1; fi
  anomalies=$(( anomalies + n_anom ))
  if [ "$mode" = crash ] || [ "$mode" = import ]; then kills=$(( kills + $(field rounds || echo 0) )); fi
  num() { local v; v=$(field "$1"); echo "${v:-0}"; }
  if [ "$mode" = import ] || [ "$mode" = import-faults ]; then
    imports=$(( imports + $(num imports_done) + $(num imports_failed) ))
    interrupted=$(( interrupted + $(num interrupted_applied) + $(num interrupted_absent) ))
    import_faults=$(( import_faults + $(num imports_faulted) ))
    resumes=$(( resumes + $(num resume_runs) ))
    resumed=$(( resumed + $(num resumed) ))
    torn=$(( torn + $(num torn_files) ))
  fi
  if [ "$mode" = faults ]; then faults=$(( faults + $(field faults || echo 0) )); fi
  if [ "$n_anom" -gt 0 ]; then
    failed_seeds="$failed_seeds $mode:$seed"
    sed -n '/^ANOMALY/,$p' "$out" | head -40
  fi
  chunks=$(( chunks + 1 ))
  seed=$(( seed + 1 ))
done

elapsed=$(( $(date +%s) - start ))
echo "STRESS TOTALS hours=$hours elapsed_s=$elapsed chunks=$chunks ops=$ops kills=$kills faults=$faults imports=$imports imports_interrupted=$interrupted imports_faulted=$import_faults resume_runs=$resumes resumed=$resumed torn_files=$torn anomalies=$anomalies${failed_seeds:+ failed=$failed_seeds}"
[ "$anomalies" -eq 0 ]
