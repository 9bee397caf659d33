"""The anchors do the same work as Sluice: their printed settings must match Sluice's.

Reads every result line of the committed full run (`bench/results/full.jsonl`, the run
BENCHMARKS.md was generated from) and of the latest local run (`bench/out/results.jsonl`, which
CI's `bench/run --quick` writes just before this test), and fails if an anchor's block size,
Bloom bits, cache bytes, compression, memtable size, (kv-bulkload) sort or (L0 workloads) flush
split bytes and L0 stop trigger differ from Sluice's in the same workload, unless EXCEPTIONS
declares why. Pebble's settings are read back from its Options and RocksDB's block size,
memtable size and compression from the DB's OPTIONS file where a DB exists.
"""

import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent
SOURCES = [BENCH / "results" / "full.jsonl", BENCH / "out" / "results.jsonl",
           BENCH / "results" / "l0.jsonl"]
CHECKED = ["block_size", "bloom_bits", "cache_bytes", "compression", "memtable_bytes"]
# Checked only where they matter: the sort where the workload sorts, L0 settings where L0 is
# what is measured (RocksDB has no flush splitting: not checked for it).
EXTRA = {"kv-bulkload": ["sort"],
         "l0-fillrandom": ["flush_split_bytes", "l0_stop_writes"],
         "l0-fillrandom-widefile": ["flush_split_bytes", "l0_stop_writes"],
         "l0-ingest-random": ["flush_split_bytes", "l0_stop_writes"]}
NOT_APPLICABLE = {("rocksdb", "flush_split_bytes")}
ANCHORS = ["rocksdb", "pebble"]


def pebble_cache(sluice):
    # Pebble charges up to MemTableStopWritesThreshold (2) memtables to its block cache: the
    # same 32 MiB of blocks needs the block share plus two memtables.
    return sluice["cache_bytes"] + 2 * sluice["memtable_bytes"]


# Workloads where Pebble's WAL is on and its memtables grow (and are charged to its cache).
PEBBLE_MEMTABLES_IN_CACHE = {"fillseq", "fillrandom", "fillrandom-sync", "overwrite", "readrandom",
                             "seekrandom", "block_writer", "block_writer-ops", "ingest-under-load",
                             "l0-fillrandom",
                             "l0-fillrandom-widefile", "l0-ingest-random"}

# (engine, setting) -> (why, the workloads it covers, the value the anchor must then have given
# Sluice's params).
EXCEPTIONS = {
    ("pebble", "cache_bytes"): ("Pebble charges memtables to its cache",
                                PEBBLE_MEMTABLES_IN_CACHE, pebble_cache),
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
            for k in CHECKED + EXTRA.get(workload, []):
                if (engine, k) in NOT_APPLICABLE:
                    continue
                if k not in ref:
                    bad.append((workload, "sluice", k, None, "printed"))
                    continue
                exc = EXCEPTIONS.get((engine, k))
                want = exc[2](ref) if exc and workload in exc[1] else ref[k]
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
    big = pebble_cache(base)

    def run(workload, rocks, pebble):
        return mismatches([
            {"workload": workload, "engine": "sluice", "params": base},
            {"workload": workload, "engine": "rocksdb", "params": rocks},
            {"workload": workload, "engine": "pebble", "params": pebble},
        ])

    # A different block size is caught.
    assert run("kv-bulkload", dict(base, block_size=16384), dict(base)) == [
        ("kv-bulkload", "rocksdb", "block_size", 16384, 4096)]
    # WAL on (fillrandom): Pebble must have the block share + its memtable reservation ...
    assert run("fillrandom", dict(base), dict(base, cache_bytes=big)) == []
    assert run("fillrandom", dict(base), dict(base)) == [
        ("fillrandom", "pebble", "cache_bytes", 32 << 20, big)]
    # ... and with the WAL off (kv-bulkload) the same cache as Sluice.
    assert run("kv-bulkload", dict(base), dict(base, cache_bytes=big)) == [
        ("kv-bulkload", "pebble", "cache_bytes", big, 32 << 20)]
    # A different sort is caught in kv-bulkload; fill workloads do not sort.
    assert run("kv-bulkload", dict(base, sort="std::sort_unstable"), dict(base)) == [
        ("kv-bulkload", "rocksdb", "sort", "std::sort_unstable", "radix")]
    assert run("fillrandom", dict(base, sort="other"), dict(base, cache_bytes=big)) == []
    # L0 workloads also compare flush splitting (not RocksDB's: it has none) and the L0 stop.
    l0 = dict(base, flush_split_bytes=4 << 20, l0_stop_writes=36)
    assert mismatches([
        {"workload": "l0-fillrandom", "engine": "sluice", "params": l0},
        {"workload": "l0-fillrandom", "engine": "rocksdb", "params": dict(base, l0_stop_writes=36)},
        {"workload": "l0-fillrandom", "engine": "pebble",
         "params": dict(l0, cache_bytes=big, flush_split_bytes=128 << 20)},
    ]) == [("l0-fillrandom", "pebble", "flush_split_bytes", 128 << 20, 4 << 20)]
