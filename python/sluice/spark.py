"""``sluice.spark.import_dataframe``: a Spark DataFrame into a Sluice Db through
range-partitioned SSTs built by Spark tasks (see ``sluice.distributed``)."""

from __future__ import annotations

import importlib
import os
import shutil
import uuid
from typing import Any, Dict, Optional

from .distributed import SparkEngine, run


def import_dataframe(
    df: Any,
    db_path: str,
    schema_sql: str,
    table: Optional[str] = None,
    *,
    work_dir: Optional[str] = None,
    **options: Any,
) -> Dict[str, Any]:
    """Imports the rows of ``df`` (columns matched to the table's by name). Each partition, in
    partition order, is one input (written once as Arrow IPC by a Spark task): rows are ordered
    by (partition, row) for ``on_duplicate``. The partitions are staged under ``work_dir``
    (default: beside the Db; on several machines it must be a directory they share) and removed
    after. Options: those of ``sluice.distributed.run``."""
    engine = SparkEngine(spark=df.sparkSession)
    # Beside the Db (on several machines: a shared directory, `work_dir`).
    parent = work_dir or os.path.dirname(os.path.abspath(str(db_path)))
    stage = os.path.join(parent, f".sluice-spark-input-{uuid.uuid4().hex}")
    os.makedirs(stage, exist_ok=True)

    parts = df.rdd.getNumPartitions()
    df.mapInArrow(_partition_writer(stage), "p long").collect()
    inputs = []
    for i in range(parts):
        path = os.path.join(stage, f"part-{i:06d}.arrow")
        if os.path.exists(path):
            inputs.append((f"partition {i}", _ReadIpc(path)))
    try:
        return run(engine, str(db_path), schema_sql, inputs, table=table, **options)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _partition_writer(stage: str) -> Any:
    def write(batches: Any) -> Any:
        pa: Any = importlib.import_module("pyarrow")
        ipc: Any = importlib.import_module("pyarrow.ipc")
        ctx: Any = importlib.import_module("pyspark").TaskContext.get()
        index = ctx.partitionId()
        got = list(batches)
        if got:
            t = pa.Table.from_batches(got)
            tmp = os.path.join(stage, f".part-{index:06d}.{uuid.uuid4().hex}")
            with ipc.new_file(tmp, t.schema) as w:
                w.write_table(t)
            os.replace(tmp, os.path.join(stage, f"part-{index:06d}.arrow"))
        yield pa.record_batch({"p": pa.array([index], pa.int64())})

    return write


class _ReadIpc:
    """Loads one written partition inside a task."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self) -> Any:
        ipc: Any = importlib.import_module("pyarrow.ipc")
        with ipc.open_file(self.path) as r:
            return ("arrow", r.read_all())
