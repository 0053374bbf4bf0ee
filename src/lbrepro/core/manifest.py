"""Digests of what a run wrote: every job table, table, checks file and figure.

The rule that makes a file records, beside it, what it wrote — ``<file>.digest.json``: the
file's SHA-256 and size, for a table its number of data rows and the points it holds, and
``made_by``: the seed and a digest of everything else that determines the file (the parameters
its rule was given and the artifact's code version, :func:`params_digest`). A file whose
``made_by`` is not what the current config would make — copied in from a run with another seed,
left by a run with other parameters or older code — is stale, whatever its modification time.
The records serve three times:

* **collection** (:func:`lbrepro.pipeline.collect_table`) verifies every job table against its
  record — every planned point present, every byte as written — and recomputes a job whose
  table is truncated, empty, edited or has no record, instead of collecting it silently or
  failing with a traceback on every rerun;
* **the workflow, when it starts** (:func:`lbrepro.pipeline.stale_outputs`), verifies every
  existing output and removes the damaged and the stale ones, so Snakemake makes them again
  whatever its rerun triggers (``--rerun-triggers mtime`` included);
* **the report** (:mod:`lbrepro.report.manifest`) verifies every table, checks file and figure
  it shows and says, in its provenance section, which were changed after the run that made
  them (a hand-edited checks.json is shown as such, not as a result).

A record proves a file is what the pipeline wrote, not who wrote it: anyone who can edit the
results can write a matching record too. It catches accidents (a full disk, a killed copy, an
editor) and edits made without the pipeline.

"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lbrepro.core.io import atomic_write_text, read_regular_bounded

__all__ = [
    "DIGEST_SUFFIX",
    "code_digest",
    "digest_path",
    "file_sha256",
    "import_closure",
    "package_digest",
    "params_digest",
    "read_digest",
    "stale_reason",
    "verify",
    "write_digest",
]

DIGEST_SUFFIX = ".digest.json"
#: A record is a few hundred bytes (a job table's point ids: at most a few hundred kB).
MAX_RECORD_BYTES = 16 * 1024 * 1024


@functools.cache
def package_digest(package: str) -> str:
    """SHA-256 (12 hex digits) of a package's source and data files (.py, .yaml, .json), names
    included: what an artifact's code version and the coverage record's code are named by."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return "unknown"
    origin = Path(spec.origin)
    return _files_digest(
        origin.parent, _source_files(origin.parent if spec.submodule_search_locations else origin)
    )


def _source_files(path: Path) -> set[Path]:
    """The source and data files (.py, .yaml, .json) of a package's folder, or a module file."""
    candidates = path.rglob("*") if path.is_dir() else [path]
    return {f for f in candidates if f.suffix in (".py", ".yaml", ".json") and f.is_file()}


def _files_digest(root: Path, files: set[Path] | Sequence[Path]) -> str:
    """SHA-256 (12 hex digits) of ``files`` in sorted order, each named relative to ``root``."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _package_root(name: str) -> Path | None:
    """The directory of the top-level package of module ``name`` (found without importing
    anything below it)."""
    spec = importlib.util.find_spec(name.split(".")[0])
    if spec is None or spec.origin is None or not spec.submodule_search_locations:
        return None
    return Path(spec.origin).parent


def _module_file(root: Path, top: str, name: str) -> Path | None:
    """The source file of module ``name`` under package ``top`` at ``root`` (its directory),
    found on disk without importing it: ``<root>/a/b.py`` or ``<root>/a/b/__init__.py``."""
    parts = name.split(".")
    if parts[0] != top:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_names(path: Path, module: str) -> set[str]:
    """Every module name ``path`` (module ``module``) imports, at module level or inside a
    function (a lazy import is still code the module runs), relative imports resolved; for
    ``from a import b`` both ``a`` and ``a.b`` (b may be a submodule)."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


@functools.cache
def import_closure(package: str) -> tuple[Path, ...]:
    """The files that make up ``package``'s code: its own source and data files (.py, .yaml,
    .json) and the source of every module of the same top-level package it imports,
    transitively (the parents' ``__init__.py`` too, which run first) — found by reading the
    sources, not by importing them. What an artifact's numbers can depend on inside lbrepro."""
    root = _package_root(package)
    origin = None if root is None else _module_file(root, package.split(".")[0], package)
    if root is None or origin is None:
        return ()
    top = package.split(".")[0]
    files = _source_files(origin.parent if origin.name == "__init__.py" else origin)
    pieces = package.split(".")
    for i in range(1, len(pieces)):  # the packages above it, whose __init__ runs first
        parent = _module_file(root, top, ".".join(pieces[:i]))
        if parent is not None:
            files.add(parent)
    todo = [f for f in files if f.suffix == ".py"]
    seen = set(todo)
    while todo:
        path = todo.pop()
        rel = path.relative_to(root).with_suffix("")
        parts = [top, *rel.parts]
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for name in _imported_names(path, module):
            # the module and the packages above it, whose __init__ runs on import
            pieces = name.split(".")
            for i in range(1, len(pieces) + 1):
                found = _module_file(root, top, ".".join(pieces[:i]))
                if found is not None and found not in seen:
                    seen.add(found)
                    todo.append(found)
    return tuple(sorted(files | seen))


