"""Import beyond one machine: range-partitioned SSTs built by tasks of an existing engine (Ray,
Spark) and committed in one atomic ingest.

The flow (``run``), with every step that touches data in a task:

1. plan (driver): the table bound to the Db's catalog, the duplicate policy, the inputs;
2. sample (tasks): each input encoded to keys; an evenly spaced sample of them comes back
   (``sample_per_range`` keys a range in all, or every ``sample_every``-th key);
3. cut (driver): ``ranges`` ranges per index from the sample (full keys; a unique index on
   its unique prefix, so every holder of a value meets in one range);
4. partition (tasks): each input encoded again, its entries written per (index, range) as Arrow
   IPC files under the job's directory (the shuffle: on several machines it must be shared);
   a table that already holds rows has its stored keys exported there by the driver;
5. build (tasks): each range's entries sorted, duplicates resolved (against stored rows too),
   SSTs written under a per-attempt directory and the range recorded as done — primary ranges
   first, whose dropped rows the secondary ranges then leave out (and whose replaced stored
   entries they delete);
6. commit (driver): rejects added up against ``max_errors``, one manifest per range, disjoint
   ranges checked, one ``Db`` ingest: every file at the bottom level of an empty table,
   nothing compacted (or ``output="files"``: range sets and ``ranges.json``). Nothing is
   visible before; a failure leaves the Db as it was. The job's directory is removed after the
   commit, or kept for a rerun with the same ``job_id`` when the driver dies before it.

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

    def run_tasks(
        self, fn: Task, items: Sequence[Any], tick: Optional[Callable[[], None]] = None
    ) -> List[Any]:
        """``map`` with data errors raised here, in the driver, as the tasks raised them;
        ``tick`` is called as tasks finish (for a progress bar)."""
        out = []
        for ok, value in self.map(_Guarded(fn), items, tick or (lambda: None)):
            if not ok:
                raise value
            out.append(value)
        return out

    def map(self, fn: Task, items: Sequence[Any], tick: Callable[[], None]) -> List[Any]:
        out = []
        for x in items:
            out.append(fn(x))
            tick()
        return out


class RayEngine(Engine):
    """Ray remote tasks (``ray.init`` is called with ``num_cpus=workers`` if Ray is not up)."""

    name = "ray"

    def __init__(self, workers: Optional[int] = None) -> None:
        self.ray: Any = importlib.import_module("ray")
        if not self.ray.is_initialized():
            self.ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)

    def map(self, fn: Task, items: Sequence[Any], tick: Callable[[], None]) -> List[Any]:
        def task(x: Any) -> Any:
            return fn(x)

        remote = self.ray.remote(max_retries=2, retry_exceptions=[OSError])(task)
        refs = [remote.remote(x) for x in items]
        pending = list(refs)
        while pending:
            ready, pending = self.ray.wait(pending, num_returns=1)
            for _ in ready:
                tick()
        return list(self.ray.get(refs))


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

    def map(self, fn: Task, items: Sequence[Any], tick: Callable[[], None]) -> List[Any]:
        if not items:
            return []
        sc = self.spark.sparkContext
        indexed = list(enumerate(items))
        out = sc.parallelize(indexed, len(indexed)).map(lambda kv: (kv[0], fn(kv[1]))).collect()
        # A job's tasks report to the driver only at its end.
        for _ in items:
            tick()
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


def _encode(plan: str, source: int, loaded: Any) -> Tuple[List[Any], List[str]]:
    """The entries of one input and the rows it rejected (JSON), as the core returns them."""
    kind, value = loaded
    if kind == "file":
        batches, rejects = _sluice.encode_file(plan, value, source)
    else:
        batches, rejects = _sluice.encode(plan, value, source)
    return list(batches), list(rejects)


def _load(loader: Any) -> Any:
    return loader() if callable(loader) else loader


def _sample_task(args: Tuple[str, int, Any, int, int]) -> List[Tuple[int, bytes]]:
    """The key in the middle of every ``every`` entries of input ``source`` (``every`` 0: as
    many as it takes to keep about ``keep`` keys of each index)."""
    plan, source, loader, every, keep = args
    pa = importlib.import_module("pyarrow")
    batches = [pa.record_batch(b) for b in _encode(plan, source, _load(loader))[0]]
    if every <= 0:
        # An encoded batch holds one entry per row and index, so spacing the sample over all
        # entries keeps about `keep` keys of each index.
        slots = 1 + len(_json(plan)["table"]["indexes"])
        entries = sum(b.num_rows for b in batches)
        every = max(1, entries // max(1, keep * slots))
    out: List[Tuple[int, bytes]] = []
    # Each chunk's entries are sorted: a key taken at the start of every stretch of `every`
    # would be its stretch's smallest and pull the cuts low; the middle one does not. The
    # position carries over from batch to batch.
    pos = every // 2
    for b in batches:
        n = b.num_rows
        if pos >= n:
            pos -= n
            continue
        idx = pa.array(range(pos, n, every), pa.int64())
        pos = idx[-1].as_py() + every - n
        slots_taken = b.column(0).take(idx).to_pylist()
        keys_taken = b.column(2).take(idx).to_pylist()
        out.extend(zip(slots_taken, keys_taken))
    return out


def _write_parts(batches: List[Any], shuffle_dir: str, name: str) -> List[Tuple[int, int]]:
    """Writes encoded ``batches`` per (slot, range) as ``s<slot>-r<range>/<name>.arrow`` (each
    file written under a temporary name and renamed: a rerun overwrites it whole)."""
    pa = importlib.import_module("pyarrow")
    pc = importlib.import_module("pyarrow.compute")
    ipc = importlib.import_module("pyarrow.ipc")
    batches = [pa.record_batch(b) for b in batches]
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    written: List[Tuple[int, int]] = []
    pairs = table.select(["slot", "range"]).group_by(["slot", "range"]).aggregate([])
    for slot, rng in zip(pairs.column("slot").to_pylist(), pairs.column("range").to_pylist()):
        part = table.filter(pc.and_(pc.equal(table["slot"], slot), pc.equal(table["range"], rng)))
        d = os.path.join(shuffle_dir, f"s{slot}-r{rng}")
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, f".{name}.{uuid.uuid4().hex}")
        with ipc.new_file(tmp, part.schema) as w:
            w.write_table(part)
        os.replace(tmp, os.path.join(d, f"{name}.arrow"))
        written.append((slot, rng))
    return written


def _partition_task(args: Tuple[str, int, Any, str]) -> List[Tuple[int, int]]:
    """Encodes input `source` and writes its entries per (slot, range): the shuffle's map side.
    Its rejected rows go to ``rejects/src<source>.json`` beside them."""
    plan, source, loader, shuffle_dir = args
    batches, rejects = _encode(plan, source, _load(loader))
    d = os.path.join(shuffle_dir, "rejects")
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".src{source}.{uuid.uuid4().hex}")
    with open(tmp, "w") as f:
        json.dump(rejects, f)
    os.replace(tmp, os.path.join(d, f"src{source}.json"))
    return _write_parts(batches, shuffle_dir, f"src{source}")


def _shuffled_rejects(shuffle_dir: str) -> List[str]:
    d = os.path.join(shuffle_dir, "rejects")
    out: List[str] = []
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if name.endswith(".json"):
            with open(os.path.join(d, name)) as f:
                out.extend(json.load(f))
    return out


def _export_existing(raw: Any, plan: str, shuffle_dir: str, page: int = 1 << 16) -> int:
    """The stored keys of a table that holds rows (primary and unique indexes) into the shuffle,
    a page at a time, for the builds to meet. Returns how many."""
    n = 0
    for slot in _sluice.existing_slots(plan):
        after: Optional[bytes] = None
        number = 0
        while True:
            batch, after = _sluice.existing_entries(raw, plan, slot, after, page)
            _write_parts([batch], shuffle_dir, f"existing-s{slot}-{number:06d}")
            n += batch.num_rows
            number += 1
            if after is None:
                break
    return n


# A build task's arguments: plan, slot, range, shuffle dir, the rows the primary dropped, the
# stored entries it deletes (slot, key), work dir, the failpoint's marker.
BuildArgs = Tuple[str, int, int, str, List[int], List[Tuple[int, bytes]], str, Optional[str]]


def _build_task(args: BuildArgs) -> str:
    plan, slot, rng, shuffle_dir, dropped, deletions, work_dir, fail = args
    ipc = importlib.import_module("pyarrow.ipc")
    d = os.path.join(shuffle_dir, f"s{slot}-r{rng}")
    tables = []
    if os.path.isdir(d):
        for name in sorted(os.listdir(d)):
            if name.endswith(".arrow"):
                with ipc.open_file(os.path.join(d, name)) as r:
                    tables.append(r.read_all())
    manifest = str(
        _sluice.build(plan, slot, rng, tables, dropped, work_dir, _attempt(), deletions)
    )
    if fail:
        _fail_once(fail, work_dir)
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


def _input_fingerprints(inputs: Sequence[Input], caller: Optional[str]) -> List[str]:
    """What a rerun must find unchanged, per input: a file's path, size and modification time;
    for any other input (an Arrow block, a DataFrame partition) the caller's
    ``input_fingerprint``, or — without one — a value no rerun can match, so such a job is
    never resumed on trust."""
    out = []
    for name, loader in inputs:
        if isinstance(loader, tuple) and loader[0] == "file":
            st = os.stat(loader[1])
            out.append(f"{name}: file {loader[1]} size {st.st_size} mtime_ns {st.st_mtime_ns}")
        elif caller is not None:
            out.append(f"{name}: vouched for by the caller as {caller!r}")
        else:
            out.append(f"{name}: not a file and no input_fingerprint given (run {uuid.uuid4().hex})")
    return out


class _DataError(Exception):
    """Marks an error that makes a job's work worthless (a bad row past the limit, a
    duplicate): the job is aborted, not kept for a rerun."""


def run(
    engine: Engine,
    db_path: str,
    schema_sql: str,
    inputs: Sequence[Input],
    *,
    table: Optional[str] = None,
    on_duplicate: str = "error",
    ranges: Optional[int] = None,
    sample_every: Optional[int] = None,
    sample_per_range: int = 1024,
    work_dir: Optional[str] = None,
    job_id: Optional[str] = None,
    text: Optional[Dict[str, Any]] = None,
    max_errors: int = 0,
    rejects: Optional[str] = None,
    output: str = "db",
    out_dir: Optional[str] = None,
    input_fingerprint: Optional[str] = None,
    progress: bool = False,
    rewrite_dead: Optional[float] = 0.5,
    _fail_build_once: Optional[str] = None,
) -> Dict[str, Any]:
    """The distributed import of ``inputs`` into the Db at ``db_path`` (see the module doc).

    ``job_id``: names the job's directory, ``<work_dir>/sluice-job-<job_id>`` (``work_dir``
    defaults to the Db's directory; on several machines it must be shared). A rerun with the
    same id resumes: it reuses the cut points, the shuffle and every finished range, and
    refuses if the inputs (files: size and modification time; other inputs: the caller's
    ``input_fingerprint``, without which they are never resumed), the schema, the table's
    catalog entry, the Db or an option that changes the output differ. A job that fails on
    its data (a bad row past ``max_errors``, a duplicate under ``error``) is removed; one that
    fails otherwise (a crash, an interrupt, an engine failure) is kept for a rerun when it has
    an id the caller chose (``abort(db_path, job_id)`` removes it; ``jobs(db_path)`` lists
    them). Without ``job_id`` a random one is used and the job is never kept.

    ``max_errors``/``rejects``: as ``sluice import``'s — bad rows (and, under ``error``,
    duplicate keys) tolerated across all tasks, written to ``rejects`` (``# reason`` then the
    record) by the coordinator, which empties it when the job starts. Past the limit the job
    fails and nothing of it is visible; ``rejects`` then holds the rows counted up to and
    including the one that went over (none when a single task went over on its own).

    ``output``: ``"db"`` (one atomic ingest) or ``"files"``: each range's SSTs and a
    ``ranges.json`` in ``out_dir`` (the Db is read for its catalog, never written).

    ``rewrite_dead``: as ``sluice import``'s ``--rewrite-dead`` — after a ``last`` job into a
    columnar table that held rows, the row groups in which at least that share (0 < x <= 1)
    of the rows were replaced are rewritten, so that the replaced rows' bytes are given back
    (``Table.rewrite_groups``); ``None``: left to the caller. The job is committed either way: a
    failed rewrite is reported in the summary (``rewrite_error``), not raised.

    Sampling: ``sample_per_range`` keys for each range of each index in all (spread evenly over
    the inputs and within each), so that what reaches the driver does not grow with the data;
    or, with ``sample_every``, every that-many-th key of every input.

    Returns a summary: table, rows, rejected, duplicates_dropped, files (slot, kind, level,
    entries), bytes written, ranges, balance (largest primary range / mean, in bytes), phases
    (seconds), reused_ranges, rewrite (``Table.rewrite_groups``' counts, or None) and
    rewrite_error, small_file_merges and small_file_merge_error (the table's small files
    merged after the commit, as ``sluice import`` does), and for files output ``out_dir``."""
    if output not in ("db", "files"):
        raise ValueError(f"output {output!r}: db or files")
    if rewrite_dead is not None and not 0.0 < rewrite_dead <= 1.0:
        raise ValueError(f"rewrite_dead {rewrite_dead!r}: a share in (0, 1], or None")
    if output == "files" and not out_dir:
        raise ValueError("output='files' needs out_dir")
    chosen_id = job_id is not None
    job = job_id or uuid.uuid4().hex[:12]
    bar = _Progress(progress)
    t0 = time.perf_counter()
    phases: Dict[str, float] = {}
    with _open(db_path) as db:
        raw = db._raw()
        if rejects is not None:
            # Before any work: the rejects file is emptied at the end, whatever it names.
            _sluice.check_job_rejects(rejects, [n for n, _ in inputs], str(db.path))
        base = os.path.abspath(work_dir or str(db.path))
        shuffle = os.path.join(base, f"sluice-job-{job}", "shuffle")
        names = [n for n, _ in inputs]
        plan = _sluice.plan_job(
            raw, schema_sql, job, names, table, on_duplicate, text or {}, max_errors
        )
        # "columnar-chunks" (and any columnar layout to come).
        layout = str(json.loads(plan)["table"].get("layout")).lower()
        if output == "files" and layout.startswith("columnar"):
            raise ValueError(
                "output='files': a columnar table's ranges cannot be exported (its column chunks "
                "are keyed by row group, not by primary key); commit the job into a Db instead"
            )
        options = json.dumps({
            "ranges": ranges,
            "sample_every": sample_every,
            "sample_per_range": sample_per_range,
            "output": output,
        })
        state = _sluice.begin_job(
            raw, plan, schema_sql, _input_fingerprints(inputs, input_fingerprint), options, base
        )
        if rejects is not None:
            # As `sluice import`: what an earlier run left there is not this job's (emptied
            # only once the job is begun: a refused one leaves the file as it was).
            open(rejects, "wb").close()
        try:
            try:
                sampling = (sample_every or 0, sample_per_range)
                plan, n_ranges = _cut(engine, bar, plan, state, inputs, sampling, ranges, base)
                phases["sample"] = time.perf_counter() - t0
                bad = _shuffle(engine, bar, raw, plan, state, inputs, shuffle, base, job)
                # Early: the bad rows alone may already be too many (then written, up to the
                # one that goes over).
                over = rejects if len(bad) > max_errors else None
                _sluice.tally_job_rejects(bad, [], max_errors, over)
                phases["encode_shuffle"] = time.perf_counter() - t0 - sum(phases.values())
                manifests, reused = _build(engine, bar, plan, state, shuffle, base, _fail_build_once)
                phases["build"] = time.perf_counter() - t0 - sum(phases.values())
                parsed = [_json(m) for m in manifests]
                dups = [r for m in parsed if m["slot"] == 0 for r in m.get("rejects", [])]
                rejected = _sluice.tally_job_rejects(
                    bad, [json.dumps(r) for r in dups], max_errors, rejects
                )
            except _errors.Error as e:
                if isinstance(e, OSError):
                    raise
                raise _DataError() from e
            if os.environ.get("SLUICE_DISTRIBUTED_CRASH_BEFORE_COMMIT"):
                # Tests: the coordinator dies here, with every range built and nothing committed.
                os._exit(137)
            bar.start("ingest", 1)
            merges, merge_error = 0, None
            if output == "db":
                files = list(_sluice.commit_job(raw, plan, manifests, base))
                # Committed: a failed merge is reported, not raised (it poisons the Db as a
                # failed compaction does, and the rewrite is then not tried).
                try:
                    merges = _sluice.merge_job_small_files(raw, plan)
                except _errors.Error as e:
                    merge_error = str(e)
            else:
                ranges_json = _json(_sluice.export_job(plan, manifests, base, str(out_dir)))
                files = [
                    {"slot": r["slot"], "kind": "primary" if r["slot"] == 0 else "index",
                     "level": None, "entries": f["entries"]}
                    for r in ranges_json["ranges"]
                    for f in r["files"]
                ]
            bar.tick()
            bar.done()
            phases["ingest"] = time.perf_counter() - t0 - sum(phases.values())
            rewrite, rewrite_error = None, None
            if merge_error is None:
                rewrite, rewrite_error = _rewrite_after(
                    db, plan, output, on_duplicate, rewrite_dead)
            if rewrite is not None or rewrite_error is not None:
                phases["rewrite"] = time.perf_counter() - t0 - sum(phases.values())
        except _DataError as e:
            _sluice.abort_job_dir(base, job)
            assert e.__cause__ is not None
            raise e.__cause__ from None
        except BaseException:
            if chosen_id and os.path.isdir(os.path.join(base, f"sluice-job-{job}")):
                print(
                    f"sluice.distributed: job {job} kept in {base} for a rerun with the same "
                    f"job id (sluice.distributed.abort removes it)",
                    file=sys.stderr,
                )
            else:
                _sluice.abort_job_dir(base, job)
            raise
    rows = sum(m["entries"] for m in parsed if m["slot"] == 0)
    range_bytes = [sum(f["bytes"] for f in m["files"]) for m in parsed if m["slot"] == 0]
    mean = sum(range_bytes) / max(1, len(range_bytes))
    phases["total"] = time.perf_counter() - t0
    out = {
        "table": _json(plan)["table"]["name"],
        "created": _json(plan)["created"],
        "rows": rows,
        "rejected": rejected,
        "duplicates_dropped": sum(m.get("duplicates", 0) for m in parsed if m["slot"] == 0),
        "files": files,
        "bytes": sum(f["bytes"] for m in parsed for f in m["files"]),
        "ranges": n_ranges,
        # The largest primary range over the mean, in bytes (1.0: perfectly even).
        "balance": max(range_bytes, default=0) / mean if mean else 1.0,
        "phases": phases,
        "engine": engine.name,
        "job_id": job,
        "reused_ranges": reused,
        "rewrite": rewrite,
        "rewrite_error": rewrite_error,
        "small_file_merges": merges,
        "small_file_merge_error": merge_error,
    }
    if output == "files":
        out["out_dir"] = str(out_dir)
    return out


def _rewrite_after(
    db: Any, plan: str, output: str, on_duplicate: str, rewrite_dead: Optional[float]
) -> Tuple[Optional[Dict[str, int]], Optional[str]]:
    """``rewrite_dead``'s group rewrite once the job is committed (see ``run``), as
    ``sluice import`` follows a ``last`` import into a columnar table that held rows."""
    p = _json(plan)
    columnar = str(p["table"].get("layout")).lower().startswith("columnar")
    if output != "db" or rewrite_dead is None or on_duplicate != "last" or p["created"]:
        return None, None
    if not columnar:
        return None, None
    try:
        return db.table(p["table"]["name"]).rewrite_groups(rewrite_dead), None
    except _errors.Error as e:
        return None, str(e)


def _cut(
    engine: Engine,
    bar: "_Progress",
    plan: str,
    state: Dict[str, Any],
    inputs: Sequence[Input],
    sampling: Tuple[int, int],
    ranges: Optional[int],
    base: str,
) -> Tuple[str, int]:
    """Steps 2-3: the plan with cut points — an earlier run's, or from a new sample
    (``sampling``: every how-many-th key, 0 for about ``per_range`` keys a range)."""
    if state["plan"] is not None:
        return str(state["plan"]), _sluice.ranges(state["plan"], 0)
    slots = 1 + len(_json(plan)["table"]["indexes"])
    n_ranges = ranges or max(1, 2 * _workers(engine))
    every, per_range = sampling
    keep = -(-per_range * n_ranges // max(1, len(inputs)))
    items = [(plan, i, loader, every, keep) for i, (_, loader) in enumerate(inputs)]
    samples_lists = engine.run_tasks(_sample_task, items, bar.phase("sample", len(items)))
    samples: List[List[bytes]] = [[] for _ in range(slots)]
    for lst in samples_lists:
        for slot, key in lst:
            samples[slot].append(bytes(key))
    plan = _sluice.set_cuts(plan, samples, n_ranges)
    _sluice.save_job_plan(plan, base)
    return plan, n_ranges


def _shuffle(
    engine: Engine,
    bar: "_Progress",
    raw: Any,
    plan: str,
    state: Dict[str, Any],
    inputs: Sequence[Input],
    shuffle: str,
    base: str,
    job: str,
) -> List[str]:
    """Step 4, unless an earlier run completed it: every input's entries and the table's stored
    keys per (slot, range). Returns the bad rows (JSON)."""
    if not state["shuffled"]:
        items = [(plan, i, loader, shuffle) for i, (_, loader) in enumerate(inputs)]
        engine.run_tasks(_partition_task, items, bar.phase("encode+shuffle", len(items)))
        _export_existing(raw, plan, shuffle)
        _sluice.job_shuffled(base, job)
    return _shuffled_rejects(shuffle)


def _build(
    engine: Engine,
    bar: "_Progress",
    plan: str,
    state: Dict[str, Any],
    shuffle: str,
    base: str,
    fail: Optional[str],
) -> Tuple[List[str], int]:
    """Step 5: every range not finished by an earlier run, primary ranges first (their dropped
    rows leave the secondary ranges, the stored entries they replaced are deleted there).
    Returns one manifest per range and how many were reused."""
    done = {(m["slot"], m["range"]): m for m in map(_json, state["done"])}
    by_range = {k: json.dumps(m) for k, m in done.items()}
    slots = 1 + len(_json(plan)["table"]["indexes"])
    todo = [(s, r) for s in range(slots) for r in range(_sluice.ranges(plan, s))]
    tick = bar.phase("build", len(todo) - len([k for k in todo if k in done]))
    primary = [(0, r) for s, r in todo if s == 0 and (s, r) not in done]
    for k, m in zip(primary, engine.run_tasks(
        _build_task, [(plan, 0, r, shuffle, [], [], base, fail) for _, r in primary], tick
    )):
        by_range[k] = m
    decided = [_json(m) for k, m in by_range.items() if k[0] == 0]
    dropped = sorted({d for m in decided for d in m["dropped"]})
    deletions = [(int(s), bytes(k)) for m in decided for s, k in m.get("deletions", [])]
    secondary = [(s, r) for s, r in todo if s > 0 and (s, r) not in done]
    for k, m in zip(secondary, engine.run_tasks(
        _build_task,
        [(plan, s, r, shuffle, dropped, deletions, base, fail) for s, r in secondary],
        tick,
    )):
        by_range[k] = m
    return [by_range[k] for k in todo], len([k for k in todo if k in done])


class _Progress:
    """A bar per phase on standard error (``progress=False``: silent)."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.name = ""
        self.total = 0
        self.count = 0
        self.t0 = 0.0

    def start(self, name: str, total: int) -> None:
        self.name, self.total, self.count, self.t0 = name, total, 0, time.perf_counter()
        self._draw()
        if total == 0:
            self.done()

    def phase(self, name: str, total: int) -> Callable[[], None]:
        """Starts phase ``name`` of ``total`` tasks; returns the callback a finished task calls."""
        self.start(name, total)
        return self.tick

    def tick(self) -> None:
        self.count += 1
        self._draw()
        if self.count >= self.total:
            self.done()

    def done(self) -> None:
        if self.on and self.name:
            sys.stderr.write("\n")
            sys.stderr.flush()
        self.name = ""

    def _draw(self) -> None:
        if not self.on or not self.name:
            return
        width = 30
        filled = width * self.count // max(1, self.total)
        sys.stderr.write(
            f"\r{self.name:<15} [{'#' * filled}{'.' * (width - filled)}] {self.count}/{self.total}"
            f" tasks {time.perf_counter() - self.t0:6.1f} s"
        )
        sys.stderr.flush()


def abort(db_path: str, job_id: str, work_dir: Optional[str] = None) -> bool:
    """Removes the directory of job ``job_id`` (kept by a coordinator that died or was
    interrupted before its commit) from ``work_dir`` (default: the Db's directory). Returns
    whether there was one. Do not abort a job that is still running."""
    return bool(_sluice.abort_job_dir(os.path.abspath(work_dir or str(db_path)), job_id))


def jobs(db_path: str, work_dir: Optional[str] = None) -> List[str]:
    """The ids of the jobs kept for a rerun in ``work_dir`` (default: the Db's directory)."""
    return list(_sluice.jobs(os.path.abspath(work_dir or str(db_path))))


def _json(s: str) -> Any:
    return json.loads(s)


def _workers(engine: Engine) -> int:
    if isinstance(engine, SparkEngine):
        return int(engine.spark.sparkContext.defaultParallelism)
    if isinstance(engine, RayEngine):
        return int(engine.ray.cluster_resources().get("CPU", 1))
    return 1


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


__all__ = [
    "run",
    "import_files",
    "abort",
    "jobs",
    "Engine",
    "RayEngine",
    "SparkEngine",
    "engine_named",
]
