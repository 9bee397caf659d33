#!/usr/bin/env python3
"""The distributed commit's ingest: copy + verify against hard-link + verify (and hard-link
unverified, the floor), on the same range-set files, in one session.

    target/py-venv/bin/python bench/python/distributed_commit.py [--n 5000000] [--files 8]

The kv pairs of bench/python/distributed.py, built by sluice.distributed (local engine, 4
ranges) with ``output="files"``; then the range sets are ingested into fresh Dbs, each mode
twice from its own copy of the files (the page cache warm for all alike); best of 2 printed.
"""

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import sluice
from sluice.distributed import Engine, run

from distributed import files_of, import_bench

MODES = {
    "copy + verify": {},
    "hard-link + verify": {"link_files": True},
    "hard-link, unverified": {"link_files": True, "verify_checksums": False, "verify_keys": False},
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5_000_000)
    ap.add_argument("--files", type=int, default=8)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sluice-commit-bench-"))
    try:
        files = files_of(root, a.n, a.files)
        run(Engine(), str(root / "src"), import_bench.kv_schema(),
            [(str(f), ("file", str(f))) for f in files], ranges=4, output="files",
            out_dir=str(root / "out"))
        sets = json.loads((root / "out" / "ranges.json").read_text())
        rel = [f["path"] for r in sets["ranges"] for f in r["files"]]
        size = sum(os.path.getsize(root / "out" / p) for p in rel)
        best = {}
        for _ in range(2):
            for mode, options in MODES.items():
                copy = root / "copy"
                shutil.copytree(root / "out", copy)
                os.sync()
                with sluice.open(root / "db") as db:
                    t = time.perf_counter()
                    db.ingest([copy / p for p in rel], **options)
                    took = time.perf_counter() - t
                best[mode] = min(best.get(mode, took), took)
                shutil.rmtree(copy)
                shutil.rmtree(root / "db")
        print(f"{a.n} pairs, {len(rel)} files, {size / 1e6:.1f} MB")
        print("| ingest | seconds | GB/s |\n|---|---|---|")
        for mode, s in best.items():
            print(f"| {mode} | {s:.3f} | {size / s / 1e9:.2f} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
