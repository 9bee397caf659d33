"""``sluice.open`` and ``Db``: the Pythonic surface over ``sluice._sluice.Db``."""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
)

from . import _sluice
from ._errors import ClosedError
from ._table import Table

PathLike = Union[str, "os.PathLike[str]"]


def _module(name: str) -> Any:
    """An optional dependency (pyarrow), imported when first needed."""
    return importlib.import_module(name)


def _arrow_source(data: Any) -> Any:
    """``data`` as an object with ``__arrow_c_stream__`` or ``__arrow_c_array__``."""
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        return data
    if isinstance(data, (list, tuple)) and data and all(
        hasattr(b, "__arrow_c_array__") for b in data
    ):
        pyarrow = _module("pyarrow")
        # A list of record batches: one stream, batch boundaries kept.
        return pyarrow.Table.from_batches([pyarrow.record_batch(b) for b in data])
    pandas = sys.modules.get("pandas")  # a pandas DataFrame means pandas is imported
    if pandas is not None and isinstance(data, pandas.DataFrame):
        return _module("pyarrow").Table.from_pandas(data, preserve_index=False)
    for method in ("to_arrow", "arrow"):
        if callable(getattr(data, method, None)):
            return getattr(data, method)()
    raise TypeError(
        f"{type(data).__name__} is not Arrow data (no __arrow_c_stream__ or __arrow_c_array__)"
    )


class WriteBatch:
    """Puts and deletes applied together by ``Db.write``: all of them or none."""

    def __init__(self) -> None:
        self._b = _sluice.WriteBatch()

    def put(self, key: bytes, value: bytes) -> None:
        """Sets ``key`` to ``value``."""
        self._b.put(key, value)

    def delete(self, key: bytes) -> None:
        """Deletes ``key``."""
        self._b.delete(key)

    def delete_range(self, start: bytes, end: bytes) -> None:
        """Deletes every key in ``[start, end)``."""
        self._b.delete_range(start, end)

    def clear(self) -> None:
        """Removes everything added so far."""
        self._b.clear()

    def __len__(self) -> int:
        return len(self._b)


class _BatchContext(WriteBatch):
    """``with db.batch() as b:`` — written on a clean exit, dropped on an exception."""

    def __init__(self, db: "Db", sync: bool) -> None:
        super().__init__()
        self._db = db
        self._sync = sync

    def __enter__(self) -> "_BatchContext":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], *_: Any) -> None:
        if exc_type is None and len(self):
            self._db.write(self, sync=self._sync)


class Snapshot:
    """A consistent point-in-time view of a Db (``Db.snapshot()``): ``get`` and ``scan``
    through it see exactly the writes made before it was taken. Release it with ``release()``
    or a ``with`` block; until then it keeps what it sees from being compacted away."""

    def __init__(self, snap: Any) -> None:
        self._s = snap

    @property
    def seqno(self) -> Optional[int]:
        """The sequence number it reads at (None once released)."""
        return self._s.seqno  # type: ignore[no-any-return]

    def release(self) -> None:
        """Lets go of the snapshot (idempotent)."""
        self._s.release()

    def __enter__(self) -> "Snapshot":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def _raw(self) -> Any:
        if self._s.seqno is None:
            raise ClosedError("Snapshot is released")
        return self._s


