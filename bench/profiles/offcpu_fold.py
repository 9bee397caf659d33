#!/usr/bin/env python3
"""Folded off-CPU stacks (weight = microseconds off CPU) of the writer threads from `perf script`
of sched:sched_switch -g; pacing sleeps (clock_nanosleep) are left out."""
import re, sys, collections
COMM = sys.argv[1]
hdr = re.compile(r'^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch:\s+(.*)$')
out = {}
fold = collections.Counter()
lines = sys.stdin.read().split('\n')
i = 0
while i < len(lines):
    m = hdr.match(lines[i]); i += 1
    if not m: continue
    st = []
    while i < len(lines) and lines[i].startswith(('\t', ' ')) and lines[i].strip():
        p = lines[i].strip().split(None, 1); i += 1
        if len(p) == 2: st.append(p[1].split('+0x')[0])
    t = float(m.group(4))
    pm = re.search(r'prev_comm=(.*?) prev_pid=(\d+) .*?prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)', m.group(5))
    pc, pp, ps, nc, np_ = pm.groups()
    if pc.startswith(COMM) and 'do_nanosleep' not in st and 'Db::put' in ';'.join(st):
        out[pp] = (t, ps, st)
    if np_ in out:
        t0, ps0, s0 = out.pop(np_)
        us = int((t - t0) * 1e6)
        if us > 0:
            frames = [f for f in reversed(s0) if not f.startswith('[unknown')]
            fold[';'.join(['writer (' + ps0 + ')'] + frames)] += us
for k, v in fold.items():
    print(k, v)
