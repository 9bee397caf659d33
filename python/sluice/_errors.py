"""Sluice's exception hierarchy: one class per variant of the Rust error enums
(``sluice::Error`` and ``sluice_import::ImportError``).

::

    Error
    ├── ClosedError                  a Db, snapshot or writer used after close()
    ├── CorruptionError              on-disk bytes failed validation (.file, .offset, .reason)
    │   └── CatalogError             the table catalog or a stored row does not decode
    ├── InvalidArgumentError         also a ValueError (.option for an import option)
    │   └── KeyOrderError            SstWriter keys not strictly increasing (.previous, .key)
    ├── NotSupportedError
    ├── PoisonedError                the Db refuses writes after a background failure
    ├── InternalError                a bug: please report it
    ├── CannotResumeError            resume=True refused: the checkpoint is another import's
    │                                (.dir, .reason)
    ├── SchemaError                  CREATE TABLE / INDEX not understood (.line, .column, .reason)
    ├── DataError                    a row of the input (.file, .line)
    │   ├── BadRowError              (.column, .value, .reason)
    │   ├── DuplicateKeyError        (.key, .other)
    │   ├── UniqueViolationError     (.index, .value, .other)
    │   └── TooManyErrorsError       more bad rows than max_errors (.count, .last)
    └── IoError                      also an OSError (.errno, .strerror, .filename)
        ├── LockedError              the Db is locked by another process
        └── DiskFullError            a filesystem the import writes is full (.needed,
                                     .available, .kept bytes; .filename the directory)
"""

from __future__ import annotations

import errno as _errno
from typing import Any, Optional


class Error(Exception):
    """Base class of every error Sluice raises."""


class ClosedError(Error):
    """The Db (or snapshot, scan, SstWriter) was used after it was closed."""


class CorruptionError(Error):
    """On-disk bytes failed validation: ``file`` and byte ``offset`` say where."""

    file: Optional[str] = None
    offset: Optional[int] = None
    reason: Optional[str] = None


class CatalogError(CorruptionError):
    """The import catalog or a stored row does not decode."""


class InvalidArgumentError(Error, ValueError):
    """A bad argument or option (``option`` names an import option when one is at fault)."""

    option: Optional[str] = None


class KeyOrderError(InvalidArgumentError):
    """Keys given to an SstWriter must be strictly increasing."""

    previous: bytes = b""
    key: bytes = b""


class NotSupportedError(Error):
    """The feature exists in the format but this build does not support it."""


class PoisonedError(Error):
    """A background write or sync failed: the Db refuses writes until it is reopened."""


class InternalError(Error):
    """A bug in Sluice (a worker panicked or an invariant broke)."""


class SchemaError(Error):
    """The schema does not parse or is not supported (``line``, ``column`` 1-based)."""

    line: Optional[int] = None
    column: Optional[int] = None
    reason: Optional[str] = None


class DataError(Error):
    """A row of the input cannot be imported (``file``, ``line`` where it starts)."""

    file: Optional[str] = None
    line: Optional[int] = None


class BadRowError(DataError):
    """A bad value or record: ``column`` and ``value`` when one column is at fault."""

    column: Optional[str] = None
    value: Optional[str] = None
    reason: Optional[str] = None


class DuplicateKeyError(DataError):
    """A primary key that another row also has (``key``; ``other``: where that row is)."""

    key: Optional[str] = None
    other: Optional[str] = None


class UniqueViolationError(DataError):
    """A value of a unique index that another row also has."""

    index: Optional[str] = None
    value: Optional[str] = None
    other: Optional[str] = None


class TooManyErrorsError(DataError):
    """More bad rows than ``max_errors`` allows; ``last`` is the last one (also the cause)."""

    count: int = 0
    last: Optional[DataError] = None


class IoError(Error, OSError):
    """An operating-system I/O error (``errno``, ``strerror``, ``filename`` as OSError's)."""

    message: Optional[str] = None

    def __str__(self) -> str:
        return self.message or OSError.__str__(self)


class LockedError(IoError):
    """The Db is locked by another process (open it with ``read_only=True`` beside it)."""


class DiskFullError(IoError):
    """A filesystem an import writes to is full (``ENOSPC``): ``filename`` is the directory,
    ``needed`` the bytes the import needs there (an estimate), ``available`` the bytes free,
    ``kept`` the bytes of finished work kept there for ``resume=True`` (0: none). The Db is
    unchanged."""

    needed: int = 0
    available: int = 0
    kept: int = 0


class CannotResumeError(Error):
    """``resume=True`` found a checkpoint that is not this import's (another input, schema,
    table, Db or option): ``reason`` says what differs; nothing was imported and the
    checkpoint in ``dir`` is kept (an import without ``resume`` discards it)."""

    dir: str = ""
    reason: str = ""


_KIND_ERRNO = {
    "NotFound": _errno.ENOENT,
    "PermissionDenied": _errno.EACCES,
    "AlreadyExists": _errno.EEXIST,
    "WouldBlock": _errno.EAGAIN,
    "InvalidInput": _errno.EINVAL,
    "NotADirectory": _errno.ENOTDIR,
    "IsADirectory": _errno.EISDIR,
    "DirectoryNotEmpty": _errno.ENOTEMPTY,
    "StorageFull": _errno.ENOSPC,
    "ReadOnlyFilesystem": _errno.EROFS,
    "Interrupted": _errno.EINTR,
    "UnexpectedEof": _errno.EIO,
}


def _errno_of(raw: Optional[int], kind: str) -> Any:
    """The errno of a Rust ``io::Error``: its OS code, else one for its kind (EIO)."""
    if raw is not None:
        return raw
    return _KIND_ERRNO.get(kind, _errno.EIO)


__all__ = [
    "Error",
    "ClosedError",
    "CorruptionError",
    "CatalogError",
    "InvalidArgumentError",
    "KeyOrderError",
    "NotSupportedError",
    "PoisonedError",
    "InternalError",
    "SchemaError",
    "DataError",
    "BadRowError",
    "DuplicateKeyError",
    "UniqueViolationError",
    "TooManyErrorsError",
    "IoError",
    "LockedError",
    "DiskFullError",
    "CannotResumeError",
]