@dataclasses.dataclass(frozen=True)
class ImportReport:
    """What ``Db.import_files`` did (the numbers ``sluice import`` prints)."""

    table: str
    """The table loaded."""
    created: bool
    """Whether the import created the table."""
    rows: int
    """Rows imported (after duplicates were resolved)."""
    rejected: int
    """Bad rows rejected (at most ``max_errors``)."""
    duplicates_dropped: int
    """Rows dropped by ``on_duplicate="first"`` or ``"last"``."""
    bytes: int
    """Input bytes read."""
    runs_spilled: int
    """Sorted runs spilled to disk."""
    runs_premerged: int
    """Runs merged before the final merge."""
    streamed_indexes: List[str]
    """Indexes whose input was already sorted and went straight to final files."""
    phases: Dict[str, float]
    """Seconds per phase: parse_sort, merge, ingest, total."""
    files: List[Dict[str, Any]]
    """Files ingested: index, level, entries, bytes."""
    resumed: bool = False
    """Whether the import went on from an interrupted one's checkpoint (``resume=True``);
    the counts then cover both runs, the phases this run only."""
    rewrite: Optional[Dict[str, int]] = None
    """The row-group rewrite run after an ``on_duplicate="last"`` import into an existing
    columnar table (option ``rewrite_dead``, default 0.5; ``None`` turns it off): the
    numbers ``Table.rewrite_groups`` returns; ``None`` when none ran."""
    rewrite_error: Optional[str] = None
    """Why that rewrite failed; the import is done all the same."""
    small_file_merges: int = 0
    """Merges of the table's small files run after the commit (each merged up to 64
    neighbouring small files of one index or column into one)."""
    small_file_merge_error: Optional[str] = None
    """Why such a merge failed. The import is committed all the same, but the failure
    poisons the Db as a failed compaction does: its next write raises, until it is
    reopened."""

    def to_dict(self) -> Dict[str, Any]:
        """The report as a plain dict."""
        return dataclasses.asdict(self)


