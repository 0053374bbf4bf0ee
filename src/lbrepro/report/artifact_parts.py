"""An artifact's files, parameters, summary table and regenerate command, as the page shows them.

Links are relative to the report's folder, so the report opens offline from disk.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lbrepro.artifacts.registry import Artifact
from lbrepro.core.io import read_table
from lbrepro.report.formatting import fmt

#: Rows of an artifact's summary table shown in the report (the CSV holds them all).
MAX_SUMMARY_ROWS = 60


def href(target: Path, base: Path) -> str:
    """A URL for ``target`` relative to the folder ``base`` (the report's folder)."""
    try:
        rel = os.path.relpath(os.path.abspath(target), os.path.abspath(base))
    except ValueError:  # different drives on Windows: no relative path exists
        return Path(os.path.abspath(target)).as_uri()
    return quote(Path(rel).as_posix())


def flatten(section: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A config section as (dotted key, formatted value) pairs for a definition table."""
    if not isinstance(section, Mapping):
        return [(prefix or "value", fmt(section, max_items=12))]
    pairs: list[tuple[str, str]] = []
    for key, value in section.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            pairs.extend(flatten(value, name))
        else:
            pairs.append((name, fmt(value, max_items=12)))
    return pairs


def summary_table(artifact: Artifact, table: Path) -> tuple[dict[str, Any] | None, str]:
    """The artifact's summary rows as a formatted table, or None and a note."""
    if artifact.summary is None:
        return None, ""
    if not table.is_file():
        return None, "summary table not available: the results table was not produced"
    try:
        rows = artifact.summary(read_table(table))
    except Exception as err:  # a bad table must not take the whole report down
        return None, f"summary table could not be computed: {type(err).__name__}: {err}"
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    shown = rows[:MAX_SUMMARY_ROWS]
    # Columns empty in every shown row (e.g. ci_low of non-simulation rows) only add noise.
    columns = {c: None for c in columns if any(row.get(c) is not None for row in shown)}
    return {
        "columns": list(columns),
        "rows": [[fmt(row.get(c)) for c in columns] for row in shown],
        "omitted": len(rows) - len(shown),
    }, ""


def regenerate_command(artifact: Artifact, config_file: str) -> str:
    """The command that recomputes ``artifact`` with this run's config, from the run's folder.

    ``--forceall`` reruns every job of the artifact's targets (its points, table, figure and
    checks), nothing else; ``--configfile`` is the config this report wrote beside itself,
    complete, so merged over the default config file it is this run's config again.
    """
    targets = " ".join(shlex.quote(path) for path in artifact.paths().values())
    return f"snakemake --cores all --configfile {shlex.quote(config_file)} --forceall {targets}"
