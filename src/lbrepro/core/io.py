"""Tidy tables and JSON: the only formats results are written in.

A tidy table has one row per (parameters, method, quantity). The first columns are fixed so
every CSV of the project reads the same way; parameter columns follow in first-seen order.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

LEADING_COLUMNS = (
    "artifact",
    "point",
    "method",
    "quantity",
    "value",
    "ci_low",
    "ci_high",
    "N",
    "seed",
    "batches",
    "converged",
)


def _plain(value: Any) -> Any:
    """NumPy scalars and arrays to plain Python, NaN/inf to None (JSON has neither)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@contextlib.contextmanager
def atomic_open(path: str | Path, newline: str | None = None) -> Iterator[Any]:
    """Open a fresh temporary file beside ``path`` for writing text; on success it replaces
    ``path`` in one rename, so a reader (or a killed run) never sees half a file.

    The temporary file is created with a random name and ``O_EXCL`` (``tempfile.mkstemp``):
    a file or symlink planted where a fixed temporary name would be is never followed, so
    nothing is ever written outside ``path``'s folder. Parent folders are created.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as fh:
            yield fh
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path) as fh:
        fh.write(text)


def write_json(obj: Any, path: str | Path) -> None:
    """Write ``obj`` as indented JSON (atomically), creating parent folders."""
    atomic_write_text(path, json.dumps(_plain(obj), indent=2) + "\n")


def read_json(path: str | Path) -> Any:
    """Read a JSON file."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


class NotRegularFileError(ValueError):
    """A path that is not a regular file (a FIFO, a device, a socket, a folder)."""


class FileTooLargeError(ValueError):
    """A regular file larger than its reader allows."""


def read_regular_bounded(path: str | Path, limit: int, what: str = "a results file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes: the one bounded reader of every
    file a user or a damaged run can put in our way (configs, tables, checks, records).

    Opened without blocking (a FIFO would wait for a writer) and checked on the open file, so
    a file swapped for a device between the check and the read is still refused; at most
    ``limit + 1`` bytes are ever read (a file growing while read is refused too).
    :class:`NotRegularFileError` or :class:`FileTooLargeError` (``what`` names the kind of file
    in its message); OSError if it cannot be opened or read.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError("not a regular file")
        if info.st_size > limit:
            raise FileTooLargeError(f"{info.st_size} bytes, more than the {limit} {what} may have")
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise FileTooLargeError(f"more than the {limit} bytes {what} may have")
        return b"".join(chunks)
    finally:
        os.close(fd)


def table_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The leading columns, then every other key in first-seen order."""
    seen: dict[str, None] = {c: None for c in LEADING_COLUMNS}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    return list(seen)


def write_table(rows: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """Write tidy rows as CSV (missing cells empty; atomically), creating parent folders."""
    columns = table_columns(rows)
    with atomic_open(path, newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row.get(k)) for k in columns})


def _cell(value: Any) -> Any:
    """A CSV cell: plain Python, an infinity as the text "inf" or "-inf" (a cell, unlike JSON,
    can say so, and :func:`read_table` reads it back), NaN and missing values empty."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    plain = _plain(value)
    return "" if plain is None else plain


def _parse(cell: str) -> Any:
    if cell == "":
        return None
    for kind in (int, float):
        try:
            return kind(cell)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(cell, cell)


#: The largest tidy table read back (the full run's largest is under 1 MB): a damaged or
#: planted file of gigabytes is refused (ValueError) rather than read into memory.
MAX_TABLE_BYTES = 256 * 1024 * 1024


def read_table(path: str | Path) -> list[dict[str, Any]]:
    """Read a tidy CSV back: numbers as int/float, empty cells as None. A regular file of at
    most :data:`MAX_TABLE_BYTES`, read boundedly (:func:`read_regular_bounded`)."""
    text = read_regular_bounded(path, MAX_TABLE_BYTES, what="a table").decode("utf-8")
    with io.StringIO(text, newline="") as fh:
        return [{k: _parse(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def concat_tables(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Read several tidy CSVs into one list of rows, in the order given."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        rows.extend(read_table(path))
    return rows


def select(rows: Iterable[Mapping[str, Any]], **where: Any) -> list[Mapping[str, Any]]:
    """Rows whose columns equal every ``where`` value (floats compared to 1e-12)."""

    def match(row: Mapping[str, Any]) -> bool:
        for key, want in where.items():
            have = row.get(key)
            if isinstance(want, float) and isinstance(have, (int, float)):
                if not math.isclose(have, want, rel_tol=1e-12, abs_tol=1e-15):
                    return False
            elif have != want:
                return False
        return True

    return [row for row in rows if match(row)]
