"""Provenance: what produced a report (commit, package versions, config hash, seed, date).

A reader who wants to rerun a figure needs exactly these facts. Gathering them never fails:
anything unavailable is reported as "unknown" or "not installed". The host name is left out
on purpose, so a shared report does not leak where it was run.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import lbrepro
from lbrepro.config import config_hash

#: Distributions whose versions the report lists (in this order).
PACKAGES = ("numpy", "scipy", "numba", "matplotlib", "jinja2", "snakemake")

UNKNOWN = "unknown"
NOT_INSTALLED = "not installed"


def _git(root: Path, *args: str) -> str | None:
    """Output of ``git -C root args`` (stripped), or None if git is missing or fails."""
    try:
        result = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    return result.stdout.strip()


def git_state(root: str | Path = ".") -> dict[str, Any]:
    """The short commit hash and whether tracked files differ from it.

    ``dirty`` is None when it cannot be told. Untracked files (results, figures) do not make
    the tree dirty: they are what the pipeline writes.
    """
    root = Path(root)
    commit = _git(root, "rev-parse", "--short", "HEAD")
    if not commit:
        return {"commit": UNKNOWN, "dirty": None}
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def package_version(name: str) -> str:
    """The installed version of distribution ``name``, or "not installed"."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return NOT_INSTALLED


def provenance(config: Mapping[str, Any], root: str | Path = ".") -> dict[str, Any]:
    """Everything the report's provenance block shows, as plain JSON-able values.

    Keys: ``commit``, ``dirty``, ``lbrepro``, ``python``, ``platform``, ``packages`` (name →
    version), ``config_hash``, ``seed``, ``run_date`` (UTC, ISO 8601).
    """
    git = git_state(root)
    return {
        "commit": git["commit"],
        "dirty": git["dirty"],
        "lbrepro": getattr(lbrepro, "__version__", None) or package_version("lbrepro"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        # OS and architecture only; never platform.node(), which is the host name.
        "platform": f"{platform.system()} {platform.machine()}".strip() or UNKNOWN,
        "packages": {name: package_version(name) for name in PACKAGES},
        "config_hash": config_hash(config),
        "seed": config.get("seed"),
        "run_date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
