"""Time and memory estimates of the θ artifacts (quadratures and closed forms; no simulation).

Measured: a θ quadrature takes 2–3 ms (a Weibull or Lomax tail the longest); Erlang's exact θ
expands a polynomial of (m − 1)·d + 1 terms by d convolutions (well under a millisecond in the
range where its terms stay finite floats).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lbrepro.core import footprint
from lbrepro.core.packing import POINT_START_SECONDS

QUADRATURE_SECONDS = 3e-3
CONVOLUTION_SECONDS = 1e-8  # × m per term of the growing polynomial


def _erlang_seconds(m: int, d: int) -> float:
    return CONVOLUTION_SECONDS * m * ((m - 1) * d + 1) * d


def table_cost(p: Mapping[str, Any]) -> float:
    """general-theta-table: two readings × (quadrature + exact) per (m, d)."""
    work = sum(QUADRATURE_SECONDS + _erlang_seconds(m + 1, d) for m in p["m"] for d in p["d"])
    return POINT_START_SECONDS + 2 * work


def grid_cost(p: Mapping[str, Any]) -> float:
    """general-theta-exp and -examples: a quadrature (and a closed form) per (law, d)."""
    laws = p["mu"] if "mu" in p else p["dists"]
    return POINT_START_SECONDS + len(laws) * len(p["d"]) * 2 * QUADRATURE_SECONDS


def memory(p: Mapping[str, Any]) -> footprint.Footprint:
    """Rows (four per (m, d), two per (law, d)), named by the longer list, and Erlang's
    polynomial of (m − 1)·max(d) + 1 terms."""
    name = next(k for k in ("m", "mu", "dists") if k in p)
    laws = p[name]
    key = name if len(laws) >= len(p["d"]) else "d"
    m = max(p.get("m", [1])) + 1
    polynomial = footprint.FLOAT * ((m - 1) * max(p["d"]) + 1)
    return {key: footprint.rows(4 * len(laws) * len(p["d"])) + polynomial}
