"""Commit-check cost beside row deletes (ARCHITECTURE.md, "Imports of one table at once"): a
1M-key import into a 1M-row table, alone and beside a thread deleting unrelated rows (one every
2 ms) during it; prints the import time and the deletes' p99 and max latency, 3 rounds each.
Run with the wheel's venv: target/py-venv/bin/python bench/import/commit_check.py"""
import os, random, shutil, tempfile, threading, time
import sluice

SCHEMA = "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);"
N = 1_000_000
work = tempfile.mkdtemp(prefix="slowpath-", dir="/tmp")
even = os.path.join(work, "even.csv")
with open(even, "w") as f:
    f.write("".join(f"{2*i},e{i}\n" for i in range(N)))
odds = list(range(N)); random.Random(7).shuffle(odds)
odd = os.path.join(work, "odd.csv")
with open(odd, "w") as f:
    f.write("".join(f"{2*i+1},o{i}\n" for i in odds))

def one(with_deletes):
    d = os.path.join(work, "db"); shutil.rmtree(d, ignore_errors=True)
    db = sluice.open(d)
    db.import_files(SCHEMA, [even], progress="off")
    t = db.table("t")
    lat, stop = [], threading.Event()
    def deleter():
        k = 0
        while not stop.is_set():
            t0 = time.perf_counter(); t.delete(2 * k); lat.append(time.perf_counter() - t0)
            k += 1; time.sleep(0.002)
    th = threading.Thread(target=deleter)
    t0 = time.perf_counter()
    if with_deletes: th.start()
    db.import_files(SCHEMA, [odd], progress="off")
    el = time.perf_counter() - t0
    stop.set()
    if with_deletes: th.join()
    db.close()
    lat.sort()
    p = (lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3) if lat else (lambda q: 0)
    return el, len(lat), p(0.99), (lat[-1] * 1e3 if lat else 0)

for r in range(3):
    for wd in (False, True):
        el, n, p99, mx = one(wd)
        print(f"round {r} deletes={wd}: import {el:.2f} s; deletes {n}, p99 {p99:.2f} ms, max {mx:.2f} ms", flush=True)
shutil.rmtree(work)
