"""Tables of the import catalog: ``db.tables()`` and ``db.table(name).get(*pk)``."""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from typing import TYPE_CHECKING, Any, Dict, List, Optional

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

    def __repr__(self) -> str:
        return f"<sluice.Table {self.name} ({', '.join(self.columns)})>"
