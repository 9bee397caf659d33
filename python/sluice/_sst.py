"""``sluice.SstWriter``: external SST files to ingest, in RocksDB's table format."""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any, Dict, Optional, Type, Union

from . import _sluice


class SstWriter:
    """Writes one SST file (RocksDB's block-based table format) in key order, to be added to
    a Db with ``Db.ingest`` — Sluice's or RocksDB's (``rocksdict``'s ``ingest_external_file``).

    ``table_options``: ``block_size`` (4096), ``restart_interval`` (16), ``compression``
    (``"none"``, ``"snappy"``, ``"lz4"``, ``"zstd"``), ``checksum`` (``"crc32c"``),
    ``bloom_bits_per_key`` (10.0; None for no filter). ``put``, ``delete`` and
    ``delete_range`` like RocksDB's ``SstFileWriter``.

    As a context manager it finishes the file on a clean exit and removes it when the block
    raises::

        with sluice.SstWriter("/tmp/a.sst") as w:
            w.put(b"a", b"1")
            w.put(b"b", b"2")
        db.ingest(["/tmp/a.sst"])

    The file appears at ``path`` only when ``finish`` succeeds (it is written under a
    temporary name until then).
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], **table_options: Any) -> None:
        self._w = _sluice.SstWriter(os.fspath(path), **table_options)
        self.info: Optional[Dict[str, Any]] = None
        """What ``finish`` returned, once it did."""

    @property
    def path(self) -> str:
        """Where the file goes."""
        return str(self._w.path)

    @property
    def entries(self) -> int:
        """Entries added so far."""
        return int(self._w.entries)

    def put(self, key: bytes, value: bytes) -> None:
        """Adds ``key → value``; ``key`` must sort strictly after every key added before
        (else ``KeyOrderError``)."""
        self._w.put(key, value)

    def delete(self, key: bytes) -> None:
        """Adds a deletion of ``key``: once ingested it hides the key's older values."""
        self._w.delete(key)

    def delete_range(self, start: bytes, end: bytes) -> None:
        """Adds a deletion of every key in ``[start, end)``: once ingested it hides those
        keys' older values. Any order relative to ``put``; a file may hold only these. They
        count neither in ``entries`` nor in the smallest and largest key ``finish`` reports."""
        self._w.delete_range(start, end)

    def finish(self) -> Dict[str, Any]:
        """Writes the file's index, filter and footer, fsyncs it and puts it at ``path``.
        Returns ``{"path", "smallest_key", "largest_key", "entries", "file_size"}``. A file
        without entries is an ``InvalidArgumentError`` (and nothing is left behind)."""
        self.info = dict(self._w.finish())
        return self.info

    def abort(self) -> None:
        """Abandons the file; nothing is left at ``path``."""
        self._w.abort()

    def __enter__(self) -> "SstWriter":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if exc_type is None:
            if not self._w.closed:
                self.finish()
        else:
            self.abort()

    def __repr__(self) -> str:
        return f"<sluice.SstWriter {self.path!r} entries={self.entries}>"
