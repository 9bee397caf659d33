"""Sluice: an embedded LSM key-value store whose fast path is bulk ingestion.

::

    import sluice

    with sluice.open("/tmp/db") as db:
        db.put(b"apple", b"red")
        with db.batch() as b:           # atomic: written when the block ends normally
            b.put(b"banana", b"yellow")
        for key, value in db.scan(start=b"a", end=b"c"):
            ...
        report = db.import_files(open("t.sql").read(), ["t.csv"], header=True)
        row = db.table("t").get(42)     # {"id": 42, ...}
        db.import_arrow(None, pyarrow_table, table="u", primary_key=["id"])
        df = db.table("u").to_pandas()  # or pyarrow.table(db.table("u").scan(columns=[...]))

Errors are ``sluice.Error`` subclasses (see ``sluice._errors``); I/O errors are also
``OSError``. Every call that touches the disk releases the GIL; a ``Db`` may be shared by
threads.
"""

from ._db import Db, ImportReport, Snapshot, WriteBatch, open
from . import _errors
from ._errors import *  # noqa: F403 - the exception hierarchy, listed in _errors.__all__
from ._sluice import __version__
from ._sst import SstWriter
from ._table import Table, TableScan

__all__ = [
    "open",
    "Db",
    "WriteBatch",
    "Snapshot",
    "ImportReport",
    "SstWriter",
    "Table",
    "TableScan",
    "__version__",
    *_errors.__all__,
]