class Db:
    """An open Sluice Db (made by ``sluice.open``).

    Safe to share between threads: every call that reads or writes releases the GIL. A
    context manager: ``with sluice.open(path) as db:`` closes it on exit. After ``close()``
    every call raises ``ClosedError``.
    """

    def __init__(self, raw: Any) -> None:
        self._db = raw

    def _raw(self) -> Any:
        return self._db

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The Db's directory."""
        return str(self._db.path)

    @property
    def read_only(self) -> bool:
        """Opened with ``read_only=True``."""
        return bool(self._db.read_only)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return bool(self._db.closed)

    def close(self) -> None:
        """Closes the Db: waits for calls in progress in other threads and for background
        work, flushes writes that skipped the WAL, releases the directory lock. Idempotent."""
        self._db.close()

    def __enter__(self) -> "Db":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("read-only" if self.read_only else "open")
        return f"<sluice.Db {self.path!r} {state}>"

    # -- keys and values -------------------------------------------------------------------

    def get(self, key: bytes, *, snapshot: Optional[Snapshot] = None) -> Optional[bytes]:
        """The value of ``key``, or None (as of ``snapshot`` when given)."""
        snap = snapshot._raw() if snapshot is not None else None
        return self._db.get(key, snap)  # type: ignore[no-any-return]

    def put(self, key: bytes, value: bytes) -> None:
        """Sets ``key`` to ``value``."""
        self._db.put(key, value)

    def delete(self, key: bytes) -> None:
        """Deletes ``key`` (no error when absent)."""
        self._db.delete(key)

    def delete_range(self, start: bytes, end: bytes) -> None:
        """Deletes every key in ``[start, end)``."""
        self._db.delete_range(start, end)

    def write(self, batch: WriteBatch, *, sync: bool = False, disable_wal: bool = False) -> None:
        """Applies ``batch`` atomically. ``sync``: fsync the WAL first; ``disable_wal``: skip
        the WAL (lost on a crash unless flushed)."""
        self._db.write(batch._b, sync, disable_wal)

    def batch(self, *, sync: bool = False) -> _BatchContext:
        """A batch to fill in a ``with`` block; written atomically when the block ends
        normally, not at all when it raises::

            with db.batch() as b:
                b.put(b"a", b"1")
                b.delete(b"b")
        """
        return _BatchContext(self, sync)

    def snapshot(self) -> Snapshot:
        """A point-in-time view for ``get(..., snapshot=)`` and ``scan(snapshot=)``."""
        return Snapshot(self._db.snapshot())

    def scan(
        self,
        start: Optional[bytes] = None,
        end: Optional[bytes] = None,
        reverse: bool = False,
        snapshot: Optional[Snapshot] = None,
    ) -> Iterator[Tuple[bytes, bytes]]:
        """Yields ``(key, value)`` for keys in ``[start, end)`` (None: unbounded) in key
        order, or descending with ``reverse=True``, as of ``snapshot`` when given. Entries
        are fetched from the engine in chunks (up to 1024 entries or 1 MiB)."""
        snap = snapshot._raw() if snapshot is not None else None
        it = self._db.scan(start, end, reverse, snap)
        try:
            while True:
                chunk = it.next_chunk()
                if not chunk:
                    return
                yield from chunk
        finally:
            it.close()

    def __getitem__(self, key: bytes) -> bytes:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: bytes, value: bytes) -> None:
        self.put(key, value)

    def __delitem__(self, key: bytes) -> None:
        self.delete(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, bytes) and self.get(key) is not None

    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]:
        return self.scan()

    # -- maintenance -----------------------------------------------------------------------

    def flush(self) -> None:
        """Writes the memtable to an SST file and waits until it is on disk."""
        self._db.flush()

    def compact_range(self, start: Optional[bytes] = None, end: Optional[bytes] = None) -> None:
        """Compacts every file overlapping ``[start, end]`` (None: unbounded) into the last
        level, after a flush."""
        self._db.compact_range(start, end)

    def checkpoint(self, dir: PathLike) -> Dict[str, int]:
        """Writes an openable copy of the Db to the new directory ``dir`` (tables
        hard-linked where possible); returns ``{"tables", "bytes", "last_sequence"}``."""
        return dict(self._db.checkpoint(os.fspath(dir)))

    def metrics(self) -> Dict[str, Any]:
        """Counters and the LSM's shape: levels (files, bytes, score), memtable bytes,
        write amplification, stalls, block cache hits, …"""
        return dict(self._db.metrics())

    def ingest(self, paths: Iterable[PathLike], **options: Any) -> List[Dict[str, Any]]:
        """Adds SST files (``sluice.SstWriter``'s or RocksDB's ``SstFileWriter``'s)
        atomically: all become visible at once, or none. Options: ``link_files`` (hard-link
        instead of copy), ``allow_overlap``, ``verify_checksums``, ``verify_keys``,
        ``ingest_behind``, ``fail_if_not_bottommost``, ``wait_for_l0``, ``max_l0_wait``
        (seconds), ``small_file_threshold``. Returns where each file went (level, seqno)."""
        return list(self._db.ingest([os.fspath(p) for p in paths], options))

    # -- tables ----------------------------------------------------------------------------

    def import_files(
        self,
        schema_sql: Optional[str],
        files: Iterable[PathLike],
        *,
        primary_key: Optional[Sequence[str]] = None,
        **options: Any,
    ) -> ImportReport:
        """Imports CSV, TSV, JSON-lines (plain, .gz, .zst) or Parquet files described by
        ``schema_sql`` (``CREATE TABLE``, ``CREATE [UNIQUE] INDEX``) in one atomic ingest —
        what ``sluice import`` does, with its defaults. With ``schema_sql=None`` and
        ``primary_key``, the table's columns and types are taken from the first file (it
        must be Parquet), named by ``table`` or by the file. Options (``ImportOptions``
        fields): ``table``, ``format`` ("csv", "tsv", "jsonl", "parquet"), ``header``,
        ``delimiter``, ``quote``, ``null``, ``threads``, ``memory`` (bytes or "2GiB"),
        ``tmp_dir``, ``max_errors``, ``rejects``, ``on_duplicate`` ("error", "first",
        "last"), ``target_file_size``, ``progress`` ("auto", "plain", "off"), ``layout``
        ("row", "columnar"; default the schema's, else an existing table's), ``nice``, ``idle``, ``write_rate`` (bytes a second, or "100MiB";
        the import's file writes paced to it), ``chunk_size``, ``resume``,
        ``checkpoint_bytes``, ``rewrite_dead`` (a share in (0, 1], or ``None``). A bad row
        raises ``BadRowError`` naming file, line (for
        Parquet, the row), column and value; the Db is then unchanged.

        An import keeps checkpoints (a ``sluice-resume-*`` directory in the Db directory or
        ``tmp_dir``) until it finishes: after a crash, ``resume=True`` continues from the
        last one (raising ``CannotResumeError`` if the files, schema, Db or an option that
        changes the result differ), an import without it discards it. A full disk raises
        ``DiskFullError`` (directory, bytes needed, bytes kept for ``resume``)."""
        paths = [os.fspath(f) for f in files]
        if schema_sql is None:
            if not primary_key or not paths:
                raise TypeError("import_files needs schema_sql, or files and primary_key")
            schema_sql = _sluice.parquet_schema_sql(
                paths[0], list(primary_key), options.get("table")
            )
        d = self._db.import_files(schema_sql, paths, options)
        return ImportReport(**d)

    def import_arrow(
        self,
        schema_sql: Optional[str],
        data: Any,
        *,
        table: Optional[str] = None,
        primary_key: Optional[Sequence[str]] = None,
        name: Optional[str] = None,
        **options: Any,
    ) -> ImportReport:
        """Imports Arrow data: anything that exports the Arrow C stream or array interface
        (a pyarrow ``Table``, ``RecordBatch`` or ``RecordBatchReader``, a polars
        ``DataFrame``, a DuckDB relation, ...), a list of record batches, or a pandas
        ``DataFrame`` (through pyarrow).
        Columns are matched by name and converted with the schema's types straight from the
        typed arrays — no text round trip; a value that does not fit exactly is refused.
        With ``schema_sql=None`` the table is made from the data's columns, with
        ``primary_key`` as its key and ``table`` (default "data") as its name. ``name`` is
        how errors name the input (default "arrow"): a bad value raises ``BadRowError``
        whose message names the row, the batch, the row in the batch and the column; the
        Db is then unchanged. Options: those of ``import_files``."""
        d = _sluice.import_arrow(
            self._raw(),
            schema_sql,
            _arrow_source(data),
            table=table,
            primary_key=list(primary_key or []),
            name=name,
            options=options,
        )
        return ImportReport(**d)

    def tables(self) -> List[str]:
        """Names of the tables in the Db's catalog."""
        return [t["name"] for t in self._db.tables()]

    def table(self, name: str) -> Table:
        """The table ``name`` (``InvalidArgumentError`` when there is none)."""
        for t in self._db.tables():
            if t["name"] == name:
                return Table(self, t)
        from ._errors import InvalidArgumentError

        raise InvalidArgumentError(f"no table {name!r} (tables: {', '.join(self.tables())})")


