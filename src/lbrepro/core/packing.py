"""Jobs from points: cheap points share one process, expensive ones keep a job each.

Every job of a workflow pays a fixed price before it computes anything — a Python process,
Snakemake's script preamble, importing numpy and the model, loading the compiled kernels: about
a second on a laptop core, more on a cluster, where a job also waits in the queue. A point of a
mean-field sweep or of a small simulation computes in less than that, so one job per point
spends most of a run starting processes. :func:`pack_points` packs the points of one artifact,
in their order, into jobs of at most ``budget`` estimated seconds each: a point estimated at
``budget`` or more is a job of its own (the unit a cluster spreads out), cheaper neighbours share
one. The numbers do not depend on the packing: every point still draws from its own stream
(seed, artifact id, point id) and writes the same rows, whichever job computes it.

A job's id is its point's id when it holds one point, and ``<first>..<last>`` (its first and last
point ids) when it holds several, so a table's files say which points they hold; ``..`` never
occurs in a point id (:func:`pack_points` refuses such an id rather than risk a clash).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = [
    "JOB_SEPARATOR",
    "POINT_START_SECONDS",
    "pack_points",
    "queue_simulation_seconds",
    "simulation_seconds",
    "startup_cost",
]

JOB_SEPARATOR = ".."
#: What a point costs before its simulation starts (compiled kernels loaded from numba's
#: cache, a mean field solved): about half a second in the full run's benchmark files.
POINT_START_SECONDS = 0.5


def startup_cost(params: Mapping[str, object]) -> float:
    """The estimated seconds of a point that computes in well under a second (a closed form, a
    mean-field solve, a small Markov chain): its start-up only, whatever its parameters."""
    return POINT_START_SECONDS


def simulation_seconds(events: float, events_per_second: float) -> float:
    """A simulation point's estimated seconds: its events at the kernel's typical rate (each
    simulating module's ``EVENTS_PER_SECOND``) after :data:`POINT_START_SECONDS`."""
    return POINT_START_SECONDS + events / events_per_second


def queue_simulation_seconds(
    arrival_rate: float,
    servers: float,
    horizon: float,
    events_per_second: float,
    slowdown: float = 1.0,
) -> float:
    """The estimated seconds of a queueing simulation — every paper's cost rule: arrivals and
    departures, 2λN events per unit time over ``horizon``, at the kernel's typical rate
    divided by ``slowdown`` (a regime its benchmarks found slower)."""
    return simulation_seconds(2.0 * arrival_rate * servers * horizon * slowdown, events_per_second)


def pack_points(costs: Mapping[str, float | None], budget: float) -> dict[str, list[str]]:
    """Jobs (id → point ids) from the points' estimated seconds, in point order.

    ``costs`` maps each point id to its estimated compute seconds (``inf`` or None where the
    artifact cannot say: such a point is a job of its own, as is every point when ``budget``
    is 0). A job is closed before a point that would take it past ``budget``.
    """
    if not (budget >= 0 and math.isfinite(budget)):
        raise ValueError(f"budget must be a finite number >= 0, got {budget!r}")
    jobs: dict[str, list[str]] = {}
    current: list[str] = []
    total = 0.0

    def close() -> None:
        nonlocal current, total
        if current:
            job = current[0] if len(current) == 1 else current[0] + JOB_SEPARATOR + current[-1]
            jobs[job] = current
        current, total = [], 0.0

    for point, cost in costs.items():
        if JOB_SEPARATOR in point:
            raise ValueError(f"point id {point!r} contains {JOB_SEPARATOR!r}, a job id separator")
        if cost is not None and not cost >= 0:
            raise ValueError(f"point {point!r}: estimated cost must be >= 0, got {cost!r}")
        alone = cost is None or cost >= budget
        if alone or total + cost > budget:
            close()
        current.append(point)
        total += math.inf if alone else cost
        if alone:
            close()
    close()
    return jobs
