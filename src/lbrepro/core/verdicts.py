"""The statistics of a claim: one place for every test a claim check applies.

Every claim check of every artifact is built from these few tests, so a reader learns the rules
once (docs/methods.md states them in words):

- ``within``: a reference value lies inside a simulation's confidence interval, Bonferroni-widened
  over the comparisons made together, plus an explicit finite-N allowance;
- ``better``: A is significantly below B (or at least not significantly above it);
- ``trend``: a sequence of estimates increases, decreases or tends to 0 — judged with CIs, not
  on point estimates;
- ``fit_slope`` / ``slope_in``: weighted least squares with its standard error, and a verdict
  on the slope.

Each returns a :class:`Verdict` (passed, the statistic measured, what was expected, the
tolerance, a readable detail). A check run on an empty comparison set raises
:class:`EmptyComparisonError`: it fails loudly instead of passing vacuously.

A verdict means something only if it can go the other way, so every claim is also evaluated on
a *control* — a counterfactual where the claim is false — with the same statistic and tolerance
(see :func:`lbrepro.core.claims.make_claim`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from lbrepro.core.stats import Estimate, bonferroni_factor, normal_quantile, t_quantile

__all__ = [
    "EmptyComparisonError",
    "SlopeFit",
    "Verdict",
    "better",
    "estimate",
    "fit_slope",
    "slope_in",
    "trend",
    "within",
]

#: Two-sided 95% normal quantile: the level every claim is judged at.
Z95 = 1.959963984540054


class EmptyComparisonError(ValueError):
    """A claim check was asked to judge nothing: a bug in the check or its data, never a pass."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of one statistical test of a claim."""

    passed: bool
    measured: Any
    expected: Any
    tolerance: Any
    details: str = ""

    def __bool__(self) -> bool:  # a Verdict reads as its outcome in `if` and `all()`
        return bool(self.passed)


def estimate(row: Mapping[str, Any]) -> Estimate:
    """The :class:`Estimate` of one tidy row: its CI if it has one, else an exact value.

    Rows of methods ``cf``, ``mf``, ``rmf``, ``mdp``, ``published`` carry no interval and are
    exact values of a formula; rows of ``sim`` and ``sde`` carry ``ci_low``/``ci_high``.
    """
    value = float(row["value"])
    low, high = row.get("ci_low"), row.get("ci_high")
    if low is None or high is None or _nan(low) or _nan(high):
        low = high = value
    batches = row.get("batches")
    N = row.get("N")
    return Estimate(
        mean=value,
        low=float(low),
        high=float(high),
        # An interval clipped to the quantity's range (a fraction near 0) is asymmetric: the
        # unclipped side carries the half-width.
        half_width=max(float(high) - value, value - float(low)),
        batches=int(batches) if batches is not None and not _nan(batches) else 0,
        N=int(N) if N is not None and not _nan(N) else None,
        seed=row.get("seed"),
        converged=row.get("converged") not in (False, 0, "False", "false"),
    )


def _unconverged(estimates: Sequence[Estimate]) -> str:
    """A warning for the details when some intervals come from runs that did not converge."""
    n = sum(not e.converged for e in estimates)
    if not n:
        return ""
    return (
        f"; WARNING: {n} of {len(estimates)} estimates from runs whose batch means stayed "
        "correlated (converged = False): their intervals are too narrow"
    )


def _nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _widening(estimates: Sequence[Estimate], comparisons: int) -> float:
    """Bonferroni widening of 95% intervals for ``comparisons`` simultaneous checks.

    Student t with the smallest batch count among the estimates (normal if none is known).
    """
    dofs = [e.batches for e in estimates if e.batches and e.batches >= 2]
    if comparisons <= 1:
        return 1.0
    if dofs:
        return bonferroni_factor(min(dofs), comparisons)
    return normal_quantile(1 - 0.05 / (2 * comparisons)) / Z95


