#!/usr/bin/env python3
"""The Python package against its anchors, in one run (writes BENCHMARKS-PYTHON.md).

    target/py-venv/bin/python bench/python/run.py [--rounds 3] [--kv N] [--rows N] [--quick]

Run it with the venv scripts/build_python.sh makes (it holds the wheel, rocksdict, pyarrow,
pandas, polars and duckdb). Three tables, each from rounds run in alternation (A B A B ...),
medians with min–max, ratios from the medians:

1. Point ops and scans, Sluice vs rocksdict (RocksDB's Python binding) on the same data and
   settings: 16-byte keys and 100-byte values in a random order (the kv-bulkload stream of
   BENCH-SPEC.md), WAL on without fsync for both, no compression, 64 MiB memtables, Bloom
   filter 10 bits/key; rocksdict in raw mode (bytes keys and values, no pickling) as its docs
   advise for binary data. `put` single (one call a key), `put` batched (write batches of
   1,000), `get` (every key once, random order, after a flush and with a warm cache: each
   engine reads once first), `scan` (every pair, in key order).
2. Importing a typed table already in memory as a pyarrow Table: `db.import_arrow`, vs
   `db.import_files` of the same rows written as CSV (what `sluice import` does; the CSV is
   written before the clock starts), vs DuckDB `INSERT INTO t SELECT * FROM arrow_table` into a
   persistent DuckDB file whose table has the same PRIMARY KEY, ended by CHECKPOINT (so both
   end durable, with a key index).
3. Parquet import vs CSV import of the same rows (both with `db.import_files`).
"""

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import rocksdict

import sluice

REPO = Path(__file__).resolve().parents[2]

sys.path.insert(0, str(REPO / "bench"))
from kvspec import READ, kv_pair, perm_fn, splitmix64  # noqa: E402 - after the path is set


def kv_pairs(n):
    perm = perm_fn(n)
    return [kv_pair(perm(i)) for i in range(n)]


def timed(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


# -- 1. point ops and scans ---------------------------------------------------------------


class Kv:
    """What both bindings do the same way: single puts, gets, close (each engine's own
    constructor, batches, scan and flush below)."""

    db: Any

    def put_single(self, pairs):
        put = self.db.put
        for k, v in pairs:
            put(k, v)

    def get(self, keys):
        get = self.db.get
        n = 0
        for k in keys:
            n += get(k) is not None
        return n

    def flush(self):
        self.db.flush()

    def close(self):
        self.db.close()


class SluiceKv(Kv):
    name = "sluice"

    def __init__(self, path):
        self.db = sluice.open(
            path,
            write_buffer_size=64 << 20,
            compression="none",
            bloom_bits_per_key=10,
        )

    def put_batched(self, pairs):
        for i in range(0, len(pairs), 1000):
            with self.db.batch() as b:
                for k, v in pairs[i : i + 1000]:
                    b.put(k, v)

    def scan(self):
        n = 0
        for _ in self.db.scan():
            n += 1
        return n



class RocksKv(Kv):
    name = "rocksdict"

    def __init__(self, path):
        o = rocksdict.Options(raw_mode=True)
        o.create_if_missing(True)
        o.set_write_buffer_size(64 << 20)
        o.set_compression_type(rocksdict.DBCompressionType.none())
        t = rocksdict.BlockBasedOptions()
        t.set_bloom_filter(10, False)
        o.set_block_based_table_factory(t)
        self.db = rocksdict.Rdict(str(path), o)

    def put_batched(self, pairs):
        for i in range(0, len(pairs), 1000):
            wb = rocksdict.WriteBatch(raw_mode=True)
            for k, v in pairs[i : i + 1000]:
                wb.put(k, v)
            self.db.write(wb)

    def scan(self):
        n = 0
        it = self.db.iter()
        it.seek_to_first()
        while it.valid():
            it.key()
            it.value()
            n += 1
            it.next()
        return n



def kv_round(engine_cls, pairs, keys, root):
    res = {}
    d = root / f"{engine_cls.name}-single"
    e = engine_cls(d)
    res["put single"] = len(pairs) / timed(lambda: e.put_single(pairs))
    e.close()
    shutil.rmtree(d)
    d = root / f"{engine_cls.name}-batched"
    e = engine_cls(d)
    res["put batched"] = len(pairs) / timed(lambda: e.put_batched(pairs))
    e.flush()
    assert e.get(keys[:1000]) == 1000
    e.get(keys)  # warm the cache: both engines read from memory
    res["get"] = len(keys) / timed(lambda: e.get(keys))
    e.scan()
    res["scan"] = len(pairs) / timed(lambda: e.scan())
    e.close()
    shutil.rmtree(d)
    return res


# -- 2 and 3. imports ---------------------------------------------------------------------

IMPORT_SQL = """CREATE TABLE t (id BIGINT PRIMARY KEY, k INT, price DECIMAL(12,2),
    qty SMALLINT, score DOUBLE, flag BOOLEAN, name TEXT, day DATE, ts TIMESTAMP)"""
DUCK_SQL = """CREATE TABLE t (id BIGINT PRIMARY KEY, k INTEGER, price DECIMAL(12,2),
    qty SMALLINT, score DOUBLE, flag BOOLEAN, name VARCHAR, day DATE, ts TIMESTAMP)"""


def typed_table(n):
    """n rows in a shuffled key order."""
    perm = perm_fn(n)
    ids = [perm(i) for i in range(n)]
    base = datetime.datetime(2020, 1, 1)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array([(i * 7) % 100000 for i in ids], pa.int32()),
            "price": pa.array(
                [datetime_free_decimal(i) for i in ids], pa.decimal128(12, 2)
            ),
            "qty": pa.array([i % 1000 for i in ids], pa.int16()),
            "score": pa.array([i / 7.0 for i in ids], pa.float64()),
            "flag": pa.array([i % 3 == 0 for i in ids], pa.bool_()),
            "name": pa.array([f"customer-{i % 50000}" for i in ids], pa.string()),
            "day": pa.array(
                [datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 3000) for i in ids],
                pa.date32(),
            ),
            "ts": pa.array(
                [base + datetime.timedelta(seconds=i) for i in ids], pa.timestamp("us")
            ),
        }
    )