@functools.cache
def code_digest(package: str) -> str:
    """SHA-256 (12 hex digits) of :func:`import_closure` (paths and bytes): a change in any
    module ``package`` runs — a model's equations, a kernel, the statistics — changes it."""
    files = import_closure(package)
    root = _package_root(package)
    if not files or root is None:
        return "unknown"
    return _files_digest(root, files)


def digest_path(path: str | Path) -> Path:
    """Where the record of ``path`` lives: beside it, ``<name>.digest.json``."""
    path = Path(path)
    return path.with_name(path.name + DIGEST_SUFFIX)


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex), read in blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def params_digest(value: Any) -> str:
    """The SHA-256 (hex) of ``value`` as canonical JSON: equal for equal parameters, whatever
    the order of a mapping's keys (a tuple counts as the list it is written as)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_digest(
    path: str | Path,
    *,
    rows: int | None = None,
    points: Sequence[str] | None = None,
    made_by: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Record the digest of the file just written at ``path`` (and its rows, its points, and
    ``made_by``: what made it — its seed, code version and parameters' digest)."""
    path = Path(path)
    record: dict[str, Any] = {
        "file": path.name,
        "sha256": file_sha256(path),
        "bytes": path.stat().st_size,
    }
    if rows is not None:
        record["rows"] = int(rows)
    if points is not None:
        record["points"] = list(points)
    if made_by is not None:
        record["made_by"] = dict(made_by)
    atomic_write_text(digest_path(path), json.dumps(record, indent=1) + "\n")
    return record


def read_digest(path: str | Path) -> dict[str, Any] | None:
    """The record of ``path``, or None if it has none (or an unreadable one)."""
    record = digest_path(path)
    try:
        # Bounded and regular only: a record swapped for a FIFO blocked the run for ever.
        data = json.loads(read_regular_bounded(record, MAX_RECORD_BYTES, what="a digest record"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("sha256"), str):
        return None
    return data


def verify(
    path: str | Path,
    *,
    points: Sequence[str] | None = None,
    full: bool = True,
    made_by: Mapping[str, Any] | None = None,
) -> str | None:
    """Why the file at ``path`` is not what its rule wrote — None if it is.

    ``points``: the point ids the file must hold (a job table: exactly its planned points, in
    order). ``made_by``: what must have made it (the whole of it is compared — seed, code,
    digest; the seeds are named in the answer). ``full`` False compares only the size (a
    stat, for a quick look at many files).
    """
    path = Path(path)
    if not path.is_file():
        # A folder, a FIFO or a link to nothing where the file belongs is not "missing": the
        # line that says it is removed names what it is.
        return "not a regular file" if os.path.lexists(path) else "missing"
    record = read_digest(path)
    if record is None:
        return f"no digest record ({digest_path(path).name})"
    if points is not None and record.get("points") != list(points):
        return "holds other points than the plan"
    if made_by is not None:
        made = record.get("made_by")
        made = made if isinstance(made, dict) else {}
        # The whole of it, not only its digest: a record whose seed or code was edited (its
        # digest kept) would otherwise name a seed the file was not made with.
        if made != dict(made_by):
            return stale_reason(made, made_by)
    try:
        size = os.stat(path).st_size
    except OSError as err:
        return f"unreadable: {err.strerror}"
    if size != record.get("bytes"):
        return f"{size} bytes, {record.get('bytes')} written (truncated or changed)"
    try:
        changed = full and file_sha256(path) != record["sha256"]
    except OSError as err:  # no read permission, an I/O error: named, then made again
        return f"unreadable: {err.strerror}"
    if changed:
        return "changed after it was written (digest differs)"
    return None


def stale_reason(made: Mapping[str, Any], expected: Mapping[str, Any]) -> str:
    """Why a file made by ``made`` is not what ``expected`` would make, in one phrase."""
    if not made:
        return "its record does not say what made it"
    if made.get("digest") == expected.get("digest"):
        return "its record was changed after it was written (made_by does not match its digest)"
    if made.get("seed") != expected.get("seed"):
        return f"made with seed {made.get('seed')}, not {expected.get('seed')}"
    if made.get("code") != expected.get("code"):
        return f"made by other code ({made.get('code')}, not {expected.get('code')})"
    return "made with other parameters than the config gives"