def within(
    estimates: Sequence[Estimate],
    references: Sequence[float],
    *,
    allowance: float | Sequence[float] = 0.0,
    labels: Sequence[str] | None = None,
) -> Verdict:
    """Every reference lies inside its estimate's Bonferroni-widened 95% CI plus an allowance.

    The rule, the same for every claim: with m comparisons made together, the i-th passes when
    ``|estimate_i − reference_i| ≤ w·h_i + a_i``, where h_i is the 95% half-width, w the
    Bonferroni widening for m comparisons (family-wise 95%), and a_i the *finite-N allowance*:
    a deterministic, stated bound on how far the reference may legitimately sit from a
    finite-N system (zero when the reference is exact at this N, e.g. the refined mean field's
    own O(1/N²) remainder is not granted). The statistic is the largest ratio
    ``|estimate − reference| / (w·h + a)``; the claim passes when it is ≤ 1.
    """
    m = len(estimates)
    if m == 0:
        raise EmptyComparisonError("within: no estimates to compare")
    if len(references) != m:
        raise ValueError(f"within: {m} estimates but {len(references)} references")
    allow = np.broadcast_to(np.asarray(allowance, dtype=float), (m,))
    w = _widening(estimates, m)
    ratios = []
    for e, ref, a in zip(estimates, references, allow, strict=True):
        tol = w * e.half_width + a
        diff = abs(e.mean - float(ref))
        ratios.append(diff / tol if tol > 0 else (0.0 if diff == 0 else math.inf))
    worst = int(np.argmax(ratios))
    name = labels[worst] if labels else f"#{worst}"
    e = estimates[worst]
    return Verdict(
        passed=bool(max(ratios) <= 1.0),
        measured=round(float(max(ratios)), 3),
        expected="|estimate − reference| / (widened CI + allowance) ≤ 1",
        tolerance=f"Bonferroni ×{w:.3f} over {m}, allowance ≤ {float(np.max(allow)):.2g}",
        details=(
            f"worst {name}: estimate {e.mean:.6g} [{e.low:.6g}, {e.high:.6g}] vs reference "
            f"{float(references[worst]):.6g}" + _unconverged(estimates)
        ),
    )


def better(
    a: Sequence[Estimate],
    b: Sequence[Estimate],
    *,
    quantifier: Literal["all", "any"] = "all",
    strict: bool = True,
    margin: float = 0.0,
    labels: Sequence[str] | None = None,
) -> Verdict:
    """A is below B: significantly (``strict``) or at least not significantly above.

    For each pair the z-score ``(b − a − margin) / σ`` uses σ from the two 95% half-widths in
    quadrature (independent runs), with Bonferroni widening over the pairs. ``strict``: a pair
    holds when z exceeds the widened critical value (A significantly better); otherwise when
    z exceeds minus it (A not significantly worse). ``quantifier`` = ``all`` for "at every
    point", ``any`` for "can outperform". The statistic is the smallest (``all``) or largest
    (``any``) z-score.
    """
    n = len(a)
    if n == 0:
        raise EmptyComparisonError("better: no pairs to compare")
    if len(b) != n:
        raise ValueError(f"better: {n} values of A but {len(b)} of B")
    crit = Z95 * _widening([*a, *b], n)
    zs = []
    for ea, eb in zip(a, b, strict=True):
        sigma = math.hypot(ea.half_width, eb.half_width) / Z95
        gap = eb.mean - ea.mean - margin
        zs.append(gap / sigma if sigma > 0 else math.copysign(math.inf, gap) if gap else 0.0)
    threshold = crit if strict else -crit
    holds = [z > threshold for z in zs]
    passed = all(holds) if quantifier == "all" else any(holds)
    stat = min(zs) if quantifier == "all" else max(zs)
    i = zs.index(stat)
    name = labels[i] if labels else f"#{i}"
    return Verdict(
        passed=bool(passed),
        measured=round(float(stat), 3) if math.isfinite(stat) else stat,
        expected=f"z > {threshold:+.3f} ({quantifier} of {n})",
        tolerance=f"95% family-wise over {n} (z-critical {crit:.3f}); margin {margin:g}",
        details=(
            f"{sum(holds)}/{n} pairs hold; {'worst' if quantifier == 'all' else 'best'} {name}: "
            f"A {a[i].mean:.6g} ± {a[i].half_width:.2g} vs B {b[i].mean:.6g} ± "
            f"{b[i].half_width:.2g}" + _unconverged([*a, *b])
        ),
    )


