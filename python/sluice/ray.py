"""``sluice.ray.import_dataset``: a Ray Dataset into a Sluice Db through range-partitioned
SSTs built by Ray tasks (see ``sluice.distributed``)."""

from __future__ import annotations

from typing import Any, Dict, Optional

from .distributed import RayEngine, run


def import_dataset(
    ds: Any,
    db_path: str,
    schema_sql: str,
    table: Optional[str] = None,
    *,
    workers: Optional[int] = None,
    **options: Any,
) -> Dict[str, Any]:
    """Imports the rows of ``ds`` (columns matched to the table's by name). Each of the
    dataset's blocks, in the dataset's order, is one input: rows are ordered by (block, row)
    for ``on_duplicate``. Options: those of ``sluice.distributed.run``."""
    engine = RayEngine(workers)
    inputs = [(f"block {i}", _Fetch(ref)) for i, ref in enumerate(ds.to_arrow_refs())]
    return run(engine, db_path, schema_sql, inputs, table=table, **options)


class _Fetch:
    """Loads one block inside a task (the object reference travels, not the data)."""

    def __init__(self, ref: Any) -> None:
        self.ref = ref

    def __call__(self) -> Any:
        import ray

        return ("arrow", ray.get(self.ref))
