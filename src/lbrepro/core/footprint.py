"""Memory estimates of one point, from its parameters, checked before any job runs.

Every artifact declares ``memory(params)`` (lbrepro.artifacts.registry.Artifact): the bytes
one point's compute will allocate, by the config key that drives them (``{"N": 8e8,
"kmax": 2e4}``), so a point that would not fit is refused at validation naming that key
(lbrepro.pipeline.check_memory_estimates). Estimates count what grows with the parameters —
per-server arrays of a simulation, mean-field truncation levels, state spaces, recorded
snapshots and trajectories, the tidy rows a point returns — not the Python process itself,
and stay O(1) per point (planning a 10⁵-point sweep computes one per point). Like the time
estimates (``cost``), they are lower bounds of what a point certainly needs, so a point
refused here would have failed in its job.

The constants are rough: some measured (a row: tracemalloc; the whittle chain's bytes per
state), the others counted from the arrays a kernel allocates; each module says which.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["FLOAT", "ROW_BYTES", "Footprint", "rows", "total"]

#: Bytes of one float64 or int64 array element.
FLOAT = 8
#: Bytes of one tidy row while the point's table is built (a dict of ~10 fields: 360 B
#: measured) and written.
ROW_BYTES = 512

#: A point's estimated bytes by the config key that drives them.
Footprint = Mapping[str, float]


def rows(n: float) -> float:
    """The bytes of ``n`` tidy rows."""
    return ROW_BYTES * float(n)


def total(footprint: Footprint) -> tuple[float, str]:
    """The estimate's total bytes and the key that contributes most ("" when empty)."""
    if not footprint:
        return 0.0, ""
    key = max(footprint, key=lambda k: footprint[k])
    return float(sum(footprint.values())), key
