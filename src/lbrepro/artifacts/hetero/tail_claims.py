"""The statistics of the tail claims of ``hetero-tail``: which simulated levels are resolved,
the doubly exponential tests (simulated log-ratios, deep mean-field log(−log u)) and the
agreement of a simulated tail with a prediction."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from lbrepro.artifacts.hetero.configuration import (
    named_systems,
)
from lbrepro.artifacts.registry import Rows
from lbrepro.core.io import select
from lbrepro.core.stats import Estimate
from lbrepro.core.verdicts import (
    EmptyComparisonError,
    Verdict,
    estimate,
    trend,
    within,
)

#: A tail level counts as resolved by the simulation when at least this many servers of the
#: type hold it on average and its CI excludes 0. Deeper, u is a rare event at this N and the
#: 1/N expansion is not uniform in n (at N = 1000 a u of 1e-6 gets a V/N larger than itself).
TAIL_MIN_SERVERS = 10


def _servers_holding(cfg: Mapping[str, Any], name: str, j: int) -> float:
    """The number of type-j servers of a system at the simulated N."""
    return named_systems(cfg)[name]["gamma"][j] * cfg["N"]


def resolved_levels(rows: Rows, cfg: Mapping[str, Any], name: str, policy: str, j: int) -> Rows:
    """Simulated levels k ≥ 1 the run resolves, contiguous from k = 1 (see TAIL_MIN_SERVERS)."""
    sims = sorted(
        select(rows, method="sim", quantity="u", system=name, policy=policy, type=j),
        key=lambda r: r["k"],
    )
    out = []
    for r in sims:
        if r["k"] < 1:
            continue
        if r["ci_low"] is None or r["ci_low"] <= 0:
            break
        if r["value"] * _servers_holding(cfg, name, j) < TAIL_MIN_SERVERS:
            break
        out.append(r)
    return out


def _log_ratios(levels: Rows) -> tuple[list[int], list[Estimate]]:
    """log(u_{k+1}/u_k), k = 0..K−1 (u_0 = 1 exactly), with half-widths from the log CIs.

    A doubly exponential tail has log-ratios that fall without bound; a geometric one (ρ^k)
    has them constant at log ρ.
    """
    logs = [Estimate.exact(0.0)]
    for r in levels:
        lo, hi = math.log(r["ci_low"]), math.log(r["ci_high"])
        logs.append(Estimate(math.log(r["value"]), lo, hi, (hi - lo) / 2, int(r["batches"])))
    ks, ratios = [], []
    for k, (e0, e1) in enumerate(itertools.pairwise(logs)):
        mean = e1.mean - e0.mean
        half = math.hypot(e0.half_width, e1.half_width)
        ks.append(k)
        ratios.append(Estimate(mean, mean - half, mean + half, half, max(e0.batches, e1.batches)))
    return ks, ratios


def _every_type(verdicts: dict[str, Verdict], skipped: list[str]) -> Verdict:
    """Every judged type's verdict passes; none judged is an error, never a pass."""
    if not verdicts:
        raise EmptyComparisonError("no type has enough resolved levels to judge its tail")
    note = "; ".join(
        f"{k}: {'pass' if v.passed else 'FAIL'} ({v.details})" for k, v in verdicts.items()
    )
    if skipped:
        note += "; not resolved at this N (< 3 resolved levels): " + ", ".join(skipped)
    first = next(iter(verdicts.values()))
    return Verdict(
        passed=all(v.passed for v in verdicts.values()),
        measured={k: v.measured for k, v in verdicts.items()},
        expected=first.expected,
        tolerance=first.tolerance,
        details=note,
    )


def log_ratios_fall(rows: Rows, cfg: Mapping[str, Any], name: str, policy: str) -> Verdict:
    """Per type: the simulated log-ratios log(u_{k+1}/u_k) decrease significantly (trend)."""
    verdicts, skipped = {}, []
    for j in sorted({r["type"] for r in select(rows, system=name, policy=policy)}):
        ks, ratios = _log_ratios(resolved_levels(rows, cfg, name, policy, j))
        if len(ratios) < 2:
            skipped.append(f"type {j + 1}")
            continue
        verdicts[f"type {j + 1}"] = trend(ks, ratios, "decreasing")
    return _every_type(verdicts, skipped)


def tail_within(
    rows: Rows, cfg: Mapping[str, Any], name: str, policy: str, method: str, quantity: str
) -> Verdict:
    """The simulated u^{(j)}_k within their CIs of a prediction, over every resolved level."""
    ests, refs, labels = [], [], []
    for j in sorted({r["type"] for r in select(rows, system=name, policy=policy)}):
        pred = {
            r["k"]: r["value"]
            for r in select(rows, method=method, quantity=quantity, system=name, policy=policy)
            if r["type"] == j
        }
        for r in resolved_levels(rows, cfg, name, policy, j):
            if r["k"] in pred:
                ests.append(estimate(r))
                refs.append(pred[r["k"]])
                labels.append(f"type {j + 1}, n = {r['k']}")
    return within(ests, refs, labels=labels)


def _window_slopes(log_u: list[float], period: int) -> tuple[float, float]:
    """Mean increment of log(−log u_n) over the last 3 periods and over the 3 before them.

    Under Scheme 2 a faster type's levels interleave with the slower types' (a type-j server
    at level n competes with type i at level ≈ nC_i/C_j), so its increments repeat with a
    period of C_j/C_min levels; averaging over whole periods removes that ripple.
    """
    y = np.log(-np.asarray(log_u[1:], dtype=float))
    w = 3 * period
    return float((y[-1] - y[-1 - w]) / w), float((y[-1 - w] - y[-1 - 2 * w]) / w)


def linear_loglog(series: dict[str, tuple[list[float], int]]) -> Verdict:
    """log(−log u_n) asymptotically linear: equal positive slopes over the last two windows."""
    slopes, flat = {}, True
    for key, (log_u, period) in series.items():
        last, before = _window_slopes(log_u, period)
        slopes[key] = [round(before, 4), round(last, 4)]
        flat &= last > 0.1 and abs(last - before) <= 0.01 * last
    if not slopes:
        raise EmptyComparisonError("no deep tail to judge")
    return Verdict(
        passed=bool(flat),
        measured=slopes,
        expected="equal positive slopes (> 0.1) over the last two windows",
        tolerance="1% relative",
        details="slope = mean increment of log(−log u_n) per level over 3 periods",
    )