def datetime_free_decimal(i):
    from decimal import Decimal

    return Decimal(i % 10000000) / 100


def import_round(kind, table, files, root):
    d = root / f"import-{kind}"
    if d.exists():
        shutil.rmtree(d)
    if kind == "duckdb":
        path = root / "duck.db"
        if path.exists():
            path.unlink()
        con = duckdb.connect(str(path))
        con.execute(DUCK_SQL)
        con.register("arrow_table", table)  # a view over the Arrow data, no copy

        def go():
            con.execute("INSERT INTO t SELECT * FROM arrow_table")
            con.execute("CHECKPOINT")

        t = timed(go)
        assert con.execute("SELECT count(*) FROM t").fetchone()[0] == table.num_rows
        con.close()
        path.unlink()
        return t
    with sluice.open(d) as db:
        if kind == "arrow":
            t = timed(lambda: db.import_arrow(IMPORT_SQL, table, progress="off"))
        else:
            t = timed(lambda: db.import_files(IMPORT_SQL, [files[kind]], header=True, progress="off"))
        assert db.table("t").scan(columns=["id"]).to_arrow().num_rows == table.num_rows
    shutil.rmtree(d)
    return t


def stats(xs):
    return statistics.median(xs), min(xs), max(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kv", type=int, default=300_000, help="pairs for the point-op table")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows for the import tables")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one round, no file written")
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    ap.add_argument("--out", default=str(REPO / "BENCHMARKS-PYTHON.md"))
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.kv, a.rows = 1, 2000, 5000
    root = Path(a.dir or tempfile.mkdtemp(prefix="sluice-pybench-"))
    root.mkdir(parents=True, exist_ok=True)
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    say("# Python package benchmarks")
    say()
    say(
        f"One run of `bench/python/run.py --rounds {a.rounds} --kv {a.kv} --rows {a.rows}` on "
        f"{datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; sluice {sluice.__version__}, rocksdict "
        f"{getattr(rocksdict, '__version__', '?')}, duckdb {duckdb.__version__}, pyarrow "
        f"{pa.__version__}. Rounds alternate between engines; medians with min–max over the "
        "rounds; a ratio is Sluice's median over the anchor's. Settings are in the script's "
        "docstring and printed below."
    )
    say()
    # 1.
    pairs = kv_pairs(a.kv)
    keys = [k for k, _ in pairs]
    keys = [keys[splitmix64(i ^ READ) % len(keys)] for i in range(len(keys))]
    results = {"sluice": [], "rocksdict": []}
    for _ in range(a.rounds):
        for cls in (SluiceKv, RocksKv):
            results[cls.name].append(kv_round(cls, pairs, keys, root))
    say(f"## Point ops and scans: {a.kv:,} pairs (16 B keys, 100 B values), ops/s")
    say()
    say("Both: WAL on, no fsync per write, no compression, 64 MiB memtable, Bloom 10 bits/key.")
    say()
    say("| op | Sluice | rocksdict | Sluice / rocksdict |")
    say("|---|---|---|---|")
    for op in ["put single", "put batched", "get", "scan"]:
        s = stats([r[op] for r in results["sluice"]])
        r = stats([r[op] for r in results["rocksdict"]])
        say(
            f"| {op} | {s[0]:,.0f} ({s[1]:,.0f}–{s[2]:,.0f}) | {r[0]:,.0f} ({r[1]:,.0f}–{r[2]:,.0f}) "
            f"| {s[0] / r[0]:.2f}× |"
        )
    say()
    # 2 and 3.
    table = typed_table(a.rows)
    files = {"csv": root / "t.csv", "parquet": root / "t.parquet"}
    pacsv.write_csv(table, files["csv"])
    pq.write_table(table, files["parquet"])
    times = {k: [] for k in ["arrow", "csv", "duckdb", "parquet"]}
    for _ in range(a.rounds):
        for kind in times:
            times[kind].append(import_round(kind, table, files, root))
    mb = files["csv"].stat().st_size / 1e6
    say(
        f"## Import of {a.rows:,} typed rows (BIGINT key in shuffled order, INT, DECIMAL(12,2), "
        f"SMALLINT, DOUBLE, BOOLEAN, TEXT, DATE, TIMESTAMP; {mb:.0f} MB as CSV, "
        f"{files['parquet'].stat().st_size / 1e6:.0f} MB as Parquet/snappy), seconds"
    )
    say()
    say("| path | seconds | rows/s | vs import_arrow |")
    say("|---|---|---|---|")
    names = {
        "arrow": "`db.import_arrow(pyarrow.Table)`",
        "csv": "`db.import_files(CSV)` (= `sluice import`)",
        "duckdb": "DuckDB `INSERT INTO t SELECT * FROM arrow_table` + CHECKPOINT (PRIMARY KEY)",
        "parquet": "`db.import_files(Parquet)`",
    }
    arrow_med = stats(times["arrow"])[0]
    for kind in ["arrow", "csv", "duckdb", "parquet"]:
        m, lo, hi = stats(times[kind])
        say(
            f"| {names[kind]} | {m:.2f} ({lo:.2f}–{hi:.2f}) | {a.rows / m:,.0f} | "
            f"{m / arrow_med:.2f}× the time |"
        )
    say()
    csv_med, pq_med = stats(times["csv"])[0], stats(times["parquet"])[0]
    say(
        f"import_arrow is {csv_med / arrow_med:.2f}× as fast as the CSV import and "
        f"{stats(times['duckdb'])[0] / arrow_med:.2f}× as fast as DuckDB; the Parquet import is "
        f"{csv_med / pq_med:.2f}× as fast as the CSV import."
    )
    say()
    threads, memory = duckdb.execute(
        "SELECT current_setting('threads'), current_setting('memory_limit')"
    ).fetchall()[0]
    say(
        f"DuckDB settings: threads={threads}, memory_limit={memory} (its defaults), a persistent "
        "file, the table created with its PRIMARY KEY before the insert. Sluice: import "
        "defaults (threads = cores, memory = its default budget)."
    )
    if not a.quick:
        Path(a.out).write_text("\n".join(lines) + "\n")
        print(f"wrote {a.out}")
    if a.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
