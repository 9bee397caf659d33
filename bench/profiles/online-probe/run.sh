#!/bin/sh
# The paced wake-up probe beside SCHED_IDLE loads (bench/import/README.md, "Pacing, direct
# I/O, and what the tail follows"). Usage: bench/profiles/online-probe/run.sh [FILE_ON_THE_DISK]
# Needs gcc, GNU dd and chrt; writes and reads a 400 MiB file at FILE (default ./probe-data).
set -e
here=$(cd "$(dirname "$0")" && pwd)
F=${1:-./probe-data}
gcc -O2 -pthread "$here/probe.c" -o /tmp/sluice-probe
S="chrt -i 0 sh -c 'while :; do :; done' & chrt -i 0 sh -c 'while :; do :; done' &"
case_() {
    echo "== $1"
    sh -c "$2" & L=$!
    sleep 0.3
    /tmp/sluice-probe 8
    kill $L 2>/dev/null || true
    pkill -f "dd if=" 2>/dev/null || true
    pkill -f "while :; do :; done" 2>/dev/null || true
    wait 2>/dev/null || true
    sleep 1
}
case_ none "sleep 20"
case_ "2 idle spinners" "$S sleep 20"
case_ "2 idle spinners + buffered writes" "$S chrt -i 0 sh -c 'while :; do dd if=/dev/zero of=$F bs=1M count=400 2>/dev/null; rm -f $F; done'"
case_ "2 idle spinners + direct writes" "$S chrt -i 0 sh -c 'while :; do dd if=/dev/zero of=$F bs=1M count=400 oflag=direct 2>/dev/null; done'"
case_ "buffered writes + fdatasync" "chrt -i 0 sh -c 'while :; do dd if=/dev/zero of=$F bs=1M count=400 conv=fdatasync 2>/dev/null; done'"
case_ "buffered writes, no sync" "chrt -i 0 sh -c 'while :; do dd if=/dev/zero of=$F bs=1M count=400 2>/dev/null; rm -f $F; done'"
case_ "direct writes (1 MiB)" "chrt -i 0 sh -c 'while :; do dd if=/dev/zero of=$F bs=1M count=400 oflag=direct 2>/dev/null; done'"
dd if=/dev/zero of="$F" bs=1M count=400 oflag=direct 2>/dev/null
case_ "buffered reads from disk (nocache)" "chrt -i 0 sh -c 'while :; do dd if=$F of=/dev/null bs=1M iflag=nocache 2>/dev/null; done'"
case_ "direct reads" "chrt -i 0 sh -c 'while :; do dd if=$F of=/dev/null bs=1M iflag=direct 2>/dev/null; done'"
# An import with no page cache at all: direct writes of one file while direct reads of another,
# then the same beside one idle CPU spinner (an import's worker, at SCHED_IDLE, in user code).
cp "$F" "$F.r"
DW="chrt -i 0 sh -c 'while :; do dd if=/dev/zero of=$F bs=1M count=400 oflag=direct 2>/dev/null; done' &"
DR="chrt -i 0 sh -c 'while :; do dd if=$F.r of=/dev/null bs=1M iflag=direct 2>/dev/null; done' &"
case_ "direct writes + direct reads" "$DW $DR sleep 20"
case_ "1 idle spinner + direct writes + direct reads" "chrt -i 0 sh -c 'while :; do :; done' & $DW $DR sleep 20"
rm -f "$F.r"
rm -f "$F"