def open(  # noqa: A001 - the package's entry point is sluice.open
    path: PathLike, create: bool = True, read_only: bool = False, **options: Any
) -> Db:
    """Opens the Db at ``path``.

    ``create``: create it when ``path`` is missing or empty (default True). ``read_only``:
    open it for reading only, beside a writer in this or another process (it sees the Db as
    of the open). A Db open for writing in another process raises ``LockedError``.

    ``options`` (``sluice::Options`` fields; given ones apply over the Db's own, from its
    OPTIONS file, and an open for writing persists them: later opens keep them unless given
    again): ``write_buffer_size``, ``max_write_buffer_number``, ``target_file_size``,
    ``max_background_jobs``, ``max_subcompactions``, ``background_nice`` (0..=19, default
    10: the background threads' niceness), ``block_cache_bytes``, ``block_size``,
    ``block_restart_interval``, ``compression`` ("none", "snappy", "lz4", "zstd"),
    ``bloom_bits_per_key``, ``checksum``, ``verify_checksums``, ``wal_mmap_writes`` (default
    False; True writes the WAL through a memory mapping of its preallocated space: about twice
    the put throughput of one writer, far worse tail latency beside syncs and ingests), ``l0_compaction_trigger``, ``l0_slowdown_writes_trigger``,
    ``l0_stop_writes_trigger``, ``small_file_merge_prefix`` (0: off, the default; merges small
    neighbouring files whose keys share that many bytes in the background), ``max_open_files``, …

    Use it as a context manager::

        with sluice.open("/tmp/db") as db:
            db.put(b"k", b"v")
    """
    return Db(_sluice.Db.open(os.fspath(path), create, read_only, options))
