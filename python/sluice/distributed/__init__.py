"""Import beyond one machine: range-partitioned SSTs built by tasks of an existing engine (Ray,
Spark) and committed in one atomic ingest.

The flow (``run``), with every step that touches data in a task:

1. plan (driver): the table bound to the Db's catalog, the duplicate policy, the inputs;
2. sample (tasks): each input encoded to keys; every ``sample_every``-th key comes back;
3. cut (driver): ``ranges`` ranges per index from the sample (full keys; a unique index on
   its unique prefix, so every holder of a value meets in one range);
4. partition (tasks): each input encoded again, its entries written per (index, range) as Arrow
   IPC files under the work directory (the shuffle: on several machines it must be shared);
5. build (tasks): each range's entries sorted, duplicates resolved, SSTs written under a
   per-attempt directory — primary ranges first, whose dropped rows the secondary ranges
   then leave out;
6. commit (driver): one manifest per range, disjoint ranges checked, one ``Db`` ingest: every
   file at the bottom level, nothing compacted. Nothing is visible before; a failure leaves the
   Db as it was, and the work directory is removed either way.

An input is one source of rows in a known order — a file (read by the import's own readers, so
a row's place and value are what ``sluice import`` sees) or one Arrow block of a dataset — and
rows are ordered by (input number, row), which is what ``on_duplicate="first"/"last"`` follow.

Engines: ``"ray"`` (remote tasks), ``"spark"`` (tasks of a SparkContext), ``"local"`` (this
process, for tests and small data). ``sluice.ray.import_dataset`` and
``sluice.spark.import_dataframe`` feed datasets and DataFrames through the same flow; the
command ``python -m sluice.distributed import --engine ray|spark ...`` takes files.
"""

from __future__ import annotations

import importlib
import os
import json
import shutil
import sys
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import _errors, _sluice
from .._db import open as _open

Task = Callable[[Any], Any]


class _Guarded:
    """A task that returns a data error (a bad row, a duplicate: deterministic, not worth a
    retry) as its result, so that it reaches the driver as itself with its attributes — Spark
    would hand back only its text. I/O errors still raise: the engine retries those."""

    def __init__(self, fn: Task) -> None:
        self.fn = fn

    def __call__(self, x: Any) -> Tuple[bool, Any]:
        try:
            return True, self.fn(x)
        except _errors.Error as e:
            if isinstance(e, OSError):
                raise
            return False, e


class Engine:
    """Runs a function over items in parallel tasks and returns the results in item order."""

    name = "local"

    def run_tasks(self, fn: Task, items: Sequence[Any]) -> List[Any]:
        """``map`` with data errors raised here, in the driver, as the tasks raised them."""
        out = []
        for ok, value in self.map(_Guarded(fn), items):
            if not ok:
                raise value
            out.append(value)
        return out

    def map(self, fn: Task, items: Sequence[Any]) -> List[Any]:
        return [fn(x) for x in items]


class RayEngine(Engine):
    """Ray remote tasks (``ray.init`` is called with ``num_cpus=workers`` if Ray is not up)."""

    name = "ray"

    def __init__(self, workers: Optional[int] = None) -> None:
        self.ray: Any = importlib.import_module("ray")
        if not self.ray.is_initialized():
            self.ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)

    def map(self, fn: Task, items: Sequence[Any]) -> List[Any]:
        def task(x: Any) -> Any:
            return fn(x)

        remote = self.ray.remote(max_retries=2, retry_exceptions=[OSError])(task)
        return list(self.ray.get([remote.remote(x) for x in items]))


class SparkEngine(Engine):
    """Tasks of a SparkContext (the active session's, or a new ``local[workers]`` one)."""

    name = "spark"

    def __init__(self, workers: Optional[int] = None, spark: Any = None) -> None:
        if spark is None:
            # Workers run this interpreter (the one with sluice installed) unless told otherwise.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            sql = importlib.import_module("pyspark.sql")
            spark = (
                sql.SparkSession.builder.master(f"local[{workers or os.cpu_count() or 1}]")
                .appName("sluice-import")
                .config("spark.ui.enabled", "false")
                .getOrCreate()
            )
        self.spark = spark

    def map(self, fn: Task, items: Sequence[Any]) -> List[Any]:
        if not items:
            return []
        sc = self.spark.sparkContext
        indexed = list(enumerate(items))
        out = sc.parallelize(indexed, len(indexed)).map(lambda kv: (kv[0], fn(kv[1]))).collect()
        return [v for _, v in sorted(out, key=lambda kv: kv[0])]


