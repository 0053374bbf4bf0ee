"""The statistics of the tail claims of ``hetero-tail``: which simulated levels are resolved,
the doubly exponential tests (growth of the simulated log-ratios, deep mean-field
log(−log u)), their near miss (a Gaussian tail exp(−an²)), and the agreement of a simulated
tail with a prediction."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from lbrepro.artifacts.registry import Rows
from lbrepro.core.io import select
from lbrepro.core.verdicts import (
    AGREEMENT,
    Component,
    EmptyComparisonError,
    Verdict,
    agreement_margin,
    agrees,
    decide,
    estimate,
    exact,
    widening,
)
from lbrepro.judging.neighbours import nearest_distinct_load, neighbour_load
from lbrepro.judging.tails import held

#: The doubly exponential claim's floor on the growth factor of the log-ratios: a tail of
#: order d has log(u_{n+1}/u_n) ≈ d·log(u_n/u_{n−1}), d ≥ 2 (two samples at least).
GROWTH_FLOOR = 2.0


def gaussian_growth(n: int) -> float:
    """The log-ratio growth factor of the near miss exp(−an²) at step n (any a): r_n ∝ 2n + 1."""
    return (2 * n + 3) / (2 * n + 1)


def type_servers(spec: Mapping[str, Any], N: int) -> list[float]:
    """The number of servers of each type of a system (its config ``spec``) at the simulated
    N: what the tail checks below need of the configuration, per type j."""
    return [g * N for g in spec["gamma"]]


def resolved_levels(rows: Rows, servers: Sequence[float], name: str, policy: str, j: int) -> Rows:
    """Simulated levels k ≥ 1 the run resolves, contiguous from k = 1: held by enough servers
    of the type (``servers[j]``, :func:`type_servers`; :func:`lbrepro.judging.tails.held`; at
    N = 1000 a u of 1e-6 gets a V/N larger than itself) with a CI that excludes 0."""
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
        if not held(r["value"], servers[j]):
            break
        out.append(r)
    return out


def _types(rows: Rows, name: str, policy: str) -> list[int]:
    return sorted({r["type"] for r in select(rows, quantity="u", system=name, policy=policy)})


def growth_factors(
    rows: Rows, servers: Sequence[float], name: str, policy: str
) -> tuple[list[tuple[str, int, float, float]], list[str], list[Any]]:
    """Per judged type and step n: the growth factor f_n = r_{n+1}/r_n of the simulated
    log-ratios r_n = log(u_{n+1}/u_n) (u_0 = 1 exactly) and its 95% half-width (unwidened).

    The half-width is linear in the log-levels' half-widths (they share levels, so the worst
    case, not quadrature). A type is judged only with two steps or more (three resolved
    levels): one step never decides. Returns (label, n, f_n, half-width) rows, the types not
    judged, and the estimates read.
    """
    out, skipped, ests = [], [], []
    for j in _types(rows, name, policy):
        levels = resolved_levels(rows, servers, name, policy, j)
        logs, halves = [0.0], [0.0]
        for r in levels:
            lo, hi = math.log(r["ci_low"]), math.log(r["ci_high"])
            logs.append(math.log(r["value"]))
            halves.append((hi - lo) / 2)
            ests.append(estimate(r))
        ratios = np.diff(logs)
        if len(ratios) < 3:
            skipped.append(f"type {j + 1} ({len(levels)} resolved levels)")
            continue
        for n in range(len(ratios) - 1):
            a, b = ratios[n + 1], ratios[n]  # f = a/b = (L2 − L1)/(L1 − L0)
            grad = (1 / b, -1 / b - a / b**2, a / b**2)
            hs = (halves[n + 2], halves[n + 1], halves[n])
            hw = sum(abs(g) * h for g, h in zip(grad, hs, strict=True))
            out.append((f"type {j + 1}, step {n}", n, float(a / b), float(hw)))
    return out, skipped, ests


def doubly_exponential(
    rows: Rows, servers: Sequence[float], name: str, policy: str
) -> tuple[Verdict, Verdict]:
    """The claim (every judged step's growth factor > GROWTH_FLOOR) and its near miss (the
    factors agree with a Gaussian tail's (2n+3)/(2n+1), within half their distance to the
    floor, at every step n ≥ 1 where that factor is below the floor)."""
    steps, skipped, ests = growth_factors(rows, servers, name, policy)
    note = "; not judged (< 3 resolved levels): " + ", ".join(skipped) if skipped else ""
    expected = f"every step's log-ratio growth factor > {GROWTH_FLOOR:g} (types with ≥ 2 steps)"
    if not steps:
        unresolved = [
            Component(
                "no type has 3 resolved levels at this N (u_3 held by ≥ 10 servers needs a "
                "larger N)",
                0.0,
                math.inf,
                GROWTH_FLOOR,
                resolved=False,
            )
        ]
        v = decide(unresolved, expected=expected, tolerance="—", details=note.lstrip("; "))
        return v, v
    w = widening(ests, len(steps))
    comps = [Component(lab, f, w * h, GROWTH_FLOOR, "above") for lab, _, f, h in steps]
    claim = decide(
        comps,
        expected=expected,
        tolerance=f"floor {GROWTH_FLOOR:g}; 95% CIs Bonferroni ×{w:.3f} over {len(steps)}",
        margin=GROWTH_FLOOR,
        details=note.lstrip("; "),
        estimates=ests,
    )
    near = [(lab, n, f, h) for lab, n, f, h in steps if n >= 1]
    if not near:
        near_comps = [Component("no step n ≥ 1", 0.0, math.inf, 0.0, resolved=False)]
    else:
        wn = widening(ests, 2 * len(near))
        near_comps = []
        for lab, n, f, h in near:
            g = gaussian_growth(n)
            m = (GROWTH_FLOOR - g) / 2
            near_comps.append(Component(f"{lab} (δ > −m)", f - g, wn * h, -m, "above"))
            near_comps.append(Component(f"{lab} (δ < m)", f - g, wn * h, m, "below"))
    control = decide(
        near_comps,
        expected="growth factor − the Gaussian's (2n+3)/(2n+1) within ±(floor − it)/2, "
        "every step n ≥ 1",
        tolerance="half the distance to the claim's floor",
        estimates=ests,
    )
    return claim, control


def tail_margin(reference: float, servers: float) -> float:
    """The agreement margin of one level u_k: 2% of it, at least one server of the type."""
    return agreement_margin(reference, relative=AGREEMENT, floor=1.0 / servers)


#: The finite-N offset claim's control sits at the nearest neighbouring load (judging.neighbours)
#: whose predicted tail lies more than this many of the claim's margins from the claim's.
NEIGHBOUR_MARGINS = 2.0


def reference_levels(u: Sequence[float], servers: float) -> list[int]:
    """The levels k ≥ 1 a run is expected to resolve, by a predicted tail ``u`` of a type with
    ``servers`` servers: contiguous from 1 while held (:func:`lbrepro.judging.tails.held`, the exact
    analogue of :func:`resolved_levels`, so it can be chosen before the run)."""
    levels = []
    for k in range(1, len(u)):
        if not held(u[k], servers):
            break
        levels.append(k)
    return levels


def prediction_distance(
    claim: Sequence[Sequence[float]], near: Sequence[Sequence[float]], servers: Sequence[float]
) -> float:
    """How far a control's predicted tail ``near`` lies from the claim's ``claim`` (per type,
    by level), in the claim's margins (:func:`tail_margin`): the largest distance over every
    type's :func:`reference_levels`. The claim needs every level to agree, so where it holds
    a control more than 2 margins away at one level fails there."""
    far = [
        abs(near[j][k] - claim[j][k]) / tail_margin(claim[j][k], servers[j])
        for j in range(len(claim))
        for k in reference_levels(claim[j], servers[j])
        if k < len(near[j])
    ]
    if not far:
        raise EmptyComparisonError("no level the run is expected to resolve")
    return max(far)


def control_load(
    rho: float,
    claim: Sequence[Sequence[float]],
    predict: Callable[[float], Sequence[Sequence[float]]],
    servers: Sequence[float],
) -> float:
    """The load of the offset claim's control: the nearest neighbouring load (steps of
    judging.neighbours.NEIGHBOUR) whose predicted tail ``predict(load)`` lies more than
    NEIGHBOUR_MARGINS of the claim's margins from ``claim`` (:func:`prediction_distance`).
    Where no level is expected to resolve, the claim cannot be judged: the first neighbour."""
    try:
        load, _ = nearest_distinct_load(
            rho, lambda load: prediction_distance(claim, predict(load), servers), NEIGHBOUR_MARGINS
        )
    except EmptyComparisonError:
        load = neighbour_load(rho)
    return load


def tail_agrees(
    rows: Rows, servers: Sequence[float], name: str, policy: str, method: str, quantity: str
) -> tuple[Verdict, list[float]]:
    """The simulated u⁽ʲ⁾_k against a prediction at every resolved level (equivalence), and
    the prediction's distance in margins from the claim's (``method`` ``u`` rows) per level."""
    ests, refs, margins, labels, dist = [], [], [], [], []
    for j in _types(rows, name, policy):
        mine, claim = (
            {
                r["k"]: r["value"]
                for r in select(rows, method=method, quantity=q, system=name, policy=policy)
                if r["type"] == j
            }
            for q in (quantity, "u")
        )
        for r in resolved_levels(rows, servers, name, policy, j):
            if r["k"] in mine:
                m = tail_margin(claim[r["k"]], servers[j])
                ests.append(estimate(r))
                refs.append(mine[r["k"]])
                margins.append(m)
                labels.append(f"type {j + 1}, n = {r['k']}")
                dist.append(abs(mine[r["k"]] - claim[r["k"]]) / m)
    if not ests:
        raise EmptyComparisonError(f"{name}, {policy}: no resolved simulated level")
    return agrees(ests, refs, margin=margins, labels=labels, what="u_sim − u_pred"), dist


def _window_slopes(log_u: list[float], period: int) -> tuple[float, float]:
    """Mean increment of log(−log u_n) over the last 3 periods and over the 3 before them.

    Under Scheme 2 a faster type's levels interleave with the slower types' (a type-j server
    at level n competes with type i at level ≈ nC_i/C_j), so its increments repeat with a
    period of C_j/C_min levels; averaging over whole periods removes that ripple.
    """
    y = np.log(-np.asarray(log_u[1:], dtype=float))
    w = 3 * period
    return float((y[-1] - y[-1 - w]) / w), float((y[-1 - w] - y[-1 - 2 * w]) / w)


#: Relative tolerance of the deep-tail linearity test (exact mean-field values).
LINEAR_TOL = 0.01


def linear_loglog(series: dict[str, tuple[list[float], int]]) -> Verdict:
    """log(−log u_n) asymptotically linear: equal positive slopes (> 0.1, within 1%) over the
    last two windows, every type (exact mean-field values, decided outright)."""
    slopes, flat, worst = {}, True, 0.0
    for key, (log_u, period) in series.items():
        last, before = _window_slopes(log_u, period)
        slopes[key] = (round(before, 4), round(last, 4))
        rel = abs(last - before) / abs(last) if last else math.inf
        worst = max(worst, rel)
        flat &= last > 0.1 and rel <= LINEAR_TOL
    if not slopes:
        raise EmptyComparisonError("no deep tail to judge")
    return exact(
        bool(flat),
        round(min(worst, 1e6), 6),
        "equal positive slopes (> 0.1) over the last two windows",
        f"{LINEAR_TOL:.0%} relative",
        "largest relative slope change; slopes (before, last) per type: "
        + ", ".join(f"{k}: {v}" for k, v in slopes.items()),
    )
