#!/usr/bin/env python3
"""The distributed import against the single-machine one, in one run (prints a Markdown table).

    target/py-venv/bin/python bench/python/distributed.py [--n 1000000] [--files 8]

The kv-bulkload pairs of BENCH-SPEC.md (shuffled order) as `--files` CSV files of hex text
(the bench/import kv table: `k TEXT PRIMARY KEY, v TEXT`), imported by: `sluice import` on one
machine (import_files), and sluice.distributed on Ray with 1 and 2 workers and Spark local[1]
and local[2]. Each run: wall time (engine start-up excluded: the engine is up before the clock
starts), bytes written, how many of the ingested files landed at the bottom level (all of
them: nothing will be compacted), phases, and the largest range over the mean (balance). One round each (the engines' start-up dominates repeated rounds).
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "bench" / "import"))

import sluice  # noqa: E402
from sluice.distributed import RayEngine, SparkEngine, run  # noqa: E402

import run as import_bench  # noqa: E402 - bench/import/run.py: gen_kv, kv_schema


def files_of(root, n, k):
    """n pairs split into k CSV files (each a slice of the shuffled stream)."""
    whole = root / "kv.csv"
    import_bench.gen_kv(whole, n, True)
    lines = whole.read_text().splitlines(keepends=True)
    out = []
    for i in range(k):
        p = root / f"kv-{i}.csv"
        p.write_text("".join(lines[i * len(lines) // k:(i + 1) * len(lines) // k]))
        out.append(p)
    whole.unlink()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=8)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sluice-dist-bench-"))
    files = files_of(root, a.n, a.files)
    schema = import_bench.kv_schema()
    rows = []
    db = root / "single"
    t0 = time.perf_counter()
    with sluice.open(db) as d:
        rep = d.import_files(schema, files, progress="off")
    at_l6 = sum(1 for f in rep.files if f["level"] == 6)
    rows.append(("sluice import (one process)", time.perf_counter() - t0, sum(f["bytes"] for f in rep.files),
                 f"{at_l6}/{len(rep.files)}", "-", "parse+sort %.2f, merge %.2f, ingest %.2f" % (
                     rep.phases["parse_sort"], rep.phases["merge"], rep.phases["ingest"])))
    shutil.rmtree(db)
    inputs = [(str(f), ("file", str(f))) for f in files]
    import ray
    for label, make, workers in [
        ("Ray, 1 worker", RayEngine, 1),
        ("Ray, 2 workers", RayEngine, 2),
        ("Spark local[1]", SparkEngine, 1),
        ("Spark local[2]", SparkEngine, 2),
    ]:
        engine = make(workers)
        db = root / f"{engine.name}-{workers}"
        t0 = time.perf_counter()
        s = run(engine, str(db), schema, inputs, ranges=2 * workers)
        wall = time.perf_counter() - t0
        ph = s["phases"]
        at_l6 = sum(1 for f in s["files"] if f["level"] == 6)
        rows.append((label, wall, s["bytes"], f"{at_l6}/{len(s['files'])}", f"{s['balance']:.2f}",
                     ", ".join(f"{k} {v:.2f}" for k, v in ph.items() if k != "total")))
        shutil.rmtree(db)
        if isinstance(engine, RayEngine):
            ray.shutdown()
        else:
            engine.spark.stop()
    mb = sum(f.stat().st_size for f in files) / 1e6
    print(f"## Distributed import: {a.n:,} kv pairs in {a.files} CSV files ({mb:.0f} MB), {os.cpu_count()} cores\n")
    print("| run | seconds | bytes written | files at L6 | balance | phases (s) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.2f} | {r[2] / 1e6:.1f} MB | {r[3]} | {r[4]} | {r[5]} |")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