def engine_named(name: str, workers: Optional[int] = None) -> Engine:
    """``"ray"``, ``"spark"`` or ``"local"``."""
    if name == "ray":
        return RayEngine(workers)
    if name == "spark":
        return SparkEngine(workers)
    if name == "local":
        return Engine()
    raise ValueError(f"engine {name!r}: ray, spark or local")


# An input: (name, loader). `loader` is picklable and returns ("file", path) or
# ("arrow", object with __arrow_c_stream__/__arrow_c_array__) inside a task.
Input = Tuple[str, Any]


def _encode(plan: str, source: int, loaded: Any) -> List[Any]:
    kind, value = loaded
    if kind == "file":
        return list(_sluice.encode_file(plan, value, source))
    return list(_sluice.encode(plan, value, source))


def _load(loader: Any) -> Any:
    return loader() if callable(loader) else loader


def _sample_task(args: Tuple[str, int, Any, int]) -> List[Tuple[int, bytes]]:
    plan, source, loader, every = args
    out: List[Tuple[int, bytes]] = []
    for b in _encode(plan, source, _load(loader)):
        out.extend(_sluice.sample_keys(b, every))
    return out


def _partition_task(args: Tuple[str, int, Any, str]) -> List[Tuple[int, int]]:
    """Encodes input `source` and writes its entries per (slot, range): the shuffle's map side."""
    plan, source, loader, shuffle_dir = args
    pa = importlib.import_module("pyarrow")
    pc = importlib.import_module("pyarrow.compute")
    ipc = importlib.import_module("pyarrow.ipc")
    batches = [pa.record_batch(b) for b in _encode(plan, source, _load(loader))]
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    written: List[Tuple[int, int]] = []
    pairs = table.select(["slot", "range"]).group_by(["slot", "range"]).aggregate([])
    for slot, rng in zip(pairs.column("slot").to_pylist(), pairs.column("range").to_pylist()):
        part = table.filter(pc.and_(pc.equal(table["slot"], slot), pc.equal(table["range"], rng)))
        d = os.path.join(shuffle_dir, f"s{slot}-r{rng}")
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, f".src{source}.{uuid.uuid4().hex}")
        with ipc.new_file(tmp, part.schema) as w:
            w.write_table(part)
        os.replace(tmp, os.path.join(d, f"src{source}.arrow"))
        written.append((slot, rng))
    return written


def _build_task(args: Tuple[str, int, int, str, List[int], str, Optional[str]]) -> str:
    plan, slot, rng, shuffle_dir, dropped, out_dir, fail = args
    ipc = importlib.import_module("pyarrow.ipc")
    d = os.path.join(shuffle_dir, f"s{slot}-r{rng}")
    tables = []
    if os.path.isdir(d):
        for name in sorted(os.listdir(d)):
            if name.endswith(".arrow"):
                with ipc.open_file(os.path.join(d, name)) as r:
                    tables.append(r.read_all())
    manifest = str(_sluice.build(plan, slot, rng, tables, dropped, out_dir, _attempt()))
    if fail:
        _fail_once(fail, out_dir)
    return manifest


