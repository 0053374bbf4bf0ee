"""Independent replications of one long simulation point, run as separate jobs and pooled.

A point whose run would take more than ``job_events`` events is split into R replications of
1/R of its measured time each, every one with its own warm-up and its own random stream (a
separate point id, so a separate stream of the one seed scheme, :func:`lbrepro.core.rng.stream`).
The jobs run side by side on more cores or nodes, so the longest job is R times shorter; a
replication may double its run only within the same budget (as the unsplit run could not
double beyond the config's event budget either). The pooled estimate has the precision of
the one long run: the replication means are independent, so their average has standard
error √(Σ se_i²)/R, each se_i read off the replication's own batch-means interval (Student t
with b_i − 1 degrees of freedom), and the pooled interval uses Student t with the
Welch–Satterthwaite degrees of freedom.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from lbrepro.artifacts.registry import Rows
from lbrepro.core.errors import ConfigError
from lbrepro.core.rows import estimate_row, not_converged
from lbrepro.core.stats import Estimate, t_quantile

__all__ = ["pool_replications", "replications_needed"]

#: Two-sided level of every interval.
_LEVEL = 0.95


def replications_needed(
    events_per_time: float, horizon: float, warmup: float, job_events: float | None
) -> int:
    """The fewest replications whose runs, warm-up included, each take at most ``job_events``.

    1 without a budget. A warm-up that alone exceeds the budget cannot be split (ConfigError
    naming ``job_events``).
    """
    if job_events is None:
        return 1
    if events_per_time * warmup >= job_events:
        raise ConfigError(
            "job_events",
            f"{job_events:g} events do not cover even the warm-up "
            f"({events_per_time * warmup:.3g} events)",
        )
    R = max(1, math.ceil(events_per_time * horizon / job_events))
    while events_per_time * (horizon / R + warmup) > job_events:
        R += 1
    return R


def _standard_error(row: Mapping[str, Any]) -> tuple[float, int]:
    """The standard error of a row's estimate and its batches, from its t-interval."""
    batches = int(row["batches"])
    half = (float(row["ci_high"]) - float(row["ci_low"])) / 2
    return half / t_quantile(0.5 + _LEVEL / 2, batches - 1), batches


def _pooled(group: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One row for R independent replications: their mean and its t-interval."""
    R = len(group)
    value = math.fsum(float(r["value"]) for r in group) / R
    errors = [_standard_error(r) for r in group]
    se = math.sqrt(math.fsum(s * s for s, _ in errors)) / R
    # Welch–Satterthwaite: the degrees of freedom of a sum of independent variance estimates.
    denominator = math.fsum((s / R) ** 4 / (b - 1) for s, b in errors)
    dof = se**4 / denominator if denominator > 0 else math.inf
    half = t_quantile(0.5 + _LEVEL / 2, dof) * se if se > 0 else 0.0
    first = {k: v for k, v in group[0].items() if k not in ("point", "replication")}
    pooled = Estimate.from_interval(
        value,
        value - half,
        value + half,
        batches=sum(b for _, b in errors),
        # one replication whose batch means stayed correlated makes the pool unconverged
        converged=not any(not_converged(r.get("converged")) for r in group),
    )
    return (
        first | estimate_row(pooled, N=first.get("N"), seed=first.get("seed")) | {"replications": R}
    )


def pool_replications(rows: Rows, key: tuple[str, ...] = ("family", "N")) -> Rows:
    """The rows with every set of replications (rows with a ``replication``) pooled into one.

    Replications of one point share ``key``, the method and the quantity; rows without a
    ``replication`` pass through unchanged, in their order, and the pooled rows follow.
    """
    plain: Rows = []
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("replication") is None:
            plain.append(r)
            continue
        ident = (*(str(r[k]) for k in key), r["method"], r["quantity"])
        groups.setdefault(ident, []).append(r)
    return plain + [_pooled(g) for g in groups.values()]
