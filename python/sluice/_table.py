"""Tables of the import catalog: ``db.tables()``, ``db.table(name).get(*pk)`` and
``.scan(...)`` as an Arrow stream."""

from __future__ import annotations

import datetime as _dt
import importlib
import decimal as _decimal
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence

from . import _sluice

if TYPE_CHECKING:
    from ._db import Db

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _typed(tag: str, scale: int, raw: Any) -> Any:
    """A stored value as Python's type for its SQL type."""
    if raw is None:
        return None
    if tag == "decimal":
        return _decimal.Decimal(raw).scaleb(-scale)
    if tag == "date":
        return _EPOCH_DATE + _dt.timedelta(days=raw)
    if tag == "timestamp":
        return _EPOCH + _dt.timedelta(microseconds=raw)
    return raw


def _key_text(v: Any) -> str:
    """A primary-key value as the text the import would read."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, _dt.datetime):
        naive = v if v.tzinfo is None else v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return naive.isoformat(sep=" ")
    if isinstance(v, _dt.date):
        return v.isoformat()
    if isinstance(v, (int, float, _decimal.Decimal, str)):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(v).hex()
    raise TypeError(f"a primary key value cannot be {type(v).__name__}")


class Table:
    """One table of the Db's catalog (made by ``Db.table``)."""

    def __init__(self, db: "Db", info: Dict[str, Any]) -> None:
        self._db = db
        self.info: Dict[str, Any] = info
        """The definition: name, columns (name, type, not_null), primary_key, indexes."""

    @property
    def name(self) -> str:
        """The table's name."""
        return str(self.info["name"])

    @property
    def columns(self) -> List[str]:
        """Column names, in order."""
        return [c["name"] for c in self.info["columns"]]

    @property
    def primary_key(self) -> List[str]:
        """The primary key's column names."""
        return list(self.info["primary_key"])

    def get(self, *pk: Any) -> Optional[Dict[str, Any]]:
        """The row whose primary key is ``pk`` (one value per key column) as a dict of
        column name → value (int, float, Decimal, str, bytes, bool, datetime.date,
        datetime.datetime in UTC, or None for NULL); None when there is no such row."""
        row = self._db._raw().table_get(self.name, [_key_text(v) for v in pk])
        if row is None:
            return None
        return {name: _typed(tag, scale, raw) for name, tag, scale, raw in row}

    def delete(self, *pk: Any, sync: bool = False) -> bool:
        """Deletes the row whose primary key is ``pk`` (one value per key column), with its
        index entries, in one atomic write (``sync``: fsync the WAL first). Returns whether
        there was such a row."""
        return bool(self._db._raw().table_delete(self.name, [_key_text(v) for v in pk], sync))

    def rewrite_groups(self, min_dead: float = 0.5, sync: bool = False) -> Dict[str, int]:
        """Columnar tables: rewrites the row groups in which at least ``min_dead`` (0 < x <= 1)
        of the rows are deleted or replaced, so that their bytes are given back. Live rows move
        to new groups and read back the same; each batch of groups is one atomic write
        (``sync``: fsync the WAL first). Returns counts: ``groups_with_marks``,
        ``groups_rewritten``, ``groups_written``, ``rows_moved``, ``rows_dropped``,
        ``bytes_before``, ``bytes_after``. Refused while an import into the table runs in
        this process."""
        return dict(self._db._raw().table_rewrite_groups(self.name, min_dead, sync))

    def scan(
        self,
        start: Optional[Sequence[Any]] = None,
        end: Optional[Sequence[Any]] = None,
        columns: Optional[Sequence[str]] = None,
        index: Optional[str] = None,
        batch_rows: int = 65536,
        ordered: bool = True,
    ) -> "TableScan":
        """Rows from ``start`` (inclusive) to ``end`` (exclusive) — each a sequence of values
        of the first columns of ``index`` (default: the primary key) — in that index's
        order, at one snapshot, as an Arrow stream of record batches of ``columns`` (default:
        all) with the schema's types: SMALLINT int16, INT int32, BIGINT int64, DOUBLE float64,
        DECIMAL(p,s) decimal128(p,s), BOOLEAN bool, TEXT string, BYTES binary, DATE date32,
        TIMESTAMP timestamp[us, tz=UTC]; NULL as null.

        A columnar table reads only the chunks of ``columns`` (and the index that orders the
        scan). With ``ordered=False`` a scan of the whole table gives rows in storage order
        (primary-key order within each import, imports in the order they were made) and
        reads no primary index: the fast way to aggregate a few columns.

        The stream exports ``__arrow_c_stream__``: ``pyarrow.table(s)``,
        ``polars.DataFrame(s)`` or DuckDB (``duckdb.sql("SELECT ... FROM s")``) take it
        directly. It is read once."""
        raw = self._db._raw()
        stream = _sluice.table_scan(
            raw,
            self.name,
            None if start is None else [_key_text(v) for v in start],
            None if end is None else [_key_text(v) for v in end],
            None if columns is None else list(columns),
            index,
            batch_rows,
            ordered,
        )
        return TableScan(stream)

    def to_arrow(self, **scan: Any) -> Any:
        """The rows as a ``pyarrow.Table`` (``scan``'s arguments; needs pyarrow)."""
        return self.scan(**scan).to_arrow()

    def to_pandas(self, **scan: Any) -> Any:
        """The rows as a pandas ``DataFrame`` (``scan``'s arguments; needs pyarrow and
        pandas)."""
        return self.to_arrow(**scan).to_pandas()

    def __repr__(self) -> str:
        return f"<sluice.Table {self.name} ({', '.join(self.columns)})>"


class TableScan:
    """A stream of record batches of a table (``Table.scan``), read once: export it with
    ``__arrow_c_stream__`` (pyarrow, polars, DuckDB), or iterate it for ``pyarrow``
    record batches."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow C stream PyCapsule (the Arrow PyCapsule interface)."""
        return self._stream.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> Any:
        """The stream's schema as an Arrow C schema PyCapsule."""
        return self._stream.__arrow_c_schema__()

    def to_arrow(self) -> Any:
        """Every remaining batch as one ``pyarrow.Table``."""
        return importlib.import_module("pyarrow").table(self)

    def to_pandas(self) -> Any:
        """Every remaining batch as a pandas ``DataFrame``."""
        return self.to_arrow().to_pandas()

    def __iter__(self) -> Iterator[Any]:
        reader = importlib.import_module("pyarrow").RecordBatchReader.from_stream(self)
        return iter(reader)
