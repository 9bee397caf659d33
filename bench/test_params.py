"""The anchors do the same work as Sluice: their printed settings must match Sluice's.

Reads every result line of the committed full run (`bench/results/full.jsonl`, the run
BENCHMARKS.md was generated from) and of the latest local run (`bench/out/results.jsonl`, which
CI's `bench/run --quick` writes just before this test), and fails if an anchor's block size,
Bloom bits, cache bytes, compression, memtable size or (kv-bulkload) sort differ from Sluice's
in the same workload, unless EXCEPTIONS declares why.
"""

import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent
SOURCES = [BENCH / "results" / "full.jsonl", BENCH / "out" / "results.jsonl",
           BENCH / "results" / "l0.jsonl"]
CHECKED = ["block_size", "bloom_bits", "cache_bytes", "compression", "memtable_bytes"]
# Checked only where the workload sorts.
SORTING = {"kv-bulkload": ["sort"]}
ANCHORS = ["rocksdb", "pebble"]


def pebble_cache(sluice):
    # Pebble charges up to MemTableStopWritesThreshold (2) memtables to its block cache: the
    # same 32 MiB of blocks needs the block share plus two memtables.
    return sluice["cache_bytes"] + 2 * sluice["memtable_bytes"]


# (engine, setting) -> (why, the value the anchor must then have given Sluice's params).
EXCEPTIONS = {
    ("pebble", "cache_bytes"): ("Pebble charges memtables to its cache", pebble_cache),
}


def lines(path):
    if not path.exists():
        return []
    out = []
    for raw in path.read_text().splitlines():
        raw = raw.strip()
        if raw:
            d = json.loads(raw)
            if "workload" in d and "engine" in d and "error" not in d and "params" in d:
                out.append(d)
    return out


def mismatches(results):
    """Every (workload, engine, setting, anchor value, expected) that differs; [] when fair."""
    bad = []
    by = {}
    for r in results:
        by.setdefault((r["workload"], r["engine"]), []).append(r["params"])
    for (workload, engine), params in sorted(by.items()):
        if engine not in ANCHORS or (workload, "sluice") not in by:
            continue
        ref = by[(workload, "sluice")][0]
        for p in params:
            for k in CHECKED + SORTING.get(workload, []):
                if k not in ref:
                    bad.append((workload, "sluice", k, None, "printed"))
                    continue
                exc = EXCEPTIONS.get((engine, k))
                want = exc[1](ref) if exc else ref[k]
                if p.get(k) != want:
                    bad.append((workload, engine, k, p.get(k), want))
    return bad


def check(source, hint):
    results = lines(source)
    assert results, f"{source} has no result lines: {hint}"
    assert "sluice" in {r["engine"] for r in results}
    assert mismatches(results) == []


def test_committed_full_run_had_equal_settings():
    check(SOURCES[0], "commit the full run BENCHMARKS.md was generated from")


def test_committed_l0_run_had_equal_settings():
    check(SOURCES[2], "commit the run BENCHMARKS-L0.md was generated from (bench/run l0)")


def test_latest_run_had_equal_settings():
    check(SOURCES[1], "run bench/run --quick first (scripts/test.sh does)")


def test_checker_catches_a_different_setting():
    base = {"block_size": 4096, "bloom_bits": 10, "cache_bytes": 32 << 20,
            "compression": "none", "memtable_bytes": 64 << 20, "sort": "radix"}
    rocks = dict(base, block_size=16384)
    pebble = dict(base, cache_bytes=pebble_cache(base))
    results = [
        {"workload": "kv-bulkload", "engine": "sluice", "params": base},
        {"workload": "kv-bulkload", "engine": "rocksdb", "params": rocks},
        {"workload": "kv-bulkload", "engine": "pebble", "params": pebble},
    ]
    assert mismatches(results) == [("kv-bulkload", "rocksdb", "block_size", 16384, 4096)]
    # Pebble with Sluice's cache size (no memtable reservation) is caught too.
    results[2]["params"] = dict(base)
    assert ("kv-bulkload", "pebble", "cache_bytes", 32 << 20, pebble_cache(base)) in mismatches(results)
    # A different sort in kv-bulkload is caught; fill workloads do not sort.
    results[1]["params"] = dict(base, sort="std::sort_unstable")
    results[2]["params"] = pebble
    assert mismatches(results) == [("kv-bulkload", "rocksdb", "sort", "std::sort_unstable", "radix")]