def trend(
    x: Sequence[float],
    estimates: Sequence[Estimate],
    direction: Literal["increasing", "decreasing", "to_zero"],
    *,
    ratio: float = 0.5,
) -> Verdict:
    """A sequence of estimates (ordered by x) moves in one direction, judged with its CIs.

    ``increasing`` / ``decreasing``: the last value differs from the first significantly in that
    direction, and no step between neighbours goes significantly the other way (z-scores with
    half-widths in quadrature, Bonferroni over the steps). ``to_zero``: decreasing in that
    sense, and the last value's upper 95% bound is below ``ratio`` times the first value — a
    finite sweep can only show a decline by a stated factor, never the limit itself.
    """
    n = len(estimates)
    if n < 2:
        raise EmptyComparisonError(f"trend: needs at least two points, got {n}")
    if len(x) != n:
        raise ValueError(f"trend: {len(x)} x values but {n} estimates")
    order = np.argsort(np.asarray(x, dtype=float), kind="stable")
    est = [estimates[i] for i in order]
    xs = [float(x[i]) for i in order]
    sign = 1.0 if direction == "increasing" else -1.0
    crit = Z95 * _widening(est, max(n - 1, 1))

    def z(e0: Estimate, e1: Estimate) -> float:
        sigma = math.hypot(e0.half_width, e1.half_width) / Z95
        gap = sign * (e1.mean - e0.mean)
        return gap / sigma if sigma > 0 else (math.copysign(math.inf, gap) if gap else 0.0)

    overall = z(est[0], est[-1])
    steps = [z(e0, e1) for e0, e1 in itertools.pairwise(est)]
    reversals = [i for i, s in enumerate(steps) if s < -crit]
    passed = overall > Z95 and not reversals
    extra = ""
    if direction == "to_zero":
        bound = ratio * est[0].mean
        reached = est[-1].high < bound
        passed = passed and reached
        extra = f"; last upper bound {est[-1].high:.3g} vs {ratio:g}× first = {bound:.3g}"
    listing = ", ".join(
        f"{xv:g}: {e.mean:.4g}±{e.half_width:.2g}" for xv, e in zip(xs, est, strict=True)
    )
    rev = ", ".join(f"{xs[i]:g}→{xs[i + 1]:g}" for i in reversals) or "none"
    return Verdict(
        passed=bool(passed),
        measured=round(float(overall), 3) if math.isfinite(overall) else overall,
        expected=f"{direction}: first→last z > {Z95:.2f}, no significant reversal",
        tolerance=f"steps judged at z {crit:.2f} (Bonferroni over {n - 1})",
        details=f"significant reversals: {rev}{extra}; values {listing}" + _unconverged(est),
    )


@dataclass(frozen=True)
class SlopeFit:
    """A least-squares line y = intercept + slope·x with the slope's standard error.

    ``known_errors``: the standard error comes from given y errors (normal quantiles), not from
    the residual scatter (Student t with ``dof`` degrees of freedom).
    """

    slope: float
    se: float
    intercept: float
    dof: int
    known_errors: bool = False

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The slope's two-sided confidence interval."""
        p = 0.5 + level / 2
        q = normal_quantile(p) if self.known_errors else t_quantile(p, max(self.dof, 1))
        return self.slope - q * self.se, self.slope + q * self.se


def fit_slope(
    x: Sequence[float], y: Sequence[float], sigma: Sequence[float] | None = None
) -> SlopeFit:
    """Weighted least squares of y on x; ``sigma`` are the y standard errors (absolute).

    With ``sigma`` the slope's standard error is the absolute one (known errors, normal
    quantiles); without it, the residual scatter estimates it (Student t, needs ≥ 3 points).
    Fewer than two distinct x raise :class:`EmptyComparisonError`.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    keep = np.isfinite(xs) & np.isfinite(ys)
    if sigma is not None:
        s = np.asarray(sigma, dtype=float)
        keep &= np.isfinite(s) & (s > 0)
    xs, ys = xs[keep], ys[keep]
    if np.unique(xs).size < 2:
        raise EmptyComparisonError(f"fit_slope: needs two distinct x, got {xs.tolist()}")
    w = np.ones_like(xs) if sigma is None else 1.0 / s[keep] ** 2
    sw = w.sum()
    xm, ym = (w * xs).sum() / sw, (w * ys).sum() / sw
    sxx = (w * (xs - xm) ** 2).sum()
    slope = float((w * (xs - xm) * (ys - ym)).sum() / sxx)
    intercept = float(ym - slope * xm)
    dof = xs.size - 2
    if sigma is not None:
        return SlopeFit(slope, float(math.sqrt(1.0 / sxx)), intercept, dof, known_errors=True)
    if dof >= 1:
        resid = ys - intercept - slope * xs
        se = float(math.sqrt((w * resid**2).sum() / dof / sxx))
    else:
        se = math.inf
    return SlopeFit(slope, se, intercept, dof)


def slope_in(
    fit: SlopeFit,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    significant: bool = False,
    what: str = "slope",
) -> Verdict:
    """The fitted slope lies in [low, high], judged with its 95% interval.

    ``significant=False``: the point estimate lies in [low, high] (the data do not contradict
    the claim). ``significant=True``: the whole 95% CI lies in [low, high] (the data establish
    it). A claim "slope > c" is ``slope_in(fit, low=c)``. Its control must fail by the same rule.
    """
    lo, hi = fit.interval()
    passed = low <= lo and hi <= high if significant else low <= fit.slope <= high
    return Verdict(
        passed=bool(passed),
        measured=round(fit.slope, 4),
        expected=f"{what} in [{low:g}, {high:g}]" + (" (whole 95% CI)" if significant else ""),
        tolerance=f"95% CI [{lo:.4g}, {hi:.4g}] (se {fit.se:.2g})",
        details=f"least squares: {what} {fit.slope:.4g} ± {fit.se:.2g}, "
        f"intercept {fit.intercept:.4g}",
    )
