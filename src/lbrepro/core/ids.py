"""Point ids: faithful, unique and file-name safe.

A point id names a point's random stream and, alone or as the first or last of a run of cheap
points, its job's files (``results/<slug>/<artifact>/jobs/<id>.csv``), so it must (1) tell
apart every two parameter sets — ``{x:g}`` keeps 6 digits and merged ``rho: [0.9, 0.9000001]``
into one point, silently dropping one of them — and (2) match the Snakemake wildcard
constraint of ``workflow/rules/common.smk``. :func:`num` writes a number as
its shortest round-trip text (0.9 → ``0.9``, 2.0 → ``2``, 1e-05 → ``1e-05``, 1e+20 → ``1e20``);
:func:`add_point` refuses an id that is already taken, naming the config key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from lbrepro.core.errors import ConfigError

__all__ = ["POINT_ID", "add_point", "check_point_ids", "num"]

# The wildcard constraint of {job} in workflow/rules/common.smk (keep the two in step).
POINT_ID = re.compile(r"[A-Za-z0-9.=_-]+")


def num(x: Any) -> str:
    """The shortest text that reads back as exactly ``x``, safe in a file name.

    Integers (and integral floats below 2**53) print without a decimal point, so ordinary
    values keep the ids ``{x:g}`` gave them; ``e+`` loses its ``+`` (not allowed in a point id).
    """
    if isinstance(x, bool):
        raise ValueError(f"not a number: {x!r}")
    if isinstance(x, int):
        return str(x)
    value = float(x)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {x!r}")
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return float.__repr__(value).replace("e+", "e")


def add_point(
    points: dict[str, dict[str, Any]], point_id: str, params: dict[str, Any], key: str
) -> None:
    """Add one point; refuse an id that is already taken (ConfigError naming ``key``)."""
    if point_id in points:
        what = (
            "lists the same value twice"
            if points[point_id] == params
            else "holds two values that give the same point id"
        )
        raise ConfigError(key, f"{what} ({point_id!r}): every value must be distinct")
    points[point_id] = params


def check_point_ids(points: Mapping[str, Any], key: str) -> None:
    """Every id must match the wildcard constraint, or its files could not be matched."""
    for point_id in points:
        if not POINT_ID.fullmatch(point_id):
            raise ConfigError(
                key, f"point id {point_id!r} is not file-name safe (allowed: {POINT_ID.pattern})"
            )