def _fail_once(marker: str, where: str) -> None:
    """Tests' fault injection (``run(..., _fail_build_once=marker)``): the first build task to
    create ``marker`` fails with an I/O error after doing its work — leaving its files behind,
    as a task killed late would — and the engine's retry runs it again under a new attempt."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    raise OSError(f"injected failure of a build task (its output stays in {where})")


def _attempt() -> str:
    """This task attempt's directory name: Spark's task attempt id inside a Spark task, else a
    fresh uuid (a retried Ray task gets a new one)."""
    pyspark = sys.modules.get("pyspark")
    ctx = pyspark.TaskContext.get() if pyspark is not None else None
    if ctx is not None:
        return f"spark-{ctx.stageId()}-{ctx.partitionId()}-{ctx.taskAttemptId()}"
    return uuid.uuid4().hex


def run(
    engine: Engine,
    db_path: str,
    schema_sql: str,
    inputs: Sequence[Input],
    *,
    table: Optional[str] = None,
    on_duplicate: str = "error",
    ranges: Optional[int] = None,
    sample_every: int = 16,
    work_dir: Optional[str] = None,
    job_id: Optional[str] = None,
    text: Optional[Dict[str, Any]] = None,
    progress: bool = False,
    _fail_build_once: Optional[str] = None,
) -> Dict[str, Any]:
    """The distributed import of ``inputs`` into the Db at ``db_path`` (see the module doc).
    Returns a summary: table, rows, duplicates_dropped, files (slot, level, entries), bytes
    written, ranges, balance (largest primary range / mean, in bytes), phases (seconds)."""
    job = job_id or uuid.uuid4().hex[:12]
    t0 = time.perf_counter()
    phases: Dict[str, float] = {}
    with _open(db_path) as db:
        raw = db._raw()
        base = work_dir or os.path.join(str(db.path), f"sluice-job-{job}-work")
        shuffle = os.path.join(base, "shuffle")
        os.makedirs(shuffle, exist_ok=True)
        try:
            names = [n for n, _ in inputs]
            plan = _sluice.plan_job(raw, schema_sql, job, names, table, on_duplicate, text or {})
            slots = 1 + len(_json(plan)["table"]["indexes"])
            _say(progress, f"plan: {len(inputs)} inputs, {slots} indexes")
            samples_lists = engine.run_tasks(
                _sample_task, [(plan, i, loader, sample_every) for i, (_, loader) in enumerate(inputs)]
            )
            samples: List[List[bytes]] = [[] for _ in range(slots)]
            for lst in samples_lists:
                for slot, key in lst:
                    samples[slot].append(bytes(key))
            n_ranges = ranges or max(1, 2 * _workers(engine))
            plan = _sluice.set_cuts(plan, samples, n_ranges)
            phases["sample"] = time.perf_counter() - t0
            _say(progress, f"sample: {sum(map(len, samples))} keys, {n_ranges} ranges a slot")
            engine.run_tasks(
                _partition_task, [(plan, i, loader, shuffle) for i, (_, loader) in enumerate(inputs)]
            )
            phases["encode_shuffle"] = time.perf_counter() - t0 - sum(phases.values())
            out_dir = os.path.join(base, "out")
            primary = engine.run_tasks(
                _build_task,
                [(plan, 0, r, shuffle, [], out_dir, _fail_build_once) for r in range(_sluice.ranges(plan, 0))],
            )
            dropped = sorted({d for m in primary for d in _json(m)["dropped"]})
            secondary = engine.run_tasks(
                _build_task,
                [
                    (plan, s, r, shuffle, dropped, out_dir, _fail_build_once)
                    for s in range(1, slots)
                    for r in range(_sluice.ranges(plan, s))
                ],
            )
            phases["build"] = time.perf_counter() - t0 - sum(phases.values())
            manifests = list(primary) + list(secondary)
            files = _sluice.commit_job(raw, plan, manifests, out_dir)
            phases["ingest"] = time.perf_counter() - t0 - sum(phases.values())
        finally:
            shutil.rmtree(base, ignore_errors=True)
    parsed = [_json(m) for m in manifests]
    rows = sum(m["entries"] for m in parsed if m["slot"] == 0)
    range_bytes = [sum(f["bytes"] for f in m["files"]) for m in parsed if m["slot"] == 0]
    mean = sum(range_bytes) / max(1, len(range_bytes))
    phases["total"] = time.perf_counter() - t0
    _say(progress, f"imported {rows} rows in {phases['total']:.2f} s")
    return {
        "table": _json(plan)["table"]["name"],
        "rows": rows,
        "duplicates_dropped": len(dropped),
        "files": list(files),
        "bytes": sum(f["bytes"] for m in parsed for f in m["files"]),
        "ranges": n_ranges,
        # The largest primary range over the mean, in bytes (1.0: perfectly even).
        "balance": max(range_bytes, default=0) / mean if mean else 1.0,
        "phases": phases,
        "engine": engine.name,
    }


def _json(s: str) -> Any:
    return json.loads(s)


def _workers(engine: Engine) -> int:
    if isinstance(engine, SparkEngine):
        return int(engine.spark.sparkContext.defaultParallelism)
    if isinstance(engine, RayEngine):
        return int(engine.ray.cluster_resources().get("CPU", 1))
    return 1


def _say(on: bool, msg: str) -> None:
    if on:
        print(f"sluice.distributed: {msg}", flush=True)


def import_files(
    db_path: str,
    schema_sql: str,
    files: Sequence[str],
    *,
    engine: str = "ray",
    workers: Optional[int] = None,
    format: Optional[str] = None,  # noqa: A002 - the `sluice import` option's name
    header: bool = False,
    delimiter: Optional[str] = None,
    quote: Optional[str] = '"',
    null: Optional[str] = None,
    **options: Any,
) -> Dict[str, Any]:
    """Imports ``files`` (CSV, TSV, JSON lines, Parquet; one file a task, read by the import's
    own readers with ``sluice import``'s options) through ``engine``; see ``run``."""
    text = {"format": format, "header": header, "delimiter": delimiter, "quote": quote, "null": null}
    inputs = [(str(f), ("file", os.path.abspath(str(f)))) for f in files]
    return run(engine_named(engine, workers), db_path, schema_sql, inputs, text=text, **options)


__all__ = ["run", "import_files", "Engine", "RayEngine", "SparkEngine", "engine_named"]
